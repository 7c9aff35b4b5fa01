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
 * newer frames of a link wait for its older ones.
 *
 * --links FILE gives a population of access links: one line per viewer address,
 * "<ipv4> <delay-ab-us> <delay-ba-us> <loss-ab> <loss-ba>". A frame a->b belongs to the link of
 * its IPv4 destination, b->a to that of its source; other frames (ARP, unknown addresses) take
 * the default delay and loss. Every frame waits in one time-ordered heap per direction, so links
 * with different delays share the process and its queue memory. SIGHUP re-reads the file too
 * (the set of addresses is fixed at start; their delay and loss may change).
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
	/* arrival order: frames due at the same nanosecond leave in the order they came */
	uint64_t sequence;
	uint32_t length;
	uint32_t link;
	unsigned char data[FRAME_MAX];
};

struct link_counters {
	uint64_t received, forwarded, dropped_loss, dropped_overflow, send_errors;
};

/* One access link's side in one direction. */
struct link_direction {
	uint64_t delay_ns;
	double loss;
	/* the latest release time given to a frame of this link: keeps the link FIFO when its delay falls */
	uint64_t last_release_ns;
	struct link_counters counters;
};

/* links[0] is the default (frames of no listed address); links[1..] are sorted by address. */
struct link {
	uint32_t address; /* host byte order */
	struct link_direction direction[2];
};

struct links {
	struct link *entries;
	uint32_t count;
};

struct direction {
	const char *name;
	int index; /* 0: a->b, keyed by the IPv4 destination; 1: b->a, keyed by the source */
	int in_fd;
	int out_fd;
	struct frame *frames;
	uint32_t capacity;
	uint32_t *free_slots; /* a stack of free frame indices */
	uint32_t free_count;
	uint32_t *heap; /* frame indices, a min-heap on (release_ns, sequence) */
	uint32_t heap_count;
	uint64_t next_sequence;
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
		/* Frames waiting in the egress qdisc count against the send buffer: keep it larger than any bottleneck
		 * buffer. */
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

static int frame_before(const struct frame *a, const struct frame *b)
{
	return a->release_ns < b->release_ns || (a->release_ns == b->release_ns && a->sequence < b->sequence);
}

static void heap_push(struct direction *d, uint32_t slot)
{
	uint32_t i = d->heap_count++;

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!frame_before(&d->frames[slot], &d->frames[d->heap[parent]]))
			break;
		d->heap[i] = d->heap[parent];
		i = parent;
	}
	d->heap[i] = slot;
}

static uint32_t heap_pop(struct direction *d)
{
	uint32_t top = d->heap[0], last = d->heap[--d->heap_count], i = 0;

	for (;;) {
		uint32_t child = 2 * i + 1;

		if (child >= d->heap_count)
			break;
		if (child + 1 < d->heap_count &&
		    frame_before(&d->frames[d->heap[child + 1]], &d->frames[d->heap[child]]))
			child++;
		if (!frame_before(&d->frames[d->heap[child]], &d->frames[last]))
			break;
		d->heap[i] = d->heap[child];
		i = child;
	}
	if (d->heap_count > 0)
		d->heap[i] = last;
	return top;
}

/* The link of a frame: a->b by its IPv4 destination, b->a by its source; 0 for anything else. */
static uint32_t link_of(const struct links *links, const struct direction *d, const unsigned char *data, ssize_t length)
{
	/* virtio-net header (10), Ethernet (14), then the IPv4 header: source at 12, destination at 16 */
	const unsigned char *ip = data + 10 + 14;
	uint32_t address, lo = 1, hi;

	if (links->count <= 1 || length < 10 + 14 + 20 || data[10 + 12] != 0x08 || data[10 + 13] != 0x00)
		return 0;
	address = (uint32_t)ip[d->index == 0 ? 16 : 12] << 24 | (uint32_t)ip[d->index == 0 ? 17 : 13] << 16 |
		  (uint32_t)ip[d->index == 0 ? 18 : 14] << 8 | (uint32_t)ip[d->index == 0 ? 19 : 15];
	hi = links->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (links->entries[mid].address < address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < links->count && links->entries[lo].address == address ? lo : 0;
}

static void receive_all(struct direction *d, struct links *links)
{
	for (;;) {
		unsigned char scratch[FRAME_MAX];
		uint32_t slot = d->free_count > 0 ? d->free_slots[d->free_count - 1] : UINT32_MAX;
		unsigned char *target = slot == UINT32_MAX ? scratch : d->frames[slot].data;
		struct link_direction *link;
		struct frame *frame;
		uint32_t link_index;
		uint64_t release;
		ssize_t length = recv(d->in_fd, target, FRAME_MAX, MSG_TRUNC);

		if (length < 0)
			return;
		d->received++;
		if (length > FRAME_MAX) {
			d->dropped_oversize++;
			continue;
		}
		link_index = link_of(links, d, target, length);
		link = &links->entries[link_index].direction[d->index];
		link->counters.received++;
		if (link->loss > 0 && next_uniform() < link->loss) {
			d->dropped_loss++;
			link->counters.dropped_loss++;
			continue;
		}
		if (slot == UINT32_MAX) {
			d->dropped_overflow++;
			link->counters.dropped_overflow++;
			continue;
		}
		d->free_count--;
		release = now_ns() + link->delay_ns;
		if (release < link->last_release_ns)
			release = link->last_release_ns;
		link->last_release_ns = release;
		frame = &d->frames[slot];
		frame->length = (uint32_t)length;
		frame->link = link_index;
		frame->release_ns = release;
		frame->sequence = d->next_sequence++;
		heap_push(d, slot);
	}
}

static void send_due(struct direction *d, struct links *links, uint64_t now)
{
	while (d->heap_count > 0 && d->frames[d->heap[0]].release_ns <= now) {
		uint32_t slot = heap_pop(d);
		struct frame *frame = &d->frames[slot];
		struct link_counters *counters = &links->entries[frame->link].direction[d->index].counters;

		/* ENOBUFS here is the bottleneck queue (TBF, or the link's class) dropping: count it, as a router
		 * would. */
		if (send(d->out_fd, frame->data, frame->length, 0) < 0) {
			d->send_errors++;
			counters->send_errors++;
		} else {
			d->forwarded++;
			counters->forwarded++;
		}
		d->free_slots[d->free_count++] = slot;
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
	printf("\"%s\":{\"received\":%llu,\"forwarded\":%llu,\"droppedLoss\":%llu,\"droppedOverflow\":%llu,"
	       "\"droppedOversize\":%llu,\"droppedSocket\":%llu,\"sendErrors\":%llu,\"queued\":%u}",
	       d->name, (unsigned long long)d->received, (unsigned long long)d->forwarded,
	       (unsigned long long)d->dropped_loss, (unsigned long long)d->dropped_overflow,
	       (unsigned long long)d->dropped_oversize, (unsigned long long)d->dropped_socket,
	       (unsigned long long)d->send_errors, d->heap_count);
}

static void print_link_counters(const char *name, const struct link_counters *c)
{
	printf("\"%s\":{\"received\":%llu,\"forwarded\":%llu,\"droppedLoss\":%llu,\"droppedOverflow\":%llu,"
	       "\"sendErrors\":%llu}",
	       name, (unsigned long long)c->received, (unsigned long long)c->forwarded,
	       (unsigned long long)c->dropped_loss, (unsigned long long)c->dropped_overflow,
	       (unsigned long long)c->send_errors);
}

static void print_stats(struct direction *ab, struct direction *ba, const struct links *links)
{
	collect_socket_drops(ab);
	collect_socket_drops(ba);
	printf("{");
	print_direction(ab);
	printf(",");
	print_direction(ba);
	if (links->count > 1) {
		printf(",\"links\":[");
		for (uint32_t i = 1; i < links->count; i++) {
			uint32_t a = links->entries[i].address;

			printf("%s{\"address\":\"%u.%u.%u.%u\",", i > 1 ? "," : "", a >> 24, (a >> 16) & 255,
			       (a >> 8) & 255, a & 255);
			print_link_counters("ab", &links->entries[i].direction[0].counters);
			printf(",");
			print_link_counters("ba", &links->entries[i].direction[1].counters);
			printf("}");
		}
		printf("]");
	}
	printf("}\n");
	fflush(stdout);
}

static int parse_number(const char *text, double min, double max, double *out);

static void reload_control(const char *path, struct links *links)
{
	char key[32], text[64];
	double value;
	FILE *file = fopen(path, "r");
	struct link *fallback = &links->entries[0];

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
			fallback->direction[0].delay_ns = (uint64_t)(value * 1000);
		else if (strcmp(key, "delay-ba-us") == 0)
			fallback->direction[1].delay_ns = (uint64_t)(value * 1000);
		else if (strcmp(key, "loss-ab") == 0)
			fallback->direction[0].loss = value;
		else if (strcmp(key, "loss-ba") == 0)
			fallback->direction[1].loss = value;
		else
			fprintf(stderr, "delayline: unknown control key %s\n", key);
	}
	fclose(file);
}

static int compare_links(const void *a, const void *b)
{
	uint32_t x = ((const struct link *)a)->address, y = ((const struct link *)b)->address;

	return x < y ? -1 : x > y;
}

/*
 * Reads --links. At start (links->count == 1, only the default) it builds the table; on a reload
 * it updates the delay and loss of addresses already known and refuses new ones. Returns 0, or -1
 * with a one-line reason on stderr.
 */
static int load_links(const char *path, struct links *links)
{
	char line[256];
	unsigned int line_number = 0;
	int building = links->count == 1, status = 0;
	FILE *file = fopen(path, "r");

	if (!file) {
		fprintf(stderr, "delayline: cannot read links file %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), file)) {
		char address_text[32], delay_ab[32], delay_ba[32], loss_ab[32], loss_ba[32];
		struct link entry = {0};
		struct in_addr address;
		double values[4];
		int fields;

		line_number++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		fields = sscanf(line, "%31s %31s %31s %31s %31s", address_text, delay_ab, delay_ba, loss_ab, loss_ba);
		if (fields != 5 || inet_pton(AF_INET, address_text, &address) != 1 ||
		    parse_number(delay_ab, 0, 10e6, &values[0]) || parse_number(delay_ba, 0, 10e6, &values[1]) ||
		    parse_number(loss_ab, 0, 1, &values[2]) || parse_number(loss_ba, 0, 1, &values[3])) {
			fprintf(stderr,
				"delayline: %s line %u is not \"<ipv4> <delay-ab-us> <delay-ba-us> <loss-ab> "
				"<loss-ba>\"\n",
				path, line_number);
			status = -1;
			break;
		}
		entry.address = ntohl(address.s_addr);
		entry.direction[0].delay_ns = (uint64_t)(values[0] * 1000);
		entry.direction[1].delay_ns = (uint64_t)(values[1] * 1000);
		entry.direction[0].loss = values[2];
		entry.direction[1].loss = values[3];
		if (building) {
			struct link *grown = realloc(links->entries, (links->count + 1) * sizeof(struct link));

			if (!grown) {
				fprintf(stderr, "delayline: out of memory reading %s\n", path);
				status = -1;
				break;
			}
			links->entries = grown;
			links->entries[links->count++] = entry;
		} else {
			struct link *known = bsearch(&entry, links->entries + 1, links->count - 1, sizeof(struct link),
						     compare_links);

			if (!known) {
				fprintf(stderr,
					"delayline: %s line %u: %s was not a link at start (restart to add links)\n",
					path, line_number, address_text);
				continue;
			}
			for (int i = 0; i < 2; i++) {
				known->direction[i].delay_ns = entry.direction[i].delay_ns;
				known->direction[i].loss = entry.direction[i].loss;
			}
		}
	}
	fclose(file);
	if (status == 0 && building) {
		qsort(links->entries + 1, links->count - 1, sizeof(struct link), compare_links);
		for (uint32_t i = 2; i < links->count; i++) {
			if (links->entries[i].address == links->entries[i - 1].address) {
				fprintf(stderr, "delayline: %s lists an address twice\n", path);
				return -1;
			}
		}
	}
	return status;
}

static void usage(void)
{
	fprintf(stderr, "usage: delayline --if-a IF --if-b IF [--delay-ab-us N] [--delay-ba-us N]\n"
			"                 [--loss-ab P] [--loss-ba P] [--seed N] [--queue-frames N] [--control FILE]\n"
			"                 [--links FILE]\n"
			"  a->b frames get delay-ab and loss-ab (a probability 0..1), b->a likewise; with --links,\n"
			"  frames of a listed address (a->b by destination, b->a by source) get that link's.\n");
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

static int allocate_direction(struct direction *d, uint32_t capacity)
{
	d->capacity = capacity;
	d->frames = calloc(capacity, sizeof(struct frame));
	d->free_slots = calloc(capacity, sizeof(uint32_t));
	d->heap = calloc(capacity, sizeof(uint32_t));
	if (!d->frames || !d->free_slots || !d->heap)
		return -1;
	for (uint32_t i = 0; i < capacity; i++)
		d->free_slots[i] = capacity - 1 - i;
	d->free_count = capacity;
	return 0;
}

static void free_direction(struct direction *d)
{
	free(d->frames);
	free(d->free_slots);
	free(d->heap);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"if-a", required_argument, 0, 'a'},
		{"if-b", required_argument, 0, 'b'},
		{"delay-ab-us", required_argument, 0, 'd'},
		{"delay-ba-us", required_argument, 0, 'e'},
		{"loss-ab", required_argument, 0, 'l'},
		{"loss-ba", required_argument, 0, 'm'},
		{"seed", required_argument, 0, 's'},
		{"queue-frames", required_argument, 0, 'q'},
		{"control", required_argument, 0, 'c'},
		{"links", required_argument, 0, 'k'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct direction ab = {.name = "ab", .index = 0, .in_fd = -1}, ba = {.name = "ba", .index = 1, .in_fd = -1};
	struct links links = {0};
	const char *if_a = NULL, *if_b = NULL, *control = NULL, *links_path = NULL;
	double value, capacity = 16384;
	struct sigaction action;
	int option, status = 1;

	rng_state = 0x9e3779b97f4a7c15ull;
	links.entries = calloc(1, sizeof(struct link));
	if (!links.entries)
		return 1;
	links.count = 1;
	while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (option) {
		case 'a':
			if_a = optarg;
			break;
		case 'b':
			if_b = optarg;
			break;
		case 'd':
			if (parse_number(optarg, 0, 10e6, &value))
				goto bad;
			links.entries[0].direction[0].delay_ns = (uint64_t)(value * 1000);
			break;
		case 'e':
			if (parse_number(optarg, 0, 10e6, &value))
				goto bad;
			links.entries[0].direction[1].delay_ns = (uint64_t)(value * 1000);
			break;
		case 'l':
			if (parse_number(optarg, 0, 1, &links.entries[0].direction[0].loss))
				goto bad;
			break;
		case 'm':
			if (parse_number(optarg, 0, 1, &links.entries[0].direction[1].loss))
				goto bad;
			break;
		case 's':
			if (parse_number(optarg, 0, 1.8e19, &value))
				goto bad;
			rng_state = (uint64_t)value * 2654435761ull + 1;
			break;
		case 'q':
			if (parse_number(optarg, 16, 1 << 20, &capacity))
				goto bad;
			break;
		case 'c':
			control = optarg;
			break;
		case 'k':
			links_path = optarg;
			break;
		case 'h':
			usage();
			free(links.entries);
			return 0;
		default:
			goto bad;
		}
	}
	if (!if_a || !if_b)
		goto bad;
	if (links_path && load_links(links_path, &links) != 0)
		goto cleanup;
	if (allocate_direction(&ab, (uint32_t)capacity) || allocate_direction(&ba, (uint32_t)capacity)) {
		fprintf(stderr, "delayline: cannot allocate queues of %u frames\n", (uint32_t)capacity);
		goto cleanup;
	}
	ab.in_fd = ba.out_fd = open_interface(if_a);
	if (ab.in_fd < 0)
		goto cleanup;
	ba.in_fd = ab.out_fd = open_interface(if_b);
	if (ba.in_fd < 0)
		goto cleanup;

	memset(&action, 0, sizeof(action));
	action.sa_handler = on_signal;
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGUSR1, &action, NULL);
	sigaction(SIGHUP, &action, NULL);
	printf("{\"ready\":true,\"links\":%u}\n", links.count - 1);
	fflush(stdout);

	status = 0;
	while (!stop_requested) {
		struct pollfd fds[2] = {{.fd = ab.in_fd, .events = POLLIN}, {.fd = ba.in_fd, .events = POLLIN}};
		uint64_t now = now_ns(), next = UINT64_MAX;
		struct timespec timeout, *timeout_ptr = NULL;

		if (ab.heap_count > 0)
			next = ab.frames[ab.heap[0]].release_ns;
		if (ba.heap_count > 0 && ba.frames[ba.heap[0]].release_ns < next)
			next = ba.frames[ba.heap[0]].release_ns;
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
			receive_all(&ab, &links);
		if (fds[1].revents & POLLIN)
			receive_all(&ba, &links);
		now = now_ns();
		send_due(&ab, &links, now);
		send_due(&ba, &links, now);
		if (reload_requested) {
			reload_requested = 0;
			if (control)
				reload_control(control, &links);
			if (links_path)
				load_links(links_path, &links);
		}
		if (stats_requested) {
			stats_requested = 0;
			print_stats(&ab, &ba, &links);
		}
	}
	print_stats(&ab, &ba, &links);

cleanup:
	if (ab.in_fd >= 0)
		close(ab.in_fd);
	if (ba.in_fd >= 0)
		close(ba.in_fd);
	free_direction(&ab);
	free_direction(&ba);
	free(links.entries);
	return status;

bad:
	usage();
	free(links.entries);
	return 2;
}
