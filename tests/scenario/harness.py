# SPDX-License-Identifier: GPL-2.0-or-later
"""Real-kernel scenario harness for ptsguard.

Each scenario runs as root in a private mount namespace of its own: the host's
/dev (with every mount below it) is detached, a fresh tmpfs takes its place,
and the scenario builds exactly the devpts/ptmx state it wants to test. Then
ptsguard audits it live, captures a snapshot, audits the snapshot, and the
scenario asserts on the JSON. pty-probe, run as an unprivileged user, shows
what a user would see (the group and mode of a new pty, or the errno).

Nothing here touches the host: every mount is made inside the namespace, and
the namespace and its mounts disappear with the last process in it. The
re-exec into the namespace checks that the namespace really is a new one
before anything is unmounted.

Standard library only.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402
from testlib import EXIT_SKIP, Checker, Skip, case_registry, log, pretty  # noqa: E402,F401

NS_MARKER = "PTSGUARD_SCENARIO_PARENT_MNTNS"
UNPRIVILEGED_UID = 1000
UNPRIVILEGED_GID = 1000
TTY_GID = 5
RUN_TIMEOUT = 20

# The check catalog comes from the program (testlib.catalog(), Scenario.catalog).
# Checks whose severity is the catalog's only when user namespaces are enabled,
# and warning otherwise.
SEVERITY_BY_USER_NAMESPACES = {"pt-chown-setuid"}

SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
FINDING_KEYS = (
    "id",
    "severity",
    "message_id",
    "summary",
    "mount_ids",
    "devices",
    "evidence",
    "remedy",
    "repairable",
)

# Contents of the /etc/fstab every scenario sees unless it brings its own: the
# host's own fstab must not leak into the findings.
NEUTRAL_FSTAB = "# ptsguard scenario: no devpts entry\n" "tmpfs /tmp tmpfs defaults 0 0\n"



def probe_without_index(probe):
    """A report's probe object with "/dev/pts/N" as "/dev/pts/#"."""
    if not isinstance(probe, dict) or not isinstance(probe.get("ptsname"), str):
        return probe
    return dict(probe, ptsname=re.sub(r"[0-9]+$", "#", probe["ptsname"]))

class OpenWatch:
    """Counts the opens of files (inotify IN_OPEN, which an O_PATH descriptor does not raise):
    proof that a node a case planted was looked at but never opened. The opening of a directory
    (listing /dev, say) reaches no driver and is not counted."""

    IN_OPEN = 0x20
    IN_ISDIR = 0x40000000
    IN_NONBLOCK = 0o4000

    def __init__(self):
        import ctypes

        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(self.IN_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise SetupError("inotify_init1: %s" % os.strerror(ctypes.get_errno()))
        self.paths = {}

    def watch(self, path):
        import ctypes

        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), self.IN_OPEN)
        if wd < 0:
            raise SetupError("inotify_add_watch %s: %s" % (path, os.strerror(ctypes.get_errno())))
        self.paths[wd] = path

    def opened(self):
        """The paths opened since the last call, one entry per open (for a directory watched,
        the path of the file in it that was opened)."""
        import struct

        seen = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _, length = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16:off + 16 + length].rstrip(b"\0").decode(errors="replace")
                if mask & self.IN_OPEN and not mask & self.IN_ISDIR:
                    seen.append(os.path.join(self.paths.get(wd, "?"), name) if name else self.paths.get(wd, "?"))
                off += 16 + length

    def close(self):
        os.close(self.fd)


class SetupError(Exception):
    """Building the scenario failed: a test failure, never a skip."""


SUBID_LOCK = "/run/lock/ptsguard-scenario-subid.lock"


@contextlib.contextmanager
def subordinate_ids(outside, count):
    """While inside: root may map `count` ids from `outside` (its subordinate ranges in
    /etc/subuid and /etc/subgid, which newuidmap requires); the files are put back as they were
    afterwards. Serialised between parallel tests by a lock."""
    import fcntl

    if not shutil.which("newuidmap"):
        raise SetupError("newuidmap is missing (Debian package uidmap)")
    os.makedirs(os.path.dirname(SUBID_LOCK), exist_ok=True)
    with open(SUBID_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = {}
        for path in ("/etc/subuid", "/etc/subgid"):
            try:
                with open(path) as f:
                    saved[path] = f.read()
            except FileNotFoundError:
                saved[path] = None
            with open(path, "a") as f:
                f.write("root:%d:%d\n" % (outside, count))
        try:
            yield
        finally:
            for path, text in saved.items():
                if text is None:
                    os.unlink(path)
                else:
                    with open(path, "w") as f:
                        f.write(text)


def userns_argv(outside, count):
    """unshare as root of a new user and mount namespace mapping `count` ids from `outside`, the
    way rootless podman's is made; a sh -ec script follows."""
    return ["unshare", "--user", "--map-users=%d,0,%d" % (outside, count),
            "--map-groups=%d,0,%d" % (outside, count), "--setuid", "0", "--setgid", "0",
            "--mount", "--propagation", "private", "sh", "-ec"]


def devnum(dev):
    return "%d:%d" % (os.major(dev), os.minor(dev))


def user_namespaces_enabled():
    try:
        with open("/proc/sys/user/max_user_namespaces") as f:
            return int(f.read().strip()) > 0
    except (OSError, ValueError):
        return False


def expected_severity(catalog, check_id, finding=None):
    sev = catalog[check_id]["severity"]
    if check_id in SEVERITY_BY_USER_NAMESPACES and not user_namespaces_enabled():
        return "warning"
    # A stack nothing reaches (hidden under another mount) is a fact, not a warning.
    if check_id == "devpts-overmount" and ((finding or {}).get("evidence") or {}).get("hidden") is True:
        return "info"
    # A namespace with the host's root and user namespace (a service's sandbox) sees the host's
    # terminals as the host does.
    if check_id == "devpts-host-instance" and ((finding or {}).get("evidence") or {}).get("root_is_host") is True:
        return "info"
    # A session on an unreachable instance whose name opens no other pty here.
    if check_id == "pty-instance-unreachable" and ((finding or {}).get("evidence") or {}).get("colliding_total") == 0:
        return "warning"
    # Members of tty: a warning when one is a login user.
    if check_id == "tty-group-members":
        return "warning" if ((finding or {}).get("evidence") or {}).get("login_users") else "info"
    # A copied slave node is critical as the console only.
    if check_id == "pty-slave-copy" and ((finding or {}).get("evidence") or {}).get("console") is False:
        return "warning"
    # A user namespace mapping one gid has one user, and no gid= can be set there; unless its
    # userland insists on a tty group (glibc before 2.33, pt_chown): then nobody gets a pty.
    ev = (finding or {}).get("evidence") or {}
    if ev.get("single_id_namespace") is True and not ev.get("old_userland"):
        return "info"
    return sev


def exit_status_for(catalog, ids, overrides=None):
    """The audit exit status the contract gives for these findings."""
    sevs = {(overrides or {}).get(i) or expected_severity(catalog, i) for i in ids}
    if "critical" in sevs:
        return 2
    if "warning" in sevs:
        return 1
    return 0


# --------------------------------------------------------------------------
# Entering the namespace


def enter_private_namespace(argv):
    """Re-exec argv in a private mount namespace of its own (see testlib)."""
    testlib.enter_private_namespace(
        argv, NS_MARKER, ("setpriv", "mount", "umount"), "mount namespaces, mknod, devpts mounts", SetupError
    )


# --------------------------------------------------------------------------
# The mount table, read independently of ptsguard to cross-check its answers


def _unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def read_mountinfo():
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            mounts.append(
                {
                    "mount_id": int(fields[0]),
                    "parent_id": int(fields[1]),
                    "device": fields[2],
                    "root": _unescape(fields[3]),
                    "mountpoint": _unescape(fields[4]),
                    "fstype": fields[sep + 1],
                    "source": _unescape(fields[sep + 2]),
                    "super_options": fields[sep + 3] if len(fields) > sep + 3 else "",
                }
            )
    return mounts


def mount_stack(mountpoint):
    """The mounts on one mountpoint, bottom to top (each the parent of the next)."""
    at = [m for m in read_mountinfo() if m["mountpoint"] == mountpoint]
    if not at:
        return []
    ids = {m["mount_id"] for m in at}
    bottom = [m for m in at if m["parent_id"] not in ids]
    if len(bottom) != 1:
        raise SetupError("cannot order the stack at %s: %s" % (mountpoint, pretty(at)))
    stack = bottom
    while True:
        above = [m for m in at if m["parent_id"] == stack[-1]["mount_id"]]
        if not above:
            break
        stack.append(above[0])
    return stack


# --------------------------------------------------------------------------
# Assertions that collect every mismatch of a case before failing it


# --------------------------------------------------------------------------
# A running scenario


# A helper running as root allocates a pty and hands its slave to a session: the session's
# leader is a user (podman exec -t, sudo-rs -i: "user"), or the slave was given to that user
# first (login, sshd: "owned"), or root's own shell leads the session and runs a user's shell
# inside it (su - user from root's terminal: "su"). The helper keeps the master and prints the
# index once the session is set up; when its stdin closes it kills the session and ends. The
# session does not count on the hangup to end it: a runner started under nohup (SIGHUP ignored,
# and inherited) would leave it holding its pty after the test.
SESSION_PTY = r"""
import os, signal, sys, fcntl, termios, time
kind, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
signal.signal(signal.SIGHUP, signal.SIG_DFL)
master, first = os.openpty()
name = os.ttyname(first)
index = int(name.rsplit("/", 1)[1])
os.close(first)
if kind == "owned":
    os.chown(name, uid, -1)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.setsid()
    slave = os.open(name, os.O_RDWR | os.O_NOCTTY)
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.close(master)
    if kind == "su":
        if os.fork() == 0:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.write(w, b"x")
            while True:
                time.sleep(60)
    else:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        os.write(w, b"x")
    while True:
        time.sleep(60)
os.close(w)
os.read(r, 1)
print(index, flush=True)
sys.stdin.readline()
os.killpg(pid, signal.SIGKILL)
os.waitpid(pid, 0)
"""

REOPEN_BY_NAME = r"""
import errno, os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY))
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def session_pty(sc, kind):
    """Start the helper of SESSION_PTY; return the slave's path once its session is set up."""
    p = subprocess.Popen(
        [sys.executable, "-c", SESSION_PTY, kind, str(UNPRIVILEGED_UID), str(UNPRIVILEGED_GID)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    sc.helpers.append(p)
    line = p.stdout.readline().strip()
    if not line.isdigit():
        raise SetupError("the session's pty was not set up: %r" % line)
    return p, "/dev/pts/" + line


# Another mount namespace's terminals, as a CI runner or an ssh login on the host has them:
# a devpts of its own, and a ptmx node outside it (devtmpfs's /dev/ptmx, here on a tmpfs),
# through which it holds the masters of ptys 0-3. Those numbers are the scenario's too, and
# the ptmx node cannot tell from outside which instance it leads to.
OTHER_NAMESPACE_MASTERS = r"""
import os, sys
d = sys.argv[1]
masters = [os.open(d + "/ptmx", os.O_RDWR | os.O_NOCTTY) for _ in range(4)]
print("ready", flush=True)
sys.stdin.readline()
"""


def other_namespace_masters(sc):
    """Start a holder of ptys 0-3 of another namespace's instance, reached through a ptmx
    node outside every devpts; return its process."""
    d = os.path.join(sc.workdir, "other-ns-dev")
    os.makedirs(d, exist_ok=True)
    script = (
        "mount -t tmpfs tmpfs \"$1\" && mkdir \"$1/pts\" && mknod \"$1/ptmx\" c 5 2 && "
        "mount -t devpts -o newinstance,ptmxmode=666 devpts \"$1/pts\" && "
        "exec \"$2\" -c \"$3\" \"$1\""
    )
    p = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", d,
         sys.executable, OTHER_NAMESPACE_MASTERS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    sc.helpers.append(p)
    if p.stdout.readline().strip() != "ready":
        raise SetupError("the other namespace's masters were not opened")
    return p


def user_reopens(sc, path):
    r = sc.sh("setpriv", "--reuid=%d" % UNPRIVILEGED_UID, "--regid=%d" % UNPRIVILEGED_GID,
              "--clear-groups", sys.executable, "-c", REOPEN_BY_NAME, path)
    return r.stdout.strip()


class Scenario:
    def __init__(self, name, ptsguard, pty_probe, daemon_mode=None):
        self.name = name
        # With a daemon mode, a daemon started on the base state follows every change the
        # scenario makes, and each audit checks that it reports what a full audit finds.
        self.daemon_mode = daemon_mode
        self.daemon = None
        self.ptsguard = os.path.abspath(ptsguard)
        self.pty_probe_src = os.path.abspath(pty_probe)
        self.check = Checker()
        self._catalog = None
        self.helpers = []
        self.workdir = None
        self.reports = {}  # "live"/"snapshot" -> (report, exit status)
        self.probe_results = []
        # Opened before the host's /dev is detached: commands run before the
        # scenario's own /dev/null exists need a stdin too.
        self.null = open(os.devnull, "r+b")

    # ---- running commands ----

    def sh(self, *argv, ok=True):
        r = subprocess.run(
            list(argv),
            stdin=self.null,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        if ok and r.returncode != 0:
            raise SetupError(
                "command failed (%d): %s\nstdout: %s\nstderr: %s"
                % (r.returncode, " ".join(argv), r.stdout, r.stderr)
            )
        return r

    def mount(self, fstype, target, options=None, source=None):
        argv = ["mount", "-t", fstype]
        if options:
            argv += ["-o", options]
        argv += [source or fstype, target]
        self.sh(*argv)

    def mount_devpts(self, target, options=None):
        self.mount("devpts", target, options, source="devpts")

    # ---- the base every scenario starts from ----

    def setup_base(self, ptmx="char", ptmx_mode=0o666, fstab=NEUTRAL_FSTAB):
        self._detach_host_dev()
        self._detach_other_devpts()
        self.mount("tmpfs", "/dev", "mode=755")
        os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod("/dev/null", 0o666)
        os.mknod("/dev/tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
        os.chmod("/dev/tty", 0o666)
        if ptmx == "char":
            self.mknod_ptmx(ptmx_mode)
        elif ptmx == "symlink":
            os.symlink("pts/ptmx", "/dev/ptmx")
        elif ptmx is not None:
            raise SetupError("unknown ptmx kind %r" % ptmx)
        os.mkdir("/dev/pts", 0o755)

        # A private work area, gone with the namespace.
        self.workdir = tempfile.mkdtemp(prefix="ptsguard-scenario-")
        self.mount("tmpfs", self.workdir, "mode=755")
        # The unprivileged user must be able to execute the probe whatever
        # the permissions along the build directory's path.
        self.pty_probe = os.path.join(self.workdir, "pty-probe")
        shutil.copyfile(self.pty_probe_src, self.pty_probe)
        os.chmod(self.pty_probe, 0o755)

        if fstab is not None:
            self.bind_file("/etc/fstab", fstab)
        if self.daemon_mode:
            self.start_daemon()

    def mknod_ptmx(self, mode=0o666, rdev=(5, 2), path="/dev/ptmx"):
        os.mknod(path, mode | stat.S_IFCHR, os.makedev(*rdev))
        os.chmod(path, mode)  # mknod honours the umask

    def bind_file(self, target, content, mode=0o644):
        src = os.path.join(self.workdir, "bind-" + target.strip("/").replace("/", "-"))
        with open(src, "w") as f:
            f.write(content)
        os.chmod(src, mode)
        if not os.path.exists(target):
            raise SetupError("cannot bind over %s: it does not exist" % target)
        self.sh("mount", "--bind", src, target)

    def scratch_dir(self, name):
        path = os.path.join(self.workdir, name)
        os.makedirs(path, exist_ok=True)
        return path

    def _detach_host_dev(self):
        # Repeat: a lazy detach of /dev takes what is below it, but /dev may
        # not be a mountpoint itself, and stacks may need several rounds.
        for _ in range(10):
            under = [
                m["mountpoint"]
                for m in read_mountinfo()
                if m["mountpoint"] == "/dev" or m["mountpoint"].startswith("/dev/")
            ]
            if not under:
                return
            top = sorted(set(under), key=len)[0]
            self.sh("umount", "-R", "-l", top)
        raise SetupError("mounts under /dev remain after detaching: %s" % under)

    def _detach_other_devpts(self):
        # Devpts mounts elsewhere on the host (containers, build roots) would
        # show up as extra instances; detach them in this namespace.
        for _ in range(20):
            left = [m["mountpoint"] for m in read_mountinfo() if m["fstype"] == "devpts"]
            if not left:
                return
            self.sh("umount", "-R", "-l", left[0])
        raise SetupError("devpts mounts remain after detaching: %s" % left)

    # ---- pty-probe ----

    def _probe_argv(self, unprivileged, ptmx, hold, wrap=()):
        argv = [self.pty_probe]
        if ptmx:
            argv += ["--ptmx", ptmx]
        if hold:
            argv.append("--hold")
        if unprivileged:
            argv = [
                "setpriv",
                "--reuid=%d" % UNPRIVILEGED_UID,
                "--regid=%d" % UNPRIVILEGED_GID,
                "--clear-groups",
            ] + argv
        return list(wrap) + argv

    @staticmethod
    def _parse_probe(line, argv, stderr=""):
        try:
            res = json.loads(line)
        except ValueError:
            raise SetupError("pty-probe printed no JSON (%s): %r %s" % (" ".join(argv), line, stderr))
        return res

    def probe(self, unprivileged=True, ptmx=None, wrap=()):
        """Allocate and release one pty (under the command wrap, if any); return pty-probe's
        JSON."""
        argv = self._probe_argv(unprivileged, ptmx, False, wrap)
        r = self.sh(*argv, ok=False)
        res = self._parse_probe(r.stdout.strip(), argv, r.stderr)
        want_rc = 0 if res.get("ok") else 1
        if r.returncode != want_rc:
            raise SetupError("pty-probe exited %d with %s" % (r.returncode, r.stdout))
        self.probe_results.append((argv, res))
        return res

    def hold(self, unprivileged=False, ptmx=None, wrap=()):
        """Allocate a pty and keep it open until cleanup; return (process, JSON)."""
        argv = self._probe_argv(unprivileged, ptmx, True, wrap)
        p = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.helpers.append(p)
        line = p.stdout.readline()
        res = self._parse_probe(line.strip(), argv)
        if not res.get("ok"):
            raise SetupError("pty-probe --hold could not allocate a pty: %s" % line)
        if p.poll() is not None:
            raise SetupError("pty-probe --hold exited early (%d)" % p.returncode)
        self.probe_results.append((argv, res))
        return p, res

    def cleanup(self):
        self.stop_daemon()
        for p in self.helpers:
            if p.poll() is None:
                try:
                    p.stdin.close()
                except OSError:
                    pass
                try:
                    p.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.helpers = []
        if self.workdir:
            # The directory itself lives on the host's /tmp: leave nothing behind.
            subprocess.run(["umount", "-R", "-l", self.workdir], stdin=self.null, stderr=self.null)
            try:
                os.rmdir(self.workdir)
            except OSError:
                pass
            self.workdir = None

    # ---- ptsguard ----

    @property
    def catalog(self):
        """id -> entry, from `ptsguard checks --format json` (checked sound by testlib)."""
        if self._catalog is None:
            self._catalog = testlib.catalog(self.ptsguard, SetupError)
        return self._catalog

    def check_schema(self, doc, what, snapshot=False):
        """A failure for each way doc breaks docs/schema (report-1, or snapshot-1), once each."""
        problems = testlib.snapshot_problems(doc) if snapshot else testlib.report_problems(doc)
        for problem in problems:
            msg = "%s: %s" % (what, problem)
            if msg not in self.check.failures:
                self.check.fail(msg)

    def run_ptsguard(self, *args):
        return subprocess.run(
            getattr(self, "wrap", []) + [self.ptsguard] + list(args),
            stdin=self.null,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=RUN_TIMEOUT,
        )

    def _parse_report(self, r, what):
        if r.returncode < 0:
            raise SetupError("%s died of signal %d\nstderr: %s" % (what, -r.returncode, r.stderr))
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            raise SetupError(
                "%s (exit %d) did not print JSON: %s\nstdout: %s\nstderr: %s"
                % (what, r.returncode, e, r.stdout, r.stderr)
            )

    def audit(self, wrap=()):
        """Audit live, snapshot, audit the snapshot; return the live report.

        Asserts the contract every report must keep, and that the snapshot
        audit finds exactly what the live audit found. wrap: a command that runs the live
        audit, the snapshot and the scenario's own allocation (a seccomp filter), not the
        offline audit.
        """
        self.wrap = list(wrap)
        live = self.run_ptsguard("audit", "--json")
        live_report = self._parse_report(live, "ptsguard audit --json")
        self.reports["live"] = (live_report, live.returncode)
        if live.stderr.strip():
            log("ptsguard audit stderr:\n" + live.stderr)

        snap_path = os.path.join(self.workdir, "snapshot.json")
        s = self.run_ptsguard("snapshot", "--output", snap_path)
        self.wrap = []
        if s.returncode != 0:
            raise SetupError(
                "ptsguard snapshot --output exited %d\nstdout: %s\nstderr: %s"
                % (s.returncode, s.stdout, s.stderr)
            )
        try:
            with open(snap_path) as f:
                snapshot = json.load(f)
        except (OSError, ValueError) as e:
            raise SetupError("the snapshot file is not JSON: %s" % e)
        self.check.eq(snapshot.get("schema"), "ptsguard.snapshot/1", "snapshot schema")
        self.check_schema(snapshot, "ptsguard snapshot", snapshot=True)

        off = self.run_ptsguard("audit", "--snapshot", snap_path, "--json")
        off_report = self._parse_report(off, "ptsguard audit --snapshot --json")
        self.reports["snapshot"] = (off_report, off.returncode)

        self.validate_report(live_report, live.returncode, "live")
        self.validate_report(off_report, off.returncode, "snapshot")
        self.check.eq(
            off_report.get("findings"),
            live_report.get("findings"),
            "findings of audit --snapshot (snapshot of this state) vs the live audit",
        )
        self.check.eq(off.returncode, live.returncode, "exit status of audit --snapshot vs live")
        # The same probe, but for the index its pty got: the kernel's lowest free one at that
        # moment, which another process's pty coming or going changes between the two runs
        # (slave-perms-transient: the live probe, made as the audit starts, meets a pty that
        # is gone by the snapshot's).
        self.check.eq(
            probe_without_index(off_report.get("probe")),
            probe_without_index(live_report.get("probe")),
            "the probe of audit --snapshot vs live",
        )
        # The audit's own allocation probe against this scenario's: a user allocating now.
        self.check_probe_agrees(live_report, self.probe(wrap=wrap))
        # The daemon does not run under the wrapper (a seccomp filter): it judges another system.
        if self.daemon and not wrap:
            self.check_daemon_agrees(live_report)
        return live_report

    # ---- the allocation probe against the scenario's own non-root allocation ----

    # pty-probe's steps, as the audit's probe names them.
    PTY_PROBE_STEPS = {"open": "open_ptmx", "unlock": "unlockpt", "index": "ptsname", "peer": "peer", "fstat": "peer"}

    @classmethod
    def user_outcome(cls, res):
        """What a user got from pty-probe: None (a working pty, reopened by its name), or
        (where, errno name or "other")."""
        if not res.get("ok"):
            return (cls.PTY_PROBE_STEPS.get(res.get("step"), res.get("step")), res.get("error"))
        if res.get("by_name") != "same":
            return ("by_name", res.get("by_name"))
        return None

    @staticmethod
    def audit_probe_outcome(probe):
        """The same for the audit's probe object (docs/report.md)."""
        step = probe.get("failed_step")
        if step is None:
            return None
        err = (probe.get("errno") or {}).get("name")
        if step in ("ptsname", "open_slave"):
            return ("by_name", err)
        if step == "compare":
            return ("by_name", "other")
        if step == "grantpt" and err == "EINVAL":
            # Not a pty master: glibc's grantpt() asks the kernel (TIOCGPTN) and turns its
            # ENOTTY into POSIX's EINVAL; pty-probe, which skips grantpt(), meets the ENOTTY of
            # the next ioctl.
            return ("unlockpt", "ENOTTY")
        if step == "grantpt" and err in ("EACCES", "EPERM"):
            # An ioctl filter (Landlock's IOCTL_DEV, seccomp) denies the first ioctl after the
            # open: grantpt()'s TIOCGPTN for the probe, TIOCSPTLCK for pty-probe, which skips
            # grantpt().
            return ("unlockpt", err)
        return (step, err)

    def check_probe_agrees(self, report, user_res, where="live report"):
        """The audit's probe ran (as root, live) and found what the scenario's own unprivileged
        allocation found: the same verdict, at the same step, with the same errno."""
        probe = report.get("probe") or {}
        if probe.get("reason") == "not-ptmx":
            # /dev/ptmx is no multiplexer: the probe opened nothing, and the finding says so.
            self.check.true(not user_res.get("ok"), "%s: /dev/ptmx is not the multiplexer, and no user gets a pty there either (%s)" % (where, json.dumps(user_res)))
            critical = [f.get("id") for f in report.get("findings", []) if f.get("severity") == "critical"]
            self.check.true("ptmx-not-device" in critical, "%s: not-ptmx comes with ptmx-not-device (%s)" % (where, critical))
            return
        if not self.check.eq(probe.get("performed"), True, "%s: the allocation probe was performed (%s)" % (where, probe)):
            return
        self.check.eq(probe.get("uid"), 65534, "%s: the probe's uid (nobody)" % where)
        self.check.eq(
            self.audit_probe_outcome(probe),
            self.user_outcome(user_res),
            "%s: the audit's probe (%s) vs the scenario's unprivileged allocation (%s)"
            % (where, json.dumps(probe.get("steps", [])[-1:] + [probe.get("errno")]), json.dumps(user_res)),
        )
        # A failure is never silent, and never less than critical: either a critical finding
        # confirms it, or it is pty-allocation-fails, naming the warning that predicted it if any.
        if self.audit_probe_outcome(probe) is not None:
            findings = report.get("findings", [])
            ids = [f.get("id") for f in findings]
            confirmed = [(f.get("id"), f.get("severity")) for f in findings if (f.get("evidence") or {}).get("confirmed_by_probe") is True]
            critical = [i for i, sev in confirmed if sev == "critical"]
            self.check.true(
                bool(critical) != ("pty-allocation-fails" in ids),
                "%s: a probe failure is confirmed by a critical finding (%s) or reported as pty-allocation-fails (%s), exactly one" % (where, confirmed, ids),
            )
            fails = [f for f in findings if f.get("id") == "pty-allocation-fails"]
            if fails and not critical:
                self.check.eq((fails[0].get("evidence") or {}).get("predicted_by"), confirmed[0][0] if confirmed else None,
                              "%s: pty-allocation-fails names the warning that predicted it (%s)" % (where, confirmed))

    # ---- the daemon following the scenario ----

    DAEMON_TIMEOUT = 15.0
    DAEMON_SETTLE = 0.3

    def start_daemon(self):
        # As the unit runs it: its user (a free uid when the machine has none, without an
        # /etc/passwd entry: cases bind their own /etc/group and change it later), ambient
        # capabilities and bounding set; its state directory is that user's, as
        # RuntimeDirectory= is.
        service = testlib.service_user(self.workdir, None)
        state_dir = self.scratch_dir("daemon")
        os.chown(state_dir, service["uid"], service["gid"])
        os.chmod(self.workdir, 0o755)
        conf = os.path.join(self.workdir, "ptsguard.conf")
        self.daemon_state = os.path.join(state_dir, "report.json")
        self.daemon_log = os.path.join(self.workdir, "daemon.log")
        with open(conf, "w") as f:
            # HolderRescanSec=0: every audit scans for holders, as the CLI does; reusing a scan
            # (the default) is tested by the daemon suite.
            # No allocation probe in the daemon: its transient /dev/pts/N would be seen by the
            # case's own audits running at the same moment (a slave that comes and goes), and
            # theirs by it. What is compared here is tracking; the daemon's probe has the daemon
            # suite's tests.
            f.write(
                "[Daemon]\nStateFile=%s\nMountEvents=%s\nHolderRescanSec=0\n[Probe]\nEnabled=no\n"
                % (self.daemon_state, self.daemon_mode)
            )
        with open(self.daemon_log, "w") as log_file:
            self.daemon = subprocess.Popen(
                testlib.as_service(service) + [self.ptsguard, "daemon", "--config", conf],
                stdin=self.null,
                stdout=log_file,
                stderr=log_file,
            )
        if not self._wait_daemon(lambda report: True):
            raise SetupError("the daemon wrote no state file:\n" + self._daemon_log_text())
        with open("/proc/%d/status" % self.daemon.pid) as f:
            uids = [l.split()[1:] for l in f if l.startswith("Uid:")]
        if uids != [[str(service["uid"])] * 4]:
            raise SetupError("the daemon does not run as %s (%d): Uid %s" % (service["name"], service["uid"], uids))
        if self.daemon_mode == "fanotify" and "Tracking mounts incrementally" not in self._daemon_log_text():
            raise SetupError("MountEvents=fanotify but the daemon does not track mounts incrementally")

    def stop_daemon(self):
        if not self.daemon:
            return
        if self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        self.daemon = None

    def _daemon_log_text(self):
        try:
            with open(self.daemon_log) as f:
                return f.read()
        except OSError as e:
            return "(no log: %s)" % e

    def _daemon_report(self):
        try:
            with open(self.daemon_state) as f:
                report = json.load(f)
        except (OSError, ValueError):
            return None  # not written yet; replaced atomically, so never half-written
        self.check_schema(report, "the daemon's state file " + self.daemon_state)
        return report

    def _wait_daemon(self, good, timeout=None):
        deadline = time.monotonic() + (timeout or self.DAEMON_TIMEOUT)
        while time.monotonic() < deadline:
            report = self._daemon_report()
            if report is not None and good(report):
                return report
            if self.daemon.poll() is not None:
                return None
            time.sleep(0.02)
        return None

    @staticmethod
    def _comparable_findings(report):
        # ptmx-replaced is the daemon's own: a change of /dev/ptmx since it started. The daemon
        # runs no allocation probe here (start_daemon()): what the probe adds is left out.
        out = []
        for f in report.get("findings", []):
            if f.get("id") in ("ptmx-replaced", "pty-allocation-fails"):
                continue
            f = dict(f, evidence={k: v for k, v in (f.get("evidence") or {}).items() if k != "confirmed_by_probe"})
            out.append(f)
        return out

    def check_daemon_agrees(self, live_report):
        """The daemon, which followed every change of the scenario as it happened (through
        fanotify mount events or mountinfo re-reads), reports what a full audit finds, and
        still does a moment later."""
        want = self._comparable_findings(live_report)
        what = "findings of the daemon (MountEvents=%s) vs a full audit" % self.daemon_mode
        same = lambda report: self._comparable_findings(report) == want
        got = self._wait_daemon(same)
        if got is not None:
            time.sleep(self.DAEMON_SETTLE)
            got = self._daemon_report()
        if got is None or not same(got):
            self.check.eq(self._comparable_findings(got or {}), want, what)
            log("daemon log:\n" + self._daemon_log_text())
        # A reload makes the daemon find its mounts again from the whole table (with
        # fanotify: from a brief of every mount): the same findings once more.
        reloads = self._daemon_log_text().count("Reloaded configuration")
        self.daemon.send_signal(signal.SIGHUP)
        reloaded = self._wait_daemon(lambda report: self._daemon_log_text().count("Reloaded configuration") > reloads)
        time.sleep(self.DAEMON_SETTLE)
        got = self._daemon_report()
        if reloaded is None or got is None or not same(got):
            self.check.eq(self._comparable_findings(got or {}), want, what + ", after a reload")
            log("daemon log:\n" + self._daemon_log_text())
        self.check.true(self.daemon.poll() is None, "the daemon is still running")

    def validate_report(self, report, status, source):
        c = self.check
        where = "%s report" % source
        self.check_schema(report, where)
        c.eq(report.get("schema"), "ptsguard.report/1", where + ": schema")
        c.eq(report.get("source"), source, where + ": source")
        findings = report.get("findings")
        if not c.true(isinstance(findings, list), where + ": findings is not a list"):
            return
        counts = {"critical": 0, "warning": 0, "info": 0}
        for f in findings:
            fid = f.get("id")
            missing = [k for k in FINDING_KEYS if k not in f]
            c.eq(missing, [], "%s: keys missing from finding %s" % (where, fid))
            if not c.true(fid in self.catalog, "%s: unknown finding id %r" % (where, fid)):
                continue
            c.eq(f.get("severity"), expected_severity(self.catalog, fid, f), "%s: severity of %s" % (where, fid))
            if f.get("severity") in counts:
                counts[f["severity"]] += 1
            c.true(
                isinstance(f.get("message_id"), str)
                and re.fullmatch(r"[0-9a-f]{32}", f["message_id"]) is not None,
                "%s: message_id of %s is not 32 hex digits: %r" % (where, fid, f.get("message_id")),
            )
            c.eq(f.get("message_id"), self.catalog[fid]["message_id"], "%s: message_id of %s vs the catalog" % (where, fid))
            c.true(
                isinstance(f.get("summary"), str) and f["summary"].strip() != "",
                "%s: summary of %s is empty" % (where, fid),
            )
            c.true(
                isinstance(f.get("remedy"), str) and f["remedy"].strip() != "",
                "%s: remedy of %s is empty" % (where, fid),
            )
            c.true(
                isinstance(f.get("mount_ids"), list)
                and all(isinstance(i, int) for i in f["mount_ids"]),
                "%s: mount_ids of %s is not a list of integers" % (where, fid),
            )
            c.true(
                isinstance(f.get("devices"), list)
                and all(isinstance(d, str) and re.fullmatch(r"\d+:\d+", d) for d in f["devices"]),
                "%s: devices of %s is not a list of major:minor" % (where, fid),
            )
            c.true(isinstance(f.get("evidence"), dict), "%s: evidence of %s is not an object" % (where, fid))
            # A repairable check's finding may say its repair cannot work here (a gid= the user
            # namespace cannot name); a check that is never repairable never says it is.
            if f.get("repairable") is not False:
                c.eq(f.get("repairable"), self.catalog[fid]["repairable"], "%s: repairable of %s" % (where, fid))
        order = [(SEVERITY_RANK.get(f.get("severity"), 9), str(f.get("id"))) for f in findings]
        c.eq(
            [f.get("id") for f in findings],
            [f.get("id") for _, f in sorted(zip(order, findings), key=lambda t: t[0])],
            where + ": findings order (severity, then id)",
        )
        c.eq(report.get("summary"), counts, where + ": summary counts")
        worst = 2 if counts["critical"] else 1 if counts["warning"] else 0
        c.eq(status, worst, where + ": exit status vs worst severity in the report")
        ptmx = report.get("ptmx")
        if c.true(isinstance(ptmx, dict), where + ": ptmx is not an object"):
            c.eq(ptmx.get("path"), "/dev/ptmx", where + ": ptmx.path")
        c.true(isinstance(report.get("instances"), list), where + ": instances is not a list")

    # ---- assertions on the live report ----

    def expect(self, report, ids, severities=None):
        """The exact set of finding ids, and the exit status they imply (severities: id ->
        severity where the case expects another than the catalog's)."""
        actual = sorted(f.get("id") for f in report.get("findings", []))
        self.check.eq(actual, sorted(ids), "finding ids")
        status = self.reports["live"][1]
        self.check.eq(status, exit_status_for(self.catalog, ids, severities), "exit status of audit --json")

    def finding(self, report, fid):
        for f in report.get("findings", []):
            if f.get("id") == fid:
                return f
        self.check.fail("no %s finding to check its evidence" % fid)
        return None

    def instance(self, report, device):
        for inst in report.get("instances", []):
            if inst.get("device") == device:
                return inst
        self.check.fail("no instance with device %s in the report" % device)
        return None

    def expect_probe(self, res, **want):
        got = {k: res.get(k) for k in want}
        self.check.eq(got, want, "unprivileged pty-probe result (whole result: %s)" % json.dumps(res))

    def expect_serving(self, report, device, via="/dev/pts"):
        """The instance the report calls serving is the one the kernel used,
        reached through the top mount at `via`."""
        serving = [i.get("device") for i in report.get("instances", []) if i.get("serving")]
        self.check.eq(serving, [device], "devices of the instances marked serving")
        ptmx = report.get("ptmx") or {}
        top = mount_stack(via)
        if not top or top[-1]["device"] != device:
            raise SetupError("the top mount at %s is not instance %s: %s" % (via, device, top))
        self.check.eq(ptmx.get("serving_mount_id"), top[-1]["mount_id"], "ptmx.serving_mount_id")

    # ---- the end of a case ----

    def finish(self):
        if not self.check.failures:
            log("PASS %s" % self.name)
            return 0
        log("FAIL %s: %d mismatch(es)" % (self.name, len(self.check.failures)))
        for f in self.check.failures:
            log("  - " + f)
        self.dump()
        return 1

    def dump(self):
        for argv, res in self.probe_results:
            who = "uid %d" % UNPRIVILEGED_UID if "setpriv" in argv else "root"
            args = " ".join(argv[argv.index(self.pty_probe) + 1 :]) or "(no options)"
            log("pty-probe %s, as %s -> %s" % (args, who, json.dumps(res)))
        try:
            log("mountinfo:\n" + "".join(open("/proc/self/mountinfo").readlines()))
        except OSError:
            pass
        for source, (report, status) in self.reports.items():
            log("%s report (exit %d):\n%s" % (source, status, pretty(report)))


def run_case(name, func, ptsguard, pty_probe, daemon_mode=None):
    """Run one case inside the namespace; return its exit status."""
    for path, what in ((ptsguard, "ptsguard"), (pty_probe, "pty-probe")):
        if not os.access(path, os.X_OK):
            log("FAIL %s: %s is not an executable at %s" % (name, what, path))
            return 1
    sc = Scenario(name, ptsguard, pty_probe, daemon_mode)
    try:
        func(sc)
        status = sc.finish()
    except Skip as e:
        log("SKIP %s: %s" % (name, e))
        status = EXIT_SKIP
    except subprocess.TimeoutExpired as e:
        log("FAIL %s: timed out: %s" % (name, e))
        sc.dump()
        status = 1
    except Exception as e:  # a broken setup or a crash is a failure, never a skip
        log("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        traceback.print_exc(file=sys.stdout)
        for f in sc.check.failures:
            log("  - " + f)
        sc.dump()
        status = 1
    finally:
        sc.cleanup()
    return status


def cli_main(CASES, script, doc, options=(), configure=None):
    """The command line every case file shares: --list, --check-registered, run cases.

    options: more (flag, add_argument keywords) of the case file, passed on to each case's own
    run; configure(scenario, args) applies them to a case's Scenario before it runs."""
    daemon = (
        "--daemon",
        dict(
            choices=("fanotify", "mountinfo"),
            help="also run a daemon with this MountEvents= through the case and check it agrees with every audit",
        ),
    )
    args, cases = testlib.case_args(
        CASES, script, doc, (("--ptsguard", {}), ("--pty-probe", {}), daemon) + tuple(options), ("--ptsguard", "--pty-probe")
    )

    if len(cases) > 1:
        # Each case in a namespace of its own: run ourselves once per case, with our options.
        argv = [sys.executable, os.path.abspath(script), "--ptsguard", args.ptsguard, "--pty-probe", args.pty_probe]
        for flag, _ in (("--daemon", None),) + tuple(options):
            value = getattr(args, flag[2:].replace("-", "_"))
            if value is not None:
                argv += [flag, value]
        results = {}
        for c in cases:
            t0 = time.monotonic()
            r = subprocess.run(argv + [c])
            results[c] = (r.returncode, time.monotonic() - t0)
        for c, (rc, took) in results.items():
            print("%-28s %-10s %.1fs" % (c, {0: "PASS", EXIT_SKIP: "SKIP"}.get(rc, "FAIL (%d)" % rc), took))
        bad = [c for c, (rc, _) in results.items() if rc not in (0, EXIT_SKIP)]
        return 1 if bad else (EXIT_SKIP if all(rc == EXIT_SKIP for rc, _ in results.values()) else 0)

    name = cases[0]
    try:
        enter_private_namespace([os.path.abspath(script)] + sys.argv[1:])
    except Skip as e:
        log("SKIP %s: %s" % (name, e))
        return EXIT_SKIP
    except SetupError as e:
        log("FAIL %s: %s" % (name, e))
        return 1
    func = CASES[name]
    if configure:

        def configured(sc):
            configure(sc, args)
            return func(sc)

        return run_case(name, configured, args.ptsguard, args.pty_probe, args.daemon)
    return run_case(name, func, args.ptsguard, args.pty_probe, args.daemon)
