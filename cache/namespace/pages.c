/*
 * pages.c - a listing fetched page by page (ns_pages_fetch()): the
 * source's URL of each page, its request, its parse, and the cursor that
 * leads to the next. The lowest file of the folder with tree.c; listing.c
 * (a folder's names) and deep.c (every key below a folder) call it.
 */
#include "cache/namespace/namespace_int.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ns_pages_fetch(struct namespace *ns, const char *dir_path, struct ns_pages *p)
{
	char *cursor = NULL;
	int err = 0, pages = 0;
	char log_name[512];
	const char *names = p->names ? p->names : "";
	snprintf(log_name, sizeof(log_name), "listing of %s/%s%s%s%s", p->deep ? "all below " : "",
		 dir_path, dir_path[0] && names[0] ? "/" : "", names, names[0] ? "*" : "");
	do {
		if (++pages > p->max_pages) {
			err = -E2BIG;
			break;
		}
		char *url = p->deep ? source_deep_listing_url(ns->src, dir_path,
							      names, cursor) :
				      source_listing_url(ns->src, dir_path, cursor);
		char *next = NULL;
		if (!url) {
			err = -ENOMEM;
			break;
		}
		struct http_request req = { .url = url, .log_name = log_name,
					    .stale_ok = p->stale_ok,
					    .background = p->background };
		source_prepare(ns->src, &req);
		err = http_run(ns->http, &req);
		if (err) {
			snprintf(p->error, sizeof(p->error), "%s", req.error);
			p->status = req.status;
		} else if (p->deep) {
			err = source_parse_deep_listing(ns->src, dir_path, req.body, req.body_len,
							p->add, p->arg, &next);
		} else {
			err = source_parse_listing(ns->src, dir_path, req.body, req.body_len, p->add,
						   p->arg, &next);
		}
		free(req.body);
		free(url);
		if (next && cursor && strcmp(next, cursor) == 0) {
			log_error("%s: the origin sent the same page cursor twice; giving up",
				  log_name);
			free(next);
			next = NULL;
			err = -EIO;
		}
		free(cursor);
		cursor = next;
	} while (!err && cursor);
	free(cursor);
	return err;
}
