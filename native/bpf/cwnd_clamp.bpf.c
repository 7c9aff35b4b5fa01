// SPDX-License-Identifier: GPL-2.0
/*
 * Trickle's per-socket congestion window clamp (Ghobadi et al., ATC'12, Algorithm 1) as a
 * sock_ops program attached to a cgroup v2. User space keys a target by socket cookie; the
 * program recomputes clamp = max(floor, gain * rate * srtt / mss) on every RTT sample, so the
 * clamp follows the live RTT between user-space updates. Entries die with their socket.
 *
 * The same entry can carry an initial window (TCP_BPF_IW) chosen after the connection was
 * accepted (per A/B group, drawn at its first request): TCP_BPF_IW is only accepted before the
 * first data segment, so the program watches outgoing headers until data goes out and sets it
 * as the first one is being built, then stops watching.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "cwnd_clamp.h"

#define SOL_TCP 6
#define TCP_BPF_IW 1001
#define TCP_BPF_SNDCWND_CLAMP 1002

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TRICKLE_MAX_TARGETS);
	__type(key, __u64);
	__type(value, struct trickle_clamp_target);
} trickle_targets SEC(".maps");

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

static __always_inline __u32 rate_clamp(const struct trickle_clamp_target *t, __u32 srtt_us, __u32 mss)
{
	/* bytes per RTT = rate * srtt; the product stays below 2^64 for rates < 1.8 TB/s and srtt < 10 s */
	__u64 bytes = t->rate_bytes_per_sec * srtt_us / 1000000;
	__u64 packets;

	bytes = bytes * t->gain_milli / 1000;
	packets = (bytes + mss - 1) / mss;
	if (packets < t->min_packets)
		packets = t->min_packets;
	if (packets > TRICKLE_CLAMP_UNLIMITED)
		packets = TRICKLE_CLAMP_UNLIMITED;
	return (__u32)packets;
}

static __always_inline void apply(struct bpf_sock_ops *skops, struct trickle_clamp_target *t, __u32 clamp)
{
	int value = (int)clamp;

	if (clamp == 0 || clamp == t->applied_packets)
		return;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, &value, sizeof(value))) {
		count(TRICKLE_STAT_SETSOCKOPT_ERRORS);
		return;
	}
	t->applied_packets = clamp;
	t->updates += 1;
	count(TRICKLE_STAT_CLAMP_UPDATES);
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
	__u64 now;

	count(TRICKLE_STAT_RTT_SAMPLES);
	if (!t || mss == 0 || srtt_us == 0)
		return;
	switch (t->mode) {
	case TRICKLE_MODE_RATE:
		apply(skops, t, rate_clamp(t, srtt_us, mss));
		break;
	case TRICKLE_MODE_PACKETS:
		apply(skops, t, t->fixed_packets);
		break;
	case TRICKLE_MODE_RELEASE_GRADUAL:
		/*
		 * The clamp also sets ssthresh: lifting it to "infinity" at once restarts slow start
		 * and overshoots the queue. Double it at most once per RTT, and only while cwnd is
		 * pressing against it, so the window grows no faster than the path acknowledges.
		 */
		now = bpf_ktime_get_ns();
		if (t->applied_packets == 0)
			t->applied_packets = skops->snd_cwnd;
		if (skops->snd_cwnd + 1 >= t->applied_packets && now - t->last_step_ns >= (__u64)srtt_us * 1000) {
			__u32 grown = t->applied_packets >= TRICKLE_CLAMP_UNLIMITED / 2 ? TRICKLE_CLAMP_UNLIMITED : t->applied_packets + t->applied_packets / 4 + 1;

			t->last_step_ns = now;
			apply(skops, t, grown);
		}
		break;
	case TRICKLE_MODE_RELEASE_IMMEDIATE:
		apply(skops, t, TRICKLE_CLAMP_UNLIMITED);
		break;
	}
}

static __always_inline void on_header(struct bpf_sock_ops *skops)
{
	__u64 cookie;
	struct trickle_clamp_target *t;
	int packets;
	int result;

	if (skops->data_segs_out == 0) {
		cookie = bpf_get_socket_cookie(skops);
		t = bpf_map_lookup_elem(&trickle_targets, &cookie);
		/* nothing asked yet: keep watching, the first request may still choose one */
		if (!t || t->initial_window_packets == 0)
			return;
		if (t->initial_window_result == 0) {
			packets = (int)t->initial_window_packets;
			result = bpf_setsockopt(skops, SOL_TCP, TCP_BPF_IW, &packets, sizeof(packets));
			t->initial_window_result = result == 0 ? 1 : result;
			if (result)
				count(TRICKLE_STAT_SETSOCKOPT_ERRORS);
		}
	}
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags & ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

SEC("sockops")
int trickle_sockops(struct bpf_sock_ops *skops)
{
	__u64 cookie;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG);
		/*
		 * Initial windows are for the origin's accepted connections; watching only those keeps
		 * client sockets in the cgroup (which may never send a data segment) off the header path.
		 * Apart: a kernel without header callbacks (< 5.10) refuses the whole set, and the clamp
		 * must not go with it.
		 */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_header(skops);
		break;
	case BPF_SOCK_OPS_RTT_CB:
		on_rtt(skops);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE) {
			cookie = bpf_get_socket_cookie(skops);
			if (bpf_map_delete_elem(&trickle_targets, &cookie) == 0)
				count(TRICKLE_STAT_CLOSED_REMOVED);
		}
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
