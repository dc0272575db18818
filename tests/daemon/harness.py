# SPDX-License-Identifier: GPL-2.0-or-later
"""Harness for the daemon tests: a private world with a real journald and udevd.

Each case runs as root in a private mount namespace of its own (re-exec under
`unshare --mount --net --propagation private`; the network namespace, loopback up,
keeps other udevds' broadcasts out): a tmpfs on /run (so journald, udevd
and the daemon get their own sockets and state), a tmpfs /dev with only what a
test needs (ptmx, null, a devpts at /dev/pts with gid=5,mode=620), and a
neutral /etc/fstab. A real systemd-journald (Storage=volatile, no rate limit)
collects what the daemon logs; `journalctl -o json` reads it back. The daemon
runs with NOTIFY_SOCKET pointing at a datagram socket this harness reads.

The daemon runs as ptsguard.service runs it: as the unit's User= (a user of that name
added to copies of /etc/passwd and /etc/group bound over the originals in the namespace, unless
the machine has one), with the unit's AmbientCapabilities= and CapabilityBoundingSet= and no new
privileges (setpriv), in a /run/ptsguard that user owns (RuntimeDirectory=). The textfile is
written into a directory root owns and the user's group may write (ptsguard.conf(5)).

Nothing here touches the host: every mount is made inside the namespace, the
namespace is checked to be a new one before anything is unmounted, and it
disappears with its last process.

Standard library only.
"""

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402
from testlib import EXIT_SKIP, Skip, log  # noqa: E402

NS_MARKER = "PTSGUARD_DAEMON_TEST_PARENT_MNTNS"
TTY_GID = 5
JOURNALD = "/lib/systemd/systemd-journald"
UDEVD = "/lib/systemd/systemd-udevd"
TEST_DIR = "/run/ptsguard-test"
NOTIFY_PATH = TEST_DIR + "/notify"
STATE_FILE = "/run/ptsguard/report.json"
TEXTFILE_DIR = TEST_DIR + "/textfile"
PROM_FILE = TEXTFILE_DIR + "/metrics.prom"
JOURNAL_DIR = "/run/log/journal"
WAIT = 10.0  # seconds any expected effect may take before the case fails
# What a daemon waiting for events is blocked in (sd-event: epoll_wait, or epoll_pwait2
# where the kernel has it), by machine: x86_64, aarch64.
EPOLL_WAIT_SYSCALLS = {"x86_64": (232, 281, 441), "aarch64": (22, 441)}.get(os.uname().machine, ())

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


# Every process a case starts, stopped when the case ends however it ends: a journald left
# behind would keep the namespace alive.
_children = []


def register(proc):
    _children.append(proc)
    return proc


def stop_children():
    for p in reversed(_children):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Failure(Exception):
    """The case failed."""


def run(argv, check=True, **kw):
    r = subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw
    )
    if check and r.returncode != 0:
        raise Failure("%s exited %d: %s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
    return r


def sys_mount(source, target, fstype, flags=0, data=None):
    """mount(2) without forking: the storm makes thousands of these."""
    r = _libc.mount(
        os.fsencode(source), os.fsencode(target), fstype.encode() if fstype else None, flags, data.encode() if data else None
    )
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (source, target, os.strerror(e)))


def sys_umount(target, flags=0, busy_timeout=5.0):
    """umount(2) of target, again for a while when it is EBUSY, as an admin would: an audit that
    the last change started (or the one right after it, which searches for holders) may have its
    probe's pty open there for a moment, as any program holding a pty would."""
    deadline = time.monotonic() + busy_timeout
    while True:
        if _libc.umount2(target.encode(), flags) == 0:
            return
        e = ctypes.get_errno()
        if e != errno.EBUSY or time.monotonic() > deadline:
            raise OSError(e, "umount %s: %s" % (target, os.strerror(e)))
        time.sleep(0.02)


MS_REMOUNT = 32


def remount_devpts(options, target="/dev/pts"):
    """Remount a devpts with exactly these options (the kernel resets the ones not given)."""
    sys_mount("devpts", target, "devpts", MS_REMOUNT, options)


def wait_for(what, fn, timeout=WAIT, interval=0.01):
    """Poll fn until it returns something true; that is returned. Fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Failure("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


# --------------------------------------------------------------------------
# The namespace


def enter_private_namespace(argv, own_pids=False):
    """Re-exec argv in a private mount namespace of its own (see testlib), and a network
    namespace of its own; own_pids: and a pid namespace.

    The network namespace keeps the cases apart: a udevd broadcasts what it has handled to
    every udev monitor of its network namespace, so the udevd of one case (or the host's) would
    otherwise wake every other case's daemon with an event for ptmx, and an audit that case did
    not cause. The kernel's own uevents still reach each udevd (a network namespace root
    creates gets them)."""
    testlib.enter_private_namespace(
        argv, NS_MARKER, ("mount", "umount", "journalctl", JOURNALD), "mount namespace, devpts mounts, journald", Failure, own_pids, own_net=True
    )


def loopback_up():
    """Bring up the loopback interface of the case's network namespace (SIOCSIFFLAGS)."""
    import fcntl
    import struct
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, struct.pack("16sH22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def make_private_run():
    sys_mount("tmpfs", "/run", "tmpfs", 0, "mode=755")
    for d in ("/run/systemd/journal", "/run/systemd/journald.conf.d", TEST_DIR):
        os.makedirs(d, exist_ok=True)
    make_service_user()


# --------------------------------------------------------------------------
# The unit's user and capabilities (testlib.service_user())

SERVICE = {}  # name, uid, gid, caps, bounding, nnp


def make_service_user():
    """The unit's User= (testlib.service_user()); /run/ptsguard made and given to it as
    systemd does for RuntimeDirectory=; the textfile directory root's, group-writable for it."""
    SERVICE.update(testlib.service_user(TEST_DIR, lambda src, dst: sys_mount(src, dst, None, 4096)))
    uid, gid = SERVICE["uid"], SERVICE["gid"]
    os.makedirs("/run/ptsguard", exist_ok=True)
    os.chown("/run/ptsguard", uid, gid)
    os.chmod("/run/ptsguard", 0o755)
    os.makedirs(TEXTFILE_DIR, exist_ok=True)
    os.chown(TEXTFILE_DIR, 0, gid)
    os.chmod(TEXTFILE_DIR, 0o775)


def as_service():
    """The argv prefix that runs a command as the unit runs the daemon."""
    return testlib.as_service(SERVICE)


def make_private_dev():
    """A /dev with ptmx, null, and devpts gid=5,mode=620 at /dev/pts (ptmxmode=000)."""
    run(["umount", "-R", "-l", "/dev"])
    sys_mount("tmpfs", "/dev", "tmpfs", 0, "mode=755")
    os.mknod("/dev/ptmx", 0o666 | stat.S_IFCHR, os.makedev(5, 2))
    os.chmod("/dev/ptmx", 0o666)
    os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod("/dev/null", 0o666)
    os.mknod("/dev/tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
    os.chmod("/dev/tty", 0o666)
    os.mkdir("/dev/pts", 0o755)
    sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)


def make_neutral_fstab():
    path = TEST_DIR + "/fstab"
    with open(path, "w") as f:
        f.write("# ptsguard daemon test: no devpts entry\n")
    sys_mount(path, "/etc/fstab", None, 4096)  # MS_BIND


def replace_ptmx_with_symlink(target="pts/ptmx"):
    tmp = "/dev/.ptmx-test"
    os.symlink(target, tmp)
    os.rename(tmp, "/dev/ptmx")


def restore_ptmx_char():
    tmp = "/dev/.ptmx-test"
    os.mknod(tmp, 0o666 | stat.S_IFCHR, os.makedev(5, 2))
    os.chmod(tmp, 0o666)
    os.rename(tmp, "/dev/ptmx")


def mount_stack(mountpoint):
    """Mount ids on one mountpoint, in mountinfo order."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mountpoint:
                out.append(int(fields[0]))
    return out


# --------------------------------------------------------------------------
# journald


class Journald:
    def __init__(self):
        with open("/run/systemd/journald.conf.d/50-ptsguard-test.conf", "w") as f:
            f.write("[Journal]\nStorage=volatile\nRateLimitIntervalSec=0\nRateLimitBurst=0\n" "ForwardToSyslog=no\nForwardToKMsg=no\nForwardToConsole=no\nForwardToWall=no\n")
        self.proc = register(subprocess.Popen([JOURNALD], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for("journald's socket", lambda: os.path.exists("/run/systemd/journal/socket"))
        # A first entry proves it stores what it gets.
        marker = "ptsguard-test-journal-ready-%d" % os.getpid()
        run(["systemd-cat", "-t", "ptsguard-test", "echo", marker])
        wait_for("journald to store an entry", lambda: any(e.get("MESSAGE") == marker for e in self.entries()))

    def entries(self, **match):
        r = run(["journalctl", "--directory", JOURNAL_DIR, "-o", "json", "--no-pager", "--all"], check=False)
        out = []
        for line in r.stdout.splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if all(e.get(k) == v for k, v in match.items()):
                out.append(e)
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------
# udevd


class Udevd:
    def __init__(self, extra_rules=()):
        if not os.access(UDEVD, os.X_OK) or shutil.which("udevadm") is None:
            raise Skip("systemd-udevd or udevadm is not installed")
        os.makedirs("/run/udev/rules.d", exist_ok=True)
        for name, text in extra_rules:
            with open(os.path.join("/run/udev/rules.d", name), "w") as f:
                f.write(text)
        self.proc = register(subprocess.Popen([UDEVD], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        wait_for("udevd's control socket", lambda: os.path.exists("/run/udev/control"))
        if self.proc.poll() is not None:
            raise Failure("systemd-udevd exited: %s" % self.proc.stderr.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------
# The notify socket


class NotifySocket:
    def __init__(self, path=NOTIFY_PATH):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o777)  # as systemd's: the daemon is not root
        self.messages = []  # (monotonic time, {key: value})
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            fields = {}
            for line in data.decode(errors="replace").splitlines():
                k, _, v = line.partition("=")
                fields[k] = v
            with self.lock:
                self.messages.append((time.monotonic(), fields))

    def all(self):
        with self.lock:
            return list(self.messages)

    def count(self, key, value=None):
        return len([m for _, m in self.all() if key in m and (value is None or m[key] == value)])

    def wait(self, key, value=None, after=0, what=None):
        """Wait for the (after+1)-th message carrying key (=value); returns its fields."""

        def found():
            hits = [m for _, m in self.all() if key in m and (value is None or m[key] == value)]
            return hits[after] if len(hits) > after else None

        return wait_for(what or "%s=%s on the notify socket" % (key, value or "*"), found)

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------
# The daemon


# MountEvents= of every case's daemon: the cases run once with the default (fanotify mount
# events on kernels that have them) and some once more with mountinfo (--opt mount_events=).
DEFAULT_CONFIG = """[Devpts]
TTYGroup=tty

[Repair]
Policy=off

[Daemon]
CoalesceMSec=20
StateFile=%s
PrometheusFile=%s
MountEvents=auto
""" % (
    STATE_FILE,
    PROM_FILE,
)


def default_config():
    return DEFAULT_CONFIG


DAEMONS = []  # every daemon a case started, for their output when it fails


class Daemon:
    def __init__(self, ptsguard, config_text=None, config_path=TEST_DIR + "/ptsguard.conf", notify=None, watchdog_usec=None, wrapper=(), as_root=False, args=(), systemd=True):
        self.ptsguard = ptsguard
        self.config_path = config_path
        self.write_config(config_text if config_text is not None else default_config())
        self.notify = notify or NotifySocket()
        env = dict(os.environ)
        env["NOTIFY_SOCKET"] = self.notify.path
        if not systemd:  # as an init script starts it: no service manager to notify
            env.pop("NOTIFY_SOCKET")
        env.pop("WATCHDOG_USEC", None)
        env.pop("WATCHDOG_PID", None)
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        self.stderr_path = TEST_DIR + "/daemon-%d.stderr" % (len(DAEMONS) + 1)
        self.stderr = open(self.stderr_path, "w")
        self.proc = register(
            subprocess.Popen(([] if as_root else as_service()) + list(wrapper) + [ptsguard, "daemon", "--config", config_path] + list(args), stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr, env=env)
        )
        self.pid = self.proc.pid
        DAEMONS.append(self)

    def write_config(self, text):
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.config_path)

    def wait_ready(self):
        try:
            return self.notify.wait("READY", "1", what="READY=1 from the daemon")
        except Failure:
            raise Failure("no READY=1; daemon %s, stderr:\n%s" % (self.state(), self.stderr_text()))

    def state(self):
        rc = self.proc.poll()
        return "running" if rc is None else "exited with %d" % rc

    def alive(self):
        return self.proc.poll() is None

    def stderr_text(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def signal(self, sig):
        os.kill(self.pid, sig)

    def _idle_when_stopped(self):
        """Whether the stopped daemon was between audits: its thread blocked in epoll, with no
        child (an allocation probe) running on, since SIGSTOP does not stop that."""
        tasks = os.listdir("/proc/%d/task" % self.pid)
        for tid in tasks:
            with open("/proc/%d/task/%s/stat" % (self.pid, tid)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                    return None  # not stopped yet
        for tid in tasks:
            with open("/proc/%d/task/%s/children" % (self.pid, tid)) as f:
                if f.read().strip():
                    return False
        with open("/proc/%d/syscall" % self.pid) as f:
            nr = f.read().split()[0]
        return not EPOLL_WAIT_SYSCALLS or (nr.isdigit() and int(nr) in EPOLL_WAIT_SYSCALLS)

    @contextlib.contextmanager
    def stopped_between_audits(self):
        """SIGSTOP the daemon while it waits for events, never in the middle of an audit: an
        audit stopped halfway would go on, once continued, with half of it from before what the
        case changes and half from after (and its probe child is not stopped at all)."""
        deadline = time.monotonic() + WAIT
        while True:
            os.kill(self.pid, signal.SIGSTOP)
            while (idle := self._idle_when_stopped()) is None:
                time.sleep(0.005)
            if idle:
                break
            os.kill(self.pid, signal.SIGCONT)
            if time.monotonic() > deadline:
                raise Failure("the daemon was never found waiting between audits in %.0fs" % WAIT)
            time.sleep(0.05)
        try:
            yield
        finally:
            os.kill(self.pid, signal.SIGCONT)

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout=5.0):
        """SIGTERM; returns (exit status, seconds it took)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("the daemon did not exit within %.0fs of SIGTERM" % timeout)
        self.stderr.close()
        return rc, time.monotonic() - t0


def read_state():
    """The daemon's state file, which must match docs/schema/report-1.schema.json; None
    while there is none (it is replaced atomically, so never half-written)."""
    try:
        with open(STATE_FILE) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    return testlib.validate_report(report, "the state file " + STATE_FILE, Failure)


def audit_json(ptsguard):
    """`ptsguard audit --json` of the live system, checked against the report schema."""
    r = run([ptsguard, "audit", "--json"], check=False)
    try:
        report = json.loads(r.stdout)
    except ValueError as e:
        raise Failure("ptsguard audit --json (exit %d) did not print JSON: %s\nstderr: %s" % (r.returncode, e, r.stderr))
    return testlib.validate_report(report, "ptsguard audit --json", Failure)


def state_inode():
    try:
        return os.stat(STATE_FILE).st_ino
    except OSError:
        return None


def finding_ids(report):
    return sorted(f["id"] for f in report["findings"]) if report else None


def wait_state(what, predicate, timeout=WAIT):
    """Wait until the state file satisfies predicate(report); returns the report."""
    return wait_for("state file: " + what, lambda: (lambda r: r if r is not None and predicate(r) else None)(read_state()), timeout)


# --------------------------------------------------------------------------
# Assertions that collect every mismatch of a case before failing it


class Checker(testlib.Checker):
    def done(self):
        if self.failures:
            raise Failure("\n".join("- " + f for f in self.failures))


def catalog(ptsguard):
    """id -> catalog entry, from `ptsguard checks --format json` (testlib.catalog)."""
    return testlib.catalog(ptsguard, Failure)


def log_daemons_output():
    """What the case's daemons printed, for a failure: valgrind's own lines are left out."""
    for d in DAEMONS:
        own = [line for line in d.stderr_text().splitlines(True) if not re.match(r"(--|==)\d+(--|==)", line)]
        log("---- the daemon's output (pid %d, last 60 lines) ----\n%s" % (d.pid, "".join(own[-60:])))


def main(cases, argv, setup_world=True):
    """Run one case by name: exit 0 pass, 1 fail, 77 skip."""
    options = (("--ptsguard", {}), ("--opt", dict(action="append", default=[], help="KEY=VALUE passed to the case")))
    args, (name,) = testlib.case_args(cases, sys.argv[0], None, options, ("--ptsguard",), single=True, argv=argv)
    # (function, needs root[, in a pid namespace of its own]): a daemon with [Namespaces]
    # Audit=all follows and probes every namespace its /proc shows, other tests' included,
    # whose daemons would then see its probe's ptys come and go in their /dev/pts.
    fn, needs_root, own_pids = (cases[name] + (False,))[:3]
    opts = dict(o.split("=", 1) for o in args.opt)
    global DEFAULT_CONFIG
    if "mount_events" in opts:
        DEFAULT_CONFIG = DEFAULT_CONFIG.replace("MountEvents=auto", "MountEvents=" + opts["mount_events"])
    try:
        if needs_root:
            enter_private_namespace([os.path.abspath(sys.argv[0])] + argv, own_pids)
            loopback_up()
            make_private_run()
            make_private_dev()
            make_neutral_fstab()
        fn(os.path.abspath(args.ptsguard), opts)
    except Skip as e:
        log("SKIP: %s" % e)
        return EXIT_SKIP
    except Failure as e:
        log("FAIL: %s" % e)
        log_daemons_output()
        return 1
    except Exception:
        log_daemons_output()
        raise
    finally:
        stop_children()
    log("PASS")
    return 0
