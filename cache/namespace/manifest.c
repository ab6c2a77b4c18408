/*
 * manifest.c - a namespace's tree from a manifest (--list: relative paths
 * or URLs, one per line) instead of listings: ns_load_manifest() of
 * namespace.h. Above namespace.c, whose tree it fills (namespace_int.h).
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add the file at relative PATH (URL: explicit, or NULL); ns->lock held. */
static int manifest_add(struct namespace *ns, char *path, const char *url)
{
	struct ns_node *dir = ns->root;
	char *save = NULL;

	for (char *name = strtok_r(path, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		if (!source_name_valid(name))
			return -EINVAL;
		bool last = save == NULL || *save == '\0';
		size_t pos;
		struct ns_node *n = ns_child_find(dir, name, &pos);
		if (n && n->is_dir == !last) {
			dir = n;
			continue;
		}
		if (n)
			return -EEXIST;
		n = ns_node_new(ns, name, !last, dir);
		if (!n)
			return -ENOMEM;
		n->fixed = true;
		n->listed = true;
		if (last && url) {
			n->url = strdup(url);
			if (!n->url) {
				ns_node_free(ns, n);
				return -ENOMEM;
			}
		}
		int err = ns_child_insert(dir, n, pos);
		if (err) {
			ns_node_free(ns, n);
			return err;
		}
		dir = n;
	}
	return 0;
}

/* Manifest LINE as a message may show it, into BUF: without a query string
 * (a URL's credentials too: url_for_log()) and with control characters
 * escaped (\n, \x1b), so a line can neither leak a token nor forge output. */
static const char *line_for_log(const char *line, char *buf, size_t size)
{
	bool is_url = strstr(line, "://") != NULL;
	char *url = is_url ? url_for_log(line) : NULL;
	const char *s = url ? url : is_url ? "" : line;
	size_t len = strcspn(s, url ? "" : "?"), o = 0;

	for (size_t i = 0; i < len && o + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' || c == '\r' || c == '\t' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = '\0';
	free(url);
	return buf;
}

int ns_load_manifest(struct namespace *ns, const char *path, char *err_text, size_t err_size)
{
	FILE *f = fopen(path, "re");
	char line[8192];
	int err = 0, lineno = 0;

	if (!f) {
		snprintf(err_text, err_size, "cannot read the list %s: %s", path, strerror(errno));
		return -errno;
	}
	char *prefix = source_object_url(ns->src, "");
	if (!prefix) {
		fclose(f);
		return -ENOMEM;
	}
	prefix[strcspn(prefix, "?")] = '\0';

	pthread_mutex_lock(&ns->lock);
	ns->root->fixed = ns->root->listed = true;
	ns->unknown_dirs++;	/* a manifest gives no sizes */
	ns_tell_cache_bytes(ns);
	while (!err && fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = line, *end = line + strlen(line);
		while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		const char *url = NULL;
		char rel[8192];
		if (strstr(s, "://")) {
			if (strncmp(s, prefix, strlen(prefix)) == 0) {
				snprintf(rel, sizeof(rel), "%s", s + strlen(prefix));
				if (rel[strcspn(rel, "?")])
					url = s;	/* a signed URL: fetch it as given */
				rel[strcspn(rel, "?#")] = '\0';
				err = url_decode(rel);
			} else {
				/* elsewhere: shown as host/path, fetched as given */
				snprintf(rel, sizeof(rel), "%s", strstr(s, "://") + 3);
				rel[strcspn(rel, "?#")] = '\0';
				err = url_decode(rel);
				url = s;
			}
		} else {
			snprintf(rel, sizeof(rel), "%s", s);
		}
		if (!err)
			err = manifest_add(ns, rel, url);
		if (err) {
			char shown[1024];
			snprintf(err_text, err_size, "%s line %d: '%s' is not a usable file path (%s)",
				 path, lineno, line_for_log(s, shown, sizeof(shown)), strerror(-err));
		}
	}
	pthread_mutex_unlock(&ns->lock);
	free(prefix);
	fclose(f);
	return err;
}
