/*
 * aws_process.c - a profile's credential_process (see aws_process.h).
 * The command is started with posix_spawnp() (safe from a threaded
 * process: no code runs between fork and exec), in a process group of its
 * own, its standard input /dev/null, its standard output a pipe read with
 * a bound, its standard error tilefs's own (the command's messages are its
 * own business; its output, which holds the secret, is never logged), no
 * other descriptor, and tilefs's environment without the secrets of other
 * sources (aws_process.h).
 *
 * One deadline, AWS_PROCESS_TIMEOUT_S from the start, covers the whole
 * run: its output up to end of file, then its exit. Past it, or on output
 * over the bound, its process group is killed and the command reaped; its
 * answer is void. A renewal runs this on its own thread, with no lock
 * held (renewal.c): the deadline bounds how long a signer whose keys have
 * expired can wait, and when a mount can stop.
 */
#include "cache/origin/providers/aws_process.h"
#include "cache/base/log.h"
#include "cache/base/monotonic.h"
#include "cache/origin/json.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Variables tilefs reads for its other sources that hold a secret: none
 * is the command's business. The AWS CLI passes its whole environment to
 * the command, and so does tilefs with these left out. */
static const char *const not_passed[] = {
	"TILEFS_TIER_SECRET", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_KEY",
	"AZURE_STORAGE_SAS_TOKEN", "IDENTITY_HEADER", "GOOGLE_OAUTH_ACCESS_TOKEN",
	"GS_SECRET_ACCESS_KEY", NULL
};

int aws_process_split(const char *command, char *buf, size_t size, char **argv, int max)
{
	const char *p = command;
	size_t used = 0;
	int argc = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (argc + 1 >= max)
			return -EINVAL;
		argv[argc++] = buf + used;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
			char c = *p++;
			if (c == '\'') {
				while (*p && *p != '\'') {
					if (used + 1 >= size)
						return -EINVAL;
					buf[used++] = *p++;
				}
				if (*p++ != '\'')
					return -EINVAL;
				continue;
			}
			if (c == '"') {
				while (*p && *p != '"') {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					if (used + 1 >= size)
						return -EINVAL;
					buf[used++] = *p++;
				}
				if (*p++ != '"')
					return -EINVAL;
				continue;
			}
			if (c == '\\') {
				if (!*p)
					return -EINVAL;
				c = *p++;
			}
			if (used + 1 >= size)
				return -EINVAL;
			buf[used++] = c;
		}
		if (used + 1 >= size)
			return -EINVAL;
		buf[used++] = '\0';
	}
	argv[argc] = NULL;
	return argc ? argc : -EINVAL;
}

bool aws_process_passes(const char *entry)
{
	for (const char *const *name = not_passed; *name; name++) {
		size_t len = strlen(*name);
		if (strncmp(entry, *name, len) == 0 && entry[len] == '=')
			return false;
	}
	return true;
}

/* tilefs's environment for the command: the entries aws_process_passes(),
 * borrowed from environ in a new array (free it, not its strings). */
static char **command_environment(void)
{
	size_t n = 0, kept = 0;

	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (aws_process_passes(environ[i]))
			env[kept++] = environ[i];
	return env;
}

/* Milliseconds left until DEADLINE (monotonic_ms()), at most INT_MAX. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = monotonic_ms();
	if (now >= deadline)
		return 0;
	return deadline - now > 0x7fffffff ? 0x7fffffff : (int)(deadline - now);
}

/* Read the child's output from FD into OUT (at most SIZE bytes) until
 * end of file or DEADLINE: the byte count, -E2BIG, -ETIMEDOUT or -errno. */
static ssize_t read_bounded(int fd, char *out, size_t size, uint64_t deadline)
{
	size_t len = 0;

	for (;;) {
		int left = ms_left(deadline);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			return -ETIMEDOUT;
		int rc = poll(&pfd, 1, left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		char chunk[4096];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return (ssize_t)len;
		if (len + (size_t)n > size)
			return -E2BIG;
		memcpy(out + len, chunk, (size_t)n);
		len += (size_t)n;
		memset(chunk, 0, sizeof(chunk));
	}
}

/* Wait until PID exits or DEADLINE: 0 with its *STATUS (reaped), or
 * -ETIMEDOUT (not reaped). A pidfd wakes the wait at the exit; without
 * one (a kernel before 5.3) it looks every 10 ms. */
static int wait_bounded(pid_t pid, int *status, uint64_t deadline)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), err;

	for (;;) {
		pid_t got = waitpid(pid, status, WNOHANG);
		if (got == pid) {
			err = 0;
			break;
		}
		if (got < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		int left = ms_left(deadline);
		if (left <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		if (pidfd >= 0)
			poll(&pfd, 1, left);
		else
			poll(NULL, 0, left < 10 ? left : 10);
	}
	if (pidfd >= 0)
		close(pidfd);
	return err;
}

int aws_process_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	const struct aws_process *proc = ctx;
	char words[sizeof(proc->command)], *argv[AWS_PROCESS_MAX_ARGS];
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	int pipefd[2], status, err;
	char *doc = NULL, **env = NULL;
	pid_t pid;

	if (aws_process_split(proc->command, words, sizeof(words), argv,
			      AWS_PROCESS_MAX_ARGS) < 0) {
		log_error("s3: the credential_process of profile %s cannot be split into words "
			  "(an open quote?)", proc->profile);
		return -EINVAL;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	err = -posix_spawn_file_actions_init(&actions);
	if (err)
		goto close_pipe;
	err = -posix_spawnattr_init(&attr);
	if (err)
		goto free_actions;
	/* a group of its own: what it starts is killed with it */
	env = command_environment();
	if (!env || posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP) ||
	    posix_spawnattr_setpgroup(&attr, 0)) {
		err = -ENOMEM;
		goto free_attr;
	}
	/* nothing of the daemon's (the FUSE device, sockets, the index) but
	   its standard error reaches the command */
	if (posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) ||
	    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1) ||
	    posix_spawn_file_actions_addclosefrom_np(&actions, 3)) {
		err = -ENOMEM;
		goto free_attr;
	}
	uint64_t deadline = monotonic_ms() + AWS_PROCESS_TIMEOUT_S * 1000;
	err = -posix_spawnp(&pid, argv[0], &actions, &attr, argv, env);
	if (err) {
		log_error("s3: cannot run the credential_process of profile %s (%s): %s",
			  proc->profile, argv[0], strerror(-err));
		goto free_attr;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	doc = malloc(JSON_MAX_DOCUMENT);
	ssize_t n = doc ? read_bounded(pipefd[0], doc, JSON_MAX_DOCUMENT, deadline) : -ENOMEM;
	if (n >= 0) {
		int waited = wait_bounded(pid, &status, deadline);
		if (waited)
			n = waited;
	}
	if (n < 0) {
		/* too long, too much: its answer is void; its group goes with
		   it (the group's leader, not yet reaped, keeps the id ours) */
		kill(-pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (n == -ETIMEDOUT)
			log_error("s3: the credential_process of profile %s (%s) did not finish "
				  "within %d s: killed", proc->profile, argv[0],
				  AWS_PROCESS_TIMEOUT_S);
		else
			log_error("s3: the credential_process of profile %s (%s): %s",
				  proc->profile, argv[0],
				  n == -E2BIG ? "output over 64 KiB" : strerror((int)-n));
		err = (int)n;
		goto free_doc;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("s3: the credential_process of profile %s exited with status %d",
			  proc->profile, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		err = -EACCES;
		goto free_doc;
	}
	struct json_doc *json;
	int64_t version = 0;
	if (json_doc_parse(doc, (size_t)n, &json) == 0) {
		json_doc_int(json, "Version", &version);
		json_doc_free(json);
	}
	err = version == 1 ? aws_keys_from_json(doc, (size_t)n, time(NULL), out) : -EIO;
	if (err) {
		log_error("s3: the credential_process of profile %s did not print a Version 1 "
			  "credentials document (JSON: Version, AccessKeyId, SecretAccessKey)",
			  proc->profile);
		goto free_doc;
	}
	snprintf(from, from_size, "the credential_process of profile %.100s", proc->profile);
free_doc:
	if (doc) {
		memset(doc, 0, JSON_MAX_DOCUMENT);
		free(doc);
	}
free_attr:
	free(env);
	posix_spawnattr_destroy(&attr);
free_actions:
	posix_spawn_file_actions_destroy(&actions);
close_pipe:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	memset(words, 0, sizeof(words));
	return err;
}
