/*
 * aws_process.c - a profile's credential_process (see aws_process.h).
 * The command is started with posix_spawnp() (safe from a threaded
 * process: no code runs between fork and exec), its standard input
 * /dev/null, its standard output a pipe read with a bound and a deadline,
 * its standard error tilefs's own (the command's messages are its own
 * business; its output, which holds the secret, is never logged), and no
 * other descriptor.
 */
#include "cache/origin/providers/aws_process.h"
#include "cache/base/log.h"
#include "cache/origin/json.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

/* Read the child's output from FD into OUT (at most SIZE bytes) until
 * end of file or DEADLINE: the byte count, -E2BIG, -ETIMEDOUT or -errno. */
static ssize_t read_bounded(int fd, char *out, size_t size, time_t deadline)
{
	size_t len = 0;

	for (;;) {
		time_t left = deadline - time(NULL);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			return -ETIMEDOUT;
		int rc = poll(&pfd, 1, (int)left * 1000);
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

int aws_process_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	const struct aws_process *proc = ctx;
	char words[sizeof(proc->command)], *argv[AWS_PROCESS_MAX_ARGS];
	posix_spawn_file_actions_t actions;
	int pipefd[2], status, err;
	char *doc = NULL;
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
	/* nothing of the daemon's (the FUSE device, sockets, the index) but
	   its standard error reaches the command */
	if (posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) ||
	    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1) ||
	    posix_spawn_file_actions_addclosefrom_np(&actions, 3)) {
		err = -ENOMEM;
		goto free_actions;
	}
	err = -posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
	if (err) {
		log_error("s3: cannot run the credential_process of profile %s (%s): %s",
			  proc->profile, argv[0], strerror(-err));
		goto free_actions;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	doc = malloc(JSON_MAX_DOCUMENT);
	ssize_t n = doc ? read_bounded(pipefd[0], doc, JSON_MAX_DOCUMENT,
				       time(NULL) + AWS_PROCESS_TIMEOUT_S) : -ENOMEM;
	if (n < 0)
		kill(pid, SIGKILL);	/* too long, too much: its answer is void */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n < 0) {
		log_error("s3: the credential_process of profile %s: %s", proc->profile,
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
free_actions:
	posix_spawn_file_actions_destroy(&actions);
close_pipe:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	memset(words, 0, sizeof(words));
	return err;
}
