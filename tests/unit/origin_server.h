/*
 * origin_server.h - a scripted origin on 127.0.0.1 for the unit tests of
 * the engine: it serves a few objects (HEAD, GET, Range: bytes=a-b, ETag,
 * If-Match answered 412 unless told to ignore it), logs every request it
 * answers, and can hold the GET of one offset until the test lets it go,
 * so that readers meet on a fetch in flight. One connection per request
 * (Connection: close), each served by a thread of its own, so that a held
 * GET holds up no other request.
 *
 * The log is what the tests assert on: what a user of the origin would see
 * in its access log.
 */
#ifndef TILEFS_ORIGIN_SERVER_H
#define TILEFS_ORIGIN_SERVER_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ORIGIN_OBJECTS 192
#define ORIGIN_LOG_MAX 8192		/* requests logged at most */
#define ORIGIN_HELD_MAX 32		/* objects of held GETs told apart */
#define ORIGIN_WAIT_S 60		/* bound on every wait for an event */

struct origin_object {
	char path[64];			/* "/d.bin" */
	char *bytes;			/* owned */
	uint64_t size;
	char etag[64];			/* with its quotes */
};

struct origin_request {
	char method[8];
	char path[64];
	bool ranged;
	uint64_t first, last;
	char if_match[64];		/* "" when not sent */
	int status;
};

struct origin_server {
	int fd;
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* a request was logged, held or let go */
	struct origin_object objects[ORIGIN_OBJECTS];	/* lock */
	size_t nobjects;		/* lock */
	struct origin_request log[ORIGIN_LOG_MAX];	/* lock */
	size_t nlog;			/* lock */
	bool ignore_if_match;		/* lock: answer another version anyway */
	bool fail_gets;			/* lock: answer every GET 503 */
	bool hold;			/* lock: hold GETs starting at hold_off */
	uint64_t hold_off;		/* lock */
	size_t held;			/* lock: GETs held so far */
	char held_paths[ORIGIN_HELD_MAX][64];	/* lock: the objects of those,
					   the first */
	size_t held_objects;		/* lock: how many (of at most
					   ORIGIN_HELD_MAX) */
	size_t serving;			/* lock: connection threads running */
};

struct origin_connection {
	struct origin_server *server;
	int fd;
};

/* Fill BUF with the bytes of the object seeded SEED (any pattern that
 * tells one offset, and one seed, from another). */
static inline void origin_pattern(char *buf, uint64_t size, uint32_t seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
	for (uint64_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (char)(x >> 24);
	}
}

/* Serve PATH as SIZE bytes of pattern SEED under ETAG (replacing what
 * PATH was, as an origin's object is overwritten). */
static inline void origin_put(struct origin_server *s, const char *path, uint64_t size,
			      uint32_t seed, const char *etag)
{
	char *bytes = malloc(size ? size : 1);
	if (!bytes)
		abort();
	origin_pattern(bytes, size, seed);
	pthread_mutex_lock(&s->lock);
	size_t i = 0;
	while (i < s->nobjects && strcmp(s->objects[i].path, path) != 0)
		i++;
	if (i == ORIGIN_OBJECTS)
		abort();
	if (i == s->nobjects)
		s->nobjects++;
	struct origin_object *o = &s->objects[i];
	free(o->bytes);
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->etag, sizeof(o->etag), "%s", etag);
	o->bytes = bytes;
	o->size = size;
	pthread_mutex_unlock(&s->lock);
}

static inline bool origin_send(int c, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = send(c, buf, len, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		buf += w;
		len -= (size_t)w;
	}
	return true;
}

/* Read one request head (at most 8 KiB) from C into REQ; false if none. */
static inline bool origin_parse(int c, struct origin_request *req)
{
	char head[8192];
	size_t got = 0;
	ssize_t r;
	head[0] = '\0';
	while (got < sizeof(head) - 1 && (r = read(c, head + got, sizeof(head) - 1 - got)) > 0) {
		got += (size_t)r;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	memset(req, 0, sizeof(*req));
	if (sscanf(head, "%7s %63s", req->method, req->path) != 2)
		return false;
	const char *range = strcasestr(head, "\nRange: bytes=");
	unsigned long long first, last;
	if (range && sscanf(range + 14, "%llu-%llu", &first, &last) == 2) {
		req->ranged = true;
		req->first = first;
		req->last = last;
	}
	const char *match = strcasestr(head, "\nIf-Match: ");
	if (match)
		sscanf(match + 11, "%63[^\r\n]", req->if_match);
	return true;
}

/* The answer to REQ from the objects, head and body, into *out (caller
 * frees); its length. s->lock held (released while a held GET waits). */
static inline size_t origin_answer(struct origin_server *s, struct origin_request *req,
				   char **out)
{
	char head[512];
	struct origin_object *o = NULL;
	bool get = strcmp(req->method, "GET") == 0;
	if (get && s->hold && req->ranged && req->first == s->hold_off) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ORIGIN_WAIT_S;
		s->held++;
		size_t k = 0;
		while (k < s->held_objects && strcmp(s->held_paths[k], req->path) != 0)
			k++;
		if (k == s->held_objects && k < ORIGIN_HELD_MAX)
			snprintf(s->held_paths[s->held_objects++], 64, "%s", req->path);
		pthread_cond_broadcast(&s->changed);
		while (s->hold && pthread_cond_timedwait(&s->changed, &s->lock, &until) == 0)
			;
	}
	for (size_t i = 0; i < s->nobjects; i++)
		if (strcmp(s->objects[i].path, req->path) == 0)
			o = &s->objects[i];
	if (!o)
		req->status = 404;
	else if (get && s->fail_gets)
		req->status = 503;
	else if (req->if_match[0] && strcmp(req->if_match, o->etag) != 0 && !s->ignore_if_match)
		req->status = 412;
	else if (get && req->ranged && req->first >= o->size)
		req->status = 416;
	else
		req->status = get && req->ranged ? 206 : 200;
	uint64_t first = 0, last = 0;
	bool body = get && req->status < 300;
	if (body) {
		first = req->ranged ? req->first : 0;
		last = req->ranged && req->last < o->size ? req->last : o->size - 1;
	}
	if (req->status == 206)
		snprintf(head, sizeof(head), "HTTP/1.1 206 Partial Content\r\nContent-Length: %llu\r\n"
			 "Content-Range: bytes %llu-%llu/%llu\r\nETag: %s\r\n"
			 "Last-Modified: Sun, 22 Nov 2026 09:14:00 GMT\r\nConnection: close\r\n\r\n",
			 (unsigned long long)(last - first + 1), (unsigned long long)first,
			 (unsigned long long)last, (unsigned long long)o->size, o->etag);
	else
		snprintf(head, sizeof(head), "HTTP/1.1 %d Answer\r\nContent-Length: %llu\r\n%s%s%s"
			 "Last-Modified: Sun, 22 Nov 2026 09:14:00 GMT\r\nAccept-Ranges: bytes\r\n"
			 "Connection: close\r\n\r\n", req->status,
			 req->status == 200 ? (unsigned long long)o->size : 0ull,
			 o ? "ETag: " : "", o ? o->etag : "", o ? "\r\n" : "");
	size_t head_len = strlen(head), body_len = body ? (size_t)(last - first + 1) : 0;
	*out = malloc(head_len + body_len);
	if (!*out)
		return 0;
	memcpy(*out, head, head_len);
	if (body)
		memcpy(*out + head_len, o->bytes + first, body_len);
	return head_len + body_len;
}

/* One connection's thread: one request, answered and logged. */
static inline void *origin_connection(void *arg)
{
	struct origin_connection *k = arg;
	struct origin_server *s = k->server;
	struct origin_request req;
	if (origin_parse(k->fd, &req)) {
		char *answer;
		pthread_mutex_lock(&s->lock);
		size_t len = origin_answer(s, &req, &answer);
		if (s->nlog < ORIGIN_LOG_MAX)
			s->log[s->nlog++] = req;
		pthread_mutex_unlock(&s->lock);
		if (len)
			origin_send(k->fd, answer, len);
		free(answer);
	}
	close(k->fd);
	free(k);
	pthread_mutex_lock(&s->lock);
	s->serving--;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static inline void *origin_serve(void *arg)
{
	struct origin_server *s = arg;
	for (;;) {
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;	/* origin_stop() shut the socket */
		}
		struct origin_connection *k = malloc(sizeof(*k));
		pthread_t t;
		pthread_attr_t detached;
		pthread_attr_init(&detached);
		pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
		pthread_mutex_lock(&s->lock);
		s->serving++;
		pthread_mutex_unlock(&s->lock);
		if (k) {
			k->server = s;
			k->fd = c;
		}
		if (!k || pthread_create(&t, &detached, origin_connection, k) != 0) {
			close(c);
			free(k);
			pthread_mutex_lock(&s->lock);
			s->serving--;
			pthread_mutex_unlock(&s->lock);
		}
		pthread_attr_destroy(&detached);
	}
}

/* Listen on a free port of 127.0.0.1 and serve; 0 or -errno. */
static inline int origin_start(struct origin_server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	memset(s, 0, sizeof(*s));
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(s->fd, 64) != 0 || getsockname(s->fd, (struct sockaddr *)&a, &len) != 0)
		return -errno;
	s->port = ntohs(a.sin_port);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->changed, NULL);
	if (pthread_create(&s->thread, NULL, origin_serve, s) != 0)
		return -EAGAIN;
	return 0;
}

static inline void origin_stop(struct origin_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->hold = false;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->fd);
	pthread_mutex_lock(&s->lock);
	while (s->serving > 0)	/* each ends once its client has gone */
		pthread_cond_wait(&s->changed, &s->lock);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->nobjects; i++)
		free(s->objects[i].bytes);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
}

/* Requests logged so far with METHOD for PATH (a GET: of the range
 * starting at FIRST, or any when FIRST is UINT64_MAX). */
static inline size_t origin_count(struct origin_server *s, const char *method, const char *path,
				  uint64_t first)
{
	size_t n = 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nlog; i++) {
		const struct origin_request *r = &s->log[i];
		if (strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0 &&
		    (first == UINT64_MAX || (r->ranged && r->first == first)))
			n++;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Hold every GET starting at OFF from now on, until origin_release(). */
static inline void origin_hold(struct origin_server *s, uint64_t off)
{
	pthread_mutex_lock(&s->lock);
	s->hold = true;
	s->hold_off = off;
	s->held = 0;
	s->held_objects = 0;
	pthread_mutex_unlock(&s->lock);
}

/* Wait (at most ORIGIN_WAIT_S) until a GET is held; false if none came. */
static inline bool origin_wait_held(struct origin_server *s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ORIGIN_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (s->held == 0 && pthread_cond_timedwait(&s->changed, &s->lock, &until) == 0)
		;
	bool held = s->held > 0;
	pthread_mutex_unlock(&s->lock);
	return held;
}

/* Wait (at most ORIGIN_WAIT_S) until GETs of N objects are held (a
 * client's retry of one it gave up on is not another); how many were. */
static inline size_t origin_wait_held_objects(struct origin_server *s, size_t n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ORIGIN_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (s->held_objects < n &&
	       pthread_cond_timedwait(&s->changed, &s->lock, &until) == 0)
		;
	size_t held = s->held_objects;
	pthread_mutex_unlock(&s->lock);
	return held;
}

static inline void origin_release(struct origin_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->hold = false;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

static inline void origin_set(struct origin_server *s, bool *flag, bool value)
{
	pthread_mutex_lock(&s->lock);
	*flag = value;
	pthread_mutex_unlock(&s->lock);
}

/* The last request logged for PATH (a copy); false if none. */
static inline bool origin_last(struct origin_server *s, const char *path, struct origin_request *out)
{
	bool found = false;
	pthread_mutex_lock(&s->lock);
	for (size_t i = s->nlog; i-- > 0;)
		if (strcmp(s->log[i].path, path) == 0) {
			*out = s->log[i];
			found = true;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return found;
}

#endif
