#!/usr/bin/python3
"""reaper.py STATEDIR -- COMMAND [ARGS...]

Runs COMMAND (e.g. `tilefs mount ...`) as a child subreaper, so that a
daemon forked by COMMAND becomes our child when COMMAND returns, and we can
learn the daemon's exit status (a test asserts it is 0 after an unmount).

Writes, each file created atomically:
  STATEDIR/cmd.status      exit status of COMMAND (128+N if killed by signal N)
  STATEDIR/daemon.status   one line "PID STATUS" per other process reaped
  STATEDIR/done            when no descendant is left
"""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def status_code(st):
    if os.WIFSIGNALED(st):
        return 128 + os.WTERMSIG(st)
    return os.WEXITSTATUS(st)


def put(path, text, mode="w"):
    tmp = path + ".tmp"
    if mode == "a" and os.path.exists(path):
        with open(path) as fh:
            text = fh.read() + text
    with open(tmp, "w") as fh:
        fh.write(text)
    os.rename(tmp, path)


def main():
    state = sys.argv[1]
    if sys.argv[2] != "--":
        sys.exit("usage: reaper.py STATEDIR -- COMMAND...")
    cmd = sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("reaper: prctl failed")
    with open(os.path.join(state, "reaper.pid"), "w") as fh:
        fh.write("%d\n" % os.getpid())
    child = os.fork()
    if child == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    with open(os.path.join(state, "cmd.pid"), "w") as fh:
        fh.write("%d\n" % child)
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            put(os.path.join(state, "cmd.status"), "%d\n" % status_code(st))
        else:
            put(os.path.join(state, "daemon.status"),
                "%d %d\n" % (pid, status_code(st)), "a")
    put(os.path.join(state, "done"), "")


if __name__ == "__main__":
    main()
