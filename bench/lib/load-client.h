/*
 * What the C load clients of benchmarks 2 and 3 (http-load.c, modbus-load.c) share: the clock,
 * the first failure in words, latency histograms, the list of ports and the loopback connection.
 * Each client includes it once; everything here is static to that client.
 */
#ifndef MIMIC_LOAD_CLIENT_H
#define MIMIC_LOAD_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long failures;
static char problem[256];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Counts a failure and keeps the words of the first one. */
static void fail(const char *what) {
  failures++;
  if (!problem[0]) snprintf(problem, sizeof problem, "%s", what);
}

/* Adds one latency to a histogram of 1 us buckets (`buckets` + 1 of them, the last for the rest). */
static void record_latency(unsigned long *histogram, long buckets, double seconds) {
  long us = (long)(seconds * 1e6);
  histogram[us < 0 ? 0 : us > buckets ? buckets : us]++;
}

/* The p-th percentile of such a histogram in milliseconds, or -1 when it is empty. */
static double percentile(const unsigned long *histogram, long buckets, double p) {
  unsigned long total = 0, want, seen = 0;
  for (long i = 0; i <= buckets; i++) total += histogram[i];
  if (!total) return -1;
  want = (unsigned long)(p / 100.0 * (double)total + 0.5);
  if (want < 1) want = 1;
  for (long i = 0; i <= buckets; i++) {
    seen += histogram[i];
    if (seen >= want) return ((double)i + 0.5) / 1000.0;
  }
  return (double)buckets / 1000.0;
}

/* Parses "5020,5021" into `ports`; returns how many, or -1 (with a message) when there are too many. */
static int parse_ports(char *list, int *ports, int max) {
  int count = 0;
  for (char *port = strtok(list, ","); port; port = strtok(NULL, ",")) {
    if (count == max) {
      fprintf(stderr, "at most %d ports\n", max);
      return -1;
    }
    ports[count++] = atoi(port);
  }
  return count;
}

/* A non-blocking TCP_NODELAY connection to 127.0.0.1:port, or -1 (with a message). */
static int connect_loopback(int port) {
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    fprintf(stderr, "cannot connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

#endif
