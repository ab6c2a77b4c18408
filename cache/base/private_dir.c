/*
 * private_dir.c - see private_dir.h.
 */
#include "cache/base/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int private_dir_open(const char *dir, char *why, size_t why_size)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		int err = -errno;
		snprintf(why, why_size, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, why_size, "is owned by uid %ld, not by the user running tilefs "
			 "(uid %ld): chown it, or use a cache dir of your own",
			 (long)st.st_uid, (long)geteuid());
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, why_size, "is writable by %s: chmod go-w it (a cache dir is "
			 "private to its owner)", st.st_mode & S_IWOTH ? "others" : "its group");
	} else {
		return fd;
	}
	close(fd);
	return -EPERM;
}
