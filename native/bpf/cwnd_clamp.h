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
};

enum trickle_stat {
	TRICKLE_STAT_RTT_SAMPLES = 0,
	TRICKLE_STAT_CLAMP_UPDATES = 1,
	TRICKLE_STAT_CLOSED_REMOVED = 2,
	TRICKLE_STAT_SETSOCKOPT_ERRORS = 3,
	TRICKLE_STAT_COUNT = 4,
};

#define TRICKLE_MAX_TARGETS 65536
#define TRICKLE_CLAMP_UNLIMITED 0x7fffffff

#endif
