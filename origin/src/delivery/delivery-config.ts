/**
 * The delivery part of the origin's configuration (`delivery.*`): its zod schema and defaults,
 * owned here so that everything that must agree with the origin's rules (the config file, the
 * player simulator's delivery models) reads them from one place. Fastify-free.
 */
import { z } from 'zod';
import { parseAbSpec } from './ab.js';
import { policyNames } from './catalogue.js';

const headroom = z.number().min(1).max(10);
const blockBytes = z
  .number()
  .int()
  .min(1024)
  .max(16 * 1024 * 1024);

/** Transport settings applied to each new connection (globally, or per A/B group). */
const transportSchema = z.strictObject({
  /** TCP congestion control, any algorithm the kernel offers (bbr, cubic, reno, ...). */
  congestionControl: z
    .string()
    .regex(/^[a-z0-9_-]{1,15}$/, 'a kernel congestion control name like cubic, bbr, reno')
    .optional(),
  /**
   * Initial congestion window of new connections, packets (TCP_BPF_IW through the BPF program: needs the bpf clamp
   * backend). Unset: the kernel's.
   */
  initialWindowPackets: z.number().int().min(1).max(1024).optional(),
});

const abGroupSchema = transportSchema.extend({
  name: z.string().regex(/^[A-Za-z0-9_-]+$/),
  policy: z.enum(policyNames),
  weight: z.number().positive(),
});

export type AbGroupConfig = z.output<typeof abGroupSchema>;

export const deliverySchema = z.strictObject({
  /** The policy used when no rule, A/B group or allowed override picks another. */
  policy: z.enum(policyNames).default('trickle-abr'),
  /** First match wins: per asset and/or per role (segment, progressive). */
  rules: z
    .array(
      z.strictObject({
        asset: z.string().min(1).optional(),
        role: z.enum(['segment', 'progressive']).optional(),
        policy: z.enum(policyNames),
      }),
    )
    .default([]),
  /** Let `?policy=<name>` pick the policy of a request (for experiments). */
  allowPolicyOverride: z.boolean().default(false),
  /**
   * A/B groups: "bulk:25,trickle:75" (name=policy:weight for A/A controls) or a list of groups with transport settings.
   */
  ab: z
    .union([
      z.string().transform((spec, context) => {
        try {
          return parseAbSpec(spec, policyNames) as AbGroupConfig[];
        } catch (error) {
          context.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
      z
        .array(abGroupSchema)
        .min(1)
        .refine(
          (groups) => new Set(groups.map((g) => g.name)).size === groups.length,
          'A/B group names must be distinct',
        ),
    ])
    .optional(),
  /** Seed of the A/B assignment (Mersenne Twister): same seed, same sequence of groups. */
  abSeed: z.number().int().min(0).max(0xffffffff).default(1),
  /** Media seconds from the start of a response (or of the presentation, for segments) sent at full speed. */
  startupSec: z.number().min(0).max(3600).default(35),
  /** Progressive MP4: the media length of a VBR block, each with its own rate (about one GOP). */
  rateWindowSec: z.number().positive().max(60).default(2),
  /**
   * Goodput is judged against the schedule (catch-up) only after this many RTTs of throttling (acknowledgements lag one
   * RTT behind writes).
   */
  goodputGraceRtts: z.number().min(0).max(1000).default(10),
  /**
   * Paced responses over plain HTTP are written with sendfile(2) through a transfer the addon
   * holds open for the response (from the page cache, no copy): a kernel phase in a few calls, a
   * token bucket's block in one. Off: read and written by Node (for files on storage slow enough
   * that a read would stall the event loop).
   */
  sendFile: z.boolean().default(true),
  clamp: z
    .strictObject({
      /** The backend wanted for the cwnd clamp; weaker ones are used (and named in records) when it cannot be. */
      backend: z.enum(['bpf', 'pacing-rate', 'none']).default('bpf'),
      cgroup: z.string().min(1).default('trickle'),
      pinDir: z.string().min(1).default('/run/trickle/bpf'),
    })
    .prefault({}),
  /** The token-bucket enforcer (app-pacing) and its shrunk-block variant (app-pacing-16k). */
  appPacing: z.strictObject({ headroom: headroom.default(1.25), blockBytes: blockBytes.default(65_536) }).prefault({}),
  appPacing16k: z
    .strictObject({ headroom: headroom.default(1.25), blockBytes: blockBytes.default(16_384) })
    .prefault({}),
  /** The cwnd-clamp enforcers (trickle, trickle-min-rtt, trickle-abr): Algorithm 1. */
  trickle: z
    .strictObject({
      /** Clamp headroom over R (the paper: 1.2; 1.05 worked as well). */
      gain: headroom.default(1.2),
      floorPackets: z.number().int().min(1).max(1000).default(10),
      blockBytes: blockBytes.default(65_536),
      /**
       * How the clamp is lifted for catch-up and at the end of a response (in the kernel, catch-up is always gradual).
       */
      release: z.enum(['gradual', 'immediate']).default('gradual'),
      /**
       * Run Algorithm 1 in the sock_ops program (bpf backend): the response is written at once and the
       * kernel clamps, catches up and paces at the floor. false: block by block from user space.
       */
      inKernel: z.boolean().default(true),
      /**
       * In the kernel path, once the phase's bytes are being written, the send buffer is raised to
       * hold this many seconds of the phase at its highest rate (user space then wakes about every
       * third of it, not every ~30 kB TCP's autotuning allows a clamped window; capped by
       * net.core.wmem_max). 0: autotuning only.
       */
      sendBufferSeconds: z.number().min(0).max(60).default(4),
    })
    .prefault({}),
  /** The kernel-pacing enforcer (pacing, cmcd). */
  pacing: z
    .strictObject({
      headroom: headroom.default(1.25),
      blockBytes: blockBytes.default(65_536),
      /**
       * Below this many packets per srtt the kernel paces at the floor and writes are throttled at the rate (block by
       * block only).
       */
      floorPackets: z.number().int().min(1).max(1000).default(10),
      /**
       * Hand the phase to the sock_ops program (bpf backend): the response is written at once and
       * the program sets the pacing rate per piece of the schedule and catches up. false: block by
       * block from user space (also the path without the program).
       */
      inKernel: z.boolean().default(true),
      /** As trickle's: the kernel phase's send buffer in seconds of its highest rate (0: autotuning). */
      sendBufferSeconds: z.number().min(0).max(60).default(4),
    })
    .prefault({}),
  /** The ABR-aware rate rule (trickle-abr, cmcd). */
  abr: z
    .strictObject({
      /** The multiple of the next rung's bitrate aimed at with an empty buffer... */
      multiplierAtEmpty: headroom.default(3),
      /**
       * ...and with a full one. hls.js switches up when 0.7 x its estimate reaches the next rung's
       * average (1.43 x it), and its estimate sees the clamp's goodput (about 0.9 x the aim) less a
       * round trip per request: at 1.5 hls.js stayed a rung low in the QoE matrix (dsl-6mbit, fast-20mbit).
       */
      multiplierAtFull: headroom.default(2),
      /** The multiple of the top rung's own bitrate: enough to stay there (dash.js needs 1 / 0.9, hls.js 1 / 0.95). */
      multiplierAtTop: headroom.default(1.5),
      /** Buffer (ms) at which the multiplier reaches multiplierAtFull. */
      fullBufferMs: z.number().int().positive().default(30_000),
      /** Below this buffer (CMCD bl, or the origin's lower bound without CMCD) a segment goes at full speed. */
      lowBufferMs: z.number().int().min(0).default(5_000),
      /**
       * A connection whose last paced segment reached less than `limitedBelow` of its aim was held back by the path:
       * its next aims no higher than `headroom` x the goodput it got, until one reaches `recoveredAbove` of its aim
       * (path-evidence.ts). A segment sent whole at full speed without a loss that took `fullSpeedExtraRtts` base
       * RTTs longer than slow start alone holds the next at `headroom` x the link rate its duration shows. A paced
       * phase under `minPhaseBytes` is judged by that model too, and can only hold. A held connection's cwnd clamp
       * has `floorPackets` as its floor instead of the enforcer's (the paper's 10): on a path whose BDP and buffer
       * hold fewer than 10 packets, the paper's floor alone overflows it (abr-dc2-fix48: 658 held responses, 3.3-3.7 %
       * of their packets retransmitted); 4 keeps fast retransmit's three duplicate ACKs.
       */
      pathHold: z
        .strictObject({
          headroom: headroom.default(1.25),
          limitedBelow: z.number().gt(0).max(1).default(0.7),
          recoveredAbove: z.number().gt(0).max(1).default(0.9),
          minPhaseBytes: z.number().int().min(0).default(32_768),
          fullSpeedExtraRtts: z.number().min(0).default(1),
          floorPackets: z.number().int().min(1).max(1000).default(4),
        })
        .refine((hold) => hold.limitedBelow <= hold.recoveredAbove, {
          message: 'limitedBelow must not exceed recoveredAbove',
        })
        .prefault({}),
    })
    .prefault({}),
  /**
   * The sammy rate rule (Spang et al., SIGCOMM 2023): pace at (c1 B + c0 (1 - B)) x the top bitrate, B = buffer /
   * maxBufferMs.
   */
  sammy: z
    .strictObject({
      /** The multiple of the top bitrate with an empty buffer (the paper's production value). */
      c0: z.number().min(0.1).max(20).default(3.2),
      /** ... with a full buffer. */
      c1: z.number().min(0.1).max(20).default(2.8),
      /** The player's maximum buffer (dash.js, hls.js: 30 s by default). */
      maxBufferMs: z.number().int().positive().default(30_000),
    })
    .prefault({}),
  transport: transportSchema.prefault({}),
});

export type DeliveryConfig = Readonly<z.output<typeof deliverySchema>>;

/** The defaults, validated and frozen: what the player simulator models when it is not told otherwise. */
export const defaultDeliveryConfig: DeliveryConfig = Object.freeze(deliverySchema.parse({}));
