/* test_proof_principal.c - a proof names the principal whose request
 * succeeded (open.c, prove(); provider.h, source_identity_signed()), even
 * when a renewal hands the retry another principal's keys.
 *
 * An S3 source whose credential_process answers LISTER's keys first, for
 * 10 s (renewed after 5), then READER's; a store on 127.0.0.1 (below)
 * that answers LISTER 503 with Retry-After while it is "throttled" and
 * 403 after, and READER the object. A cache opening the object signs with
 * LISTER until the renewal swaps READER's keys in; READER's retry gets
 * the 206. Then, on the same cache dir, a cache with LISTER's static keys
 * must ask the store (and be refused), and one with READER's asks
 * nothing: the proof is READER's. Every wait is an event's, bounded.
 */
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define OBJECT_PATH "/eo/a.bin"
#define OBJECT_SIZE 300000u
#define OBJECT_ETAG "\"v1\""
#define LOG_MAX 512

/* ---- the store: one connection at a time, Connection: close ---- */

struct answered {
	char method[8], key[16];
	int status;
};

struct store {
	int fd, port;
	pthread_t thread;
	pthread_mutex_t lock;
	bool throttled;			/* lock: LISTER gets 503, else 403 */
	struct answered log[LOG_MAX];	/* lock */
	size_t nlog;			/* lock */
	char bytes[OBJECT_SIZE];
};

/* The access key id the request HEAD's Authorization names ("-": none). */
static void request_key(const char *head, char *key, size_t size)
{
	const char *cred = strstr(head, "Credential=");
	snprintf(key, size, "-");
	if (cred)
		snprintf(key, size, "%.*s", (int)strcspn(cred + 11, "/\r\n"), cred + 11);
}

static void store_answer(struct store *s, int c)
{
	char head[8192], method[8] = "", path[256] = "", key[16], line[512];
	size_t got = 0;
	ssize_t r;

	head[0] = '\0';
	while (got < sizeof(head) - 1 && (r = read(c, head + got, sizeof(head) - 1 - got)) > 0) {
		got += (size_t)r;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	if (sscanf(head, "%7s %255s", method, path) != 2)
		return;
	request_key(head, key, sizeof(key));
	bool get = strcmp(method, "GET") == 0;
	unsigned long long first = 0, last = OBJECT_SIZE - 1;
	const char *range = strcasestr(head, "\nRange: bytes=");
	bool ranged = range && sscanf(range + 14, "%llu-%llu", &first, &last) == 2;
	if (last >= OBJECT_SIZE)
		last = OBJECT_SIZE - 1;

	pthread_mutex_lock(&s->lock);
	int status = strcmp(path, OBJECT_PATH) != 0 ? 404 :
		     strcmp(key, "READER") == 0 ? (get && ranged ? 206 : 200) :
		     strcmp(key, "LISTER") == 0 && s->throttled ? 503 : 403;
	if (s->nlog < LOG_MAX) {
		struct answered *a = &s->log[s->nlog++];
		snprintf(a->method, sizeof(a->method), "%s", method);
		snprintf(a->key, sizeof(a->key), "%s", key);
		a->status = status;
	}
	pthread_mutex_unlock(&s->lock);

	if (status == 206 || status == 200) {
		unsigned long long len = get ? last - first + 1 : OBJECT_SIZE;
		if (status == 206)
			snprintf(line, sizeof(line), "HTTP/1.1 206 Partial Content\r\n"
				 "Content-Range: bytes %llu-%llu/%u\r\n", first, last, OBJECT_SIZE);
		else
			snprintf(line, sizeof(line), "HTTP/1.1 200 OK\r\n");
		dprintf(c, "%sContent-Length: %llu\r\nETag: %s\r\nLast-Modified: Sun, 22 Nov "
			"2026 09:14:00 GMT\r\nConnection: close\r\n\r\n", line, len, OBJECT_ETAG);
		if (get)
			send(c, s->bytes + first, len, MSG_NOSIGNAL);
	} else {
		static const char refused[] = "<Error><Code>AccessDenied</Code></Error>";
		dprintf(c, "HTTP/1.1 %d Answer\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
			status, status == 503 ? "Retry-After: 1\r\n" : "",
			method[0] == 'H' ? 0 : sizeof(refused) - 1);
		if (method[0] != 'H')
			send(c, refused, sizeof(refused) - 1, MSG_NOSIGNAL);
	}
}

static void *store_serve(void *arg)
{
	struct store *s = arg;
	for (;;) {
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;	/* store_stop() shut the socket */
		}
		store_answer(s, c);
		close(c);
	}
}

static int store_start(struct store *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	for (size_t i = 0; i < OBJECT_SIZE; i++)
		s->bytes[i] = (char)(i * 2654435761u >> 13);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(s->fd, 64) != 0 || getsockname(s->fd, (struct sockaddr *)&a, &len) != 0)
		return -errno;
	s->port = ntohs(a.sin_port);
	pthread_mutex_init(&s->lock, NULL);
	s->throttled = true;
	return -pthread_create(&s->thread, NULL, store_serve, s);
}

static void store_stop(struct store *s)
{
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
}

/* Requests logged from FROM on signed by KEY answered STATUS (0: any);
 * answered 2xx when STATUS is 2. */
static size_t store_count(struct store *s, size_t from, const char *key, int status)
{
	size_t n = 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = from; i < s->nlog; i++)
		n += strcmp(s->log[i].key, key) == 0 &&
		     (status == 0 || s->log[i].status == status ||
		      (status == 2 && s->log[i].status / 100 == 2));
	pthread_mutex_unlock(&s->lock);
	return n;
}

static size_t store_logged(struct store *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->nlog;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* ---- a cache over the store ---- */

struct mount {
	struct source *src;
	struct http_client *http;
	struct cache *cache;
};

static int mount_start(struct mount *m, const struct store *s, const char *dir)
{
	char endpoint[64], err[256];
	struct source_options so = { .endpoint = endpoint };
	memset(m, 0, sizeof(*m));
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", s->port);
	int rc = source_open("s3://eo", &so, &m->src, err, sizeof(err));
	if (rc) {
		printf("# %s\n", err);
		return rc;
	}
	struct http_config hc;
	http_config_defaults(&hc);
	hc.retries = 60;		/* LISTER's 503s, each after Retry-After */
	hc.backoff_base_ms = 100;
	hc.backoff_max_ms = 2000;	/* Retry-After: 1 is honoured */
	m->http = http_client_new(&hc);
	if (!m->http)
		return -EAGAIN;
	struct cache_config cc = {
		.dir = dir, .size_limit = 64u << 20, .block_size = 64u << 10,
		.header_len = 16u << 10, .max_request = 8u << 20, .prefetch = PREFETCH_NONE,
		.claim_wait_s = 30,
	};
	return cache_open(&cc, m->src, m->http, &m->cache);
}

static void mount_stop(struct mount *m)
{
	if (m->cache)
		cache_stop_prefetch(m->cache);
	http_client_free(m->http);
	cache_close(m->cache);
	source_free(m->src);
	memset(m, 0, sizeof(*m));
}

/* Open the object as a listing names it (so a proof saves the request);
 * 0 or -errno. Its first BUF_LEN bytes into BUF when it opened. */
static int mount_open_read(struct mount *m, char *buf, size_t buf_len)
{
	struct cache_listed listed = { .etag = OBJECT_ETAG, .size = OBJECT_SIZE, .mtime = 1 };
	struct cache_object *obj = NULL;
	char *url = source_object_url(m->src, "a.bin");
	int rc = url ? cache_object_open(m->cache, url, "a.bin", &listed, false, &obj) : -ENOMEM;
	free(url);
	if (rc)
		return rc;
	ssize_t got = cache_read(m->cache, obj, 1, buf, buf_len, 0);
	cache_object_unref(obj);
	return got == (ssize_t)buf_len ? 0 : got < 0 ? (int)got : -EIO;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Static keys of NAME in the environment, the profile's process gone. */
static void static_keys(const char *name)
{
	char secret[64];
	snprintf(secret, sizeof(secret), "secret-%s", name);
	setenv("AWS_ACCESS_KEY_ID", name, 1);
	setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_CONFIG_FILE");
}

int main(void)
{
	static struct store s;
	static char buf[32768];
	char dir[] = "/tmp/test_proof_principal.XXXXXX", path[256], cache_dir[300];
	struct mount m;

	if (!mkdtemp(dir) || store_start(&s) != 0) {
		CHECK(false, "a scratch dir and the store");
		return check_done();
	}
	snprintf(cache_dir, sizeof(cache_dir), "%s/cache", dir);
	mkdir(cache_dir, 0700);
	for (const char *const *v = (const char *const[]){ "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"http_proxy", "HTTP_PROXY", NULL }; *v; v++)
		unsetenv(*v);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);

	/* the credential_process: LISTER's keys for 10 s at its first run,
	   READER's for an hour after */
	snprintf(path, sizeof(path), "%s/process", dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "#!/bin/sh\n"
			"n=$(cat '%s/runs' 2>/dev/null || echo 0); n=$((n + 1)); echo $n >'%s/runs'\n"
			"if [ $n = 1 ]; then key=LISTER life=10; else key=READER life=3600; fi\n"
			"exp=$(date -u -d @$(($(date +%%s) + life)) +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
			"printf '{\"Version\": 1, \"AccessKeyId\": \"%%s\", \"SecretAccessKey\": "
			"\"secret-%%s\", \"SessionToken\": \"token-%%s\", \"Expiration\": \"%%s\"}\\n' "
			"$key $key $key $exp\n", dir, dir);
		fclose(f);
	}
	chmod(path, 0700);
	snprintf(path, sizeof(path), "%s/config", dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "[default]\ncredential_process = %s/process\n", dir);
		fclose(f);
	}
	setenv("AWS_CONFIG_FILE", path, 1);
	setenv("HOME", dir, 1);

	/* 1: LISTER's keys until the renewal; only READER's can read */
	CHECK(mount_start(&m, &s, cache_dir) == 0, "a cache over the store, LISTER's keys first");
	int rc = mount_open_read(&m, buf, sizeof(buf));
	CHECK(rc == 0 && memcmp(buf, s.bytes, sizeof(buf)) == 0,
	      "the object opens and reads once READER's keys sign: %s", strerror(-rc));
	mount_stop(&m);
	CHECK(store_count(&s, 0, "LISTER", 503) >= 1 && store_count(&s, 0, "LISTER", 2) == 0,
	      "LISTER's requests were all throttled (%zu), none answered",
	      store_count(&s, 0, "LISTER", 503));
	CHECK(store_count(&s, 0, "READER", 2) >= 1, "READER's retry got the object");

	/* 2: LISTER's own static keys on the same cache dir: no proof of
	   LISTER's, so it asks, and the store refuses it */
	pthread_mutex_lock(&s.lock);
	s.throttled = false;
	pthread_mutex_unlock(&s.lock);
	static_keys("LISTER");
	size_t before = store_logged(&s);
	CHECK(mount_start(&m, &s, cache_dir) == 0, "a cache with LISTER's static keys");
	memset(buf, 0, sizeof(buf));
	rc = mount_open_read(&m, buf, sizeof(buf));
	mount_stop(&m);
	CHECK(rc == -EACCES, "LISTER is refused the object: %s", strerror(-rc));
	CHECK(store_count(&s, before, "LISTER", 403) >= 1,
	      "LISTER asked the store itself: %zu requests refused",
	      store_count(&s, before, "LISTER", 403));

	/* 3: READER's static keys: its proof stands, nothing is asked */
	static_keys("READER");
	before = store_logged(&s);
	CHECK(mount_start(&m, &s, cache_dir) == 0, "a cache with READER's static keys");
	rc = mount_open_read(&m, buf, sizeof(buf));
	mount_stop(&m);
	CHECK(rc == 0 && memcmp(buf, s.bytes, sizeof(buf)) == 0 && store_logged(&s) == before,
	      "READER's proof was recorded: it reads the cache, %zu requests",
	      store_logged(&s) - before);

	store_stop(&s);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return check_done();
}
