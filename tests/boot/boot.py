# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot test: a real systemd boot of a minimal Debian with ptsguard installed.

1. A Debian bookworm tree (debootstrap --variant=minbase plus systemd and the
   libraries the binary needs) is built once and kept as a tar file under the
   build directory, keyed by everything that goes into it. A mirror that cannot
   be reached is a failure, never a skip: CI must not turn green by skipping.
2. ptsguard comes from the project's Debian package, built by dpkg-buildpackage
   (tests/package/package.py, cached by a hash of the source) and installed
   into a fresh copy of the tree with `dpkg -i`, as an operator installs it:
   its maintainer scripts enable ptsguard.service and the systemd trigger
   compiles the journal catalog.
3. root gets an empty password on the console, and the tree boots under
   `systemd-nspawn --boot --register=no --keep-unit`. Without systemd as PID 1
   there is no machined (--register=no) and no bus to ask for a scope
   (--keep-unit: nspawn otherwise fails with "Failed to open system bus"); the
   container then gets a cgroup this test creates. With systemd as PID 1 the
   container runs in a transient scope with Delegate=yes (systemd-run --scope),
   which is what --keep-unit expects.
4. Everything inside is driven from outside with `nsenter --all` into the
   container's PID 1 namespaces, running the container's own systemctl,
   journalctl, mount and ptsguard; the assertions are made here.

The container is powered off at the end; on failure or timeout its console log
is printed. Exit 0 pass, 1 fail, 77 skip (not root, a tool missing).

Standard library only.
"""

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "package"))

import testlib  # noqa: E402

# tests/package/package.py imports this file as "boot": run as a script, it must find this
# module, not a second copy with other exception classes.
sys.modules.setdefault("boot", sys.modules[__name__])

EXIT_SKIP = 77

SUITE = "bookworm"
VARIANT = "minbase"
# What the tree needs beyond minbase: an init, a bus, the libraries of the binary (checked with
# ldd in the tree after the install), and man-db so that `systemd-analyze verify` can check that
# the man pages in Documentation= are installed.
PACKAGES = sorted(
    [
        "systemd",
        "systemd-sysv",
        "dbus",
        "util-linux",
        "udev",
        "libmount1",
        "libjson-c5",
        "libeconf0",
        "libudev1",
        "libsystemd0",
        "man-db",
    ]
)
CACHE_FORMAT = 1  # bump when the way the tree is built changes
DEBOOTSTRAP_TIMEOUT = 600  # a cold mirror on a busy 2-CPU machine; the test itself may take 900 s
BOOT_BUDGET = 240  # seconds from starting the container to powering it off
STEP_TIMEOUT = 30  # one command inside the container
WAIT = 15  # an effect of the daemon (journal entry, repair)
UNITS = ("ptsguard.service", "ptsguard-audit.service")
UNIT_DIR = "/usr/lib/systemd/system"
DROPIN = "/etc/ptsguard/ptsguard.conf.d/50-boot-test.conf"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Skip(Exception):
    pass


class Failure(Exception):
    pass


class Timeout(Failure):
    pass


def log(msg=""):
    print(msg, flush=True)


def run(argv, check=True, timeout=None, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise Failure("%s exited %d:\n%s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
    return r


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self):
        return self.end - time.monotonic()

    def cap(self, seconds):
        left = self.left()
        if left <= 0:
            raise Timeout("the boot test ran out of its %d seconds" % self.seconds)
        return min(seconds, left)


# --------------------------------------------------------------------------
# The cached tree


def cache_key():
    text = json.dumps({"format": CACHE_FORMAT, "suite": SUITE, "variant": VARIANT, "packages": PACKAGES, "arch": os.uname().machine})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def debootstrap_failure(logtext):
    """A message that says whether the mirror could not be reached."""
    tail = "\n".join(logtext.splitlines()[-25:])
    if re.search(r"Failed getting release file|Couldn't download|Temporary failure resolving|unable to resolve|Connection refused|No route to host|Network is unreachable|timed out", logtext, re.I):
        return "debootstrap could not reach the Debian mirror (no network or no proxy?); the boot test needs it once to build its cache:\n" + tail
    return "debootstrap failed:\n" + tail


def cache_dir(build_root):
    """Where the debootstrapped tree, the .deb and the images are kept across runs:
    $PTSGUARD_BOOT_CACHE, else BUILD/boot-cache (made if missing)."""
    path = os.environ.get("PTSGUARD_BOOT_CACHE") or os.path.join(os.path.abspath(build_root), "boot-cache")
    os.makedirs(path, exist_ok=True)
    return path


def ensure_rootfs(cache_dir):
    """The tar of the debootstrapped tree, built under a lock when missing."""
    os.makedirs(cache_dir, exist_ok=True)
    tar = os.path.join(cache_dir, "rootfs-%s-%s.tar" % (SUITE, cache_key()))
    with open(os.path.join(cache_dir, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(tar):
            log("cached tree: %s" % tar)
            return tar
        work = tempfile.mkdtemp(prefix="debootstrap-", dir=cache_dir)
        try:
            root = os.path.join(work, "root")
            argv = ["debootstrap", "--variant=" + VARIANT, "--include=" + ",".join(PACKAGES), SUITE, root]
            log("building the cached tree (once): %s" % " ".join(argv))
            t0 = time.monotonic()
            logpath = os.path.join(work, "debootstrap.log")
            with open(logpath, "w") as out:
                try:
                    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=DEBOOTSTRAP_TIMEOUT)
                    rc = p.returncode
                except subprocess.TimeoutExpired:
                    rc = None
            with open(logpath, errors="replace") as f:
                text = f.read()
            if rc is None:
                raise Failure("debootstrap did not finish within %ds (slow or unreachable mirror):\n%s" % (DEBOOTSTRAP_TIMEOUT, "\n".join(text.splitlines()[-25:])))
            if rc != 0:
                raise Failure(debootstrap_failure(text))
            t1 = time.monotonic()
            # debootstrap copies the host's name and resolver; the tree gets its own.
            with open(os.path.join(root, "etc/hostname"), "w") as f:
                f.write("ptsguard-boot\n")
            run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", root, "-cf", tar + ".tmp", "."])
            os.rename(tar + ".tmp", tar)
            for old in os.listdir(cache_dir):  # trees of an older package list
                if old.startswith("rootfs-") and old.endswith(".tar") and old != os.path.basename(tar):
                    os.unlink(os.path.join(cache_dir, old))
            log("debootstrap took %.0fs, tar %.0fs: %s (%d MiB)" % (t1 - t0, time.monotonic() - t1, tar, os.path.getsize(tar) >> 20))
            return tar
        finally:
            # A debootstrap stopped half-way leaves /proc (and more) mounted in its tree:
            # unmount them first, or the removal would walk into the host's /proc.
            umount_below(work)
            shutil.rmtree(work, ignore_errors=True)
            try:
                os.unlink(tar + ".tmp")
            except FileNotFoundError:
                pass


def umount_below(path):
    """Unmount everything mounted at or below path, deepest first (lazily: nothing may hold it
    open for long)."""
    prefix = os.path.realpath(path).rstrip("/") + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].encode().decode("unicode_escape") for line in f]
    for mp in sorted((m for m in points if (m + "/").startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def prepare_tree(tar, tree, deb):
    """A fresh copy of the cached tree with the .deb installed by dpkg."""
    os.makedirs(tree)
    run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", tree, "-xf", tar])
    name = "/root/" + os.path.basename(deb)
    shutil.copy(deb, tree + name)
    # Every dependency of the package must be in the tree: otherwise PACKAGES is short.
    r = run(["chroot", tree, "dpkg", "-i", name], check=False, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=300)
    if r.returncode != 0:
        raise Failure("dpkg -i %s in the tree failed (extend PACKAGES?):\n%s%s" % (name, r.stdout[-3000:], r.stderr[-3000:]))
    os.unlink(tree + name)
    # root logs in on the console without a password (for whoever debugs a kept tree).
    shadow = os.path.join(tree, "etc/shadow")
    with open(shadow) as f:
        lines = f.read().splitlines()
    lines = [re.sub(r"^root:[^:]*:", "root::", l) for l in lines]
    with open(shadow, "w") as f:
        f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------
# cgroups for a container on a host without systemd


def own_cgroup_dirs(name):
    """A new cgroup below ours in the unified hierarchy and in name=systemd (where mounted)."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            own["unified" if hid == "0" else controllers] = path
    dirs = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, post = line.split(" - ", 1)
            mountpoint = pre.split()[4].replace("\\040", " ")
            fstype, _, super_opts = post.split()[:3]
            if fstype == "cgroup2" and "unified" in own:
                key = "unified"
            elif fstype == "cgroup" and "name=systemd" in super_opts.split(","):
                key = "name=systemd"
            else:
                continue
            d = os.path.normpath(mountpoint + "/" + own[key] + "/" + name)
            if d not in dirs and os.access(os.path.dirname(d), os.W_OK):
                os.mkdir(d)
                dirs.append(d)
    return dirs


def remove_cgroup_dirs(dirs):
    for top in dirs:
        for _ in range(50):
            for d, _sub, _files in os.walk(top, topdown=False):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            if not os.path.exists(top):
                break
            time.sleep(0.1)
        if os.path.exists(top):
            log("warning: could not remove cgroup %s" % top)


# --------------------------------------------------------------------------
# The container


class Container:
    def __init__(self, tree, console_path, deadline):
        self.tree = tree
        self.name = "ptsguard-boot-%d" % os.getpid()
        self.console_path = console_path
        self.deadline = deadline
        self.cgroups = []
        self.proc = None
        self.leader = None

    def start(self):
        argv = [
            "systemd-nspawn",
            "--boot",
            "--register=no",
            "--keep-unit",
            "--machine=" + self.name,
            "--console=read-only",
            "--private-network",
            "--link-journal=no",
            "--directory=" + self.tree,
        ]
        preexec = None
        if os.path.isdir("/run/systemd/system"):
            # systemd is PID 1: a delegated scope of our own, which --keep-unit then uses.
            argv = ["systemd-run", "--scope", "--quiet", "--collect", "--property=Delegate=yes", "--unit=" + self.name] + argv
        else:
            self.cgroups = own_cgroup_dirs(self.name)
            procs = [os.path.join(d, "cgroup.procs") for d in self.cgroups]

            def preexec():
                for p in procs:
                    with open(p, "w") as f:
                        f.write(str(os.getpid()))

        self.console = open(self.console_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.console, stderr=subprocess.STDOUT, preexec_fn=preexec)
        # PID 1 of the container: nspawn's child that is PID 1 of a new PID namespace.
        while self.leader is None:
            if self.proc.poll() is not None:
                raise Failure("systemd-nspawn exited with %d before the container started" % self.proc.returncode)
            self.leader = self.find_leader()
            if self.leader is None:
                self.deadline.cap(1)
                time.sleep(0.05)

    def find_leader(self):
        kids = []
        try:
            for t in os.listdir("/proc/%d/task" % self.proc.pid):
                with open("/proc/%d/task/%s/children" % (self.proc.pid, t)) as f:
                    kids += f.read().split()
            for k in kids:
                with open("/proc/%s/status" % k) as f:
                    for line in f:
                        if line.startswith("NSpid:"):
                            ns = line.split()[1:]
                            if len(ns) >= 2 and ns[-1] == "1":
                                return int(k)
        except OSError:
            pass
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def sh(self, argv, check=False, timeout=STEP_TIMEOUT, stdin_text=None):
        """Run argv inside the container (its mount, PID, ... namespaces and root)."""
        if not self.alive():
            raise Failure("the container is gone (systemd-nspawn exited with %s)" % self.proc.returncode)
        env = ["env", "-i", "PATH=" + PATH, "LANG=C.UTF-8", "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=", "TERM=dumb"]
        full = ["nsenter", "--target", str(self.leader), "--all"] + env + list(argv)
        try:
            if stdin_text is not None:
                return run(full, check=check, timeout=self.deadline.cap(timeout), input=stdin_text, stdin=None)
            return run(full, check=check, timeout=self.deadline.cap(timeout))
        except subprocess.TimeoutExpired:
            raise Timeout("%s did not finish within %ds" % (" ".join(argv), timeout))

    def show(self, unit, *props):
        r = self.sh(["systemctl", "show", "-p", ",".join(props), unit], check=True)
        out = {}
        for line in r.stdout.splitlines():
            k, _, v = line.partition("=")
            out[k] = v
        return out

    def wait_for(self, what, fn, timeout=WAIT, interval=0.2):
        end = time.monotonic() + self.deadline.cap(timeout)
        while True:
            v = fn()
            if v:
                return v
            if time.monotonic() > end:
                raise Failure("timed out after %ds waiting for %s" % (timeout, what))
            time.sleep(interval)

    def journal(self, *matches):
        r = self.sh(["journalctl", "-o", "json", "--no-pager", "--all"] + list(matches))
        out = []
        for line in r.stdout.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def poweroff(self, timeout=30):
        """systemctl poweroff; SIGKILL to the container's PID 1 when it hangs. Returns nspawn's status."""
        if not self.alive():
            return self.proc.returncode
        try:
            r = run(["nsenter", "--target", str(self.leader), "--all", "systemctl", "poweroff", "--no-block"], check=False, timeout=10)
            if r.returncode != 0:
                log("systemctl poweroff failed (%s); sending SIGRTMIN+4 to the container's PID 1" % r.stderr.strip())
                os.kill(self.leader, signal.SIGRTMIN + 4)
        except (subprocess.TimeoutExpired, OSError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log("the container did not power off within %ds; killing it" % timeout)
            self.kill()
            return None

    def kill(self):
        if self.leader:
            try:
                os.kill(self.leader, signal.SIGKILL)
            except OSError:
                pass
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        self.kill()
        if self.proc:
            self.console.close()
        remove_cgroup_dirs(self.cgroups)

    def console_log(self, lines=200):
        try:
            with open(self.console_path, errors="replace") as f:
                text = ANSI.sub("", f.read())
        except OSError:
            return "(no console log)"
        return "\n".join([l for l in text.splitlines() if l.strip()][-lines:])


# --------------------------------------------------------------------------
# Assertions


class Checker:
    def __init__(self):
        self.failures = []

    def ok(self, cond, what, detail=""):
        log("%s %s%s" % ("ok:  " if cond else "FAIL:", what, ("\n      " + detail.replace("\n", "\n      ")) if detail and not cond else ""))
        if not cond:
            self.failures.append(what + (": " + detail if detail else ""))
        return bool(cond)


def devpts_lines(ct):
    r = ct.sh(["cat", "/proc/self/mountinfo"], check=True)
    return [l for l in r.stdout.splitlines() if " - devpts " in l]


def super_options(line):
    return line.split(" - ", 1)[1].split()[2].split(",")


def norm(text):
    """Catalog text as journalctl -x shows it, without its line prefixes and wrapping."""
    lines = [re.sub(r"^\s*(\u2591\u2591|--)\s?", "", l) for l in text.splitlines()]
    return " ".join(" ".join(lines).split())


def entries_of(ct, check, seen, state=None):
    """Entries of the service for a check's MESSAGE_ID that are not in seen."""
    out = []
    for e in ct.journal("MESSAGE_ID=" + check["message_id"], "_SYSTEMD_UNIT=ptsguard.service"):
        if e.get("__CURSOR") in seen:
            continue
        if state is None or e.get("PTSGUARD_STATE") == state:
            out.append(e)
    return out


def all_cursors(ct):
    return {e.get("__CURSOR") for e in ct.journal("_SYSTEMD_UNIT=ptsguard.service")}


def transitions_since(ct, seen):
    return [
        (e.get("PTSGUARD_CHECK"), e.get("PTSGUARD_STATE"))
        for e in ct.journal("_SYSTEMD_UNIT=ptsguard.service")
        if e.get("__CURSOR") not in seen and e.get("PTSGUARD_CHECK")
    ]


def check_catalog_text(c, ct, check):
    r = ct.sh(["journalctl", "-x", "--no-pager", "MESSAGE_ID=" + check["message_id"], "_SYSTEMD_UNIT=ptsguard.service"])
    text = norm(r.stdout)
    c.ok(
        ("Subject: " + check["summary"]) in text and norm(check["explanation"]) in text and ("reports the check %s" % check["id"]) in text,
        "journalctl -x shows the catalog text of %s (Subject, explanation)" % check["id"],
        r.stdout[-3000:],
    )


def status_text(ct):
    return ct.show("ptsguard.service", "StatusText")["StatusText"]


def test_inside(c, ct):
    # --- boot
    t0 = time.monotonic()

    def booted():
        # Until PID 1 listens on its private socket systemctl says "offline" and fails.
        r = ct.sh(["systemctl", "is-system-running", "--wait"], timeout=120)
        state = r.stdout.strip()
        return state if state not in ("", "offline", "unknown") else None

    state = ct.wait_for("systemd in the container to finish booting", booted, timeout=120)
    log("booted in %.1fs: is-system-running: %s" % (time.monotonic() - t0, state))
    failed = ct.sh(["systemctl", "list-units", "--failed", "--plain", "--no-legend"]).stdout.strip()
    if failed:
        log("failed units:\n" + failed)
    c.ok("ptsguard" not in failed, "no ptsguard unit failed during boot", failed)

    checks = {x["id"]: x for x in json.loads(ct.sh(["ptsguard", "checks", "--format", "json"], check=True).stdout)}

    # --- the unit is up, READY=1 and STATUS= were sent
    props = ct.show("ptsguard.service", "Type", "ActiveState", "SubState", "StatusText", "NRestarts", "MainPID", "WatchdogUSec", "WatchdogTimestampMonotonic", "ActiveEnterTimestampMonotonic", "UnitFileState")
    log("ptsguard.service: %s" % " ".join("%s=%s" % kv for kv in sorted(props.items())))
    c.ok(props["UnitFileState"] == "enabled", "ptsguard.service is enabled", props["UnitFileState"])
    c.ok(
        props["Type"] == "notify" and props["ActiveState"] == "active" and props["SubState"] == "running",
        "ptsguard.service is active/running as Type=notify (READY=1 received)",
        "Type=%s ActiveState=%s SubState=%s" % (props["Type"], props["ActiveState"], props["SubState"]),
    )
    c.ok(props["NRestarts"] == "0", "no restarts", props["NRestarts"])
    c.ok(props["StatusText"] == "No findings", "STATUS= of the first audit: No findings", props["StatusText"])
    sysinit = ct.show("sysinit.target", "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"]
    c.ok(
        0 < int(props["ActiveEnterTimestampMonotonic"] or 0) <= int(sysinit or 0),
        "READY=1 came before sysinit.target (Before=sysinit.target held)",
        "ptsguard %s, sysinit.target %s" % (props["ActiveEnterTimestampMonotonic"], sysinit),
    )
    st = ct.sh(["systemctl", "status", "--no-pager", "--lines=5", "ptsguard.service"]).stdout
    log(st)
    c.ok('Status: "No findings"' in st, "systemctl status shows the STATUS= line", st)
    main_pid = props["MainPID"]
    wd_usec = props["WatchdogUSec"]
    c.ok(wd_usec not in ("", "0", "infinity"), "the watchdog is armed (WatchdogUSec=%s)" % wd_usec, wd_usec)

    # --- nspawn's own devpts setup audits clean
    pts = devpts_lines(ct)
    ptmx = ct.sh(["readlink", "/dev/ptmx"]).stdout.strip()
    log("nspawn's layout: /dev/ptmx -> %s\n  %s" % (ptmx, "\n  ".join(pts)))
    opts = super_options(pts[0]) if len(pts) == 1 else []
    c.ok(
        len(pts) == 1 and ptmx == "pts/ptmx" and {"gid=5", "mode=620", "ptmxmode=666"} <= set(opts),
        "nspawn's setup as expected: one devpts gid=5,mode=620,ptmxmode=666 and /dev/ptmx -> pts/ptmx",
        "%s; /dev/ptmx -> %s" % (pts, ptmx),
    )
    r = ct.sh(["ptsguard", "audit", "--json"])
    try:
        report = json.loads(r.stdout)
        found = [(f["id"], f["severity"]) for f in report["findings"]]
    except (ValueError, KeyError, TypeError):
        found = None
    log("ptsguard audit --json: exit %d, findings %s" % (r.returncode, found))
    if found is not None:
        problems = testlib.report_problems(report)
        c.ok(not problems, "the report matches docs/schema/report-1.schema.json", "\n".join(problems))
    c.ok(r.returncode == 0 and found is not None and all(s == "info" for _, s in found), "nspawn's devpts setup audits clean (exit 0, info at most)", r.stdout[-2000:] + r.stderr)

    # --- the installed units verify; the exposure is printed
    paths = [UNIT_DIR + "/" + u for u in UNITS]
    r = ct.sh(["systemd-analyze", "verify"] + paths, timeout=60)
    c.ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(), "systemd-analyze verify %s (in the container, man pages checked)" % " ".join(UNITS), "exit %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    r = ct.sh(["systemd-analyze", "security", "--no-pager", "ptsguard.service"], timeout=60)
    exposure = [l for l in r.stdout.splitlines() if "Overall exposure level" in l]
    log("systemd-analyze security (not asserted): %s" % (exposure[0].strip() if exposure else (r.stdout + r.stderr).strip()[-500:]))

    # --- the one-shot audit unit stands aside while the daemon runs
    ct.sh(["systemctl", "start", "ptsguard-audit.service"], timeout=60)
    a = ct.show("ptsguard-audit.service", "ConditionResult", "ActiveState", "Result")
    c.ok(a["ConditionResult"] == "no" and a["Result"] == "success", "ptsguard-audit.service is skipped while the daemon's report exists", str(a))
    # Run as on a host without the daemon (its report moved aside for the while): its
    # allocation probe runs under the unit's own capability bounding set and system call filter.
    report_json = "/run/ptsguard/report.json"
    unit_match = "_SYSTEMD_UNIT=ptsguard-audit.service"
    before = {e.get("__CURSOR") for e in ct.journal(unit_match)}
    ct.sh(["mv", report_json, report_json + ".aside"], check=True)
    try:
        r = ct.sh(["systemctl", "start", "ptsguard-audit.service"], timeout=60)
    finally:  # unless the daemon wrote a newer one meanwhile
        ct.sh(["sh", "-c", "mv -n %s.aside %s; rm -f %s.aside" % (report_json, report_json, report_json)], check=True)
    a = ct.show("ptsguard-audit.service", "Result", "ExecMainStatus")

    def audit_lines():
        return [e["MESSAGE"] for e in ct.journal(unit_match) if e.get("__CURSOR") not in before and isinstance(e.get("MESSAGE"), str)]

    try:  # journald may store the stream's lines a moment after the unit ended
        ct.wait_for("the audit's probe line in the journal", lambda: any(l.startswith("allocation probe:") for l in audit_lines()))
    except Failure:
        pass
    lines = audit_lines()
    probe = [l for l in lines if l.startswith("allocation probe:")]
    log("ptsguard-audit.service run: %s; %s" % (a, probe))
    c.ok(r.returncode == 0 and a["Result"] == "success" and a["ExecMainStatus"] in ("0", "1") and lines, "ptsguard-audit.service runs its audit while there is no daemon's report", "%s; systemctl start: exit %d %s%s; its lines: %s" % (a, r.returncode, r.stdout, r.stderr, lines))
    c.ok(len(probe) == 1 and probe[0].startswith("allocation probe: uid 65534 gid 65534 got a working pty"), "ptsguard-audit.service's journal: the allocation probe got a pty as nobody under the unit", "%s\n%s" % (probe, "\n".join(lines)[-2000:]))

    # --- break it: remount mode=644 (mount(8) keeps the other options: gid=5, ptmxmode=666)
    seen = all_cursors(ct)
    lost = checks["devpts-options-lost"]
    ct.sh(["mount", "-o", "remount,mode=644", "/dev/pts"], check=True)
    try:
        e = ct.wait_for("a devpts-options-lost entry", lambda: entries_of(ct, lost, seen, "detected"))[0]
        log("journal: %s" % json.dumps({k: v for k, v in e.items() if k.startswith("PTSGUARD_") or k in ("MESSAGE", "MESSAGE_ID", "PRIORITY")}, sort_keys=True))
        c.ok(e.get("PTSGUARD_CHECK") == "devpts-options-lost" and e.get("PRIORITY") == "2", "journalctl -o json MESSAGE_ID=%s: devpts-options-lost detected, PRIORITY=2" % lost["message_id"], json.dumps(e))
        check_catalog_text(c, ct, lost)
        st = ct.wait_for("STATUS= with the finding", lambda: (lambda s: s if s.startswith("Findings: 1 critical") else None)(status_text(ct)))
        c.ok(True, "STATUS= follows: %s" % st)
    except Failure as err:
        c.ok(False, "mode=644 remount is journaled as devpts-options-lost", str(err))
    ct.sh(["mount", "-o", "remount,mode=620", "/dev/pts"], check=True)
    try:
        ct.wait_for("devpts-options-lost resolved", lambda: entries_of(ct, lost, seen, "resolved"))
        c.ok(True, "restoring mode=620 is journaled as resolved")
    except Failure as err:
        c.ok(False, "restoring mode=620 is journaled as resolved", str(err))
    log("transitions: %s" % transitions_since(ct, seen))

    # --- stack a devpts on /dev/pts
    seen = all_cursors(ct)
    over = checks["devpts-overmount"]
    ct.sh(["mount", "-t", "devpts", "devpts", "/dev/pts"], check=True)
    try:
        e = ct.wait_for("a devpts-overmount entry", lambda: entries_of(ct, over, seen, "detected"))[0]
        c.ok(e.get("PTSGUARD_CHECK") == "devpts-overmount", "journalctl -o json MESSAGE_ID=%s: devpts-overmount detected (%s)" % (over["message_id"], e.get("MESSAGE")), json.dumps(e))
        check_catalog_text(c, ct, over)
    except Failure as err:
        c.ok(False, "a stacked devpts is journaled as devpts-overmount", str(err))
    time.sleep(0.5)
    log("transitions: %s" % transitions_since(ct, seen))
    ct.sh(["umount", "/dev/pts"], check=True)
    try:
        ct.wait_for("devpts-overmount resolved and No findings", lambda: entries_of(ct, over, seen, "resolved") and status_text(ct) == "No findings")
        c.ok(True, "unmounting the stacked devpts resolves everything")
    except Failure as err:
        c.ok(False, "unmounting the stacked devpts resolves everything", "%s; StatusText=%s" % (err, status_text(ct)))

    # --- Policy=safe through a drop-in and systemctl reload
    seen = all_cursors(ct)
    ct.sh(["mkdir", "-p", os.path.dirname(DROPIN)], check=True)
    ct.sh(["sh", "-c", "cat > " + DROPIN], check=True, stdin_text="[Repair]\nPolicy=safe\n")
    r = ct.sh(["systemctl", "reload", "ptsguard.service"], timeout=60)
    p = ct.show("ptsguard.service", "ActiveState", "SubState", "MainPID", "NRestarts")
    unit_log = ct.sh(["journalctl", "--no-pager", "-u", "ptsguard.service", "-n", "8"]).stdout
    c.ok(r.returncode == 0, "systemctl reload ptsguard.service succeeds", "exit %d: %s\n%s" % (r.returncode, r.stderr.strip(), unit_log))
    c.ok(p["ActiveState"] == "active" and p["MainPID"] == main_pid and p["NRestarts"] == "0", "the service stays active with the same main PID across the reload", str(p))

    def reloaded():
        return [e for e in ct.journal("_SYSTEMD_UNIT=ptsguard.service") if e.get("__CURSOR") not in seen and "Reloaded configuration" in e.get("MESSAGE", "") and "Policy=safe" in e.get("MESSAGE", "")]

    if r.returncode != 0:
        # Deliver the reload the way ExecReload= should have, to test the repair anyway.
        log("reload failed: sending SIGHUP with systemctl kill to go on")
        ct.sh(["systemctl", "kill", "--kill-who=main", "--signal=HUP", "ptsguard.service"], check=True)
    try:
        e = ct.wait_for("the reload journal line", reloaded)[0]
        c.ok(True, "reload journal line: %s" % e["MESSAGE"])
    except Failure as err:
        c.ok(False, "the daemon journals the reloaded configuration with Policy=safe", str(err))

    # --- a new mode=644 remount as the kernel sees it from mount(2) with only "mode=644" (what
    # a tool that remounts devpts does): gid= and ptmxmode= fall back to the defaults.
    seen = all_cursors(ct)
    ct.sh(["mount", "--options-source=disable", "-o", "remount,mode=644", "/dev/pts"], check=True)
    try:
        ct.wait_for(
            "the repair: /dev/pts back to gid=5 mode=620 ptmxmode=666",
            lambda: (lambda l: len(l) == 1 and {"gid=5", "mode=620", "ptmxmode=666"} <= set(super_options(l[0])))(devpts_lines(ct)),
        )
        repaired_mount = True
    except Failure as err:
        repaired_mount = False
        c.ok(False, "Policy=safe repairs the remount", "%s: %s" % (err, devpts_lines(ct)))
    time.sleep(1)
    seq = transitions_since(ct, seen)
    log("transitions: %s" % seq)
    for e in [e for e in ct.journal("_SYSTEMD_UNIT=ptsguard.service") if e.get("__CURSOR") not in seen and e.get("PTSGUARD_CHECK")]:
        log("  %s %s: %s" % (e.get("PTSGUARD_CHECK"), e.get("PTSGUARD_STATE"), e.get("PTSGUARD_DETAIL") or e.get("MESSAGE")))
    detected = [k for k, s in seq if s == "detected"]
    c.ok("devpts-options-lost" in detected, "the remount is journaled as devpts-options-lost detected", str(seq))
    for k in detected:
        after = [s for kk, s in seq[seq.index((k, "detected")) + 1 :] if kk == k]
        c.ok(after[:1] == ["repaired"], "%s: detected, then repaired" % k, "its entries after detected: %s" % after)
    c.ok(not [x for x in seq if x[1] == "repair-failed"], "no repair-failed entry", str(seq))
    if repaired_mount:
        c.ok(True, "/dev/pts is gid=5,mode=620,ptmxmode=666 again: %s" % devpts_lines(ct)[0].split(" - ")[1])
    c.ok(status_text(ct) == "No findings", "STATUS= after the repair: No findings", status_text(ct))

    # --- the watchdog is pinged, not only armed: WATCHDOG=1 moves WatchdogTimestamp (taken
    # after the reload, which could move it too), at the latest one WatchdogSec later.
    t_wd = time.monotonic()
    wd_last = int(ct.show("ptsguard.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"] or 0)
    try:
        ct.wait_for(
            "a watchdog ping (WatchdogTimestampMonotonic to move)",
            lambda: int(ct.show("ptsguard.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"] or 0) > wd_last,
            timeout=35,
            interval=0.5,
        )
        c.ok(True, "the daemon pings the watchdog (a WATCHDOG=1 within %.1fs)" % (time.monotonic() - t_wd))
    except Failure as err:
        c.ok(False, "the daemon pings the watchdog", str(err))

    log("\njournalctl -u ptsguard.service:\n" + ct.sh(["journalctl", "--no-pager", "-o", "short-monotonic", "-u", "ptsguard.service"]).stdout)


# --------------------------------------------------------------------------


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--source-root", required=True)
    p.add_argument("--build-root", required=True, help="the meson build dir: the cache lives below it")
    p.add_argument("--keep", action="store_true", help="keep the tree and the console log (also PTSGUARD_BOOT_KEEP=1)")
    args = p.parse_args(argv)
    keep = args.keep or os.environ.get("PTSGUARD_BOOT_KEEP") == "1"

    try:
        if os.geteuid() != 0:
            raise Skip("needs root (debootstrap, systemd-nspawn, nsenter); running as uid %d" % os.geteuid())
        for tool in ("debootstrap", "dpkg-buildpackage", "dh", "lintian", "systemd-nspawn", "nsenter", "systemctl", "chroot", "tar"):
            if shutil.which(tool) is None:
                raise Skip("%s is not installed" % tool)
    except Skip as e:
        log("SKIP: %s" % e)
        return EXIT_SKIP

    cache = cache_dir(args.build_root)
    ct = None
    scratch = None
    c = Checker()
    ok = False

    def on_term(signum, frame):
        raise Timeout("terminated by signal %d (meson's timeout?)" % signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        t = time.monotonic()
        tar = ensure_rootfs(cache)
        log("cache ready in %.1fs" % (time.monotonic() - t))
        t = time.monotonic()
        import package  # tests/package imports this module: only now, once it is loaded

        deb, _lintian = package.ensure_deb(cache, os.path.abspath(args.source_root))
        log("package ready in %.1fs: %s" % (time.monotonic() - t, deb))
        t = time.monotonic()
        runs = os.path.join(cache, "runs")
        os.makedirs(runs, exist_ok=True)
        for old in os.listdir(runs):  # left by a run that was killed
            if time.time() - os.lstat(os.path.join(runs, old)).st_mtime > 3600:
                shutil.rmtree(os.path.join(runs, old), ignore_errors=True)
        scratch = tempfile.mkdtemp(prefix="run-", dir=runs)
        tree = os.path.join(scratch, "tree")
        prepare_tree(tar, tree, deb)
        log("tree extracted and the .deb installed in %.1fs: %s" % (time.monotonic() - t, tree))

        t = time.monotonic()
        ct = Container(tree, os.path.join(scratch, "console.log"), Deadline(BOOT_BUDGET))
        ct.start()
        log("container %s started, PID 1 is %d on the host" % (ct.name, ct.leader))
        try:
            test_inside(c, ct)
        finally:
            t_off = time.monotonic()
            rc = ct.poweroff()
            log("powered off in %.1fs (systemd-nspawn exit %s); boot run took %.1fs" % (time.monotonic() - t_off, rc, time.monotonic() - t))
        c.ok(rc == 0, "the container powered off cleanly (systemd-nspawn exit 0)", "exit %s" % rc)
        console = ct.console_log(lines=100000)
        c.ok("Stopped ptsguard.service" in console, "ptsguard.service stopped at poweroff", console[-1500:])
        ok = not c.failures
        if not ok:
            log("\n---- console log of the container (tail) ----\n%s\n----" % ct.console_log())
            log("FAIL: %d assertion(s) failed:\n%s" % (len(c.failures), "\n".join("- " + " ".join(f.split())[:300] for f in c.failures)))
            return 1
        log("PASS")
        return 0
    except Failure as e:
        log("FAIL: %s" % e)
        if ct is not None:
            log("\n---- console log of the container (tail) ----\n%s\n----" % ct.console_log())
        return 1
    finally:
        if ct is not None:
            ct.cleanup()
        if scratch:
            if keep or (not ok and os.environ.get("PTSGUARD_BOOT_KEEP_FAILED") == "1"):
                log("kept: %s" % scratch)
            else:
                shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
