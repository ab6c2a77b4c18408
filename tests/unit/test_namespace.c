/* test_namespace.c - the namespace (namespace.h) with real sources against
 * a scripted server on 127.0.0.1 serving canned listings: an S3 listing in
 * two pages (continuation token), a listing read once within the ttl and
 * again after it, a name that leaves a listing (then ENOENT), and
 * revalidation ahead (a HEAD, in the background, for the listed file with
 * a version cached, none for the one without). Asserts what the server saw
 * and what the namespace returns. */
#include "cache/namespace/namespace.h"
#include "cache/engine/cache.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OBJECT_SIZE 1000
#define MAX_SEEN 512		/* requests the server remembers */
#define WAIT_S 60		/* bound on waiting for an event */

/* The server: answers each connection's one request from the canned
 * listings below, and logs "METHOD TARGET". Guarded by lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t logged;
	int fd;
	char seen[MAX_SEEN][256];
	int nseen;
	bool drop_b;		/* the index page no longer shows b.tif */
} server = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, { { 0 } }, 0, false };

static char object[OBJECT_SIZE];

static const char s3_page1[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>"
	"<Name>eo</Name><Prefix></Prefix><IsTruncated>true</IsTruncated>"
	"<NextContinuationToken>page2</NextContinuationToken>"
	"<Contents><Key>a.tif</Key><Size>10</Size><ETag>\"e1\"</ETag>"
	"<LastModified>2026-11-22T09:14:00.000Z</LastModified></Contents>"
	"<Contents><Key>b.tif</Key><Size>20</Size><ETag>\"e2\"</ETag>"
	"<LastModified>2026-11-22T09:14:00.000Z</LastModified></Contents>"
	"</ListBucketResult>";
static const char s3_page2[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>"
	"<Name>eo</Name><Prefix></Prefix><IsTruncated>false</IsTruncated>"
	"<Contents><Key>c.tif</Key><Size>30</Size><ETag>\"e3\"</ETag>"
	"<LastModified>2026-11-22T09:14:00.000Z</LastModified></Contents>"
	"<CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes>"
	"</ListBucketResult>";
/* the same second page listed without a delimiter: every key below */
static const char s3_page2_deep[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>"
	"<Name>eo</Name><Prefix></Prefix><IsTruncated>false</IsTruncated>"
	"<Contents><Key>c.tif</Key><Size>30</Size><ETag>\"e3\"</ETag>"
	"<LastModified>2026-11-22T09:14:00.000Z</LastModified></Contents>"
	"<Contents><Key>d/e.tif</Key><Size>40</Size><ETag>\"e4\"</ETag>"
	"<LastModified>2026-11-22T09:14:00.000Z</LastModified></Contents>"
	"</ListBucketResult>";

/* The nginx index page of /web/: a.tif and b.tif, or a.tif alone. */
static void index_page(char *buf, size_t size, bool drop_b)
{
	snprintf(buf, size,
		 "<html><head><title>Index of /web/</title></head><body>\r\n"
		 "<h1>Index of /web/</h1><hr><pre><a href=\"../\">../</a>\r\n"
		 "<a href=\"a.tif\">a.tif</a>                 22-Nov-2026 09:14    %d\r\n"
		 "%s</pre><hr></body></html>\r\n", OBJECT_SIZE,
		 drop_b ? "" : "<a href=\"b.tif\">b.tif</a>                 "
			       "22-Nov-2026 09:14    1000\r\n");
}

/* Answer one request: its head in REQ. */
static void answer(int c, const char *req)
{
	char method[16] = "", target[200] = "", head[512], body[2048];
	const char *data = body;
	size_t len = 0;
	bool drop_b;

	sscanf(req, "%15s %199s", method, target);
	pthread_mutex_lock(&server.lock);
	if (server.nseen < MAX_SEEN)
		snprintf(server.seen[server.nseen++], sizeof(server.seen[0]), "%s %s", method,
			 target);
	drop_b = server.drop_b;
	pthread_cond_broadcast(&server.logged);
	pthread_mutex_unlock(&server.lock);

	const char *status = "200 OK", *extra = "";
	char range_head[128] = "";
	if (strncmp(target, "/eo", 3) == 0 && strstr(target, "list-type=2")) {
		data = !strstr(target, "continuation-token=page2") ? s3_page1 :
		       strstr(target, "delimiter=") ? s3_page2 : s3_page2_deep;
		len = strlen(data);
	} else if (strcmp(target, "/web/") == 0) {
		index_page(body, sizeof(body), drop_b);
		len = strlen(body);
	} else if (strcmp(target, "/web/a.tif") == 0 || strcmp(target, "/web/b.tif") == 0) {
		extra = "ETag: \"v1\"\r\nLast-Modified: Sun, 22 Nov 2026 09:14:00 GMT\r\n";
		data = object;
		len = OBJECT_SIZE;
		const char *range = strcasestr(req, "\nRange: bytes=");
		unsigned long from, to;
		if (range && sscanf(range + 14, "%lu-%lu", &from, &to) == 2 && from < OBJECT_SIZE) {
			if (to >= OBJECT_SIZE)
				to = OBJECT_SIZE - 1;
			status = "206 Partial Content";
			snprintf(range_head, sizeof(range_head), "Content-Range: bytes %lu-%lu/%d\r\n",
				 from, to, OBJECT_SIZE);
			data = object + from;
			len = to - from + 1;
		}
	} else {
		status = "404 Not Found";
		data = "";
	}
	snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Length: %zu\r\n%s%s"
		 "Connection: close\r\n\r\n", status, len, extra, range_head);
	if (write(c, head, strlen(head)) < 0 ||
	    (strcmp(method, "HEAD") != 0 && len && write(c, data, len) < 0))
		perror("scripted server write");
}

static void *serve(void *arg)
{
	for (;;) {
		int c = accept(server.fd, NULL, NULL);
		if (c < 0)
			return NULL;	/* shut down */
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
		answer(c, req);
		close(c);
	}
	return NULL;
}

static int listen_local(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* Requests the server saw whose line starts with PREFIX, from the FROM-th. */
static int seen_count(int from, const char *prefix)
{
	int n = 0;
	pthread_mutex_lock(&server.lock);
	for (int i = from; i < server.nseen; i++)
		n += strncmp(server.seen[i], prefix, strlen(prefix)) == 0;
	pthread_mutex_unlock(&server.lock);
	return n;
}

static int seen_total(void)
{
	pthread_mutex_lock(&server.lock);
	int n = server.nseen;
	pthread_mutex_unlock(&server.lock);
	return n;
}

/* Wait (at most WAIT_S) until the server saw a request starting with
 * PREFIX from the FROM-th on; whether it did. */
static bool seen_wait(int from, const char *prefix)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_S;
	bool found = false;
	pthread_mutex_lock(&server.lock);
	for (;;) {
		for (int i = from; i < server.nseen && !found; i++)
			found = strncmp(server.seen[i], prefix, strlen(prefix)) == 0;
		if (found || pthread_cond_timedwait(&server.logged, &server.lock, &until) != 0)
			break;
	}
	pthread_mutex_unlock(&server.lock);
	return found;
}

/* readdir's fill(): the names, joined by ' ', and how many are dirs. */
struct names {
	char joined[256];
	int dirs;
};

static int add_name(void *arg, const char *name, const struct ns_attr *attr)
{
	struct names *n = arg;
	size_t len = strlen(n->joined);
	snprintf(n->joined + len, sizeof(n->joined) - len, "%s%s", len ? " " : "", name);
	n->dirs += attr->is_dir;
	return 0;
}

static struct source *open_source(const char *url, const struct source_options *opts)
{
	struct source *src = NULL;
	char err[256];
	if (source_open(url, opts, &src, err, sizeof(err)) != 0)
		fprintf(stderr, "cannot open %s: %s\n", url, err);
	return src;
}

/* An S3 listing in two pages, of every key below the root: one directory,
 * every entry, two requests; the folder inside listed by them. */
static void test_pages(struct http_client *http, int port)
{
	char endpoint[64];
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", port);
	struct source_options opts = { .endpoint = endpoint, .no_sign_request = true };
	struct source *src = open_source("s3://eo/", &opts);
	struct namespace *ns = NULL;
	CHECK(src && ns_new(src, http, NULL, 3600, &ns) == 0, "an S3 namespace");
	if (!ns)
		return;
	int from = seen_total();
	struct names got = { "", 0 };
	int err = ns_readdir(ns, "", 0, add_name, &got);
	CHECK(err == 0 && strcmp(got.joined, "a.tif b.tif c.tif d") == 0 && got.dirs == 1,
	      "a listing of two pages shows the entries of both (%d: %s)", err, got.joined);
	CHECK(seen_count(from, "GET /eo") == 2 && seen_count(from, "GET /eo/?") +
	      seen_count(from, "GET /eo?") == 2, "two listing requests");
	int second = 0;
	pthread_mutex_lock(&server.lock);
	for (int i = from; i < server.nseen; i++)
		second += strstr(server.seen[i], "continuation-token=page2") != NULL;
	pthread_mutex_unlock(&server.lock);
	CHECK(second == 1, "the second asks with the first page's token");
	struct ns_attr attr;
	err = ns_getattr(ns, "c.tif", &attr);
	CHECK(err == 0 && !attr.is_dir && attr.size == 30,
	      "a file of the second page: its listed size, no request (%d, %llu)", err,
	      (unsigned long long)attr.size);
	CHECK(seen_total() == from + 2, "nothing asked for the stat");
	got = (struct names){ "", 0 };
	err = ns_readdir(ns, "d", 0, add_name, &got);
	CHECK(err == 0 && strcmp(got.joined, "e.tif") == 0 && seen_total() == from + 2,
	      "the folder inside, listed by the same pages: no request (%d: %s)", err, got.joined);
	ns_free(ns);
	source_free(src);
}

/* A listing within the ttl is read once; after the ttl it is read again,
 * and a name gone from it is gone from the namespace. */
static void test_ttl(struct http_client *http, struct source *src)
{
	struct namespace *ns = NULL;
	CHECK(ns_new(src, http, NULL, 3600, &ns) == 0, "a namespace with a ttl of an hour");
	int from = seen_total();
	struct names got = { "", 0 };
	ns_readdir(ns, "", 0, add_name, &got);
	struct names again = { "", 0 };
	ns_readdir(ns, "", 0, add_name, &again);
	struct ns_attr attr;
	int err = ns_getattr(ns, "b.tif", &attr);
	CHECK(strcmp(got.joined, "a.tif b.tif") == 0 && strcmp(again.joined, got.joined) == 0 &&
	      err == 0 && attr.size == OBJECT_SIZE, "read twice and a stat: a.tif b.tif (%s)",
	      again.joined);
	CHECK(seen_count(from, "GET /web/") == 1 && seen_total() == from + 1,
	      "within the ttl, the listing is asked once (%d requests)", seen_total() - from);
	ns_free(ns);

	/* a ttl of 1 s: b.tif leaves the index page, and the namespace after
	 * a refresh (waited for, at most WAIT_S) */
	CHECK(ns_new(src, http, NULL, 1, &ns) == 0, "a namespace with a ttl of 1 s");
	from = seen_total();
	err = ns_getattr(ns, "b.tif", &attr);
	CHECK(err == 0 && !attr.is_dir, "b.tif is listed (%d)", err);
	size_t alive = ns_nodes_alive();
	pthread_mutex_lock(&server.lock);
	server.drop_b = true;
	pthread_mutex_unlock(&server.lock);
	time_t until = time(NULL) + WAIT_S;
	while ((err = ns_getattr(ns, "b.tif", &attr)) == 0 && time(NULL) < until)
		usleep(50 * 1000);
	CHECK(err == -ENOENT, "after the ttl, a name gone from the listing: ENOENT (%d)", err);
	CHECK(seen_count(from, "GET /web/") >= 2, "the listing was asked again");
	CHECK(ns_nodes_alive() == alive - 1, "and its node freed (%zu, %zu before)",
	      ns_nodes_alive(), alive);
	got = (struct names){ "", 0 };
	err = ns_readdir(ns, "", 0, add_name, &got);
	CHECK(err == 0 && strcmp(got.joined, "a.tif") == 0, "readdir shows a.tif alone (%s)",
	      got.joined);
	ns_free(ns);
	pthread_mutex_lock(&server.lock);
	server.drop_b = false;
	pthread_mutex_unlock(&server.lock);
}

/* Revalidation ahead: b.tif has a version cached, a.tif none. A listing
 * brings a HEAD of b.tif in the background, and nothing for a.tif (queued
 * first); b.tif's open then asks nothing. */
static void test_ahead(struct http_client *http, struct source *src, const char *dir)
{
	struct cache_config cfg = {
		.dir = dir, .size_limit = 64 << 20, .block_size = 65536, .header_len = 16384,
		.max_request = 8 << 20, .claim_wait_s = 30,
	};
	struct cache *cache = NULL;
	int err = cache_open(&cfg, src, http, &cache);
	CHECK(err == 0, "a cache in a fresh dir (%d)", err);
	if (err)
		return;
	char *url = source_object_url(src, "b.tif");
	struct cache_object *obj = NULL;
	err = cache_object_open(cache, url, "b.tif", NULL, false, &obj);
	CHECK(err == 0 && cache_object_known(cache, url), "b.tif is cached (%d)", err);
	cache_object_unref(obj);
	free(url);

	struct namespace *ns = NULL;
	CHECK(ns_new(src, http, cache, 3600, &ns) == 0 && ns_revalidate_ahead(ns, 1) == 0,
	      "a namespace revalidating ahead with one thread");
	int from = seen_total();
	err = ns_readdir(ns, "", 0, NULL, NULL);
	CHECK(err == 0, "listed (%d)", err);
	CHECK(seen_wait(from, "HEAD /web/b.tif"), "b.tif is revalidated in the background");
	CHECK(seen_count(from, "GET /web/a.tif") + seen_count(from, "HEAD /web/a.tif") == 0,
	      "a.tif, with nothing cached, is not asked for");
	int before = seen_total();
	bool unchanged = false, older_open = true;
	obj = NULL;
	err = ns_open(ns, "b.tif", &obj, &unchanged, &older_open);
	CHECK(err == 0 && obj && cache_object_size(obj) == OBJECT_SIZE && !older_open,
	      "b.tif opens (%d)", err);
	CHECK(seen_total() == before, "and its open asks nothing (%d requests)",
	      seen_total() - before);
	cache_object_unref(obj);
	CHECK(seen_count(from, "HEAD /web/b.tif") == 1, "one HEAD in all");
	ns_stop_ahead(ns);
	ns_free(ns);
	cache_close(cache);
}

int main(void)
{
	for (size_t i = 0; i < OBJECT_SIZE; i++)
		object[i] = (char)(i * 2654435761u >> 11);
	int port;
	server.fd = listen_local(&port);
	pthread_t t;
	if (server.fd < 0 || pthread_create(&t, NULL, serve, NULL) != 0) {
		perror("scripted server");
		return 1;
	}
	struct http_config cfg;
	http_config_defaults(&cfg);
	cfg.retries = 0;
	struct http_client *http = http_client_new(&cfg);
	char dir[] = "/tmp/test_namespace.XXXXXX", web[64];
	if (!http || !mkdtemp(dir)) {
		perror("setup");
		return 1;
	}
	snprintf(web, sizeof(web), "http://127.0.0.1:%d/web", port);
	struct source_options opts = { 0 };
	struct source *src = open_source(web, &opts);

	test_pages(http, port);
	if (src) {
		test_ttl(http, src);
		test_ahead(http, src, dir);
	}

	source_free(src);
	http_client_free(http);
	shutdown(server.fd, SHUT_RDWR);
	close(server.fd);
	pthread_join(t, NULL);
	if (check_rm_tree(dir) != 0)
		perror(dir);
	return check_done();
}
