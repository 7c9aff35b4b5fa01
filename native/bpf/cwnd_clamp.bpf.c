// SPDX-License-Identifier: GPL-2.0
/*
 * Trickle's per-socket congestion window clamp (Ghobadi et al., ATC'12, Algorithm 1) as a
 * sock_ops program attached to a cgroup v2. User space keys a target by socket cookie; the
 * program recomputes clamp = max(floor, gain * rate * srtt / mss) on every RTT sample, so the
 * clamp follows the live RTT between user-space updates (or, for a target that asks for it, the
 * path's minimum RTT in place of srtt: a clamp that does not grow with its own queue). Entries die with their socket
 * (the run of a scheduled response whose viewer left is kept, in trickle_closed, for user space to take).
 *
 * The same entry can carry an initial window (TCP_BPF_IW) chosen after the connection was
 * accepted (per A/B group, drawn at its first request): TCP_BPF_IW is only accepted before the
 * first data segment, so the program watches outgoing headers until data goes out and sets it
 * as the first one is being built, then stops watching. Outgoing headers are watched again through
 * a scheduled response's startup: the packet that carries the phase's first byte holds the phase
 * at once (RTT samples come about once per round trip, a window too late), and near the edges of
 * a running phase's pieces: the packet carrying a piece's first byte sets the piece's pacing rate.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "cwnd_clamp.h"

#define SOL_SOCKET	      1
#define SO_MAX_PACING_RATE    47
#define SOL_TCP		      6
#define TCP_BPF_IW	      1001
#define TCP_BPF_SNDCWND_CLAMP 1002

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TRICKLE_MAX_TARGETS);
	/* an entry carries a schedule (~1 kB): memory for the sockets that have one, not for the maximum */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct trickle_clamp_target);
} trickle_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TRICKLE_MAX_CLOSED);
	__type(key, __u64);
	__type(value, struct trickle_closed_phase);
} trickle_closed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TRICKLE_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} trickle_stats SEC(".maps");

static __always_inline void count(__u32 stat)
{
	__u64 *value = bpf_map_lookup_elem(&trickle_stats, &stat);

	if (value)
		*value += 1;
}

/* ceil(bytes / mss) packets, at least min_packets */
static __always_inline __u32 rate_clamp_of(__u64 bytes, __u32 mss, __u32 min_packets)
{
	__u64 packets = (bytes + mss - 1) / mss;

	if (packets < min_packets)
		packets = min_packets;
	if (packets > TRICKLE_CLAMP_UNLIMITED)
		packets = TRICKLE_CLAMP_UNLIMITED;
	return (__u32)packets;
}

static __always_inline __u32 rate_clamp(const struct trickle_clamp_target *t, __u32 srtt_us, __u32 mss)
{
	/* bytes per RTT = rate * srtt; the product stays below 2^64 for rates < 1.8 TB/s and srtt < 10 s */
	__u64 bytes = t->rate_bytes_per_sec * srtt_us / 1000000;

	return rate_clamp_of(bytes * t->gain_milli / 1000, mss, t->min_packets);
}

/* Applies a clamp computed at rtt_us, and keeps that RTT and the mss with it: what it was computed from. */
static __always_inline void apply(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u32 clamp, __u32 rtt_us)
{
	int value = (int)clamp;

	if (clamp == 0 || clamp == t->applied_packets)
		return;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, &value, sizeof(value))) {
		count(TRICKLE_STAT_SETSOCKOPT_ERRORS);
		return;
	}
	t->applied_packets = clamp;
	t->applied_rtt_us = rtt_us;
	t->applied_mss = skops->mss_cache;
	t->updates += 1;
	count(TRICKLE_STAT_CLAMP_UPDATES);
}

/*
 * The clamp also sets ssthresh: lifting it to "infinity" at once restarts slow start and overshoots
 * the queue. Grow it by a quarter at most once per RTT, and only while cwnd is pressing against it,
 * so the window grows no faster than the path acknowledges.
 */
static __always_inline void release_step(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u32 srtt_us,
					 __u64 now)
{
	__u32 grown;

	if (t->applied_packets == 0 || t->applied_packets == TRICKLE_CLAMP_UNLIMITED)
		return;
	if (skops->snd_cwnd + 1 < t->applied_packets || now - t->last_step_ns < (__u64)srtt_us * 1000)
		return;
	grown = t->applied_packets >= TRICKLE_CLAMP_UNLIMITED / 2 ? TRICKLE_CLAMP_UNLIMITED
								  : t->applied_packets + t->applied_packets / 4 + 1;
	t->last_step_ns = now;
	apply(skops, t, grown, srtt_us);
}

/*
 * Algorithm 1's clamp, recomputed on an RTT sample. The paper caps cwnd only (a per-socket cwnd_clamp); the
 * BPF option also sets ssthresh to the clamp, and a clamp that follows srtt changes on most samples: applied
 * as computed, each change after a loss would raise ssthresh back over the congestion control's answer and
 * restart slow start into the queue that caused the loss (3G-like trace, 190 s: 9.6 % of trickle-abr's
 * segments retransmitted against bulk's 1.7 %). So once the congestion control has set an ssthresh of its
 * own, the clamp moves only where the window meets it: lowered once cwnd reaches the new clamp, raised
 * while cwnd presses against the old one, up to that ssthresh at once and past it by a quarter per RTT at
 * most (as a gradual release grows; cubic's own growth is up to half). The first clamp after a loss at
 * startup speed waits the same way for the window to reach it: applied above the window it would lift
 * ssthresh from the congestion control's answer to the clamp (dc2-like links, ~600 ms srtt: a clamp of ~50
 * packets over a path that holds ~33, and slow start into its queue at every handover). Before any loss
 * ssthresh is the kernel's initial infinity, and the clamp is applied as computed, as in the paper.
 */
__noinline __u32 clamp_to_apply(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u32 clamp, __u32 srtt_us)
{
	__u32 applied;
	__u32 ssthresh;
	__u32 cwnd;
	__u32 raised;
	__u64 now;

	/* a global function: verified once on its own, its callers see one unknown scalar (as clamp_rtt_us) */
	if (!t)
		return 0;
	applied = t->applied_packets;
	ssthresh = skops->snd_ssthresh;
	cwnd = skops->snd_cwnd;
	if (ssthresh < (applied ? applied : TRICKLE_CLAMP_UNLIMITED))
		t->cc_ssthresh = ssthresh;
	if (clamp == applied || t->cc_ssthresh == 0)
		return clamp;
	if (applied == 0 || clamp < applied)
		return cwnd >= clamp ? clamp : 0;
	now = bpf_ktime_get_ns();
	if (cwnd + 1 < applied || now - t->last_step_ns < (__u64)srtt_us * 1000)
		return 0;
	raised = applied + applied / 4 + 1;
	if (raised < t->cc_ssthresh)
		raised = t->cc_ssthresh;
	t->last_step_ns = now;
	return raised < clamp ? raised : clamp;
}

/* SO_MAX_PACING_RATE in bytes/s (0: unlimited), set only when it changes or is not known. */
static __always_inline void set_pacing(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u64 bytes_per_sec)
{
	/* the socket option is an unsigned 32-bit rate; ~0U means unlimited */
	__u32 value = bytes_per_sec == 0 || bytes_per_sec >= 0xffffffffULL ? 0xffffffffU : (__u32)bytes_per_sec;

	if (t->pacing_bytes_per_sec == bytes_per_sec)
		return;
	if (bpf_setsockopt(skops, SOL_SOCKET, SO_MAX_PACING_RATE, &value, sizeof(value))) {
		count(TRICKLE_STAT_SETSOCKOPT_ERRORS);
		return;
	}
	t->pacing_bytes_per_sec = bytes_per_sec;
	count(TRICKLE_STAT_PACING_UPDATES);
}

/*
 * The piece holding the response's byte at `offset` (the last one past the schedule's end): a binary search,
 * 6 steps over 64 pieces where a scan took up to 63 on every ACK of a long schedule. A global function, like
 * clamp_rtt_us: inlined at its five calls, every piece index it could return was a path of its own through
 * the rest of the program: 599,269 instructions processed, 60 % of the verifier's limit, 0.75-1.1 s per load
 * here and ~30 s of `trickle serve`'s start in a guest kernel under TCG. With it the whole program takes
 * 12,710 (a scan of 32 pieces took 3,989), verified in ~75 ms.
 */
__noinline __u32 piece_at(const struct trickle_clamp_target *t, __u32 offset)
{
	__u32 low = 0;
	__u32 high;
	__u32 middle;
	__u32 step;

	if (!t || t->piece_count == 0)
		return 0;
	high = t->piece_count - 1;
	if (high > TRICKLE_SCHEDULE_PIECES - 1)
		high = TRICKLE_SCHEDULE_PIECES - 1;
	/* the first piece ending past offset, in [low, high]: log2(TRICKLE_SCHEDULE_PIECES) halvings */
	for (step = 0; step < TRICKLE_SCHEDULE_PIECE_BITS && low < high; step++) {
		middle = (low + high) / 2;
		if (offset < t->pieces[middle & (TRICKLE_SCHEDULE_PIECES - 1)].end_offset)
			high = middle;
		else
			low = middle + 1;
	}
	return low;
}

/* When the phase's bytes before `offset` are due, microseconds from the phase's first byte. */
static __always_inline __u64 due_us(const struct trickle_clamp_target *t, __u32 offset)
{
	/* masked indices: the verifier needs them provably inside the array */
	__u32 i = piece_at(t, offset) & (TRICKLE_SCHEDULE_PIECES - 1);
	__u32 start = t->throttle_offset;
	__u64 due = 0;
	__u32 rate = t->pieces[i].rate_bytes_per_sec;

	if (i > 0) {
		start = t->pieces[(i - 1) & (TRICKLE_SCHEDULE_PIECES - 1)].end_offset;
		due = t->pieces[(i - 1) & (TRICKLE_SCHEDULE_PIECES - 1)].due_us_at_end;
	}
	if (offset >= t->pieces[i].end_offset)
		return t->pieces[i].due_us_at_end;
	if (offset <= start || rate == 0)
		return due;
	return due + (__u64)(offset - start) * 1000000 / rate;
}

/*
 * What the program reads from the full tcp_sock: bytes written but not yet sent (none means the
 * sender, not the path, is behind) and the path's minimum RTT. Without it: "something unsent" and srtt.
 */
struct path_view {
	__u32 notsent_bytes;
	__u32 min_rtt_us;
};

static __always_inline struct path_view view_path(struct bpf_sock_ops *skops, __u32 srtt_us)
{
	struct path_view view = {.notsent_bytes = 1, .min_rtt_us = srtt_us};
	struct bpf_sock *sk = skops->sk;
	struct tcp_sock *tp;

	if (!sk)
		return view;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return view;
	view.notsent_bytes = tp->write_seq - tp->snd_nxt;
	if (tp->rtt_min.s[0].v != 0 && tp->rtt_min.s[0].v != ~0U)
		view.min_rtt_us = tp->rtt_min.s[0].v;
	return view;
}

/*
 * The RTT a clamp is computed from: srtt (the paper's), or the path's minimum RTT (TRICKLE_CLAMP_RTT_MIN).
 * A global function: the verifier checks it once on its own and its callers see one unknown scalar. Inlined,
 * its branches multiplied the schedule's paths past the verifier's limit of 1M processed instructions.
 */
__noinline __u32 clamp_rtt_us(struct bpf_sock_ops *skops, __u32 clamp_rtt, __u32 srtt_us)
{
	if (clamp_rtt != TRICKLE_CLAMP_RTT_MIN)
		return srtt_us;
	return view_path(skops, srtt_us).min_rtt_us;
}

static __always_inline void watch_headers(struct bpf_sock_ops *skops)
{
	if (!(skops->bpf_sock_ops_cb_flags & BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG))
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

static __always_inline bool scheduled(const struct trickle_clamp_target *t)
{
	return t->mode == TRICKLE_MODE_SCHEDULE || t->mode == TRICKLE_MODE_PACE_SCHEDULE;
}

/* A scheduled response whose phase has not been held yet (its startup runs). */
static __always_inline bool awaiting_phase(const struct trickle_clamp_target *t)
{
	return scheduled(t) && t->piece_count > 0 && t->run.state == TRICKLE_SCHEDULE_STARTUP &&
	       t->run.phase_start_ns == 0 && t->run.held_ns == 0;
}

/*
 * A data packet of a scheduled response's startup is being built. Returns whether to keep
 * watching: until the packet carrying the phase's first byte, which holds the phase at gain x R
 * in the pacer before it leaves (lowering the clamp does not lower cwnd at once; the RTT samples
 * take over from there). Watched through the whole startup, not only near the phase: a window
 * judged on an RTT sample can more than double before the next one (none come in loss recovery,
 * and BBR's startup grows faster than slow start), and a hold missed so lets a window of the
 * phase out at startup speed. One callback per packet of the startup only.
 */
static __always_inline bool hold_at_phase(struct bpf_sock_ops *skops, struct trickle_clamp_target *t)
{
	__u64 acked_total = skops->bytes_acked;
	__u32 acked = acked_total > t->base_acked ? (__u32)(acked_total - t->base_acked) : 0;
	/* the packet being built starts at the send frontier (a retransmission's is earlier: holding then is early,
	 * never late) */
	__u32 sent = acked + (skops->snd_nxt - skops->snd_una);
	__u32 rate;

	if (sent + skops->skb_len <= t->throttle_offset)
		return true;
	rate = t->pieces[piece_at(t, t->throttle_offset) & (TRICKLE_SCHEDULE_PIECES - 1)].rate_bytes_per_sec;
	set_pacing(skops, t, (__u64)rate * t->gain_milli / 1000);
	t->run.held_ns = bpf_ktime_get_ns();
	t->run.held_acked = acked_total;
	t->run.held_retrans = skops->total_retrans;
	t->run.held_segs_out = skops->data_segs_out;
	return false;
}

/*
 * The pacing rate a running phase holds the piece of rate `rate` to: gain x R, or R at the clamp's floor (judged at
 * the RTT the clamp is computed from).
 */
static __always_inline __u64 phase_pacing_rate(const struct trickle_clamp_target *t, __u64 rate, __u32 rtt_us,
					       __u32 mss)
{
	__u64 exact_bytes = rate * rtt_us / 1000000 * t->gain_milli / 1000;

	if (t->mode == TRICKLE_MODE_SCHEDULE && exact_bytes < (__u64)t->min_packets * mss)
		return rate;
	return rate * t->gain_milli / 1000;
}

/*
 * Whether the piece holding byte `sent` ends within two round trips at its pace: RTT samples come
 * about once per round trip, so a rate change found on them lets up to a round trip of the next
 * piece out at the previous piece's rate (a 64 kB piece at 0.25 Mbit/s after one at 4.5 went out
 * in 0.4 s instead of 1.7, and the phase ran 13 % ahead of its schedule). Near an edge each
 * packet built is watched instead.
 */
static __always_inline bool near_edge(const struct trickle_clamp_target *t, __u32 piece, __u32 sent,
				      __u64 pacing_bytes_per_sec, __u32 srtt_us, __u32 mss)
{
	if (piece + 1 >= t->piece_count)
		return false;
	return (__u64)sent + 2 * pacing_bytes_per_sec * srtt_us / 1000000 + 2 * (__u64)mss >=
	       t->pieces[piece & (TRICKLE_SCHEDULE_PIECES - 1)].end_offset;
}

/*
 * A data packet of a running phase near a piece's edge is being built: the pacer takes the rate of
 * the piece its first byte is in (the clamp follows on the next RTT sample). Returns whether to keep
 * watching (still near an edge). Not while catching up: the pacer is lifted then.
 */
static __always_inline bool follow_edge(struct bpf_sock_ops *skops, struct trickle_clamp_target *t)
{
	__u64 acked_total = skops->bytes_acked;
	__u32 acked = acked_total > t->base_acked ? (__u32)(acked_total - t->base_acked) : 0;
	__u32 sent = acked + (skops->snd_nxt - skops->snd_una);
	__u32 srtt_us = skops->srtt_us >> 3;
	__u32 mss = skops->mss_cache;
	__u32 piece;
	__u64 pacing;

	if (!scheduled(t) || t->piece_count == 0 || t->run.state == TRICKLE_SCHEDULE_DONE ||
	    t->run.state == TRICKLE_SCHEDULE_CATCHING_UP || mss == 0)
		return false;
	piece = piece_at(t, sent);
	pacing = phase_pacing_rate(t, t->pieces[piece & (TRICKLE_SCHEDULE_PIECES - 1)].rate_bytes_per_sec,
				   clamp_rtt_us(skops, t->clamp_rtt, srtt_us), mss);
	set_pacing(skops, t, pacing);
	return near_edge(t, piece, sent, pacing, srtt_us, mss);
}

/*
 * Algorithm 1 on an RTT sample of a scheduled response (in TRICKLE_MODE_PACE_SCHEDULE the same
 * schedule and catch-up, with the pacer alone and no clamp). Positions are the response's own:
 * bytes taken by the path so far are acked + in flight (snd_nxt - snd_una), as the user-space
 * meter counts them.
 */
static __always_inline void on_schedule_rtt(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u32 srtt_us,
					    __u32 mss)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 acked_total = skops->bytes_acked;
	__u32 acked = acked_total > t->base_acked ? (__u32)(acked_total - t->base_acked) : 0;
	__u32 sent = acked + (skops->snd_nxt - skops->snd_una);
	__u32 last_end;
	__u32 piece;
	__u32 clamp;
	__u64 exact_bytes;
	__u64 rate;
	__u64 elapsed_us;
	__u64 due;
	__s64 lag_us;
	struct path_view path;
	bool behind = false;
	bool clamps = t->mode == TRICKLE_MODE_SCHEDULE;
	__u32 clamp_rtt;

	if (t->piece_count == 0 || t->run.state == TRICKLE_SCHEDULE_DONE)
		return;
	last_end = t->pieces[(t->piece_count - 1) & (TRICKLE_SCHEDULE_PIECES - 1)].end_offset;
	piece = piece_at(t, sent);
	rate = t->pieces[piece & (TRICKLE_SCHEDULE_PIECES - 1)].rate_bytes_per_sec;
	clamp_rtt = clamp_rtt_us(skops, t->clamp_rtt, srtt_us);
	exact_bytes = rate * clamp_rtt / 1000000 * t->gain_milli / 1000;
	clamp = rate_clamp_of(exact_bytes, mss, t->min_packets);
	/*
	 * Startup, at full speed, lasts until the phase's first byte can go: its bytes sent and, of
	 * what is still in flight, no more than the clamp's window (a startup window drains first,
	 * or the phase's clock would start while none of its bytes can leave).
	 */
	if (t->run.phase_start_ns == 0 &&
	    (sent < t->throttle_offset || (clamps && acked < t->throttle_offset && skops->packets_out > clamp))) {
		/*
		 * RTT samples come about once per round trip (stretch ACKs) and none in loss recovery
		 * (Karn), so the hold below can be a round late: once the phase's bytes are leaving, the
		 * pacer holds them to gain x R while the startup drains.
		 */
		set_pacing(skops, t,
			   sent >= t->throttle_offset || t->run.held_ns != 0 ? rate * t->gain_milli / 1000 : 0);
		/* watch each packet built until the one carrying the phase's first byte (a keep-alive's earlier
		 * response may have stopped the watch) */
		if (t->run.held_ns == 0 && sent < t->throttle_offset)
			watch_headers(skops);
		if (!clamps)
			return;
		/*
		 * Hold what is in flight to the bytes before the phase once the window would carry
		 * bytes past it, so none of the phase leaves at startup speed.
		 */
		if (acked + (__u64)skops->snd_cwnd * mss > t->throttle_offset)
			apply(skops, t, rate_clamp_of(t->throttle_offset - acked, mss, t->min_packets), srtt_us);
		else
			release_step(skops, t, srtt_us, now);
		return;
	}
	if (acked >= last_end) {
		t->run.state = TRICKLE_SCHEDULE_DONE;
		set_pacing(skops, t, 0);
		return;
	}
	if (t->run.phase_start_ns == 0) {
		if (t->run.held_ns != 0) {
			/* held by the packet carrying its first byte: the phase, its clock and its counters began there
			 */
			t->run.phase_start_ns = t->run.held_ns;
			t->run.phase_start_acked = t->run.held_acked;
			t->run.phase_start_retrans = t->run.held_retrans;
			t->run.phase_start_segs_out = t->run.held_segs_out;
			t->run.phase_start_due_us = 0;
		} else {
			t->run.phase_start_ns = now;
			t->run.phase_start_acked = acked_total;
			t->run.phase_start_retrans = skops->total_retrans;
			t->run.phase_start_segs_out = skops->data_segs_out;
			t->run.phase_start_due_us = (__u32)due_us(t, sent);
		}
		t->run.phase_start_srtt_us = srtt_us;
		t->run.last_sample_ns = now;
		t->run.state = TRICKLE_SCHEDULE_CLAMPED;
	}
	if (t->run.state == TRICKLE_SCHEDULE_FLOOR)
		t->run.floor_ns += now - t->run.last_sample_ns;
	else if (t->run.state == TRICKLE_SCHEDULE_CATCHING_UP)
		t->run.catching_up_ns += now - t->run.last_sample_ns;
	t->run.last_sample_ns = now;

	elapsed_us = (now - t->run.phase_start_ns) / 1000;
	due = due_us(t, sent);
	due = due > t->run.phase_start_due_us ? due - t->run.phase_start_due_us : 0;
	lag_us = (__s64)elapsed_us - (__s64)due;
	if (lag_us > 0 && (__u64)lag_us > t->run.max_lag_us)
		t->run.max_lag_us = lag_us > 0xffffffffLL ? 0xffffffffU : (__u32)lag_us;

	/*
	 * Behind the schedule by more than the path's base RTT (acknowledgements' own lag) once the grace
	 * has passed, with bytes waiting in the socket: the path, not the sender, fell behind. Not srtt:
	 * it grows with the queue a slow link builds, and the lag would never exceed it. Lift the clamp
	 * (gradually) until on time again.
	 */
	/* the full tcp_sock is read only for a phase that may be behind (most samples find it on time) */
	if (t->run.state == TRICKLE_SCHEDULE_CATCHING_UP)
		behind = lag_us > 0;
	else if (elapsed_us >= t->grace_us && lag_us > 0) {
		path = view_path(skops, srtt_us);
		behind = lag_us > (__s64)path.min_rtt_us && path.notsent_bytes > 0;
	}
	if (behind) {
		if (t->run.state != TRICKLE_SCHEDULE_CATCHING_UP) {
			t->run.state = TRICKLE_SCHEDULE_CATCHING_UP;
			t->run.catch_ups += 1;
			count(TRICKLE_STAT_CATCH_UPS);
		}
		set_pacing(skops, t, 0);
		if (clamps)
			release_step(skops, t, srtt_us, now);
		return;
	}

	/* the next piece within reach: its first packet sets its rate */
	if (near_edge(t, piece, sent, phase_pacing_rate(t, rate, clamp_rtt, mss), srtt_us, mss))
		watch_headers(skops);
	if (!clamps) {
		t->run.state = TRICKLE_SCHEDULE_PACED;
		set_pacing(skops, t, rate * t->gain_milli / 1000);
		return;
	}
	if (exact_bytes < (__u64)t->min_packets * mss) {
		/* at the floor the clamp alone would let the window out faster than R: pace at R */
		t->run.state = TRICKLE_SCHEDULE_FLOOR;
		set_pacing(skops, t, rate);
	} else {
		t->run.state = TRICKLE_SCHEDULE_CLAMPED;
		/*
		 * The pacer holds the flow at gain x R under the clamp: a window of whole packets is up to
		 * one packet more than gain x R x srtt (+10 % at the floor's 10, measured 1.33 R on a piece
		 * whose exact window was 10.1), and lowering the clamp does not lower cwnd at once (the
		 * congestion control does, on a later ACK), so a window grown in startup would otherwise
		 * send the phase's first bytes in a burst. The clamp still bounds what is in flight.
		 */
		set_pacing(skops, t, rate * t->gain_milli / 1000);
	}
	t->run.cwnd_sum += skops->snd_cwnd;
	if (t->run.cwnd_min == 0 || skops->snd_cwnd < t->run.cwnd_min)
		t->run.cwnd_min = skops->snd_cwnd;
	if (skops->snd_cwnd > t->run.cwnd_max)
		t->run.cwnd_max = skops->snd_cwnd;
	apply(skops, t, clamp_to_apply(skops, t, clamp, srtt_us), clamp_rtt);
	t->run.clamp_sum += clamp;
	t->run.clamp_samples += 1;
	if (t->run.clamp_min == 0 || clamp < t->run.clamp_min)
		t->run.clamp_min = clamp;
	if (clamp > t->run.clamp_max)
		t->run.clamp_max = clamp;
}

static __always_inline void on_rtt(struct bpf_sock_ops *skops)
{
	__u64 cookie = bpf_get_socket_cookie(skops);
	struct trickle_clamp_target *t = bpf_map_lookup_elem(&trickle_targets, &cookie);
	/*
	 * Kernels >= 6.10 call back before storing the new srtt and pass it as args[1] (scaled by 8,
	 * as srtt_us is); older ones pass nothing and have stored it already.
	 */
	/* both loaded unconditionally: the verifier refuses a load through a chosen ctx offset */
	__u32 srtt_arg = skops->args[1];
	__u32 srtt_field = skops->srtt_us;
	__u32 srtt_us = (srtt_arg ? srtt_arg : srtt_field) >> 3;
	__u32 mss = skops->mss_cache;

	count(TRICKLE_STAT_RTT_SAMPLES);
	if (!t || mss == 0 || srtt_us == 0)
		return;
	switch (t->mode) {
	case TRICKLE_MODE_RATE: {
		__u32 clamp_rtt = clamp_rtt_us(skops, t->clamp_rtt, srtt_us);

		apply(skops, t, clamp_to_apply(skops, t, rate_clamp(t, clamp_rtt, mss), srtt_us), clamp_rtt);
		break;
	}
	case TRICKLE_MODE_PACKETS:
		apply(skops, t, t->fixed_packets, srtt_us);
		break;
	case TRICKLE_MODE_RELEASE_GRADUAL:
		set_pacing(skops, t, 0);
		release_step(skops, t, srtt_us, bpf_ktime_get_ns());
		break;
	case TRICKLE_MODE_RELEASE_IMMEDIATE:
		set_pacing(skops, t, 0);
		apply(skops, t, TRICKLE_CLAMP_UNLIMITED, srtt_us);
		break;
	case TRICKLE_MODE_SCHEDULE:
	case TRICKLE_MODE_PACE_SCHEDULE:
		on_schedule_rtt(skops, t, srtt_us, mss);
		break;
	}
}

static __always_inline void on_header(struct bpf_sock_ops *skops)
{
	__u64 cookie;
	struct trickle_clamp_target *t;
	int packets;
	int result;

	/*
	 * skb_len 0: an MSS computation, not a packet (one before each batch the stack sends). Once data
	 * has gone out there is nothing to do on it: the packets that follow decide whether the watch goes
	 * on, and the socket's entry is not looked up for it (about half of the watched callbacks).
	 */
	if (skops->skb_len == 0 && skops->data_segs_out != 0)
		return;
	cookie = bpf_get_socket_cookie(skops);
	t = bpf_map_lookup_elem(&trickle_targets, &cookie);
	if (skops->data_segs_out == 0) {
		/* nothing asked yet: keep watching, the first request may still choose one */
		if (!t || (t->initial_window_packets == 0 && !awaiting_phase(t)))
			return;
		if (t->initial_window_packets != 0 && t->initial_window_result == 0) {
			packets = (int)t->initial_window_packets;
			result = bpf_setsockopt(skops, SOL_TCP, TCP_BPF_IW, &packets, sizeof(packets));
			t->initial_window_result = result == 0 ? 1 : result;
			if (result)
				count(TRICKLE_STAT_SETSOCKOPT_ERRORS);
		}
	}
	if (t && awaiting_phase(t) && (skops->skb_len == 0 || hold_at_phase(skops, t)))
		return;
	if (t && t->run.phase_start_ns != 0 && follow_edge(skops, t))
		return;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags & ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

/*
 * The viewer left with a scheduled response still under the program: its FIN (CLOSE_WAIT, before
 * user space sees the end of the stream and closes the socket, which deletes the entry) or its
 * reset (CLOSE). The run and the connection's counters then go to trickle_closed, or the record of
 * an aborted response would have neither its phase nor its end. The first sign wins.
 */
static __always_inline void keep_closed_phase(struct bpf_sock_ops *skops, __u64 cookie)
{
	struct trickle_clamp_target *t = bpf_map_lookup_elem(&trickle_targets, &cookie);
	struct trickle_closed_phase closed = {};

	if (!t || !scheduled(t) || t->piece_count == 0)
		return;
	__builtin_memcpy(&closed.run, &t->run, sizeof(closed.run));
	closed.srtt_us = skops->srtt_us >> 3;
	closed.closed_ns = bpf_ktime_get_ns();
	closed.bytes_acked = skops->bytes_acked;
	closed.total_retrans = skops->total_retrans;
	closed.data_segs_out = skops->data_segs_out;
	bpf_map_update_elem(&trickle_closed, &cookie, &closed, BPF_NOEXIST);
}

SEC("sockops")
int trickle_sockops(struct bpf_sock_ops *skops)
{
	__u64 cookie;
	__u32 new_state;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG |
							 BPF_SOCK_OPS_STATE_CB_FLAG);
		/*
		 * Initial windows are for the origin's accepted connections; watching only those keeps
		 * client sockets in the cgroup (which may never send a data segment) off the header path.
		 * Apart: a kernel without header callbacks (< 5.10) refuses the whole set, and the clamp
		 * must not go with it.
		 */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG |
							 BPF_SOCK_OPS_STATE_CB_FLAG);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_header(skops);
		break;
	case BPF_SOCK_OPS_RTT_CB:
		on_rtt(skops);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		/* read once: the verifier refuses a second load through the ctx pointer the compiler offsets */
		new_state = skops->args[1];
		if (new_state != BPF_TCP_CLOSE_WAIT && new_state != BPF_TCP_CLOSE)
			break;
		cookie = bpf_get_socket_cookie(skops);
		keep_closed_phase(skops, cookie);
		if (new_state == BPF_TCP_CLOSE) {
			if (bpf_map_delete_elem(&trickle_targets, &cookie) == 0)
				count(TRICKLE_STAT_CLOSED_REMOVED);
		}
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
