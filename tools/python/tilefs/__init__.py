"""tilefs: talk to a running tilefs mount from Python.

A tilefs mount fetches the tiles of its GeoTIFFs from the origin on first
read and keeps them in its cache. A program that knows what it will read
next can tell the mount, which then fetches it ahead of the readers:

    import tilefs
    mount = tilefs.Mount("/mnt/eo")                  # or any path in it
    mount.hint([("scenes/a.tif", (0, 0, 256, 256)),  # a pixel window
                "scenes/b.tif"])                     # a whole file
    mount.counters()["tilefs_hint_position"]         # how far readers are

A hint is this process's: a new one replaces only it, other processes'
hints (the other ranks of a distributed job) stay, and the mount drops it
when this process exits. tilefs.torch.HintedSampler hints each epoch's
order of a torch DataLoader.

The mount is reached through its control socket (named by an extended
attribute of its root directory); only the mount's owner or root may hint.
Standard library only.
"""
import os
import socket

__all__ = ["Error", "Mount", "hint", "order_line"]

SOCKET_XATTR = "user.tilefs.hint_socket"
REPLY_MAX = 16384


class Error(Exception):
    """The mount refused a request, or the path is not in a tilefs mount."""


def order_line(path, window=None):
    """One line of an order (tilefs hint's format): PATH, and the
    full-resolution pixel window (x, y, w, h) it reads, or None for all of
    the file. ValueError for a path the format cannot hold (a tab or a line
    break in it) or a window that is not four integers, w and h above 0."""
    if "\t" in path or "\n" in path or "\r" in path:
        raise ValueError("a hinted path cannot hold a tab or a line break: %r" % path)
    if window is None:
        return path + "\n"
    x, y, w, h = (int(v) for v in window)
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        raise ValueError("a window is x y w h, x and y 0 or more, w and h above 0: %r"
                         % (window,))
    return "%s\t%d %d %d %d\n" % (path, x, y, w, h)


def _mount_root(path):
    """The mountpoint of the file system PATH lies on."""
    p = os.path.realpath(path)
    while not os.path.ismount(p):
        p = os.path.dirname(p)
    return p


class Mount:
    """The running tilefs mount that PATH (its mountpoint or a path in it)
    lies in. Error if it is none, or its control socket is not reachable."""

    def __init__(self, path):
        self.mountpoint = _mount_root(path)
        try:
            self.socket_path = os.fsdecode(os.getxattr(self.mountpoint, SOCKET_XATTR))
        except OSError as e:
            raise Error("%s is not in a running tilefs mount (%s)"
                        % (path, e.strerror or e)) from None

    def _request(self, data):
        """Send DATA (bytes) as one request; the reply line."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dir_fd = None
        try:
            addr = self.socket_path
            if len(os.fsencode(addr)) >= 108:  # sun_path: reach it by its folder
                dir_fd = os.open(os.path.dirname(addr), os.O_PATH | os.O_DIRECTORY)
                addr = "/proc/self/fd/%d/%s" % (dir_fd, os.path.basename(addr))
            try:
                s.connect(addr)
                s.sendall(data)
            except BrokenPipeError:
                pass  # refused before it read it all: the answer says why
            except OSError as e:
                raise Error("%s: cannot reach the mount's control socket: %s"
                            % (self.mountpoint, e.strerror or e)) from None
            s.shutdown(socket.SHUT_WR)
            reply = b""
            while len(reply) < REPLY_MAX:
                chunk = s.recv(REPLY_MAX - len(reply))
                if not chunk:
                    break
                reply += chunk
        finally:
            s.close()
            if dir_fd is not None:
                os.close(dir_fd)
        line = reply.decode("utf-8", "replace").split("\n", 1)[0]
        if line.startswith("ok "):
            return int(line[3:])
        if line.startswith("error: "):
            raise Error("%s: %s" % (self.mountpoint, line[7:]))
        raise Error("%s: no answer from the mount" % self.mountpoint)

    def hint(self, entries, client=None):
        """Hand the mount the reads to come, in order: ENTRIES are paths
        (relative to the mount, or absolute under it) or (path, window)
        pairs, window (x, y, w, h) or None (order_line()). The hint is this
        process's, dropped when it exits; with CLIENT (a name, as `tilefs
        hint --client` takes) it is that client's and stays until replaced
        or cleared. Returns the entries the mount took; Error if it refused
        (the message names the line at fault)."""
        lines = [order_line(os.fspath(e)) if isinstance(e, (str, os.PathLike)) else
                 order_line(os.fspath(e[0]), e[1]) for e in entries]
        head = "tilefs-hint order%s\n" % (" " + client if client else "")
        return self._request((head + "".join(lines)).encode("utf-8", "surrogateescape"))

    def clear(self, client=None):
        """Drop this process's hint (or CLIENT's)."""
        self._request(("tilefs-hint clear%s\n" % (" " + client if client else ""))
                      .encode())

    def counters(self):
        """The mount's counters, as its metrics file has them (rewritten
        every few seconds): {name: value}, a labelled series as
        'name{labels}'."""
        base = self.socket_path
        if not base.endswith(".hint.sock"):
            raise Error("%s: unexpected control socket %s" % (self.mountpoint, base))
        out = {}
        with open(base[:-len(".hint.sock")] + ".prom", encoding="utf-8") as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                name, _, value = line.rstrip("\n").rpartition(" ")
                try:
                    out[name] = float(value)
                except ValueError:
                    continue
        return out


def hint(path, entries, client=None):
    """Mount(path).hint(entries, client): see Mount.hint."""
    return Mount(path).hint(entries, client)
