/*
 * delayline: a layer-2 propagation delay (and optional random loss) between two interfaces,
 * for kernels without netem. Run in the lab's router namespace: every frame arriving on one
 * interface is held for the configured one-way delay, then sent out of the other. A seeded
 * xorshift generator makes random loss reproducible. The bottleneck (rate, tail-drop buffer) is
 * a TBF qdisc on the egress interface: frames sent here go through it.
 *
 * SIGUSR1 prints the counters as one JSON line; SIGTERM/SIGINT print them and exit. SIGHUP
 * re-reads --control FILE ("delay-ab-us N", "delay-ba-us N", "loss-ab P", "loss-ba P" lines), so
 * a trace can change the delay or loss of a running link. A lower delay never reorders frames:
 * the queue stays FIFO and newer frames wait for older ones.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* an Ethernet frame up to 1514 bytes (offloads are off) behind its 10-byte virtio-net header */
#define FRAME_MAX 2048

struct frame {
	uint64_t release_ns;
	uint32_t length;
	unsigned char data[FRAME_MAX];
};

struct direction {
	const char *name;
	int in_fd;
	int out_fd;
	uint64_t delay_ns;
	double loss;
	struct frame *ring;
	uint32_t capacity;
	uint32_t head;
	uint32_t count;
	uint64_t received, forwarded, dropped_loss, dropped_overflow, dropped_oversize, send_errors;
	/* frames the kernel dropped before we could read them (PACKET_STATISTICS) */
	uint64_t dropped_socket;
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stats_requested;
static volatile sig_atomic_t reload_requested;
static uint64_t rng_state;

static void on_signal(int signal_number)
{
	if (signal_number == SIGUSR1)
		stats_requested = 1;
	else if (signal_number == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: small, fast, and reproducible for a given seed. */
static double next_uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int open_interface(const char *name)
{
	struct sockaddr_ll address;
	int one = 1;
	int fd;
	unsigned int index = if_nametoindex(name);

	if (index == 0) {
		fprintf(stderr, "delayline: no interface %s: %s\n", name, strerror(errno));
		return -1;
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (fd < 0) {
		fprintf(stderr, "delayline: socket(AF_PACKET): %s (needs CAP_NET_RAW)\n", strerror(errno));
		return -1;
	}
	memset(&address, 0, sizeof(address));
	address.sll_family = AF_PACKET;
	address.sll_protocol = htons(ETH_P_ALL);
	address.sll_ifindex = (int)index;
	if (bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
		fprintf(stderr, "delayline: bind %s: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	/*
	 * Line-rate bursts (a whole congestion window arriving back to back) must not overflow the
	 * socket: losses belong in the bottleneck queue, not here. Root may exceed rmem/wmem_max.
	 */
	{
		int bytes = 32 * 1024 * 1024;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) != 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
		/* Frames waiting in the egress qdisc count against the send buffer: keep it larger than any bottleneck buffer. */
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)) != 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
	}
	/*
	 * A frame from a host whose NIC offloads checksums carries an unfinished one (the sender's
	 * kernel leaves it to the "hardware"). The virtio-net header, read with each frame and handed
	 * back with it, tells the kernel to finish it on the way out: without it the far host drops
	 * every TCP segment while ICMP, never offloaded, gets through.
	 */
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0) {
		fprintf(stderr, "delayline: PACKET_VNET_HDR on %s: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	/* Frames we send out of this interface must not come back to us as input. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0) {
		fprintf(stderr, "delayline: PACKET_IGNORE_OUTGOING on %s: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void receive_all(struct direction *d)
{
	for (;;) {
		struct frame *slot;
		unsigned char scratch[FRAME_MAX];
		unsigned char *target = scratch;
		ssize_t length;

		if (d->count < d->capacity) {
			slot = &d->ring[(d->head + d->count) % d->capacity];
			target = slot->data;
		} else {
			slot = NULL;
		}
		length = recv(d->in_fd, target, FRAME_MAX, MSG_TRUNC);
		if (length < 0)
			return;
		d->received++;
		if (length > FRAME_MAX) {
			d->dropped_oversize++;
			continue;
		}
		if (d->loss > 0 && next_uniform() < d->loss) {
			d->dropped_loss++;
			continue;
		}
		if (slot == NULL) {
			d->dropped_overflow++;
			continue;
		}
		slot->length = (uint32_t)length;
		slot->release_ns = now_ns() + d->delay_ns;
		d->count++;
	}
}

static void send_due(struct direction *d, uint64_t now)
{
	while (d->count > 0) {
		struct frame *slot = &d->ring[d->head];

		if (slot->release_ns > now)
			return;
		/* ENOBUFS here is the bottleneck queue (TBF) dropping: count it, as a router would. */
		if (send(d->out_fd, slot->data, slot->length, 0) < 0)
			d->send_errors++;
		else
			d->forwarded++;
		d->head = (d->head + 1) % d->capacity;
		d->count--;
	}
}

static void collect_socket_drops(struct direction *d)
{
	struct tpacket_stats stats;
	socklen_t length = sizeof(stats);

	/* Reading the statistics resets them in the kernel: accumulate. */
	if (getsockopt(d->in_fd, SOL_PACKET, PACKET_STATISTICS, &stats, &length) == 0)
		d->dropped_socket += stats.tp_drops;
}

static void print_direction(const struct direction *d)
{
	printf("\"%s\":{\"received\":%llu,\"forwarded\":%llu,\"droppedLoss\":%llu,\"droppedOverflow\":%llu,\"droppedOversize\":%llu,\"droppedSocket\":%llu,\"sendErrors\":%llu,\"queued\":%u}",
	       d->name, (unsigned long long)d->received, (unsigned long long)d->forwarded, (unsigned long long)d->dropped_loss,
	       (unsigned long long)d->dropped_overflow, (unsigned long long)d->dropped_oversize, (unsigned long long)d->dropped_socket,
	       (unsigned long long)d->send_errors, d->count);
}

static void print_stats(struct direction *ab, struct direction *ba)
{
	collect_socket_drops(ab);
	collect_socket_drops(ba);
	printf("{");
	print_direction(ab);
	printf(",");
	print_direction(ba);
	printf("}\n");
	fflush(stdout);
}

static int parse_number(const char *text, double min, double max, double *out);

static void reload_control(const char *path, struct direction *ab, struct direction *ba)
{
	char key[32], text[64];
	double value;
	FILE *file = fopen(path, "r");

	if (!file) {
		fprintf(stderr, "delayline: cannot read control file %s: %s\n", path, strerror(errno));
		return;
	}
	while (fscanf(file, "%31s %63s", key, text) == 2) {
		int is_delay = strncmp(key, "delay-", 6) == 0;

		if (parse_number(text, 0, is_delay ? 10e6 : 1, &value)) {
			fprintf(stderr, "delayline: bad value %s for %s\n", text, key);
			continue;
		}
		if (strcmp(key, "delay-ab-us") == 0)
			ab->delay_ns = (uint64_t)(value * 1000);
		else if (strcmp(key, "delay-ba-us") == 0)
			ba->delay_ns = (uint64_t)(value * 1000);
		else if (strcmp(key, "loss-ab") == 0)
			ab->loss = value;
		else if (strcmp(key, "loss-ba") == 0)
			ba->loss = value;
		else
			fprintf(stderr, "delayline: unknown control key %s\n", key);
	}
	fclose(file);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: delayline --if-a IF --if-b IF [--delay-ab-us N] [--delay-ba-us N]\n"
		"                 [--loss-ab P] [--loss-ba P] [--seed N] [--queue-frames N] [--control FILE]\n"
		"  a->b frames get delay-ab and loss-ab (a probability 0..1), b->a likewise.\n");
}

static int parse_number(const char *text, double min, double max, double *out)
{
	char *end;
	double value = strtod(text, &end);

	if (end == text || *end != '\0' || value < min || value > max)
		return -1;
	*out = value;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"if-a", required_argument, 0, 'a'}, {"if-b", required_argument, 0, 'b'},
		{"delay-ab-us", required_argument, 0, 'd'}, {"delay-ba-us", required_argument, 0, 'e'},
		{"loss-ab", required_argument, 0, 'l'}, {"loss-ba", required_argument, 0, 'm'},
		{"seed", required_argument, 0, 's'}, {"queue-frames", required_argument, 0, 'q'},
		{"control", required_argument, 0, 'c'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	struct direction ab = {.name = "ab"}, ba = {.name = "ba"};
	const char *if_a = NULL, *if_b = NULL, *control = NULL;
	double value, capacity = 16384;
	struct sigaction action;
	int option, status = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (option) {
		case 'a': if_a = optarg; break;
		case 'b': if_b = optarg; break;
		case 'd': if (parse_number(optarg, 0, 10e6, &value)) goto bad; ab.delay_ns = (uint64_t)(value * 1000); break;
		case 'e': if (parse_number(optarg, 0, 10e6, &value)) goto bad; ba.delay_ns = (uint64_t)(value * 1000); break;
		case 'l': if (parse_number(optarg, 0, 1, &ab.loss)) goto bad; break;
		case 'm': if (parse_number(optarg, 0, 1, &ba.loss)) goto bad; break;
		case 's': if (parse_number(optarg, 0, 1.8e19, &value)) goto bad; rng_state = (uint64_t)value * 2654435761ull + 1; break;
		case 'q': if (parse_number(optarg, 16, 1 << 20, &capacity)) goto bad; break;
		case 'c': control = optarg; break;
		case 'h': usage(); return 0;
		default: goto bad;
		}
	}
	if (!if_a || !if_b)
		goto bad;

	ab.capacity = ba.capacity = (uint32_t)capacity;
	ab.ring = calloc(ab.capacity, sizeof(struct frame));
	ba.ring = calloc(ba.capacity, sizeof(struct frame));
	if (!ab.ring || !ba.ring) {
		fprintf(stderr, "delayline: cannot allocate queues of %u frames\n", ab.capacity);
		return 1;
	}
	ab.in_fd = ba.out_fd = open_interface(if_a);
	ba.in_fd = ab.out_fd = open_interface(if_b);
	if (ab.in_fd < 0 || ba.in_fd < 0)
		return 1;

	memset(&action, 0, sizeof(action));
	action.sa_handler = on_signal;
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGUSR1, &action, NULL);
	sigaction(SIGHUP, &action, NULL);
	printf("{\"ready\":true}\n");
	fflush(stdout);

	while (!stop_requested) {
		struct pollfd fds[2] = {{.fd = ab.in_fd, .events = POLLIN}, {.fd = ba.in_fd, .events = POLLIN}};
		uint64_t now = now_ns(), next = UINT64_MAX;
		struct timespec timeout, *timeout_ptr = NULL;

		if (ab.count > 0)
			next = ab.ring[ab.head].release_ns;
		if (ba.count > 0 && ba.ring[ba.head].release_ns < next)
			next = ba.ring[ba.head].release_ns;
		if (next != UINT64_MAX) {
			uint64_t wait = next > now ? next - now : 0;

			timeout.tv_sec = (time_t)(wait / 1000000000ull);
			timeout.tv_nsec = (long)(wait % 1000000000ull);
			timeout_ptr = &timeout;
		}
		if (ppoll(fds, 2, timeout_ptr, NULL) < 0 && errno != EINTR) {
			fprintf(stderr, "delayline: ppoll: %s\n", strerror(errno));
			status = 1;
			break;
		}
		if (fds[0].revents & POLLIN)
			receive_all(&ab);
		if (fds[1].revents & POLLIN)
			receive_all(&ba);
		now = now_ns();
		send_due(&ab, now);
		send_due(&ba, now);
		if (reload_requested && control) {
			reload_requested = 0;
			reload_control(control, &ab, &ba);
		}
		if (stats_requested) {
			stats_requested = 0;
			print_stats(&ab, &ba);
		}
	}
	print_stats(&ab, &ba);
	close(ab.in_fd);
	close(ba.in_fd);
	free(ab.ring);
	free(ba.ring);
	return status;

bad:
	usage();
	return 2;
}
