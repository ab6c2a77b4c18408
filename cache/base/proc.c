/*
 * proc.c - see proc.h: whether a process named in the cache dir (a claim,
 * a mount's file) is still alive.
 */
#include "cache/base/proc.h"

#include <errno.h>
#include <signal.h>

bool proc_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}
