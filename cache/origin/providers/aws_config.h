/*
 * aws_config.h - the AWS CLI's shared files, as the S3 provider's
 * credential sources read them: where they are (AWS_SHARED_CREDENTIALS_FILE,
 * AWS_CONFIG_FILE, else ~/.aws/credentials and ~/.aws/config), the
 * section a profile has in the config file ("profile NAME", "default"
 * bare, "sso-session NAME"), one key of one section of an INI file, and
 * the endpoints the SDKs' AWS_ENDPOINT_URL_* variables name.
 * Read at the mount's start only; nothing is ever written.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * S3 provider and its sources; calls no file of its folder, over libc only.
 */
#ifndef TILEFS_AWS_CONFIG_H
#define TILEFS_AWS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* KEY in [SECTION] of the INI file PATH into OUT (white space around the
 * value dropped; cut to SIZE): 0, or -ENOENT (no such file, section or key). */
int aws_config_get(const char *path, const char *section, const char *key, char *out,
		   size_t size);

/* The path of a shared file: the environment variable ENV when set, else
 * $HOME/.aws/NAME. */
void aws_config_path(const char *env, const char *name, char *out, size_t size);

/* "profile NAME" for a profile's section in the config file; "default"
 * stays bare. */
void aws_config_section(const char *profile, char *out, size_t size);

/* The base URL the environment variable ENV names, without trailing '/',
 * into OUT: true, or false when ENV is unset or empty. */
bool aws_config_endpoint(const char *env, char *out, size_t size);

#endif
