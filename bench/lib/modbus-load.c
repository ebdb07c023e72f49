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
 * Several servers (ports separated by commas) are measured in turns of SLICE_MS each: only one
 * server has requests in flight at a time, and at the end of its turn its answers are drained
 * before the next server's turn starts. On a machine whose speed drifts within a second, servers
 * measured in interleaved slices see the same machine, where servers measured one after the
 * other do not. Each server's rate counts the answers of its turns over the time of its turns;
 * the output is then a JSON array with one object per port, in the order given.
 *
 * Build: cc -O2 -o modbus-load bench/lib/modbus-load.c
 * Run:   ./modbus-load <port[,port...]> <connections> <depth> <warmup ms> <duration ms per port> [unit id] [address]
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include "load-client.h"

#define MAX_CONNECTIONS 256
#define MAX_DEPTH 256
#define MAX_TARGETS 8
#define SLICE_MS 50
#define REQUEST 12
#define ANSWER 13                 /* MBAP 7 + FC + byte count + 2 registers */
#define BUCKETS 200000            /* latency histogram: 1 us buckets up to 200 ms */

struct connection {
  int fd;
  unsigned tx;
  int outstanding;                /* requests sent and not yet answered */
  unsigned char in[65536];
  int have;
  double sent_at[65536];          /* by transaction id */
};

/* One server under test. */
struct target {
  int port;
  struct connection *connections;
  unsigned long *histogram;
  long responses, sent;
  double active;                  /* seconds of measured turns */
};

static struct target targets[MAX_TARGETS];
static int target_count, connection_count, depth;
static double slice_seconds;      /* SLICE_MS with several servers; one server runs in one turn */
static int measuring;
static int unit_id = 1, address = 0;

/* Sends `count` new requests on one connection in one write. */
static void send_requests(struct target *t, struct connection *c, int count) {
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
  c->outstanding += count;
  if (measuring) t->sent += count;
}

/* Reads what arrived on one connection; returns the number of complete answers (counted when `count`). */
static int receive(struct target *t, struct connection *c, int count) {
  ssize_t n = recv(c->fd, c->in + c->have, sizeof c->in - (size_t)c->have, 0);
  if (n < 0 && errno == EAGAIN) return 0;
  if (n <= 0) {
    fail(n == 0 ? "the server closed the connection" : "recv failed");
    c->outstanding = 0;
    return 0;
  }
  c->have += (int)n;
  double at = now();
  int off = 0, answers = 0;
  while (c->have - off >= 6) {
    int length = 6 + ((c->in[off + 4] << 8) | c->in[off + 5]);
    if (c->have - off < length) break;
    unsigned tx = (unsigned)((c->in[off] << 8) | c->in[off + 1]);
    if (length != ANSWER || c->in[off + 7] != 3 || c->in[off + 8] != 4) {
      fail("an answer that is not FC3 with 4 bytes of registers");
    } else if (count) {
      t->responses++;
      record_latency(t->histogram, BUCKETS, at - c->sent_at[tx]);
    }
    off += length;
    answers++;
  }
  memmove(c->in, c->in + off, (size_t)(c->have - off));
  c->have -= off;
  c->outstanding -= answers;
  return answers;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

/* One turn of a server: requests in flight for a slice (at most `limit` seconds), then its answers drained. */
static void turn(struct target *t, double limit) {
  double start = now(), slice_end = start + (limit < slice_seconds ? limit : slice_seconds);
  int counting = measuring;
  for (int i = 0; i < connection_count; i++) send_requests(t, &t->connections[i], depth);
  for (;;) {
    for (int i = 0; i < connection_count; i++) {
      int answers = receive(t, &t->connections[i], counting);
      if (answers) send_requests(t, &t->connections[i], answers);
    }
    if (now() >= slice_end) break;
  }
  if (counting) t->active += now() - start;
  double give_up = now() + 2.0;
  for (int pending = 1; pending;) {
    pending = 0;
    for (int i = 0; i < connection_count; i++) {
      struct connection *c = &t->connections[i];
      if (c->outstanding > 0) receive(t, c, 0);
      if (c->outstanding > 0) pending = 1;
    }
    if (pending && now() > give_up) {
      fail("answers still missing 2 s after the turn");
      for (int i = 0; i < connection_count; i++) t->connections[i].outstanding = 0;
      break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s <port[,port...]> <connections> <depth> <warmup ms> <duration ms per port> [unit id] [address]\n", argv[0]);
    return 2;
  }
  int ports[MAX_TARGETS];
  target_count = parse_ports(argv[1], ports, MAX_TARGETS);
  if (target_count < 1) return 2;
  for (int k = 0; k < target_count; k++) targets[k].port = ports[k];
  connection_count = atoi(argv[2]);
  depth = atoi(argv[3]);
  double warmup = atof(argv[4]) / 1000.0, duration = atof(argv[5]) / 1000.0;
  if (argc > 6) unit_id = atoi(argv[6]);
  if (argc > 7) address = atoi(argv[7]);
  if (connection_count < 1 || connection_count > MAX_CONNECTIONS || depth < 1 || depth > MAX_DEPTH) {
    fprintf(stderr, "connections must be 1..%d and depth 1..%d\n", MAX_CONNECTIONS, MAX_DEPTH);
    return 2;
  }
  for (int k = 0; k < target_count; k++) {
    struct target *t = &targets[k];
    t->connections = calloc((size_t)connection_count, sizeof *t->connections);
    t->histogram = calloc(BUCKETS + 1, sizeof *t->histogram);
    if (!t->connections || !t->histogram) return 1;
    for (int i = 0; i < connection_count; i++) {
      struct connection *c = &t->connections[i];
      c->tx = (unsigned)i * 4099u;
      c->fd = connect_loopback(t->port);
      if (c->fd < 0) return 1;
    }
  }
  slice_seconds = target_count > 1 ? SLICE_MS / 1000.0 : 1e9;
  /* Warm-up turns for every server (whole rounds), then measured rounds until each server had
     `duration` of turns. */
  double warm_end = now() + warmup;
  for (int k = 0; now() < warm_end || k % target_count != 0; k++) {
    double left = warm_end - now();
    turn(&targets[k % target_count], left > 0.001 ? left : slice_seconds);
  }
  measuring = 1;
  double cpu_begin = cpu_seconds(), begin = now();
  for (int k = 0; targets[target_count - 1].active < duration || k % target_count != 0; k++) {
    struct target *t = &targets[k % target_count];
    double left = duration - t->active;
    turn(t, left > 0.001 ? left : 0.001);
  }
  double cpu = (cpu_seconds() - cpu_begin) / (now() - begin) * 100.0;
  if (target_count > 1) printf("[");
  for (int k = 0; k < target_count; k++) {
    struct target *t = &targets[k];
    printf("%s{\"port\":%d,\"responses\":%ld,\"sent\":%ld,\"seconds\":%.6f,\"rate\":%.1f,\"skipped\":0,\"failures\":%ld,\"problems\":[%s%s%s],"
           "\"p50Ms\":%.4f,\"p99Ms\":%.4f,\"cpuPercent\":%.1f}",
           k ? "," : "", t->port, t->responses, t->sent, t->active, (double)t->responses / t->active, failures,
           problem[0] ? "\"" : "", problem, problem[0] ? "\"" : "",
           percentile(t->histogram, BUCKETS, 50), percentile(t->histogram, BUCKETS, 99), cpu);
  }
  printf(target_count > 1 ? "]\n" : "\n");
  return 0;
}
