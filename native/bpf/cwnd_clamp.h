/* Shared between the sock_ops program and the addon: the per-socket clamp target. */
#ifndef TRICKLE_CWND_CLAMP_H
#define TRICKLE_CWND_CLAMP_H

enum trickle_clamp_mode {
	/* no clamp (the entry carries only an initial window) */
	TRICKLE_MODE_NONE = 0,
	/* clamp = max(min_packets, ceil(gain * rate * srtt / mss)), recomputed on every RTT sample */
	TRICKLE_MODE_RATE = 1,
	/* clamp = fixed_packets */
	TRICKLE_MODE_PACKETS = 2,
	/* lift the clamp by doubling it once per RTT while cwnd is pressing against it */
	TRICKLE_MODE_RELEASE_GRADUAL = 3,
	/* lift the clamp in one step (restarts slow start: kept for comparison) */
	TRICKLE_MODE_RELEASE_IMMEDIATE = 4,
	/*
	 * All of Algorithm 1 in the kernel for one response: startup unclamped, then on every RTT sample
	 * clamp = max(floor, gain * R * srtt / mss) with R of the bytes being sent (a schedule by byte
	 * offset), the clamp lifted while the phase is behind its schedule, and at the floor the socket
	 * paced at R (SO_MAX_PACING_RATE) instead of a user-space write throttle.
	 */
	TRICKLE_MODE_SCHEDULE = 5,
	/*
	 * The same schedule with no clamp: kernel pacing (the `pacing` policy). SO_MAX_PACING_RATE at
	 * gain * R of the bytes being sent, set when the piece changes; lifted while the phase is behind
	 * its schedule. No floor: TCP's pacer spaces packets at any rate.
	 */
	TRICKLE_MODE_PACE_SCHEDULE = 6,
};

/*
 * The RTT a clamp is computed from. The paper's is srtt; srtt grows with the queue the clamp lets
 * build, so on a deep buffer a clamp from srtt grows with its own queue. The path's minimum RTT
 * (the kernel's windowed min_rtt) does not.
 */
enum trickle_clamp_rtt {
	TRICKLE_CLAMP_RTT_SMOOTHED = 0,
	TRICKLE_CLAMP_RTT_MIN = 1,
};

/* What the program is doing to a scheduled response (written by the program). */
enum trickle_schedule_state {
	TRICKLE_SCHEDULE_STARTUP = 0,
	TRICKLE_SCHEDULE_CLAMPED = 1,
	TRICKLE_SCHEDULE_FLOOR = 2,
	TRICKLE_SCHEDULE_CATCHING_UP = 3,
	TRICKLE_SCHEDULE_DONE = 4,
	/* TRICKLE_MODE_PACE_SCHEDULE: paced at gain * R */
	TRICKLE_SCHEDULE_PACED = 5,
};

/* a power of two: indices are masked with TRICKLE_SCHEDULE_PIECES - 1 for the verifier */
#define TRICKLE_SCHEDULE_PIECE_BITS 6
#define TRICKLE_SCHEDULE_PIECES	    (1 << TRICKLE_SCHEDULE_PIECE_BITS)

/* Offsets are the response's own (its first byte on the wire is 0); a response is at most 4 GiB. */
struct trickle_schedule_piece {
	/* where the piece ends (exclusive) */
	__u32 end_offset;
	/* R of the piece's bytes */
	__u32 rate_bytes_per_sec;
	/* the time the phase's bytes up to end_offset should take at their R, from the phase's first byte, microseconds
	 */
	__u32 due_us_at_end;
};
/* What the program did to a scheduled response (written by the program). */
struct trickle_schedule_run {
	__u32 state;
	__u32 catch_ups;
	__u64 phase_start_ns;
	__u64 phase_start_acked;
	__u32 phase_start_retrans;
	__u32 phase_start_segs_out;
	__u32 phase_start_srtt_us;
	__u32 phase_start_due_us;
	__u64 last_sample_ns;
	__u64 floor_ns;
	__u64 catching_up_ns;
	__u64 clamp_sum;
	__u32 clamp_samples;
	__u32 clamp_min;
	__u32 clamp_max;
	/* cwnd on the same samples (after the clamp applied on the previous one) */
	__u64 cwnd_sum;
	__u32 cwnd_min;
	__u32 cwnd_max;
	/* the furthest the phase fell behind its schedule, microseconds */
	__u32 max_lag_us;
	/*
	 * When the packet carrying the phase's first byte was built and the pacer held the phase at
	 * gain x R (0: not yet), with bytes_acked, retransmissions and data segments then: the phase
	 * begins there (its bytes leave from then on), not at the RTT sample after the startup drained.
	 */
	__u64 held_ns;
	__u64 held_acked;
	__u32 held_retrans;
	__u32 held_segs_out;
};

struct trickle_clamp_target {
	__u64 rate_bytes_per_sec;
	__u32 mode;
	__u32 gain_milli;
	__u32 min_packets;
	__u32 fixed_packets;
	/* written by the program: the clamp last applied (0: none yet), how many times, and when */
	__u32 applied_packets;
	__u32 updates;
	__u64 last_step_ns;
	/* set by user space before the first response: the connection's initial window (0: kernel default) */
	__u32 initial_window_packets;
	/* written by the program: 0 pending, 1 applied, or the negative errno of bpf_setsockopt */
	__s32 initial_window_result;

	/* TRICKLE_MODE_SCHEDULE, set by user space once per response */
	/* bytes the connection carried before the response (its first byte is acknowledged at bytes_acked == base_acked
	 * + 1) */
	__u64 base_acked;
	/* where the throttling phase begins */
	__u32 throttle_offset;
	__u32 piece_count;
	/* the phase is not judged behind its schedule before this much of it has passed */
	__u32 grace_us;
	__u32 schedule_id;
	struct trickle_schedule_piece pieces[TRICKLE_SCHEDULE_PIECES];

	/* SO_MAX_PACING_RATE the program set (0: none; TRICKLE_PACING_UNKNOWN: not known, so its next set writes it) */
	__u64 pacing_bytes_per_sec;
	/* written by the program for the scheduled response */
	struct trickle_schedule_run run;
	/* written by the program with applied_packets: the RTT (srtt, or the minimum under TRICKLE_CLAMP_RTT_MIN) and
	 * the mss that clamp was computed at */
	__u32 applied_rtt_us;
	__u32 applied_mss;
	/* set by user space with the rate or the schedule: enum trickle_clamp_rtt */
	__u32 clamp_rtt;
	/* written by the program: the ssthresh the congestion control last set below the applied clamp (its answer to a
	 * loss; 0: none seen on this connection) */
	__u32 cc_ssthresh;
	__u32 pad;
};

/*
 * A scheduled response whose viewer left before user space read what the program did (its FIN or
 * its reset; the entry goes with the socket). The program keeps the run and the connection's
 * counters then, by cookie, until user space takes them.
 */
struct trickle_closed_phase {
	struct trickle_schedule_run run;
	/* CLOCK_MONOTONIC */
	__u64 closed_ns;
	__u64 bytes_acked;
	__u32 total_retrans;
	__u32 data_segs_out;
	__u32 srtt_us;
	__u32 pad;
};

enum trickle_stat {
	TRICKLE_STAT_RTT_SAMPLES = 0,
	TRICKLE_STAT_CLAMP_UPDATES = 1,
	TRICKLE_STAT_CLOSED_REMOVED = 2,
	TRICKLE_STAT_SETSOCKOPT_ERRORS = 3,
	TRICKLE_STAT_CATCH_UPS = 4,
	TRICKLE_STAT_PACING_UPDATES = 5,
	TRICKLE_STAT_COUNT = 6,
};

#define TRICKLE_MAX_TARGETS 65536
/* closed phases not taken yet (the oldest go first) */
#define TRICKLE_MAX_CLOSED	4096
#define TRICKLE_CLAMP_UNLIMITED 0x7fffffff
/*
 * pacing_bytes_per_sec of a target user space wrote: the socket's SO_MAX_PACING_RATE may have changed since the
 * program last set it (the origin lifts it when a response ends), so the program's next set must write it.
 */
#define TRICKLE_PACING_UNKNOWN 0xffffffffffffffffULL

#endif
