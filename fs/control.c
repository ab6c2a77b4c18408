/*
 * control.c - see control.h. One thread accepts the clients one at a time:
 * a hint is a rare request, and each is read whole (bounded) before it
 * replaces its client's hint, so a bad order changes nothing. The same
 * thread watches the processes whose hints last as long as they do (a
 * pidfd each) and drops a hint when its process exits.
 */
#include "fs/control.h"
#include "cache/base/log.h"
#include "cache/engine/cache.h"
#include "cache/namespace/namespace.h"
#include "cache/store/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define SOCKET_PATH_SIZE 4400
#define CLIENT_TIMEOUT_S 30	/* a client that sends nothing this long is dropped */
#define CHECKED_OBJECTS 32	/* objects kept open to check the windows of an order */
#define WHY_SIZE (2 * HINT_LINE_MAX + 4400 + 600)	/* two paths and words */
#define WATCHED_MAX 64		/* processes whose hints end with them */
#define CLIENT_SIZE 72		/* a client's name (cache.h), with its NUL */

/* A process whose hint is dropped when it exits. */
struct watched {
	char client[CLIENT_SIZE];	/* "pid:PID" */
	int pidfd;			/* -1: a free slot */
};

struct control {
	struct namespace *ns;
	struct cache *cache;
	char *mountpoint;		/* real path */
	uint64_t budget;
	int listen_fd;
	int stop_pipe[2];		/* a byte on [1]: stop */
	struct watched watched[WATCHED_MAX];	/* the control thread's */
	pthread_t thread;
	char path[SOCKET_PATH_SIZE];
};

/* The path PATH of the order names, relative to the mount, into REL; or
 * -EINVAL when it does not lie under the mount. */
static int relative_path(const struct control *ctl, const char *path, char *rel, size_t size)
{
	size_t mlen = strlen(ctl->mountpoint);
	if (path[0] == '/') {
		if (strncmp(path, ctl->mountpoint, mlen) != 0 ||
		    (path[mlen] != '/' && ctl->mountpoint[mlen - 1] != '/'))
			return -EINVAL;
		path += mlen;
	}
	while (*path == '/' || (path[0] == '.' && path[1] == '/'))
		path += path[0] == '.' ? 2 : 1;
	if (strlen(path) >= size)
		return -EINVAL;
	/* no "..", "." or empty component: the path names a file of the mount */
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p += len;
		if (*p == '/' && *++p == '\0')
			return -EINVAL;
	}
	if (!*path)
		return -EINVAL;
	snprintf(rel, size, "%s", path);
	return 0;
}

struct order {
	struct cache_hint_entry *v;
	struct cache_listed *listed;
	char (*etags)[128];
	size_t n, cap;
};

static void order_release(struct order *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free((char *)o->v[i].url);
		free((char *)o->v[i].log_name);
	}
	free(o->v);
	free(o->listed);
	free(o->etags);
	memset(o, 0, sizeof(*o));
}

static int order_grow(struct order *o)
{
	size_t cap = o->cap ? 2 * o->cap : 256;
	struct cache_hint_entry *v = realloc(o->v, cap * sizeof(*v));
	if (v)
		o->v = v;
	struct cache_listed *l = realloc(o->listed, cap * sizeof(*l));
	if (l)
		o->listed = l;
	char (*e)[128] = realloc(o->etags, cap * sizeof(*e));
	if (e)
		o->etags = e;
	if (!v || !l || !e)
		return -ENOMEM;
	o->cap = cap;
	/* the entries point into the arrays that moved */
	for (size_t i = 0; i < o->n; i++) {
		o->listed[i].etag = o->etags[i];
		o->v[i].listed = &o->listed[i];
	}
	return 0;
}

/* Resolve the entry of line LINENO (parsed into L) in the mount: append it
 * to O, or -EINVAL with the reason in WHY. A window is checked against its
 * image when opening the object costs no data request (it is cached);
 * OPENED keeps the objects opened for that, for the lines after. */
static int order_add(struct control *ctl, struct order *o, unsigned lineno, struct hint_line *l,
		     struct cache_objects *opened, char *why, size_t why_size)
{
	char rel[4400];

	if (relative_path(ctl, l->path, rel, sizeof(rel)) != 0) {
		snprintf(why, why_size, "line %u: %s is not under the mount %s", lineno, l->path,
			 ctl->mountpoint);
		return -EINVAL;
	}
	if (o->n == HINT_ENTRIES_MAX) {
		snprintf(why, why_size, "line %u: more than %d entries", lineno, HINT_ENTRIES_MAX);
		return -EINVAL;
	}
	if (o->n == o->cap && order_grow(o) != 0) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	struct cache_listed *listed = &o->listed[o->n];
	char *url = ns_url(ctl->ns, rel, listed, o->etags[o->n]);
	if (!url) {
		snprintf(why, why_size, "line %u: %s: no such file in the mount", lineno, rel);
		return -EINVAL;
	}
	listed->etag = o->etags[o->n];
	/* opened for an earlier line; else opened if that costs no data
	   (a version is cached): one index look-up a file, not a line */
	struct cache_object *obj = l->window ? cache_objects_get(opened, url) : NULL;
	if (l->window && !obj && cache_object_known(ctl->cache, url) &&
	    cache_objects_open(opened, ctl->cache, url, rel, listed, false, &obj) != 0)
		obj = NULL;	/* the hint thread will say */
	if (obj) {
		char reason[300];
		if (cache_object_window_check(obj, l, reason, sizeof(reason)) != 0) {
			snprintf(why, why_size, "line %u: %s: %s", lineno, rel, reason);
			free(url);
			return -EINVAL;
		}
	}
	struct cache_hint_entry *e = &o->v[o->n];
	memset(e, 0, sizeof(*e));
	e->url = url;
	e->log_name = strdup(rel);
	e->listed = listed;
	e->line = lineno;
	e->window = l->window;
	e->x = l->x;
	e->y = l->y;
	e->w = l->w;
	e->h = l->h;
	o->n++;
	if (!e->log_name) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Parse and resolve the order TEXT (LEN bytes, NUL after them) into O. */
static int order_parse(struct control *ctl, char *text, size_t len, struct order *o, char *why,
		       size_t why_size)
{
	struct cache_objects *opened = cache_objects_new(CHECKED_OBJECTS);
	unsigned lineno = 0;
	int err = 0;

	if (!opened) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (char *p = text; p < text + len && !err;) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		char *end = nl ? nl : text + len;
		struct hint_line l;
		char reason[300];
		lineno++;
		if ((size_t)(end - p) >= HINT_LINE_MAX) {
			snprintf(why, why_size, "line %u: longer than %d bytes", lineno,
				 HINT_LINE_MAX - 1);
			err = -EINVAL;
			break;
		}
		*end = '\0';
		if (memchr(p, '\0', (size_t)(end - p))) {
			snprintf(why, why_size, "line %u: a NUL byte", lineno);
			err = -EINVAL;
			break;
		}
		int rc = hint_line_parse(p, &l, reason, sizeof(reason));
		if (rc < 0) {
			snprintf(why, why_size, "line %u: %s", lineno, reason);
			err = rc;
		} else if (rc == 1) {
			err = order_add(ctl, o, lineno, &l, opened, why, why_size);
		}
		p = end + 1;
	}
	cache_objects_free(opened);
	return err;
}

/* Read the client's whole request into *BUF (NUL-terminated; caller
 * frees): at most the header line and HINT_ORDER_MAX bytes. */
static int read_request(int fd, char **buf, size_t *len, char *why, size_t why_size)
{
	size_t cap = 64 << 10, max = HINT_ORDER_MAX + 64, n = 0;
	char *b = malloc(cap + 1);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			size_t grown = cap * 2 > max ? max : cap * 2;
			char *nb = grown > cap ? realloc(b, grown + 1) : NULL;
			if (!nb) {
				snprintf(why, why_size, grown > cap ? "out of memory" :
					 "the order is over %u bytes", HINT_ORDER_MAX);
				free(b);
				return grown > cap ? -ENOMEM : -E2BIG;
			}
			b = nb;
			cap = grown;
		}
		ssize_t got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			snprintf(why, why_size, "reading the request: %s", strerror(errno));
			free(b);
			return -errno;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* A request's first line (control.h): what it asks, for which client. */
struct request_head {
	enum { REQ_ORDER, REQ_CLEAR, REQ_CLEAR_ALL } verb;
	char client[CLIENT_SIZE];	/* its name, or "pid:PID" */
	bool watch;			/* the hint of the peer process PID:
					   dropped when it exits */
	size_t len;			/* the line's bytes, with its newline */
};

/* Parse the first line of REQ (LEN bytes) from the process PEER into H;
 * 0, or -EINVAL and why in WHY. */
static int parse_head(const char *req, size_t len, pid_t peer, struct request_head *h,
		      char *why, size_t why_size)
{
	static const char magic[] = "tilefs-hint ";
	const char *nl = memchr(req, '\n', len);

	memset(h, 0, sizeof(*h));
	if (!nl || len < strlen(magic) || memcmp(req, magic, strlen(magic)) != 0) {
		snprintf(why, why_size, "not a tilefs hint request");
		return -EINVAL;
	}
	const char *verb = req + strlen(magic);
	size_t vlen = strcspn(verb, " \n");
	const char *name = verb + vlen + (verb[vlen] == ' ');
	size_t nlen = (size_t)(nl - name);
	h->len = (size_t)(nl - req) + 1;
	if (vlen == 5 && memcmp(verb, "order", 5) == 0) {
		h->verb = REQ_ORDER;
	} else if (vlen == 5 && memcmp(verb, "clear", 5) == 0) {
		h->verb = REQ_CLEAR;
	} else if (vlen == 9 && memcmp(verb, "clear-all", 9) == 0 && nlen == 0) {
		h->verb = REQ_CLEAR_ALL;
		if (len == h->len)
			return 0;
		snprintf(why, why_size, "nothing may follow a clear");
		return -EINVAL;
	} else {
		snprintf(why, why_size, "not a tilefs hint request");
		return -EINVAL;
	}
	if (nlen && !hint_client_ok(name, nlen)) {
		snprintf(why, why_size, "a client's name is 1 to 64 letters, digits, '.', '_' "
			 "or '-'");
		return -EINVAL;
	}
	if (!nlen && peer <= 0) {
		snprintf(why, why_size, "a client in another pid namespace must give its name");
		return -EINVAL;
	}
	if (nlen)
		snprintf(h->client, sizeof(h->client), "%.*s", (int)nlen, name);
	else
		snprintf(h->client, sizeof(h->client), "pid:%ld", (long)peer);
	h->watch = !nlen;
	if (h->verb == REQ_CLEAR && len != h->len) {
		snprintf(why, why_size, "nothing may follow a clear");
		return -EINVAL;
	}
	return 0;
}

/* Stop watching the process of CLIENT (if it was). */
static void unwatch(struct control *ctl, const char *client)
{
	for (size_t i = 0; i < WATCHED_MAX; i++) {
		struct watched *w = &ctl->watched[i];
		if (w->pidfd >= 0 && (!client || strcmp(w->client, client) == 0)) {
			close(w->pidfd);
			w->pidfd = -1;
		}
	}
}

/* Watch process PID, whose hint is CLIENT's: 0, or -errno and why. */
static int watch(struct control *ctl, const char *client, pid_t pid, char *why,
		 size_t why_size)
{
	struct watched *slot = NULL;
	for (size_t i = 0; i < WATCHED_MAX; i++) {
		struct watched *w = &ctl->watched[i];
		if (w->pidfd >= 0 && strcmp(w->client, client) == 0)
			return 0;
		if (w->pidfd < 0 && !slot)
			slot = w;
	}
	if (!slot) {
		snprintf(why, why_size, "%d processes have a hint already", WATCHED_MAX);
		return -EUSERS;
	}
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		int err = -errno;
		snprintf(why, why_size, "cannot watch the client's process %ld: %s", (long)pid,
			 strerror(errno));
		return err;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	snprintf(slot->client, sizeof(slot->client), "%s", client);
	slot->pidfd = fd;
	return 0;
}

static void reply(int fd, const char *text)
{
	size_t len = strlen(text);
	while (len) {
		ssize_t n = write(fd, text, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

/* Serve one client on FD. */
static void serve(struct control *ctl, int fd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct timeval tv = { CLIENT_TIMEOUT_S, 0 };
	char why[WHY_SIZE], answer[WHY_SIZE + 16];
	char *req = NULL;
	size_t len = 0;
	struct order o = { 0 };

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		log_warn("hint: refused a client of uid %ld: only the mount's owner or root may "
			 "hint", (long)cred.uid);
		snprintf(answer, sizeof(answer), "error: only the mount's owner (uid %ld) or root "
			 "may hint\n", (long)geteuid());
		reply(fd, answer);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int err = read_request(fd, &req, &len, why, sizeof(why));
	struct request_head head;
	if (!err)
		err = parse_head(req, len, cred.pid, &head, why, sizeof(why));
	if (err)
		goto answer;
	if (head.verb == REQ_ORDER) {
		err = order_parse(ctl, req + head.len, len - head.len, &o, why, sizeof(why));
		if (!err && head.watch)
			err = watch(ctl, head.client, cred.pid, why, sizeof(why));
	} else {
		unwatch(ctl, head.verb == REQ_CLEAR ? head.client : NULL);
	}
	if (!err) {
		err = cache_hint_set(ctl->cache, head.verb == REQ_CLEAR_ALL ? NULL : head.client,
				     o.v, o.n, ctl->budget);
		snprintf(why, sizeof(why), "%s", err == -EUSERS ? "too many clients have a hint "
			 "(64): drop one first" : strerror(-err));
	}
answer:
	if (err)
		snprintf(answer, sizeof(answer), "error: %s\n", why);
	else
		snprintf(answer, sizeof(answer), "ok %zu\n", o.n);
	if (err)
		log_warn("hint refused: %s", why);
	reply(fd, answer);
	order_release(&o);
	free(req);
}

/* Drop the hint of each watched process that has exited. */
static void reap_watched(struct control *ctl, const struct pollfd *pf, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!pf[k].revents)
			continue;
		for (size_t i = 0; i < WATCHED_MAX; i++) {
			struct watched *w = &ctl->watched[i];
			if (w->pidfd != pf[k].fd)
				continue;
			cache_hint_set(ctl->cache, w->client, NULL, 0, ctl->budget);
			close(w->pidfd);
			w->pidfd = -1;
		}
	}
}

static void *control_thread(void *arg)
{
	struct control *ctl = arg;
	struct pollfd pf[2 + WATCHED_MAX];

	for (;;) {
		size_t n = 2;
		pf[0] = (struct pollfd){ ctl->listen_fd, POLLIN, 0 };
		pf[1] = (struct pollfd){ ctl->stop_pipe[0], POLLIN, 0 };
		for (size_t i = 0; i < WATCHED_MAX; i++)
			if (ctl->watched[i].pidfd >= 0)
				pf[n++] = (struct pollfd){ ctl->watched[i].pidfd, POLLIN, 0 };
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("hint socket: poll: %s: no more hints", strerror(errno));
			break;
		}
		if (pf[1].revents)
			break;
		reap_watched(ctl, pf + 2, n - 2);
		if (!pf[0].revents)
			continue;
		int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve(ctl, fd);
		close(fd);
	}
	return NULL;
}

int control_start(struct namespace *ns, struct cache *cache, const char *mountpoint,
		  uint64_t budget, struct control **out)
{
	struct control *ctl = calloc(1, sizeof(*ctl));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[SOCKET_PATH_SIZE];
	int err = -ENOMEM;

	if (!ctl)
		return -ENOMEM;
	ctl->ns = ns;
	ctl->cache = cache;
	ctl->budget = budget;
	ctl->listen_fd = ctl->stop_pipe[0] = ctl->stop_pipe[1] = -1;
	for (size_t i = 0; i < WATCHED_MAX; i++)
		ctl->watched[i].pidfd = -1;
	if (!(ctl->mountpoint = strdup(mountpoint)))
		goto fail;
	err = mounts_dir(cache_dir(cache), dir, sizeof(dir));
	if (!err && snprintf(ctl->path, sizeof(ctl->path), "%s/%ld.hint.sock", dir,
			     (long)getpid()) >= (int)sizeof(ctl->path))
		err = -ENAMETOOLONG;
	if (err)
		goto fail;
	/* a path too long for sun_path is reached through a directory fd */
	int dir_fd = -1;
	if (strlen(ctl->path) < sizeof(sa.sun_path)) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ctl->path);
	} else {
		dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0) {
			err = -errno;
			goto fail;
		}
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%ld.hint.sock", dir_fd,
			 (long)getpid());
	}
	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(ctl->path);	/* left by an earlier process of this pid */
	if (ctl->listen_fd < 0 || bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(ctl->listen_fd, 8) != 0 || pipe2(ctl->stop_pipe, O_CLOEXEC) != 0) {
		err = -errno;
		if (dir_fd >= 0)
			close(dir_fd);
		goto fail_socket;
	}
	if (dir_fd >= 0)
		close(dir_fd);
	/* like every file of the cache dir, 0600; the private cache dir keeps
	   others out as well, and the check of each client's uid (serve())
	   admits the owner and root only, whatever the modes */
	chmod(ctl->path, 0600);
	if (pthread_create(&ctl->thread, NULL, control_thread, ctl) != 0) {
		err = -EAGAIN;
		goto fail_socket;
	}
	pthread_setname_np(ctl->thread, "tilefs-control");
	*out = ctl;
	return 0;

fail_socket:
	log_error("cannot listen for hints on %s: %s", ctl->path, strerror(-err));
	unlink(ctl->path);
fail:
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	if (ctl->stop_pipe[0] >= 0) {
		close(ctl->stop_pipe[0]);
		close(ctl->stop_pipe[1]);
	}
	free(ctl->mountpoint);
	free(ctl);
	return err;
}

const char *control_socket_path(const struct control *ctl)
{
	return ctl->path;
}

void control_stop(struct control *ctl)
{
	if (!ctl)
		return;
	if (write(ctl->stop_pipe[1], "", 1) == 1)
		pthread_join(ctl->thread, NULL);
	cache_hint_stop(ctl->cache);
	unwatch(ctl, NULL);
	unlink(ctl->path);
	close(ctl->listen_fd);
	close(ctl->stop_pipe[0]);
	close(ctl->stop_pipe[1]);
	free(ctl->mountpoint);
	free(ctl);
}
