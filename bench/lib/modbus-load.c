/*
 * The closed-loop Modbus load client of benchmark 3: FC3 reads of 2 holding registers over N
 * connections with D requests in flight on each, for a while, then one JSON line with the
 * figures (the same fields as modbus-load-worker.mjs prints).
 *
 * Why C, and why by hand: the rate of one pipelined connection is bounded by how fast the client
 * turns an answer into the next request. A node:net client needs a full event-loop turn per
 * chunk (measured here: about 40k answers/s against a server that answers without parsing, the
 * same for Mimic), so it measured itself, not the servers. No packaged Modbus tool pipelines
 * (mbpoll and libmodbus wait for each answer). This client keeps its sockets non-blocking and
 * polls them in a loop: it never sleeps, so it costs one core and leaves the other to the server
 * under test, whichever server that is.
 *
 * Build: cc -O2 -o modbus-load bench/lib/modbus-load.c
 * Run:   ./modbus-load <port> <connections> <depth> <warmup ms> <duration ms> [unit id] [address]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 256
#define MAX_DEPTH 256
#define REQUEST 12
#define ANSWER 13                 /* MBAP 7 + FC + byte count + 2 registers */
#define BUCKETS 200000            /* latency histogram: 1 us buckets up to 200 ms */

struct connection {
  int fd;
  unsigned tx;
  unsigned char in[65536];
  int have;
  double sent_at[65536];          /* by transaction id */
};

static struct connection *connections;
static unsigned long histogram[BUCKETS + 1];
static long responses, sent, failures;
static int measuring;
static char problem[256];
static int unit_id = 1, address = 0;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  failures++;
  if (!problem[0]) snprintf(problem, sizeof problem, "%s", what);
}

/* Sends `count` new requests on one connection in one write. */
static void send_requests(struct connection *c, int count) {
  unsigned char frame[REQUEST * MAX_DEPTH];
  double at = now();
  for (int i = 0; i < count; i++) {
    unsigned char *p = frame + REQUEST * i;
    c->tx = (c->tx + 1) & 0xffff;
    p[0] = (unsigned char)(c->tx >> 8); p[1] = (unsigned char)c->tx;
    p[2] = 0; p[3] = 0; p[4] = 0; p[5] = 6;
    p[6] = (unsigned char)unit_id; p[7] = 3;
    p[8] = (unsigned char)(address >> 8); p[9] = (unsigned char)address;
    p[10] = 0; p[11] = 2;
    c->sent_at[c->tx] = at;
  }
  ssize_t off = 0, total = (ssize_t)REQUEST * count;
  while (off < total) {
    ssize_t n = send(c->fd, frame + off, (size_t)(total - off), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN) continue;
      fail("send failed");
      return;
    }
    off += n;
  }
  if (measuring) sent += count;
}

/* Reads what arrived on one connection; returns the number of complete answers. */
static int receive(struct connection *c) {
  ssize_t n = recv(c->fd, c->in + c->have, sizeof c->in - (size_t)c->have, 0);
  if (n < 0) return errno == EAGAIN ? 0 : (fail("recv failed"), 0);
  if (n == 0) { fail("the server closed the connection"); return 0; }
  c->have += (int)n;
  double at = now();
  int off = 0, answers = 0;
  while (c->have - off >= 6) {
    int length = 6 + ((c->in[off + 4] << 8) | c->in[off + 5]);
    if (c->have - off < length) break;
    unsigned tx = (unsigned)((c->in[off] << 8) | c->in[off + 1]);
    if (length != ANSWER || c->in[off + 7] != 3 || c->in[off + 8] != 4) {
      fail("an answer that is not FC3 with 4 bytes of registers");
    } else if (measuring) {
      responses++;
      long us = (long)((at - c->sent_at[tx]) * 1e6);
      histogram[us < 0 ? 0 : us > BUCKETS ? BUCKETS : us]++;
    }
    off += length;
    answers++;
  }
  memmove(c->in, c->in + off, (size_t)(c->have - off));
  c->have -= off;
  return answers;
}

static double percentile(double p) {
  unsigned long total = 0, want, seen = 0;
  for (int i = 0; i <= BUCKETS; i++) total += histogram[i];
  if (!total) return -1;
  want = (unsigned long)(p / 100.0 * (double)total + 0.5);
  if (want < 1) want = 1;
  for (int i = 0; i <= BUCKETS; i++) {
    seen += histogram[i];
    if (seen >= want) return (i + 0.5) / 1000.0;
  }
  return BUCKETS / 1000.0;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s <port> <connections> <depth> <warmup ms> <duration ms> [unit id] [address]\n", argv[0]);
    return 2;
  }
  int port = atoi(argv[1]), count = atoi(argv[2]), depth = atoi(argv[3]);
  double warmup = atof(argv[4]) / 1000.0, duration = atof(argv[5]) / 1000.0;
  if (argc > 6) unit_id = atoi(argv[6]);
  if (argc > 7) address = atoi(argv[7]);
  if (count < 1 || count > MAX_CONNECTIONS || depth < 1 || depth > MAX_DEPTH) {
    fprintf(stderr, "connections must be 1..%d and depth 1..%d\n", MAX_CONNECTIONS, MAX_DEPTH);
    return 2;
  }
  connections = calloc((size_t)count, sizeof *connections);
  if (!connections) return 1;
  for (int i = 0; i < count; i++) {
    struct connection *c = &connections[i];
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    c->tx = (unsigned)i * 4099u;
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&to, sizeof to) != 0) {
      fprintf(stderr, "cannot connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
      return 1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
    send_requests(c, depth);
  }
  double start = now(), begin = start + warmup, end = begin + duration, cpu_begin = 0;
  for (;;) {
    for (int i = 0; i < count; i++) {
      int answers = receive(&connections[i]);
      if (answers) send_requests(&connections[i], answers);
    }
    if (!measuring) {
      if (now() >= begin) {
        measuring = 1;
        begin = now();
        end = begin + duration;
        cpu_begin = cpu_seconds();
      }
    } else if (now() >= end) {
      break;
    }
  }
  double seconds = now() - begin;
  double cpu = (cpu_seconds() - cpu_begin) / seconds * 100.0;
  printf("{\"responses\":%ld,\"sent\":%ld,\"seconds\":%.6f,\"rate\":%.1f,\"skipped\":0,\"failures\":%ld,\"problems\":[%s%s%s],"
         "\"p50Ms\":%.4f,\"p99Ms\":%.4f,\"cpuPercent\":%.1f}\n",
         responses, sent, seconds, (double)responses / seconds, failures, problem[0] ? "\"" : "", problem, problem[0] ? "\"" : "",
         percentile(50), percentile(99), cpu);
  return 0;
}
