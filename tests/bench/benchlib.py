# SPDX-License-Identifier: GPL-2.0-or-later
"""What the benchmarks in this directory share: a private mount namespace to
build big mount tables in, mount(2) through libc, a healthy /dev, and the
helpers that time and measure a command.

A benchmark re-executes itself with run_in_private_namespace(); the child,
which in_private_namespace() recognises, mounts its scratch tmpfs on
scratch_dir(). Nothing outside the namespace is touched: every mount in it
goes away when its last process exits. Standard library only.
"""

import ctypes
import ctypes.util
import os
import subprocess
import sys
import tempfile
import time

NS_MARKER = "PTSGUARD_BENCH_PARENT_MNTNS"
SCRATCH_ENV = "PTSGUARD_BENCH_SCRATCH"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TTY_GID = 5
GNU_TIME = "/usr/bin/time"
MS_BIND = 4096

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_char_p]
libc.mount.restype = ctypes.c_int
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.umount2.restype = ctypes.c_int


def die(msg, status=1):
    print("%s: %s" % (os.path.basename(sys.argv[0]), msg), file=sys.stderr)
    sys.exit(status)


def require_tools(tools):
    for tool in tools:
        if not any(os.access(os.path.join(d, tool), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/bin:/bin").split(":")):
            die("%s not found" % tool)


# --------------------------------------------------------------------------
# The namespace


def mnt_ns_id():
    return os.stat("/proc/self/ns/mnt").st_ino


def run_in_private_namespace(script, argv, env=None, **run_args):
    """Run `python3 script argv` in a new private mount namespace; subprocess.run's result.

    The child gets a new empty directory to mount its scratch tmpfs on (see
    scratch_dir()); the directory is removed when the child is done. run_args
    go to subprocess.run."""
    scratch = tempfile.mkdtemp(prefix="ptsguard-bench.")
    env = dict(os.environ if env is None else env)
    env[SCRATCH_ENV] = scratch
    env[NS_MARKER] = str(mnt_ns_id())
    try:
        return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                               os.path.abspath(script)] + argv, env=env, **run_args)
    finally:
        os.rmdir(scratch)


def in_private_namespace():
    """True in the child of run_in_private_namespace()."""
    return NS_MARKER in os.environ


def scratch_dir():
    """In that child: the directory for its scratch tmpfs, once sure the namespace is new."""
    if str(mnt_ns_id()) == os.environ.get(NS_MARKER):
        die("still in the parent's mount namespace; refusing to touch /dev")
    return os.environ[SCRATCH_ENV]


# --------------------------------------------------------------------------
# Mounts


def mount(source, target, fstype, options=None, flags=0):
    r = libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                   options.encode() if options is not None else None)
    if r != 0:
        e = ctypes.get_errno()
        die("mount -t %s -o %s %s %s: %s" % (fstype, options, source, target, os.strerror(e)))


def bind_mount(source, target):
    mount(source, target, None, flags=MS_BIND)


def umount(target):
    if libc.umount2(target.encode(), 0) != 0:
        e = ctypes.get_errno()
        die("umount %s: %s" % (target, os.strerror(e)))


def mknod(path, mode, major, minor):
    os.mknod(path, mode, os.makedev(major, minor))
    os.chmod(path, mode & 0o7777)  # mknod honours the umask


def build_dev():
    """Replace the host's /dev (in this namespace only) with a healthy one."""
    subprocess.run(["umount", "-R", "-l", "/dev"], check=True)
    mount("dev", "/dev", "tmpfs", "mode=0755")
    mknod("/dev/ptmx", 0o20666, 5, 2)
    mknod("/dev/null", 0o20666, 1, 3)
    mknod("/dev/zero", 0o20666, 1, 5)
    mknod("/dev/full", 0o20666, 1, 7)
    mknod("/dev/random", 0o20666, 1, 8)
    mknod("/dev/urandom", 0o20666, 1, 9)
    mknod("/dev/tty", 0o20666, 5, 0)
    os.symlink("/proc/self/fd", "/dev/fd")
    os.mkdir("/dev/pts", 0o755)
    os.mkdir("/dev/shm", 0o1777)
    mount("devpts", "/dev/pts", "devpts", "gid=%d,mode=620,ptmxmode=000" % TTY_GID)


def mountinfo_stats():
    """(lines, bytes, devpts mounts) of this namespace's /proc/self/mountinfo."""
    with open("/proc/self/mountinfo", "rb") as f:
        text = f.read()
    devpts = sum(line.split(b" - ", 1)[1].startswith(b"devpts ")
                 for line in text.splitlines())
    return text.count(b"\n"), len(text), devpts


# --------------------------------------------------------------------------
# Measuring a command


def spawn(argv, stdout_path="/dev/null"):
    """Run argv with stdout to stdout_path; return (seconds, exit status)."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, stdout_path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT,
                0o644)]
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter()
    return t1 - t0, os.waitstatus_to_exitcode(status)


def spawn_cpu(argv, stdout_path="/dev/null"):
    """spawn(), also returning the CPU time (user + system) of argv and of the children it waited
    for: (seconds, CPU seconds, exit status). On a shared machine CPU time is what other jobs
    disturb least."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, stdout_path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT,
                0o644)]
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    return t1 - t0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def peak_rss(argv):
    """Peak RSS in KiB of argv, from GNU time (None without it).

    Not from our own wait4(): posix_spawn shares this Python's memory until
    exec, and Linux carries that high-water mark across exec into the child's
    ru_maxrss. GNU time forks from a small process, so its figure is the
    command's own."""
    if not os.access(GNU_TIME, os.X_OK):
        return None
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    with os.fdopen(read_end) as reader:
        try:
            spawn([GNU_TIME, "-f", "%M", "-o", "/proc/self/fd/%d" % write_end] + argv)
        except OSError:
            return None
        finally:
            os.close(write_end)
        out = reader.read()
    try:
        return int(out.split()[-1])
    except (ValueError, IndexError):
        return None


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100)."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))
    return v[int(k)]


def source_revision():
    """The commit of the tree this script is in, and whether src/ differs from it."""
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return "commit %s%s" % (head, ", src/ has uncommitted changes" if dirty else "")
