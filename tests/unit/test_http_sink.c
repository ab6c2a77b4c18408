/* test_http_sink.c - a ranged GET with a sink (http.h) against a scripted
 * server on 127.0.0.1: a body cut short whose resumed range is answered
 * whole (200) hands the bytes on again from 0, and the sink ends with the
 * right bytes; an answer of another range never reaches the sink. Neither
 * can be brought about through tilefs warm, the sink's one user (its GETs
 * never start at 0: the open stores the header unit first). */
#include "cache/origin/http.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIZE 100000

static char object[SIZE];

/* One scripted answer: the head, then body bytes [from, from + len) of the
 * object, then the connection is closed. */
struct answer {
	const char *head;
	size_t from, len;
	char range[64];			/* the Range header it was asked with */
};

struct server {
	int fd;
	struct answer *script;
	size_t n;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	for (size_t i = 0; i < s->n; i++) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[4096];
		size_t got = 0;
		ssize_t r;
		while (got < sizeof(req) - 1 && (r = read(c, req + got, sizeof(req) - 1 - got)) > 0) {
			got += (size_t)r;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[got] = '\0';
		const char *range = strcasestr(req, "\nRange: ");
		if (range)
			sscanf(range + 8, "%63[^\r\n]", s->script[i].range);
		struct answer *a = &s->script[i];
		if (write(c, a->head, strlen(a->head)) < 0 ||
		    write(c, object + a->from, a->len) < 0)
			perror("fake server write");
		close(c);
	}
	return NULL;
}

/* The sink: a copy of what it was handed, where it was told. */
struct copy {
	char bytes[SIZE];
	size_t calls, restarts, end;
};

static int take(void *arg, uint64_t at, const char *data, size_t len)
{
	struct copy *k = arg;
	if (at + len > SIZE)
		return -EIO;
	if (at == 0 && k->end > 0)
		k->restarts++;
	memcpy(k->bytes + at, data, len);
	k->end = at + len;
	k->calls++;
	return 0;
}

static int listen_local(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* GET [off, off + len) of the object through a sink, the server answering
 * SCRIPT[0..n) in turn; returns the request's error, and the ETag it
 * named in ETAG (128 bytes) if not NULL. */
static int get_etag(struct answer *script, size_t n, uint64_t off, uint64_t len, struct copy *k,
		    char *etag)
{
	int port;
	struct server s = { listen_local(&port), script, n };
	pthread_t t;
	if (s.fd < 0 || pthread_create(&t, NULL, serve, &s) != 0)
		return -EAGAIN;
	struct http_config cfg;
	http_config_defaults(&cfg);
	cfg.retries = 2;
	cfg.backoff_base_ms = 1;
	cfg.backoff_max_ms = 5;
	struct http_client *client = http_client_new(&cfg);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/o.bin", port);
	struct http_request req;
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.log_name = "o.bin";
	req.off = off;
	req.len = len;
	req.sink = take;
	req.sink_arg = k;
	int err = http_run(client, &req);
	if (etag)
		snprintf(etag, 128, "%s", req.etag);
	http_client_free(client);
	shutdown(s.fd, SHUT_RDWR);
	close(s.fd);
	pthread_join(t, NULL);
	return err;
}

static int get(struct answer *script, size_t n, uint64_t off, uint64_t len, struct copy *k)
{
	return get_etag(script, n, off, len, k, NULL);
}

int main(void)
{
	for (size_t i = 0; i < SIZE; i++)
		object[i] = (char)(i * 2654435761u >> 11);
	static struct copy k;
	char head[256];

	/* cut after 30000 bytes; the resume (30000-) answered with all of it */
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: \"e1\"\r\n"
		 "Connection: close\r\n\r\n", SIZE);
	struct answer restart[2] = { { head, 0, 30000, "" }, { head, 0, SIZE, "" } };
	int err = get(restart, 2, 0, SIZE, &k);
	CHECK(err == 0, "a cut body, then the whole object for the resumed range: done (%d)", err);
	CHECK(strcmp(restart[1].range, "bytes=30000-99999") == 0, "the resume asked for the rest (%s)",
	      restart[1].range);
	CHECK(k.restarts == 1 && k.end == SIZE, "the sink was handed the bytes again from 0 (%zu)",
	      k.restarts);
	CHECK(memcmp(k.bytes, object, SIZE) == 0, "and holds the object's bytes");

	/* a 206 of bytes 0-999 for a GET of 1000-1999 */
	static struct copy none;
	char shifted[256];
	snprintf(shifted, sizeof(shifted), "HTTP/1.1 206 Partial Content\r\nContent-Length: 1000\r\n"
		 "Content-Range: bytes 0-999/%d\r\nConnection: close\r\n\r\n", SIZE);
	struct answer other[1] = { { shifted, 0, 1000, "" } };
	err = get(other, 1, 1000, 1000, &none);
	CHECK(err == -EIO, "another range than asked for: EIO (%d)", err);
	CHECK(none.calls == 0, "and the sink never saw its bytes (%zu calls)", none.calls);

	/* cut after 30000 bytes; the resume answered without the ETag the
	   first answer named: it may be another version's bytes */
	static struct copy mixed;
	char bare[256];
	snprintf(bare, sizeof(bare), "HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n"
		 "Content-Range: bytes 30000-99999/%d\r\nConnection: close\r\n\r\n", SIZE - 30000,
		 SIZE);
	struct answer resumed[2] = { { head, 0, 30000, "" }, { bare, 30000, SIZE - 30000, "" } };
	err = get(resumed, 2, 0, SIZE, &mixed);
	CHECK(err == -ESTALE, "a resume answered without the first answer's ETag: ESTALE (%d)", err);

	/* an ETag with control characters is no ETag: it would go back out in
	   If-Match, and into messages */
	static struct copy ctl;
	char evil[256], etag[128];
	snprintf(evil, sizeof(evil), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
		 "ETag: \"abc\rX-Injected: 1\x1b[31m\"\r\nConnection: close\r\n\r\n", SIZE);
	struct answer injected[1] = { { evil, 0, SIZE, "" } };
	err = get_etag(injected, 1, 0, SIZE, &ctl, etag);
	CHECK(err == 0 && etag[0] == '\0', "an ETag with control characters is dropped (%d, '%s')",
	      err, etag);
	return check_done();
}
