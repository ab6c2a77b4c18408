/*
 * hint.c - see hint.h. The tool reads the order itself (the daemon may run
 * as another user, root say, and opens no file for its caller) and sends
 * its bytes; the daemon parses, resolves and answers with the count of
 * entries or the line at fault.
 */
#include "tools/hint.h"
#include "cache/engine/cache.h"
#include "tools/mount_lookup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define FUSE_MAGIC 0x65735546	/* statfs f_type of a FUSE file system */
#define REPLY_MAX 16384		/* the daemon's answer: one line */
#define CLIENT_DEFAULT "cli"	/* the client a hint without --client is of */

uint64_t hint_default_budget(uint64_t cache_size)
{
	/* in a full cache what is fetched ahead is kept until read in room
	   taken from the data that fits, and the mount holds it to the 5%
	   eviction leaves free (cache/engine/hint.c); a cache with room
	   takes more, but prefetch far ahead buys little once every
	   connection is busy */
	uint64_t budget = cache_size / 32;
	return budget < (1ull << 30) ? budget : 1ull << 30;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs hint [--client NAME] MOUNTPOINT ORDER_FILE\n"
		"       tilefs hint [--client NAME] MOUNTPOINT -     (the order on stdin)\n"
		"       tilefs hint [--client NAME] MOUNTPOINT --clear\n"
		"       tilefs hint MOUNTPOINT --clear-all\n"
		"\n"
		"Hand the tilefs mount at MOUNTPOINT the reads to come, in order: it\n"
		"fetches ahead of its readers along that order, at most --hint-budget\n"
		"bytes ahead (mount option; default 1/32 of --cache-size, at most 1G),\n"
		"in the background (a read a reader waits for goes first).\n"
		"\n"
		"Several clients may hint at once (a process per GPU, say): the mount\n"
		"serves every client's hint, in turn and within the one budget. A hint\n"
		"replaces only the hint of its own client, NAME (default \"cli\"); it\n"
		"stays until NAME hints again or --clear drops it. --clear-all drops\n"
		"every client's. A program that talks to the mount itself (the Python\n"
		"package: tilefs.hint(), tilefs.torch.HintedSampler) has a hint of its\n"
		"own process, dropped when that process exits. Progress shows in the\n"
		"tilefs_hint_* metrics.\n"
		"\n"
		"ORDER_FILE: one read a line,\n"
		"  PATH                       all of the file\n"
		"  PATH<TAB>X Y W H           the pixels [X, X+W) x [Y, Y+H) of the file's\n"
		"                             full-resolution image (its tiles)\n"
		"  PATH X Y W H               the same, when the last four fields are\n"
		"                             numbers after a space (without a tab)\n"
		"PATH is relative to MOUNTPOINT (or absolute, under it) and may hold\n"
		"spaces; with a tab, everything before the first tab is the path. Empty\n"
		"lines and lines starting with '#' are skipped; trailing blanks and CR\n"
		"are dropped. At most %d bytes a line, %d entries, %u MiB in all.\n"
		"`tilefs mount --record FILE` and `tilefs warm --from-file` use the same\n"
		"format.\n"
		"\n"
		"Only the mount's owner or root may hint. Exit 0 handed over, 1 refused\n"
		"(the message names the line at fault), 2 bad command line.\n",
		HINT_LINE_MAX - 1, HINT_ENTRIES_MAX, HINT_ORDER_MAX >> 20);
}

/* Read all of FD (at most HINT_ORDER_MAX bytes) after HEAD into *out. */
static int read_order(int fd, const char *head, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = strlen(head);
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, n);
	for (;;) {
		if (n == cap) {
			if (cap >= HINT_ORDER_MAX + strlen(head) + 1) {
				free(buf);
				return -E2BIG;
			}
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int err = -errno;
			free(buf);
			return err;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > HINT_ORDER_MAX + strlen(head)) {
		free(buf);
		return -E2BIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* The control socket of the tilefs mount at MOUNTPOINT into PATH; exit
 * status 1 with a message when it is none. */
static int find_socket(const char *mountpoint, char *path, size_t size)
{
	struct statfs sfs;
	struct stat st;

	if (stat(mountpoint, &st) != 0 || statfs(mountpoint, &sfs) != 0) {
		fprintf(stderr, "tilefs: hint: %s: %s%s\n", mountpoint, strerror(errno),
			errno == EACCES ? ": only the mount's owner or root may hint" : "");
		return 1;
	}
	int err = (unsigned long)sfs.f_type == FUSE_MAGIC && st.st_ino == 1 ?
		mount_lookup_socket(mountpoint, path, size) : -ENODATA;
	if (err) {
		if (err == -EACCES)
			fprintf(stderr, "tilefs: hint: %s: permission denied: only the mount's "
				"owner or root may hint\n", mountpoint);
		else
			fprintf(stderr, "tilefs: hint: %s is not the mountpoint of a running "
				"tilefs mount\n", mountpoint);
		return 1;
	}
	return 0;
}

/* Connect to the socket at PATH (through its directory when the path is
 * too long for an address); the fd or -errno. */
static int connect_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int dir_fd = -1, fd, err = 0;

	if (strlen(path) < sizeof(sa.sun_path)) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	} else {
		char *copy = strdup(path);
		if (!copy)
			return -ENOMEM;
		dir_fd = open(dirname(copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(copy);
		if (dir_fd < 0)
			return -errno;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dir_fd,
			 strrchr(path, '/') + 1);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (dir_fd >= 0)
		close(dir_fd);
	return err ? err : fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);	/* refused: EPIPE */
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int hint_main(int argc, char **argv)
{
	char sock[4500], reply[REPLY_MAX];
	char *req = NULL;
	size_t len = 0;
	int status = 1, err;

	if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	const char *client = CLIENT_DEFAULT;
	if (argc >= 1 && strncmp(argv[0], "--client", 8) == 0 &&
	    (argv[0][8] == '=' || (argv[0][8] == '\0' && argc >= 2))) {
		client = argv[0][8] == '=' ? argv[0] + 9 : argv[1];
		argc -= argv[0][8] == '=' ? 1 : 2;
		argv += argv[0][8] == '=' ? 1 : 2;
	}
	if (!hint_client_ok(client, strlen(client))) {
		fprintf(stderr, "tilefs: hint: --client '%s': a name is 1 to 64 letters, digits, "
			"'.', '_' or '-'\n", client);
		return EXIT_USAGE;
	}
	if (argc != 2) {
		fprintf(stderr, "tilefs: hint takes MOUNTPOINT and ORDER_FILE (or -, --clear or "
			"--clear-all); see 'tilefs hint --help'\n");
		return EXIT_USAGE;
	}
	const char *mountpoint = argv[0], *order = argv[1];
	bool clear_all = strcmp(order, "--clear-all") == 0;
	bool clear = clear_all || strcmp(order, "--clear") == 0;
	if (!clear && order[0] == '-' && order[1]) {
		fprintf(stderr, "tilefs: hint: unknown option '%s'; see 'tilefs hint --help'\n",
			order);
		return EXIT_USAGE;
	}
	char head[128];
	snprintf(head, sizeof(head), "tilefs-hint %s%s%s\n",
		 clear_all ? "clear-all" : clear ? "clear" : "order", clear_all ? "" : " ",
		 clear_all ? "" : client);
	if (clear) {
		req = strdup(head);
		len = req ? strlen(req) : 0;
		err = req ? 0 : -ENOMEM;
	} else {
		int fd = strcmp(order, "-") == 0 ? 0 : open(order, O_RDONLY | O_CLOEXEC);
		err = fd < 0 ? -errno : read_order(fd, head, &req, &len);
		if (fd > 0)
			close(fd);
	}
	if (err) {
		fprintf(stderr, "tilefs: hint: %s: %s\n", order,
			err == -E2BIG ? "the order is over the limit of 64 MiB" : strerror(-err));
		return 1;
	}
	if (find_socket(mountpoint, sock, sizeof(sock)) != 0)
		goto out;
	int fd = connect_socket(sock);
	if (fd < 0) {
		fprintf(stderr, "tilefs: hint: %s: cannot reach the mount's control socket: %s%s\n",
			mountpoint, strerror(-fd),
			fd == -EACCES ? ": only the mount's owner or root may hint" : "");
		goto out;
	}
	/* the daemon may refuse (and close) before reading it all */
	err = send_all(fd, req, len);
	shutdown(fd, SHUT_WR);
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, reply + got, sizeof(reply) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (got += (size_t)n) == sizeof(reply) - 1)
			break;
	}
	close(fd);
	reply[got] = '\0';
	reply[strcspn(reply, "\n")] = '\0';
	unsigned long long entries;
	if (sscanf(reply, "ok %llu", &entries) == 1) {
		bool named = strcmp(client, CLIENT_DEFAULT) != 0;
		if (clear_all)
			printf("every client's hint dropped on %s\n", mountpoint);
		else if (clear)
			printf("hint dropped on %s%s%s%s\n", mountpoint, named ? " (client " : "",
			       named ? client : "", named ? ")" : "");
		else
			printf("hinted %llu entries on %s%s%s%s\n", entries, mountpoint,
			       named ? " (client " : "", named ? client : "", named ? ")" : "");
		status = 0;
	} else if (strncmp(reply, "error: ", 7) == 0) {
		fprintf(stderr, "tilefs: hint: %s: %s\n", clear ? mountpoint : order, reply + 7);
	} else {
		fprintf(stderr, "tilefs: hint: %s: no answer from the mount%s%s\n", mountpoint,
			err ? ": " : "", err ? strerror(-err) : "");
	}
out:
	free(req);
	return status;
}
