/*
 * aws_config.c - the AWS CLI's shared files (see aws_config.h).
 */
#include "cache/origin/providers/aws_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int aws_config_get(const char *path, const char *section, const char *key, char *out,
		   size_t size)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	bool in_section = false;
	int err = -ENOENT;

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		char *end = s + strlen(s);
		while (end > s && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (close)
				*close = '\0';
			char *name = s + 1;
			while (isspace((unsigned char)*name))
				name++;
			in_section = strcmp(name, section) == 0;
			continue;
		}
		if (!in_section || *s == '#' || *s == ';')
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			continue;
		char *k_end = eq;
		while (k_end > s && isspace((unsigned char)k_end[-1]))
			k_end--;
		if ((size_t)(k_end - s) != strlen(key) || strncmp(s, key, strlen(key)) != 0)
			continue;
		char *v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		snprintf(out, size, "%s", v);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

void aws_config_path(const char *env, const char *name, char *out, size_t size)
{
	const char *set = getenv(env), *home = getenv("HOME");
	if (set && *set)
		snprintf(out, size, "%s", set);
	else
		snprintf(out, size, "%s/.aws/%s", home ? home : "", name);
}

void aws_config_section(const char *profile, char *out, size_t size)
{
	snprintf(out, size, strcmp(profile, "default") ? "profile %s" : "%s", profile);
}

bool aws_config_endpoint(const char *env, char *out, size_t size)
{
	const char *url = getenv(env);
	if (!url || !*url)
		return false;
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	snprintf(out, size, "%.*s", (int)n, url);
	return true;
}
