/*
 * fuzz_response.c - libFuzzer target for an origin's answer as the fetcher
 * reads it (cache/origin/http_attempt.c: the status, the ETag,
 * Last-Modified, Content-Range and Retry-After headers, the body into a
 * buffer or a sink, an error body's reason; curl's own HTTP/1 parsing on
 * the way). A thread here listens on 127.0.0.1 and answers every
 * connection with the input's bytes, as they are, and closes; the
 * request is made with http_fetch_once(), the fetcher's one attempt.
 *
 * The input's first byte says what is asked (bits 0-1: a whole body as for
 * a listing, the first 4 KiB, 500 bytes from offset 1000, or a HEAD; bit
 * 2: ranged bytes go to a sink; bit 3: with If-Match); the rest is the
 * answer. The request is signed (a header of its own), so no redirect is
 * followed off this host. Whatever comes back: a ranged answer accepted is
 * the range asked for (never more bytes, never fewer unless the object
 * ends there), handed to the sink in order; a whole body stays within its
 * bound; a HEAD has none; the error a failure gives is one printable line
 * (it goes into logs). Anything else (a crash, a sanitizer report, a leak,
 * a hang) is a bug. Seeds: tests/fuzz/seeds/fuzz_response/ (nginx's,
 * S3's, Azure's answers, byte for byte). Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider_int.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQUEST_MAX 65536	/* what the server reads of a request */

/* The answer every connection gets: a copy of the input, replaced under
 * the lock between runs. */
static pthread_mutex_t answer_lock = PTHREAD_MUTEX_INITIALIZER;
static char *answer;
static size_t answer_len;
static int port;

/* Read the request's head (up to its blank line), so that curl has sent
 * it all before the answer comes. */
static void request_read(int fd)
{
	static char buf[REQUEST_MAX];
	size_t got = 0;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 5000) <= 0)
			return;
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			return;
	}
}

static void *serve(void *arg)
{
	int listener = *(int *)arg;
	for (;;) {
		int fd = accept(listener, NULL, NULL);
		if (fd < 0)
			continue;
		request_read(fd);
		pthread_mutex_lock(&answer_lock);
		size_t len = answer_len;
		char *copy = malloc(len ? len : 1);
		if (copy)
			memcpy(copy, answer, len);
		pthread_mutex_unlock(&answer_lock);
		for (size_t sent = 0; copy && sent < len;) {
			ssize_t n = send(fd, copy + sent, len - sent, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
		free(copy);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

static void server_start(void)
{
	static int listener;
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	pthread_t thread;

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(listener, 16) != 0 ||
	    getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
		abort();
	port = ntohs(addr.sin_port);
	if (pthread_create(&thread, NULL, serve, &listener) != 0)
		abort();
	pthread_detach(thread);
}

/* A signer that adds one header: a signed request follows no redirect. */
static int sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	struct curl_slist *grown = curl_slist_append(*headers, "X-Fuzz: 1");
	if (!grown)
		return -ENOMEM;
	*headers = grown;
	return 0;
}

/* Where the sink's bytes went: they must come in order, inside the range. */
struct sink_state {
	uint64_t next;		/* the AT the next bytes must have (or 0) */
	uint64_t len;		/* of the range asked for */
};

static int sink(void *arg, uint64_t at, const char *data, size_t len)
{
	struct sink_state *s = arg;
	if ((at != s->next && at != 0) || len > s->len || at > s->len - len)
		abort();
	s->next = at + len;
	return 0;
}

static bool printable(const char *s, size_t size)
{
	size_t n = strnlen(s, size);
	if (n == size)
		return false;	/* not terminated */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct { uint64_t off, len; bool head; } asks[] = {
		{ 0, 0, false }, { 0, 4096, false }, { 1000, 500, false }, { 0, 0, true },
	};
	static struct http_config cfg;
	char url[64];

	if (size < 1)
		return 0;
	if (!port) {
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		/* nothing between the fetcher and the server here */
		unsetenv("http_proxy");
		unsetenv("HTTP_PROXY");
		unsetenv("all_proxy");
		unsetenv("ALL_PROXY");
		http_config_defaults(&cfg);
		cfg.retries = 0;
		cfg.connect_timeout_s = 2;
		cfg.stall_timeout_s = 3;
		cfg.total_timeout_ms = 5000;
		cfg.deadline_floor_ms = 5000;
		cfg.max_body = 8192;
		server_start();
	}
	unsigned mode = data[0];
	pthread_mutex_lock(&answer_lock);
	free(answer);
	answer_len = size - 1;
	answer = malloc(answer_len ? answer_len : 1);
	if (answer)
		memcpy(answer, data + 1, answer_len);
	else
		answer_len = 0;
	pthread_mutex_unlock(&answer_lock);

	const uint64_t off = asks[mode & 3].off, len = asks[mode & 3].len;
	struct sink_state state = { 0, len };
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/eo/scene.tif", port);
	struct http_request req = {
		.url = url, .log_name = "scene.tif", .head = asks[mode & 3].head,
		.off = off, .len = len, .sign = sign,
		.describe_error = provider_xml_error,
		.if_match = mode & 8 ? "\"5f3a-61c2b1e0\"" : NULL,
	};
	if (len > 0 && (mode & 4)) {
		req.sink = sink;
		req.sink_arg = &state;
	}
	if (len > 0 && !(req.body = malloc(len)))
		return 0;

	int err = http_fetch_once(&cfg, &req);
	if (!printable(req.error, sizeof(req.error)))
		abort();	/* a log line of the origin's making */
	if (!printable(req.etag, sizeof(req.etag)) ||
	    !printable(req.last_modified, sizeof(req.last_modified)))
		abort();	/* sent back in If-Match, shown in messages */
	if (!err && len > 0) {
		if (req.body_len > len)
			abort();
		if (req.body_len < len &&
		    (req.object_size == UINT64_MAX || off + req.body_len < req.object_size))
			abort();	/* short, and not at the object's end */
		if (req.sink && state.next != req.body_len)
			abort();	/* the sink did not get every byte */
	}
	if (!err && len == 0 && req.body_len > cfg.max_body)
		abort();
	if (!err && req.head && req.body_len != 0)
		abort();
	free(req.body);
	return 0;
}
