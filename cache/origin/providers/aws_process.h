/*
 * aws_process.h - credentials from a profile's credential_process: a
 * command tilefs runs (no shell) whose standard output is the JSON
 * document of the AWS CLI's "Version 1" (Version, AccessKeyId,
 * SecretAccessKey, SessionToken, Expiration). Run again before an
 * Expiration it gives; without one the keys are kept for the mount's life.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * S3 provider; calls aws_creds.c.
 */
#ifndef TILEFS_AWS_PROCESS_H
#define TILEFS_AWS_PROCESS_H

#include "cache/origin/providers/aws_creds.h"

#include <stdbool.h>

#define AWS_PROCESS_MAX_ARGS 64		/* words of a command, at most */
#define AWS_PROCESS_TIMEOUT_S 30	/* a run, output and exit, is killed
					   past this */

/* The settings of a credential_process source, owned by the S3 source. */
struct aws_process {
	char command[2048];	/* as the profile writes it */
	char profile[128];
};

/*
 * Split COMMAND into words as a POSIX shell would, without running one:
 * blanks separate words; '...' is literal; "..." keeps blanks, with \" and
 * \\ escapes; \ outside quotes escapes the next character. Words are
 * written into BUF (SIZE bytes), pointers into ARGV (MAX, NULL-ended).
 * The word count, or -EINVAL (an open quote, no word, too many or too
 * long).
 */
int aws_process_split(const char *command, char *buf, size_t size, char **argv, int max);

/* An aws_fetch_fn: run CTX (a struct aws_process) and read its answer:
 * at most JSON_MAX_DOCUMENT bytes, exit status 0, "Version": 1, and the
 * whole run, output and exit, within AWS_PROCESS_TIMEOUT_S seconds (past
 * them its process group is killed: -ETIMEDOUT, logged naming the command
 * and the deadline). */
int aws_process_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

/* Does the environment entry ENTRY ("NAME=value") reach the command? All
 * do but the secrets tilefs reads for other sources: TILEFS_TIER_SECRET,
 * AZURE_CLIENT_SECRET, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN,
 * IDENTITY_HEADER, GOOGLE_OAUTH_ACCESS_TOKEN, GS_SECRET_ACCESS_KEY. */
bool aws_process_passes(const char *entry);

#endif
