/*
 * metrics.c - see metrics.h.
 *
 * One thread does it all: it waits (poll) for a scrape on the listening
 * socket or for the next period, rewrites the files (a temporary file
 * renamed over the old, so a reader never sees half of one), and answers
 * one scrape at a time, each within REQUEST_DEADLINE_MS and never past
 * metrics_stop(), so a slow client holds neither. The counters are read
 * from the cache and the fetcher under their own locks, so a scrape never
 * waits on a read.
 */
#include "fs/metrics.h"
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/base/log.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/providers/provider.h"
#include "cache/store/mounts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_MAX 4096
#define REQUEST_DEADLINE_MS 2000	/* a whole request, however it trickles */

struct metrics {
	struct metrics_config cfg;
	struct cache *cache;
	struct http_client *http;
	char mount_file[4300];
	time_t started;
	int listen_fd;			/* -1: no port */
	int wake[2];			/* a byte here: stop */
	pthread_t thread;
};

/* ---- the text ---- */

/* S as a Prometheus label value (\\, \" and \n escaped) into BUF. */
static const char *label(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; *s && o + 3 < len; s++) {
		if (*s == '\\' || *s == '"')
			buf[o++] = '\\';
		if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
			continue;
		}
		buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}

/* Latency at quantile Q, interpolated within its histogram bucket. */
static double quantile(const struct http_stats *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (size_t b = 0; b < HTTP_LATENCY_BUCKETS; b++)
		total += h->latency[b];
	if (total == 0)
		return -1;
	double target = q * (double)total;
	for (size_t b = 0; b < HTTP_LATENCY_BUCKETS - 1; b++) {
		if ((double)(seen + h->latency[b]) >= target && h->latency[b]) {
			double lo = b ? http_latency_bounds[b - 1] : 0, hi = http_latency_bounds[b];
			return lo + (hi - lo) * (target - (double)seen) / (double)h->latency[b];
		}
		seen += h->latency[b];
	}
	return http_latency_bounds[HTTP_LATENCY_BUCKETS - 2];
}

static void counter(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name, v);
}

/* The text of the counters. `tilefs cache stat` reads some of these lines
 * back from CACHE_DIR/mounts/PID.prom: see cache/store/mounts.h before
 * changing a name or a label. */
static void format(struct metrics *m, FILE *f, bool up)
{
	struct cache_stats cs;
	struct http_stats hs;
	struct source_renewals rs;
	char a[2100], b[2100], c[8500];

	cache_get_stats(m->cache, &cs);
	http_client_stats(m->http, &hs);
	source_renewals(m->cfg.src, &rs);
	counter(f, "tilefs_up", "gauge", "1 while the mount runs.", up);
	fprintf(f, "# HELP tilefs_mount_info The mount these counters are of.\n"
		"# TYPE tilefs_mount_info gauge\n"
		"tilefs_mount_info{source=\"%s\",mountpoint=\"%s\",cache_dir=\"%s\",pid=\"%ld\"} 1\n",
		label(m->cfg.source, a, sizeof(a)), label(m->cfg.mountpoint, b, sizeof(b)),
		label(m->cfg.cache_dir, c, sizeof(c)), (long)getpid());
	counter(f, "tilefs_start_time_seconds", "gauge", "When the mount started (Unix time).",
		(uint64_t)m->started);
	counter(f, "tilefs_cache_uncached", "gauge",
		"1 when the cache index could not be opened: every read goes to the origin.",
		cache_uncached(m->cache));
	counter(f, "tilefs_requests_total", "counter", "HTTP requests made to the origin.",
		hs.requests);
	counter(f, "tilefs_request_errors_total", "counter",
		"Requests that failed after their retries.", hs.failures);
	counter(f, "tilefs_request_retries_total", "counter", "Request attempts retried.",
		hs.retries);
	counter(f, "tilefs_requests_in_flight", "gauge", "Requests submitted and not done.",
		hs.in_flight);
	counter(f, "tilefs_tier_requests_total", "counter",
		"Request attempts sent through the cache tier (--tier).", hs.tier_attempts);
	counter(f, "tilefs_tier_fallbacks_total", "counter",
		"Request attempts sent to the store directly: the tier could not be reached.",
		hs.tier_fallbacks);
	counter(f, "tilefs_origin_up", "gauge",
		"0 while the origin is unreachable (no connection, timeouts, 5xx or 429 "
		"after retries): what is cached is served, the rest fails at once.",
		hs.origin_up);
	counter(f, "tilefs_stale_answers_total", "counter",
		"Opens and listings answered from the cache because the origin was down.",
		hs.stale_answers);
	counter(f, "tilefs_fetched_bytes_total", "counter", "Bytes received from the origin.",
		hs.bytes);
	counter(f, "tilefs_cache_hits_total", "counter", "Units read from the cache.", cs.hits);
	counter(f, "tilefs_cache_misses_total", "counter", "Units a read had to fetch.",
		cs.misses);
	counter(f, "tilefs_served_bytes_total", "counter",
		"Bytes returned to readers by the daemon (not those read by passthrough).",
		cs.bytes_served);
	counter(f, "tilefs_passthrough_opens_total", "counter",
		"Opens of sealed files the kernel reads from the cache itself (FUSE passthrough).",
		cs.passthrough_opens);
	counter(f, "tilefs_errors_total", "counter",
		"Opens and reads that failed (the reader got an error).", cs.errors);
	counter(f, "tilefs_prefetched_units_total", "counter",
		"Units fetched ahead of any read (prefetch, readahead).", cs.prefetched);
	counter(f, "tilefs_namespace_nodes", "gauge",
		"Files and directories the mount holds in memory.", ns_nodes_alive());
	counter(f, "tilefs_evicted_bytes_total", "counter",
		"Bytes this mount evicted to keep the cache within its size.", cs.evicted);
	counter(f, "tilefs_credential_renewals_total", "counter",
		"Renewals of the short-lived credentials that succeeded.", rs.renewed);
	counter(f, "tilefs_credential_renewal_failures_total", "counter",
		"Renewals of the short-lived credentials that failed (each is tried again).",
		rs.failed);
	counter(f, "tilefs_credentials_expired", "gauge",
		"1 while the credentials have expired and cannot be renewed: reads fail with EACCES.",
		rs.expired);
	struct cache_hint_stats hints;
	cache_hint_get_stats(m->cache, &hints);
	counter(f, "tilefs_hint_clients", "gauge",
		"Clients with a hint in force (tilefs hint, a process each).", hints.clients);
	counter(f, "tilefs_hint_entries", "gauge",
		"Entries of the hints in force (tilefs hint), 0 without one.", hints.entries);
	counter(f, "tilefs_hint_position", "gauge",
		"Entries of the hints their readers are past.", hints.position);
	counter(f, "tilefs_hint_fetched_bytes_total", "counter",
		"Bytes hints sent for ahead of the readers.", hints.fetched_bytes);
	counter(f, "tilefs_hint_read_total", "counter",
		"Entries of hints their readers read, ever.", hints.reads);
	counter(f, "tilefs_hint_skipped_total", "counter",
		"Hint entries the readers passed without reading, or that could not be fetched.",
		hints.skipped);

	fprintf(f, "# HELP tilefs_request_duration_seconds Time from a request's submission to "
		"its end, retries included.\n# TYPE tilefs_request_duration_seconds histogram\n");
	uint64_t cumulative = 0;
	for (size_t i = 0; i < HTTP_LATENCY_BUCKETS; i++) {
		cumulative += hs.latency[i];
		if (i < HTTP_LATENCY_BUCKETS - 1)
			fprintf(f, "tilefs_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
				http_latency_bounds[i], cumulative);
		else
			fprintf(f, "tilefs_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
				cumulative);
	}
	fprintf(f, "tilefs_request_duration_seconds_sum %.6f\n", hs.latency_sum);
	fprintf(f, "tilefs_request_duration_seconds_count %" PRIu64 "\n", cumulative);
	fprintf(f, "# HELP tilefs_request_duration_quantile_seconds Request duration at a "
		"quantile, estimated from the histogram.\n"
		"# TYPE tilefs_request_duration_quantile_seconds gauge\n");
	static const double qs[] = { 0.5, 0.9, 0.99 };
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double v = quantile(&hs, qs[i]);
		if (v < 0)
			fprintf(f, "tilefs_request_duration_quantile_seconds{quantile=\"%g\"} NaN\n",
				qs[i]);
		else
			fprintf(f, "tilefs_request_duration_quantile_seconds{quantile=\"%g\"} %.6f\n",
				qs[i], v);
	}
}

/* The text, malloc'ed into *text. */
static int render(struct metrics *m, bool up, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	if (!f)
		return -errno;
	format(m, f, up);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Replace PATH with the counters, atomically: they go to a new file of a
 * random name beside PATH (mkostemps: created, never an existing file or
 * a link someone planted), renamed over PATH. Its ".tmp" suffix keeps a
 * collector reading *.prom from the half-written file. The mount's file in
 * the cache dir is 0600 like all of the cache dir (--metrics-file is made
 * 0644, for a collector run as another user). */
static int write_file(struct metrics *m, const char *path, bool up)
{
	static const char suffix[] = ".tmp";
	char tmp[4400], *text = NULL;
	size_t len = 0;
	bool private = path == m->mount_file;
	int fd = -1;
	FILE *f = NULL;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX%s", path, suffix) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int err = render(m, up, &text, &len);
	if (err)
		goto out;
	fd = mkostemps(tmp, (int)strlen(suffix), O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (!private && fchmod(fd, 0644) != 0) {
		err = -errno;
		goto unlink_tmp;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		goto unlink_tmp;
	}
	fd = -1;	/* f has it */
	errno = 0;
	if (fwrite(text, 1, len, f) != len)
		err = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (!err)
		goto out;
unlink_tmp:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(text);
	return err;
}

static void write_files(struct metrics *m, bool up)
{
	static bool warned;
	int err = write_file(m, m->mount_file, up);
	if (!err && m->cfg.file)
		err = write_file(m, m->cfg.file, up);
	if (err && !warned)
		log_warn("cannot write the metrics: %s", strerror(-err));
	warned = err != 0;
}

/* ---- the scrape endpoint ---- */

/* Never blocks: the answer (a few KiB) fits in a loopback socket's buffer;
 * a client that does not read loses the rest. */
static void send_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read a request and answer it: REQUEST_DEADLINE_MS for the whole request
 * (a client sending a byte a second gets no more), and not at all once
 * metrics_stop() asks (returns false then: stop). */
static bool answer(struct metrics *m, int fd)
{
	char req[REQUEST_MAX + 1], head[256];
	size_t got = 0;
	int64_t deadline = now_ms() + REQUEST_DEADLINE_MS;
	while (got < REQUEST_MAX) {
		int64_t left = deadline - now_ms();
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = m->wake[0], .events = POLLIN } };
		if (left <= 0 || poll(p, 2, (int)left) <= 0)
			break;	/* too slow: answer what came */
		if (p[1].revents)
			return false;
		ssize_t n = recv(fd, req + got, REQUEST_MAX - got, MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = '\0';
	char *text = NULL;
	size_t len = 0;
	const char *status = "200 OK";
	bool get = strncmp(req, "GET ", 4) == 0, head_only = strncmp(req, "HEAD ", 5) == 0;
	const char *path = get ? req + 4 : head_only ? req + 5 : NULL;
	if (!path)
		status = "405 Method Not Allowed";
	else if (strncmp(path, "/metrics ", 9) != 0 && strncmp(path, "/ ", 2) != 0)
		status = "404 Not Found";
	else if (render(m, true, &text, &len) != 0)
		status = "500 Internal Server Error";
	if (strcmp(status, "200 OK") != 0) {
		free(text);
		text = strdup("try GET /metrics\n");
		len = text ? strlen(text) : 0;
	}
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, len);
	send_all(fd, head, (size_t)hl);
	if (!head_only && text)
		send_all(fd, text, len);
	free(text);
	return true;
}

static void *metrics_thread(void *arg)
{
	struct metrics *m = arg;
	time_t next = time(NULL) + METRICS_PERIOD_S;

	for (;;) {
		struct pollfd p[2] = { { .fd = m->wake[0], .events = POLLIN },
				       { .fd = m->listen_fd, .events = POLLIN } };
		time_t now = time(NULL);
		int wait_ms = next > now ? (int)(next - now) * 1000 : 0;
		int n = poll(p, m->listen_fd >= 0 ? 2 : 1, wait_ms);
		if (n > 0 && p[0].revents)
			return NULL;
		if (n > 0 && (p[1].revents & POLLIN)) {
			int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				bool go_on = answer(m, fd);
				close(fd);
				if (!go_on)
					return NULL;
			}
		}
		if (time(NULL) >= next) {
			write_files(m, true);
			next = time(NULL) + METRICS_PERIOD_S;
		}
	}
}

/* A socket listening on ADDRESS (an IPv4 or IPv6 literal; NULL:
 * 127.0.0.1) and PORT, or -errno with why in ERR. */
static int listen_on(const char *address, int port, char *err, size_t err_size)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	struct sockaddr *sa = (struct sockaddr *)&v4;
	socklen_t sa_len = sizeof(v4);
	const char *addr = address ? address : "127.0.0.1";
	bool is_v6 = strchr(addr, ':') != NULL;

	if (is_v6) {
		sa = (struct sockaddr *)&v6;
		sa_len = sizeof(v6);
	}
	if (inet_pton(is_v6 ? AF_INET6 : AF_INET, addr,
		      is_v6 ? (void *)&v6.sin6_addr : (void *)&v4.sin_addr) != 1) {
		snprintf(err, err_size, "--metrics-address %s is not an IP address", addr);
		return -EINVAL;
	}
	int one = 1, fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, sa, sa_len) != 0 || listen(fd, 16) != 0) {
		int e = errno;
		snprintf(err, err_size, "--metrics-port %d: cannot listen on %s%s%s:%d: %s%s",
			 port, is_v6 ? "[" : "", addr, is_v6 ? "]" : "", port, strerror(e),
			 e == EADDRINUSE ? " (choose another port)" :
			 e == EADDRNOTAVAIL ? " (not an address of this machine: see "
					      "--metrics-address)" : "");
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

int metrics_start(const struct metrics_config *cfg, struct cache *cache, struct http_client *http,
		  struct metrics **out, char *err, size_t err_size)
{
	struct metrics *m = calloc(1, sizeof(*m));
	char dir[4200];
	int rc;

	if (!m)
		return -ENOMEM;
	m->cfg = *cfg;
	m->cache = cache;
	m->http = http;
	m->started = time(NULL);
	m->listen_fd = -1;
	rc = mounts_dir(cfg->cache_dir, dir, sizeof(dir));
	if (!rc && mkdir(dir, 0700) != 0 && errno != EEXIST)
		rc = -errno;
	if (!rc)
		rc = mounts_file(cfg->cache_dir, getpid(), m->mount_file, sizeof(m->mount_file));
	if (rc) {
		snprintf(err, err_size, "cannot create %s: %s", dir, strerror(-rc));
		goto fail;
	}
	mounts_prune(cfg->cache_dir);
	if (cfg->port && (m->listen_fd = listen_on(cfg->address, cfg->port, err, err_size)) < 0) {
		rc = m->listen_fd;
		goto fail;
	}
	if (cfg->file && (rc = write_file(m, cfg->file, true)) != 0) {
		snprintf(err, err_size, "--metrics-file %s: %s", cfg->file, strerror(-rc));
		goto fail_pipe;
	}
	if (pipe2(m->wake, O_CLOEXEC) != 0) {
		rc = -errno;
		snprintf(err, err_size, "cannot start the metrics thread: %s", strerror(-rc));
		goto fail_pipe;
	}
	write_file(m, m->mount_file, true);	/* --metrics-file is written above */
	rc = -pthread_create(&m->thread, NULL, metrics_thread, m);
	if (rc) {
		snprintf(err, err_size, "cannot start the metrics thread: %s", strerror(-rc));
		goto fail_thread;
	}
	pthread_setname_np(m->thread, "tilefs-metrics");
	*out = m;
	return 0;
fail_thread:
	unlink(m->mount_file);
	close(m->wake[0]);
	close(m->wake[1]);
fail_pipe:
	if (m->listen_fd >= 0)
		close(m->listen_fd);
fail:
	free(m);
	return rc;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	char stop = 1;
	if (write(m->wake[1], &stop, 1) == 1)
		pthread_join(m->thread, NULL);
	else
		pthread_cancel(m->thread);
	write_files(m, false);
	close(m->wake[0]);
	close(m->wake[1]);
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	free(m);
}
