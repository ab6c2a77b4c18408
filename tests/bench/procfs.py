"""What /proc says of the bench's processes: CPU seconds of a process,
of each of its threads (by name), of the machine, and of our children."""
import os
import resource

CLK = os.sysconf("SC_CLK_TCK")


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()[0]
        return st not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def proc_stats(pid):
    """(cpu seconds user+system, VmHWM in MB) of a running process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLK
        hwm = None
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024.0
        return cpu, hwm
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def machine_busy():
    """CPU seconds the whole machine spent busy since boot (not idle/iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / CLK


def children_cpu():
    """CPU seconds of our reaped children (the phase's readers, once waited for)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def thread_cpu(pid):
    """{tid: (comm, cpu seconds user+system)} of every thread of PID now
    ({} once it has gone). A thread that exits takes its own line with it;
    its CPU stays in the process's total (proc_stats)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        fields = s.rsplit(")", 1)[1].split()
        out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / CLK)
    return out
