/*
 * mount_cmd.c - `tilefs mount SOURCE MOUNTPOINT`: checks everything it can
 * before mounting (options, source, mountpoint, cache dir, the origin
 * answering), forks, builds the stack, starts the metrics and the FUSE
 * front (fs/mount.h), tells the waiting parent it is ready, and serves
 * until unmounted (or stays in the foreground with -f). The one file of
 * tools/ that includes fs/ (tests/check-layers).
 */
#include "tools/mount_cmd.h"
#include "cache/base/log.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/providers/provider.h"
#include "fs/metrics.h"
#include "fs/mount.h"
#include "tools/hint.h"
#include "tools/inspect.h"
#include "tools/options.h"
#include "tools/stack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_USAGE 2

static void mount_usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs mount [OPTIONS] SOURCE MOUNTPOINT\n"
		"\n"
		"Mount SOURCE read-only at MOUNTPOINT (an existing directory). SOURCE is one of\n"
		"  http(s)://HOST/PATH/          a directory whose index pages list its files\n"
		"                                (nginx autoindex, Apache), or any prefix\n"
		"                                with --list\n"
		"  s3://BUCKET/PREFIX            S3, or an S3-compatible store (--endpoint)\n"
		"  az://ACCOUNT/CONTAINER/PREFIX Azure Blob Storage (also\n"
		"                                https://ACCOUNT.blob.core.windows.net/...)\n"
		"  gs://BUCKET/PREFIX            Google Cloud Storage\n"
		"Where credentials come from: 'man tilefs' (ENVIRONMENT). Returns once the\n"
		"mount is ready; unmount with 'fusermount3 -u MOUNTPOINT'.\n"
		"\n"
		"Options:\n");
	options_usage(out, OPTIONS_MOUNT);
	fprintf(out,
		"\n"
		"Example:\n"
		"  tilefs mount https://data.example.org/eo/ /mnt/eo \\\n"
		"      --cache-dir /nvme/tilefs --cache-size 200G\n"
		"  python3 -c \"import rasterio; print(rasterio.open('/mnt/eo/scene.tif')\"\\\n"
		"      \".read(1, window=((0, 256), (0, 256))).mean())\"\n"
		"  fusermount3 -u /mnt/eo\n");
}

static int fail_usage(const char *msg)
{
	fprintf(stderr, "tilefs: %s\nTry 'tilefs mount --help'.\n", msg);
	return EXIT_USAGE;
}

/* Start-up checks that need no network; message printed on failure. */
static int check_local(struct options *o)
{
	struct stat st, parent;
	char up[4096];

	if (stat(o->mountpoint, &st) != 0) {
		if (errno == ENOTCONN)
			fprintf(stderr, "tilefs: %s holds a mount whose daemon is gone; "
				"run 'fusermount3 -uz %s' first\n", o->mountpoint, o->mountpoint);
		else
			fprintf(stderr, "tilefs: mountpoint %s: %s (create the directory first)\n",
				o->mountpoint, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tilefs: mountpoint %s is not a directory\n", o->mountpoint);
		return -1;
	}
	snprintf(up, sizeof(up), "%s/..", o->mountpoint);
	if (stat(up, &parent) == 0 && parent.st_dev != st.st_dev) {
		fprintf(stderr, "tilefs: %s is already a mount point; unmount it first "
			"(fusermount3 -u %s)\n", o->mountpoint, o->mountpoint);
		return -1;
	}
	if (options_make_cache_dir(o->cache_dir) != 0)
		return -1;
	if (o->list_file && access(o->list_file, R_OK) != 0) {
		fprintf(stderr, "tilefs: cannot read the list %s: %s\n", o->list_file,
			strerror(errno));
		return -1;
	}
	if (o->ca_file && access(o->ca_file, R_OK) != 0) {
		fprintf(stderr, "tilefs: cannot read the CA file %s: %s\n", o->ca_file,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Tell the waiting parent how start-up went, then leave the terminal. */
static void report_ready(int fd, char status, bool detach)
{
	if (fd < 0)
		return;
	if (write(fd, &status, 1) != 1) {
		/* the parent is gone: nothing to tell */
	}
	close(fd);
	if (detach && status == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			if (null > STDERR_FILENO)
				close(null);
		}
	}
}

/* Fork; the parent waits for the child's word and exits with it. */
static int daemonize(void)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("tilefs: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("tilefs: fork");
		exit(1);
	}
	if (pid > 0) {
		char status = 1;
		close(fds[1]);
		if (read(fds[0], &status, 1) != 1) {
			fprintf(stderr, "tilefs: the daemon stopped during start-up\n");
			status = 1;
		}
		_exit(status);
	}
	close(fds[0]);
	setsid();
	return fds[1];
}

int mount_cmd_main(int argc, char **argv)
{
	struct options o;
	char err_text[2048] = "";
	struct stack stack = { 0 };
	struct mount *m = NULL;
	struct metrics *metrics = NULL;
	int status = 1, ready_fd = -1;

	if (options_parse(&o, OPTIONS_MOUNT, argc, argv, err_text, sizeof(err_text)) != 0) {
		options_release(&o);
		return fail_usage(err_text);
	}
	if (o.help) {
		mount_usage(stdout);
		options_release(&o);
		return 0;
	}
	log_set_level(o.log_level);
	if (mount_check_options(o.fuse_opts) != 0) {
		snprintf(err_text, sizeof(err_text), "-o %s: FUSE does not know one of these options",
			 o.fuse_opts);
		options_release(&o);
		return fail_usage(err_text);
	}
	if (mount_check_allowed(o.fuse_opts, "/etc/fuse.conf", err_text, sizeof(err_text)) != 0) {
		fprintf(stderr, "tilefs: %s\n", err_text);
		options_release(&o);
		return 1;
	}
	/* what the source logs while it looks for credentials becomes the
	   cause in the one message of a failed start (else it goes to the
	   log once that is open) */
	log_hold_begin();
	int open_err = stack_init(&stack, &o, err_text, sizeof(err_text));
	if (open_err) {
		char why[1024];	/* err_text has room for it */
		log_hold_end(false, why, sizeof(why));
		if (why[0]) {
			size_t used = strlen(err_text);
			snprintf(err_text + used, sizeof(err_text) - used, "; what failed: %s", why);
		}
		if (open_err != -EINVAL)
			fprintf(stderr, "tilefs: %s\n", err_text);
		stack_release(&stack);
		options_release(&o);
		return open_err == -EINVAL ? fail_usage(err_text) : 1;
	}
	if (check_local(&o) != 0)
		goto out;

	char log_path[4200];
	if (o.log_file)
		snprintf(log_path, sizeof(log_path), "%s", o.log_file);
	else
		snprintf(log_path, sizeof(log_path), "%s/tilefs.log", o.cache_dir);
	if (!o.foreground || o.log_file) {
		int err = log_set_file(log_path);
		if (err) {
			fprintf(stderr, "tilefs: cannot write the log %s: %s\n", log_path,
				strerror(-err));
			goto out;
		}
	}
	log_hold_end(true, NULL, 0);
	if (!o.foreground)
		ready_fd = daemonize();
	if (stack.src->credentials[0])
		log_info("%s: credentials from %s", stack.src->display, stack.src->credentials);

	/* from here on, errors go to stderr (still the terminal) and the log */
	struct stack_tuning tuning = {
		.connections = o.max_connections,
		.max_request = 16u << 20,
		.merge_gap = o.merge_gap,
		.readahead_max = o.readahead,
		.prefetch = o.prefetch,
		.listing_ttl_s = (int)o.ttl,
		/* a thread a connection: half of them at most open files
		   (demand goes first), the others list in the background */
		.ahead_threads = (int)o.max_connections,
		/* a mount serves reads even when its cache cannot (logged) */
		.uncached_ok = true,
		/* a cache larger than its disk would fill it: every unit
		   stored then fails, and is fetched again */
		.fit_disk = true,
	};
	int err = stack_start(&stack, &o, &tuning, err_text, sizeof(err_text));
	if (err) {
		if (err_text[0])
			fprintf(stderr, "tilefs: %s\n", err_text);
		goto out;
	}
	if (o.list_file) {
		err = ns_load_manifest(stack.ns, o.list_file, err_text, sizeof(err_text));
		if (err) {
			fprintf(stderr, "tilefs: %s\n", err_text);
			goto out;
		}
	} else {
		/* the root listing shows the origin answers (and is kept) */
		err = ns_readdir(stack.ns, "", 0, NULL, NULL);
		if (err) {
			ns_list_error(stack.ns, err, o.foreground && !o.log_file ? NULL : log_path,
				      err_text, sizeof(err_text));
			fprintf(stderr, "tilefs: %s\n", err_text);
			goto out;
		}
	}

	struct metrics_config mec = {
		.cache_dir = o.cache_dir,
		.file = o.metrics_file,
		.port = (int)o.metrics_port,
		.address = o.metrics_address,
		.source = stack.src->display,
		.src = stack.src,
		.mountpoint = o.mountpoint,
	};
	if (metrics_start(&mec, stack.cache, stack.http, &metrics, err_text, sizeof(err_text)) != 0) {
		fprintf(stderr, "tilefs: %s\n", err_text);
		goto out;
	}

	char fsname[512];
	snprintf(fsname, sizeof(fsname), "tilefs:%s", stack.src->display);
	for (char *p = fsname; *p; p++)
		if (*p == ',')
			*p = '_';
	struct mount_config mc = {
		.mountpoint = o.mountpoint,
		.fsname = fsname,
		.fuse_opts = o.fuse_opts,
		.ttl_s = (int)o.ttl,
		/* a file read by passthrough is never seen: not while recording */
		.passthrough = !o.no_passthrough && !o.record_file,
		.object_xattr = INSPECT_XATTR_OBJECT,
		.hint_xattr = HINT_XATTR_SOCKET,
		.hint_budget = o.hint_budget ? o.hint_budget : hint_default_budget(stack.cache_size),
		.record_file = o.record_file,
	};
	if (mount_new(&mc, stack.ns, stack.cache, &m) != 0) {
		fprintf(stderr, "tilefs: cannot mount on %s (see %s)\n", o.mountpoint,
			o.foreground && !o.log_file ? "the messages above" : log_path);
		goto out;
	}
	log_info("mounted %s on %s (cache %s, %llu MiB)", stack.src->display, o.mountpoint,
		 o.cache_dir, (unsigned long long)(stack.cache_size >> 20));
	report_ready(ready_fd, 0, true);
	ready_fd = -1;
	status = mount_run(m) == 0 ? 0 : 1;
	log_info("unmounted %s", o.mountpoint);
out:
	log_hold_end(true, NULL, 0);	/* still held if the start failed before the log opened */
	report_ready(ready_fd, (char)status, false);
	mount_free(m);
	metrics_stop(metrics);
	stack_release(&stack);
	options_release(&o);
	return status;
}
