/*
 * The load client of benchmark 2 when a C compiler is at hand: keep-alive HTTP/1.1 connections,
 * one request in flight on each, every connection alternating `POST <run path>` (body
 * {"kwargs":{}}) and `GET <read path>`, both with the bearer key, as wrk does with
 * wrk-alternate.lua.
 *
 * Why by hand: wrk measures one server at a time, and on this machine the speed drifts by 2x
 * within a minute, so servers measured one after the other are measured on different machines
 * (per-round ratios of the same two servers ranged from 2.1 to 4.5). This client measures several
 * servers in turns of TURN_MS each: only one server has requests in flight at a time, and at the
 * end of its turn its connections finish their requests before the next server's turn starts.
 * Each server's rate counts the answers of its turns (the finishing ones included) over the time
 * of its turns, so every server sees the same machine.
 *
 * How the client waits for answers, the argument after the key:
 * - `waits` (as wrk does): it sleeps in epoll_wait until an answer arrives, so a core is shared
 *   between the client and whatever the server under test runs besides its own thread (Mimic's
 *   Python worker);
 * - `spins` (the default): it polls its non-blocking sockets without sleeping, so the client
 *   keeps one of two cores to itself and the server under test, with all its processes, has the
 *   other. This takes the client's wake-ups out of the servers' time, and gives a server that
 *   runs in one process an edge over one that needs two.
 *
 * The argument after that may name other requests than the alternating pair: `runs` sends only
 * the POST, `reads` only the GET (for profiles that take the two apart, bench/profile/).
 *
 * Build: cc -O2 -o http-load bench/lib/http-load.c
 * Run:   ./http-load <port[,port...]> <connections> <warmup ms> <duration ms per port> <run path> <read path> <key> [spins|waits] [both|runs|reads]
 * Prints one JSON line: {"targets": [one object per port, in the order given], "failures", "problem"}.
 */
#define _GNU_SOURCE
#include <strings.h>
#include <sys/epoll.h>
#include "load-client.h"

#define MAX_CONNECTIONS 256
#define MAX_TARGETS 8
#define TURN_MS 250
#define BUFFER 65536
#define BUCKETS 1000000           /* latency histogram: 1 us buckets up to 1 s */

struct connection {
  int fd;
  int busy;                       /* a request is in flight */
  int next_is_read;               /* alternates POST run / GET read */
  int have;
  double sent_at;
  char in[BUFFER];
};

struct target {
  int port;
  struct connection *connections;
  unsigned long *histogram;
  char run_request[1024], read_request[1024];
  int run_length, read_length;
  long responses, errors;
  double active;                  /* seconds of measured turns */
  int epoll;                      /* the connections, when the client waits */
};

static struct target targets[MAX_TARGETS];
static int target_count, connection_count, measuring, waiting;
/* Which requests: 0 alternates the POST and the GET, 1 sends only the POST, 2 only the GET. */
static int only;

static void send_request(struct target *t, struct connection *c) {
  const char *request = c->next_is_read ? t->read_request : t->run_request;
  ssize_t off = 0, total = c->next_is_read ? t->read_length : t->run_length;
  while (off < total) {
    ssize_t n = send(c->fd, request + off, (size_t)(total - off), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN) continue;
      fail("send failed");
      return;
    }
    off += n;
  }
  c->next_is_read = only ? only == 2 : !c->next_is_read;
  c->busy = 1;
  c->sent_at = now();
}

/*
 * Reads what arrived; returns 1 when the response to the request in flight is complete (it
 * needs a Content-Length, which every server here sends).
 */
static int receive(struct target *t, struct connection *c, int count) {
  ssize_t n = recv(c->fd, c->in + c->have, sizeof c->in - 1 - (size_t)c->have, 0);
  if (n < 0 && errno == EAGAIN) return 0;
  if (n <= 0) {
    fail(n == 0 ? "the server closed the connection" : "recv failed");
    c->busy = 0;
    return 0;
  }
  c->have += (int)n;
  c->in[c->have] = 0;
  char *end = strstr(c->in, "\r\n\r\n");
  if (!end) return 0;
  long length = -1;
  for (char *line = strstr(c->in, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
    if (strncasecmp(line + 2, "content-length:", 15) == 0) length = strtol(line + 17, NULL, 10);
  }
  if (length < 0) {
    fail("a response without Content-Length");
    c->busy = 0;
    c->have = 0;
    return 0;
  }
  int total = (int)(end + 4 - c->in) + (int)length;
  if (c->have < total) return 0;
  int status = atoi(c->in + 9);
  if (status < 200 || status > 299) {
    t->errors++;
    fail("a response that is not 2xx");
  } else if (count) {
    t->responses++;
    record_latency(t->histogram, BUCKETS, now() - c->sent_at);
  }
  memmove(c->in, c->in + total, (size_t)(c->have - total));
  c->have -= total;
  c->busy = 0;
  return 1;
}

/* One turn of a server: every connection busy for the turn (at most `limit` seconds), then finishing its request. */
static void turn(struct target *t, double limit) {
  double start = now(), turn_end = start + (limit < TURN_MS / 1000.0 ? limit : TURN_MS / 1000.0);
  int counting = measuring;
  for (int i = 0; i < connection_count; i++) send_request(t, &t->connections[i]);
  for (int open = 1; open;) {
    int sending = now() < turn_end;
    open = 0;
    if (waiting) {
      /* Level-triggered: a connection with more bytes than one recv took is reported again. */
      struct epoll_event ready[MAX_CONNECTIONS];
      int n = epoll_wait(t->epoll, ready, MAX_CONNECTIONS, 10);
      for (int r = 0; r < n; r++) {
        struct connection *c = &t->connections[ready[r].data.u32];
        if (c->busy && receive(t, c, counting) && sending) send_request(t, c);
      }
      for (int i = 0; i < connection_count && !open; i++) open = t->connections[i].busy;
    } else {
      for (int i = 0; i < connection_count; i++) {
        struct connection *c = &t->connections[i];
        if (!c->busy) continue;
        if (receive(t, c, counting) && sending) send_request(t, c);
        if (c->busy) open = 1;
      }
    }
    if (open && now() > turn_end + 10.0) {
      fail("responses still missing 10 s after the turn");
      for (int i = 0; i < connection_count; i++) t->connections[i].busy = 0;
      break;
    }
  }
  if (counting) t->active += now() - start;
}

static int build_request(char *out, size_t size, const char *method, const char *path, int port, const char *key, int body) {
  return snprintf(out, size,
                  "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n%s\r\n%s",
                  method, path, port, key, body ? "Content-Type: application/json\r\nContent-Length: 13\r\n" : "",
                  body ? "{\"kwargs\":{}}" : "");
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s <port[,port...]> <connections> <warmup ms> <duration ms per port> <run path> <read path> <key> [spins|waits] [both|runs|reads]\n", argv[0]);
    return 2;
  }
  int ports[MAX_TARGETS];
  target_count = parse_ports(argv[1], ports, MAX_TARGETS);
  if (target_count < 1) return 2;
  for (int k = 0; k < target_count; k++) targets[k].port = ports[k];
  connection_count = atoi(argv[2]);
  if (argc > 8 && strcmp(argv[8], "waits") != 0 && strcmp(argv[8], "spins") != 0) {
    fprintf(stderr, "the client either spins or waits, not '%s'\n", argv[8]);
    return 2;
  }
  waiting = argc > 8 && strcmp(argv[8], "waits") == 0;
  if (argc > 9) {
    if (strcmp(argv[9], "runs") == 0) only = 1;
    else if (strcmp(argv[9], "reads") == 0) only = 2;
    else if (strcmp(argv[9], "both") != 0) {
      fprintf(stderr, "the requests are both, runs or reads, not '%s'\n", argv[9]);
      return 2;
    }
  }
  double warmup = atof(argv[3]) / 1000.0, duration = atof(argv[4]) / 1000.0;
  if (connection_count < 1 || connection_count > MAX_CONNECTIONS) {
    fprintf(stderr, "connections must be 1..%d\n", MAX_CONNECTIONS);
    return 2;
  }
  for (int k = 0; k < target_count; k++) {
    struct target *t = &targets[k];
    t->run_length = build_request(t->run_request, sizeof t->run_request, "POST", argv[5], t->port, argv[7], 1);
    t->read_length = build_request(t->read_request, sizeof t->read_request, "GET", argv[6], t->port, argv[7], 0);
    t->connections = calloc((size_t)connection_count, sizeof *t->connections);
    t->histogram = calloc(BUCKETS + 1, sizeof *t->histogram);
    if (!t->connections || !t->histogram) return 1;
    t->epoll = epoll_create1(0);
    if (t->epoll < 0) return 1;
    for (int i = 0; i < connection_count; i++) {
      struct connection *c = &t->connections[i];
      c->fd = connect_loopback(t->port);
      if (c->fd < 0) return 1;
      c->next_is_read = only == 2;
      struct epoll_event e = { .events = EPOLLIN, .data.u32 = (unsigned)i };
      if (epoll_ctl(t->epoll, EPOLL_CTL_ADD, c->fd, &e) != 0) return 1;
    }
  }
  /* Warm-up turns for every server (whole rounds), then measured rounds until each server had
     `duration` of turns. */
  double warm_end = now() + warmup;
  for (int k = 0; now() < warm_end || k % target_count != 0; k++) turn(&targets[k % target_count], TURN_MS / 1000.0);
  measuring = 1;
  for (int k = 0; targets[target_count - 1].active < duration || k % target_count != 0; k++) {
    struct target *t = &targets[k % target_count];
    double left = duration - t->active;
    turn(t, left > 0.001 ? left : 0.001);
  }
  printf("{\"targets\":[");
  for (int k = 0; k < target_count; k++) {
    struct target *t = &targets[k];
    printf("%s{\"port\":%d,\"requests\":%ld,\"errors\":%ld,\"seconds\":%.6f,\"rate\":%.1f,\"p50Ms\":%.4f,\"p99Ms\":%.4f}",
           k ? "," : "", t->port, t->responses, t->errors, t->active, (double)t->responses / t->active,
           percentile(t->histogram, BUCKETS, 50), percentile(t->histogram, BUCKETS, 99));
  }
  printf("],\"failures\":%ld,\"problem\":\"%s\"}\n", failures, problem);
  return 0;
}
