#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`ptsguard repair` on the real kernel, one function per case.

    repair.py --ptsguard PATH --pty-probe PATH [--system-python PATH] CASE [CASE...|all]
    repair.py --list
    repair.py --check-registered CASE...   (meson's list must match ours)

Each case runs as root in a private mount namespace of its own (the
scenario harness, tests/scenario/harness.py): it builds a broken state, runs
`ptsguard repair --format json`, and asserts the actions (check, command,
result), the devpts options in /proc/self/mountinfo afterwards, the nodes
afterwards, and what an unprivileged user (uid 1000, through pty-probe under
setpriv) now gets. The race cases change the world between plan and act,
through the test hook PTSGUARD_TEST_PAUSE_BEFORE_ACT=1 of a build with
-Dtest-hooks=true (skipped otherwise). Exit 0 pass, 1 fail, 77 skip.

--system-python names the interpreter that has Debian's `seccomp` module
(python3-seccomp); the mount(2) fallback case runs ptsguard under a seccomp
filter through it.
"""

import contextlib
import ctypes
import json
import os
import re
import select
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenario"))

from harness import (  # noqa: E402
    RUN_TIMEOUT,
    SetupError,
    Skip,
    TTY_GID,
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    devnum,
    case_registry,
    cli_main,
    exit_status_for,
    log,
    mount_stack,
    session_pty,
    user_reopens,
)

CASES, case = case_registry()
HEALTHY = "gid=5,mode=620"
PAUSE_LINE = "ptsguard: paused before acting (test hook); send a line to go on"
SYSTEM_PYTHON = "/usr/bin/python3"
JOURNALD = "/lib/systemd/systemd-journald"

# Runs a command with some syscalls failing (fspick(2) with ENOSYS: a kernel without the new
# mount API); run it with the interpreter that has python3-seccomp.
SECCOMP_EXEC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "seccomp-exec")


# ---------------------------------------------------------------------------
# The mount table with per-mount options (harness.read_mountinfo has only the
# superblock's)


def _unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mountinfo_text():
    with open("/proc/self/mountinfo") as f:
        return f.read()


def mounts_by_id():
    out = {}
    for line in mountinfo_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        out[int(fields[0])] = {
            "mount_id": int(fields[0]),
            "parent_id": int(fields[1]),
            "device": fields[2],
            "mountpoint": _unescape(fields[4]),
            "mount_options": fields[5].split(","),
            "fstype": fields[sep + 1],
            "super_options": fields[sep + 3] if len(fields) > sep + 3 else "",
        }
    return out


def option_dict(super_options):
    """"rw,gid=5,mode=620,ptmxmode=000" -> {"rw": None, "gid": "5", ...}"""
    out = {}
    for o in super_options.split(","):
        k, _, v = o.partition("=")
        out[k] = v if _ else None
    return out


def top_mount(mountpoint="/dev/pts"):
    stack = mount_stack(mountpoint)
    if not stack:
        raise SetupError("nothing is mounted at %s" % mountpoint)
    return mounts_by_id()[stack[-1]["mount_id"]]


def pts_device():
    return devnum(os.stat("/dev/pts").st_dev)


def lstat_tuple(path):
    """Everything a change to a node would show, ctime included."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (
        stat.S_IFMT(st.st_mode),
        stat.S_IMODE(st.st_mode),
        st.st_uid,
        st.st_gid,
        st.st_ino,
        st.st_dev,
        st.st_rdev,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )


def node_state(paths):
    return {p: lstat_tuple(p) for p in paths}


def pts_nodes():
    return ["/dev/pts"] + sorted(os.path.join("/dev/pts", n) for n in os.listdir("/dev/pts"))


def owner_mode(path):
    st = os.lstat(path)
    return {"uid": st.st_uid, "gid": st.st_gid, "mode": "%04o" % stat.S_IMODE(st.st_mode)}


# ---------------------------------------------------------------------------
# Setting up, running repair, asserting


def setup(sc, **kw):
    """The scenario base, with no journal socket: outcomes then go to stderr,
    where the cases assert them, and nothing lands in the host's journal."""
    sc.setup_base(**kw)
    if os.path.isdir("/run/systemd/journal"):
        sc.mount("tmpfs", "/run/systemd/journal", "mode=755")


def require_test_hooks():
    """The pause between plan and act is a test hook, only in builds with -Dtest-hooks=true
    (meson passes PTSGUARD_TEST_HOOKS=1 then)."""
    if os.environ.get("PTSGUARD_TEST_HOOKS") != "1":
        raise Skip("needs a build with -Dtest-hooks=true (the pause between plan and act)")


def wait_for_pause(p, timeout=RUN_TIMEOUT):
    """Read ptsguard's stderr until the pause line; return what was read."""
    buf = b""
    fd = p.stderr.fileno()
    deadline = time.monotonic() + timeout
    while PAUSE_LINE.encode() not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            p.kill()
            raise SetupError("ptsguard repair never paused; stderr so far: %r" % buf.decode(errors="replace"))
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            p.wait()
            raise SetupError(
                "ptsguard repair exited (%s) before pausing; stdout: %s\nstderr: %s"
                % (p.returncode, p.stdout.read(), buf.decode(errors="replace"))
            )
        buf += chunk
    return buf.decode(errors="replace")


def run_repair(sc, *args, between=None, wrapper=None, label="repair"):
    """Run `ptsguard repair --format json ARGS`; with `between`, pause before
    acting, call between(), then let it go on. Returns (report, status, stderr)."""
    argv = [sc.ptsguard, "repair", "--format", "json"] + list(args)
    env = None
    if between:
        require_test_hooks()
        env = dict(os.environ, PTSGUARD_TEST_PAUSE_BEFORE_ACT="1")
    if wrapper:
        argv = wrapper + argv
    p = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE if between else sc.null,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    early = ""
    try:
        if between:
            early = wait_for_pause(p)
            between()
            p.stdin.write("go on\n")
            p.stdin.flush()
        out, err = p.communicate(timeout=RUN_TIMEOUT)
    except BaseException:
        if p.poll() is None:
            p.kill()
            p.wait()
        raise
    err = early + err
    if err.strip():
        log("ptsguard %s stderr:\n%s" % (label, err))
    if p.returncode == 77 and wrapper:
        raise Skip("the seccomp wrapper cannot run: %s" % err.strip())
    if p.returncode < 0:
        raise SetupError("ptsguard %s died of signal %d\nstderr: %s" % (label, -p.returncode, err))
    try:
        report = json.loads(out)
    except ValueError as e:
        raise SetupError(
            "ptsguard %s (exit %d) did not print JSON: %s\nstdout: %s\nstderr: %s" % (label, p.returncode, e, out, err)
        )
    sc.reports[label] = (report, p.returncode)
    sc.validate_report(report, p.returncode, "live")
    sc.check.eq(report.get("dry_run"), "--dry-run" in args, "%s: dry_run" % label)
    actions = report.get("actions")
    if sc.check.true(isinstance(actions, list), "%s: actions is not a list: %r" % (label, actions)):
        for a in actions:
            sc.check.eq(
                sorted(a) if isinstance(a, dict) else a,
                ["check", "command", "detail", "result"],
                "%s: keys of action %s" % (label, json.dumps(a)),
            )
    return report, p.returncode, err


def expect_actions(sc, report, want, label="repair"):
    """want: [(check, command or compiled regex or None, result)], any order."""
    got = [
        (a.get("check"), a.get("command"), a.get("result"))
        for a in report.get("actions") or []
        if isinstance(a, dict)
    ]
    resolved = []
    for check, command, result in want:
        if isinstance(command, re.Pattern):
            match = [g[1] for g in got if g[0] == check and isinstance(g[1], str) and command.fullmatch(g[1])]
            command = match[0] if match else "(matching %s)" % command.pattern
        resolved.append((check, command, result))
    key = lambda t: json.dumps(t)  # noqa: E731
    sc.check.eq(
        sorted(map(list, got), key=key),
        sorted(map(list, resolved), key=key),
        "%s: actions (check, command, result)" % label,
    )


def action(sc, report, check, index=0):
    acts = [a for a in report.get("actions") or [] if isinstance(a, dict) and a.get("check") == check]
    if len(acts) <= index:
        sc.check.fail("no action #%d for %s" % (index, check))
        return {}
    return acts[index]


def expect_detail(sc, act, *patterns):
    detail = act.get("detail")
    if not sc.check.true(isinstance(detail, str) and detail, "action %s has no detail" % json.dumps(act)):
        return
    for pat in patterns:
        sc.check.true(
            re.search(pat, detail), "detail of %s action %r does not match %r" % (act.get("check"), detail, pat)
        )


def expect_findings(sc, report, status, ids, label="repair"):
    got = sorted(f.get("id") for f in report.get("findings", []))
    sc.check.eq(got, sorted(ids), "%s: findings left after repair" % label)
    sc.check.eq(status, exit_status_for(sc.catalog, ids), "%s: exit status" % label)


def expect_outcome_lines(sc, stderr, done=(), failed=()):
    """Without a journal, each outcome is one `ptsguard: [state] check` line."""
    for state, checks in (("repaired", done), ("repair-failed", failed)):
        got = sorted(re.findall(r"^ptsguard: \[%s\] (\S+) " % re.escape(state), stderr, re.M))
        sc.check.eq(got, sorted(checks), "checks with a `ptsguard: [%s]` line on stderr" % state)


def expect_options(sc, m, want, absent=(), what="/dev/pts"):
    opts = option_dict(m["super_options"])
    sc.check.eq(
        {k: opts.get(k) for k in want},
        want,
        "devpts options of %s (mount %d) in mountinfo: %s" % (what, m["mount_id"], m["super_options"]),
    )
    for k in absent:
        sc.check.true(k not in opts, "mountinfo of %s has %s= but should not: %s" % (what, k, m["super_options"]))


def expect_unprivileged_pty(sc, dev, mode):
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode=mode, dev=dev)


def expect_audit_agrees(sc, ids):
    """A fresh audit (and the snapshot round trip) sees what repair reported."""
    report = sc.audit()
    sc.expect(report, ids)


@contextlib.contextmanager
def mode_pinned_config():
    """A ptsguard.conf that pins [Devpts] Mode=600, for --config; removed afterwards."""
    fd, conf = tempfile.mkstemp(prefix="ptsguard-repair-", suffix=".conf")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("[Devpts]\nMode=600\n")
        yield conf
    finally:
        os.unlink(conf)


def options_case(sc, options, check, command, want_mode, ptmx="char", extra_args=(), want_options=None):
    """The options repairs: one remount action, verified, nothing left."""
    setup(sc, ptmx=ptmx)
    sc.mount_devpts("/dev/pts", options)
    before = top_mount()
    dev = pts_device()
    report, status, err = run_repair(sc, *extra_args)
    expect_actions(sc, report, [(check, command, "done")])
    expect_detail(sc, action(sc, report, check), r"^remounted through fspick\+fsconfig; verified: ")
    after = top_mount()
    sc.check.eq(
        (after["mount_id"], after["device"]),
        (before["mount_id"], before["device"]),
        "the same mount and instance after repair",
    )
    want = {"gid": "5", "mode": want_mode}
    want.update(want_options or {})
    expect_options(sc, after, want)
    sc.check.eq(after["mount_options"], before["mount_options"], "per-mount options kept")
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=[check])
    expect_unprivileged_pty(sc, dev, "0" + want_mode)
    expect_audit_agrees(sc, [])
    return report


# ---------------------------------------------------------------------------
# The options of the serving instance


@case("options-lost")
def options_lost(sc):
    options_case(
        sc,
        "nosuid,noexec,mode=620",
        "devpts-options-lost",
        "mount -o remount,gid=5,mode=620 /dev/pts",
        "620",
        want_options={"ptmxmode": "000"},
    )
    m = top_mount()
    for flag in ("nosuid", "noexec"):
        sc.check.true(flag in m["mount_options"], "per-mount flag %s lost: %s" % (flag, m["mount_options"]))


@case("options-lost-mode644")
def options_lost_mode644(sc):
    report = options_case(
        sc,
        "gid=5,mode=644",
        "devpts-options-lost",
        "mount -o remount,gid=5,mode=620 /dev/pts",
        "620",
        extra_args=("--verify-user", str(UNPRIVILEGED_UID)),
    )
    # The verification ran as the user asked for.
    expect_detail(sc, action(sc, report, "devpts-options-lost"), r"uid %d got group 5 and mode 0620" % UNPRIVILEGED_UID)


@case("options-lost-mode600")
def options_lost_mode600(sc):
    # 600 is healthy (systemd 258): the repair keeps it and only adds the group.
    options_case(sc, "mode=600", "devpts-options-lost", "mount -o remount,gid=5,mode=600 /dev/pts", "600")


@case("config-mode-pinned")
def config_mode_pinned(sc):
    # ptsguard.conf pins Mode=600: a gid=5,mode=620 devpts, healthy by default, is repaired to
    # the pinned mode, as the daemon would.
    with mode_pinned_config() as conf:
        options_case(
            sc,
            "gid=5,mode=620",
            "devpts-options-lost",
            "mount -o remount,gid=5,mode=600 /dev/pts",
            "600",
            extra_args=("--config", conf),
        )


@case("mode-as-last-healthy")
def mode_as_last_healthy(sc):
    # The initramfs recorded this instance healthy with mode 600; it lost gid= and got 644
    # since. The repair rule restores the mode it last had when healthy, not 620.
    setup(sc)
    sc.mount_devpts("/dev/pts", "gid=5,mode=600")
    sc.mount("tmpfs", "/run", "mode=755")
    newroot = sc.scratch_dir("sysroot")
    r = sc.run_ptsguard("initramfs-record", "--newroot", newroot)
    sc.check.eq(r.returncode, 0, "initramfs-record: " + r.stderr)
    sc.sh("mount", "-o", "remount,mode=644", "/dev/pts")
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("devpts-options-lost", "mount -o remount,gid=5,mode=600 /dev/pts", "done")])
    expect_options(sc, top_mount(), {"gid": "5", "mode": "600"})
    expect_findings(sc, report, status, [])


@case("mode-from-record-after-remount-fs")
def mode_from_record_after_remount_fs(sc):
    # The Debian 12 boot: the initramfs mounted gid=5,mode=620 and recorded it; the root's fstab
    # lists devpts with "defaults" and its init is systemd, whose systemd-remount-fs remounts the
    # same instance with them: mode=600, no gid=. 600 is a healthy mode, but it only came with
    # the remount that dropped gid=; the repair restores the recorded 620.
    setup(sc)
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount("tmpfs", "/run", "mode=755")
    newroot = sc.scratch_dir("sysroot")
    for d in ("etc", "dev", "usr/lib/systemd/system", "sbin"):
        os.makedirs(os.path.join(newroot, d), exist_ok=True)
    with open(os.path.join(newroot, "etc", "fstab"), "w") as f:
        f.write("UUID=0a1b / ext4 defaults 0 1\ndevpts /dev/pts devpts defaults 0 0\n")
    for path in ("usr/lib/systemd/systemd", "usr/lib/systemd/system/systemd-remount-fs.service"):
        open(os.path.join(newroot, path), "w").close()
    os.symlink("/usr/lib/systemd/systemd", os.path.join(newroot, "sbin", "init"))
    cmdline = os.path.join(newroot, "cmdline")
    with open(cmdline, "w") as f:
        f.write("root=/dev/vda ro\n")
    r = sc.run_ptsguard("initramfs-record", "--newroot", newroot, "--cmdline", cmdline)
    sc.check.eq(r.returncode, 0, "initramfs-record: " + r.stderr)
    with open("/run/ptsguard/initramfs.json") as f:
        prediction = json.load(f)["prediction"]
    sc.check.eq((prediction["effect"], prediction["options_after"]), ("remount", "mode=600"), "the prediction")
    before = top_mount()
    dev = pts_device()
    # What systemd-remount-fs runs: "mount /dev/pts -o remount", which takes the options of the
    # fstab line ("defaults"); the root's fstab is the new root's here. (Without a line for it,
    # util-linux would keep the options mountinfo shows.)
    sc.sh("mount", "-T", os.path.join(newroot, "etc", "fstab"), "/dev/pts", "-o", "remount")
    expect_options(sc, top_mount(), {"mode": "600"}, absent=("gid",))
    report = sc.audit()
    sc.expect(report, ["devpts-options-lost"])
    f = sc.finding(report, "devpts-options-lost")
    if f is not None:
        origin = f["evidence"].get("origin") or {}
        sc.check.eq((origin.get("change"), origin.get("changed_by")),
                    ("remount", "fstab line 2 through systemd-remount-fs"), "origin of the loss")
        sc.check.eq(f["remedy"], "mount -o remount,gid=5,mode=620 /dev/pts", "remedy")

    report, status, err = run_repair(sc, "--verify-user", "nobody")
    expect_actions(sc, report, [("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done")])
    expect_detail(sc, action(sc, report, "devpts-options-lost"), r"uid 65534 got group 5 and mode 0620")
    after = top_mount()
    sc.check.eq((after["mount_id"], after["device"]), (before["mount_id"], before["device"]),
                "the same mount and instance after repair")
    expect_options(sc, after, {"gid": "5", "mode": "620"})
    expect_findings(sc, report, status, [])
    expect_unprivileged_pty(sc, dev, "0620")


@case("gid-mismatch")
def gid_mismatch(sc):
    options_case(sc, "gid=100,mode=620", "devpts-gid-mismatch", "mount -o remount,gid=5,mode=620 /dev/pts", "620")


@case("options-kept")
def options_kept(sc):
    # A symlinked /dev/ptmx needs ptmxmode=666; a plain `remount,gid=5,mode=620`
    # would reset it to 000 (and max to the default) and lock every user out.
    report = options_case(
        sc,
        "mode=620,ptmxmode=666,max=4096",
        "devpts-options-lost",
        "mount -o remount,gid=5,mode=620,ptmxmode=666,max=4096 /dev/pts",
        "620",
        ptmx="symlink",
        want_options={"ptmxmode": "666", "max": "4096"},
    )
    sc.check.eq((report.get("ptmx") or {}).get("kind"), "symlink", "ptmx.kind after repair")


@case("ptmx-locked")
def ptmx_locked(sc):
    setup(sc, ptmx="symlink")
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=000")
    dev = pts_device()
    res = sc.probe()
    if res.get("error") != "EACCES":
        raise SetupError("the locked ptmx did not refuse uid %d: %s" % (UNPRIVILEGED_UID, res))
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("ptmx-locked", "mount -o remount,gid=5,mode=620,ptmxmode=666 /dev/pts", "done")])
    expect_detail(sc, action(sc, report, "ptmx-locked"), r"verified: a pty opened by uid \d+")
    expect_options(sc, top_mount(), {"gid": "5", "mode": "620", "ptmxmode": "666"})
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["ptmx-locked"])
    expect_unprivileged_pty(sc, dev, "0620")
    expect_audit_agrees(sc, [])


@case("ptmx-locked-bind")
def ptmx_locked_bind(sc):
    # LXC and pbuilder: /dev/pts/ptmx bind-mounted onto /dev/ptmx, ptmxmode
    # left at the kernel's 000. The instance is the one to remount, whichever
    # of its mounts the remount goes through.
    setup(sc, ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    open("/dev/ptmx", "w").close()
    sc.sh("mount", "--bind", "/dev/pts/ptmx", "/dev/ptmx")
    dev = pts_device()
    report, status, err = run_repair(sc)
    command = re.compile(r"mount -o remount,gid=5,mode=620,ptmxmode=666 /dev/(pts|ptmx)")
    expect_actions(sc, report, [("ptmx-locked", command, "done")])
    for mp in ("/dev/pts", "/dev/ptmx"):
        expect_options(sc, top_mount(mp), {"gid": "5", "mode": "620", "ptmxmode": "666"}, what=mp)
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["ptmx-locked"])
    expect_unprivileged_pty(sc, dev, "0620")


@case("ptmx-locked-nogid")
def ptmx_locked_nogid(sc):
    # Only ptmx-locked is asked for: the instance's other options, including
    # the absence of gid=, must stay as they are.
    setup(sc, ptmx="symlink")
    sc.mount_devpts("/dev/pts", "mode=620,ptmxmode=000")
    dev = pts_device()
    report, status, err = run_repair(sc, "--check", "ptmx-locked")
    expect_actions(sc, report, [("ptmx-locked", "mount -o remount,mode=620,ptmxmode=666 /dev/pts", "done")])
    expect_options(sc, top_mount(), {"mode": "620", "ptmxmode": "666"}, absent=("gid",))
    expect_findings(sc, report, status, ["devpts-options-lost"])
    res = sc.probe()
    # No gid=: the slave gets its creator's group.
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=UNPRIVILEGED_GID, mode="0620", dev=dev)


# ---------------------------------------------------------------------------
# /dev/ptmx itself


@case("ptmx-missing")
def ptmx_missing(sc):
    setup(sc, ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    dev = pts_device()
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("ptmx-missing", "mknod -m 0666 /dev/ptmx c 5 2", "done")])
    expect_detail(sc, action(sc, report, "ptmx-missing"), r"verified")
    st = os.lstat("/dev/ptmx")
    sc.check.eq(
        {
            "char": stat.S_ISCHR(st.st_mode),
            "rdev": "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)),
            "mode": "%04o" % stat.S_IMODE(st.st_mode),
            "uid": st.st_uid,
        },
        {"char": True, "rdev": "5:2", "mode": "0666", "uid": 0},
        "the /dev/ptmx that repair created",
    )
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["ptmx-missing"])
    expect_unprivileged_pty(sc, dev, "0620")
    expect_audit_agrees(sc, [])


def user_opens_dev_tty(sc):
    """What uid 1000 gets from /dev/tty in a session whose controlling terminal is a new pty."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenario"))
    import scenarios

    return scenarios.user_opens_dev_tty(sc)


@case("dev-tty-missing")
def dev_tty_missing(sc):
    # A hand-made /dev without /dev/tty: made c 5:0 0666 as root, verified by opening it from a
    # session of an unprivileged user whose controlling terminal is a new pty.
    setup(sc)
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.unlink("/dev/tty")
    sc.check.eq(user_opens_dev_tty(sc), "ENOENT", "before: a user opening /dev/tty")
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("dev-tty-broken", "mknod -m 0666 /dev/tty c 5 0", "done")])
    expect_detail(sc, action(sc, report, "dev-tty-broken"), r"verified: uid \d+ opened its controlling terminal through /dev/tty")
    st = os.lstat("/dev/tty")
    sc.check.eq(
        {"char": stat.S_ISCHR(st.st_mode), "rdev": "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)),
         "mode": "%04o" % stat.S_IMODE(st.st_mode), "uid": st.st_uid},
        {"char": True, "rdev": "5:0", "mode": "0666", "uid": 0},
        "the /dev/tty that repair created",
    )
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["dev-tty-broken"])
    sc.check.eq(user_opens_dev_tty(sc), "tty", "after: a user opening /dev/tty")
    expect_audit_agrees(sc, [])


@case("dev-tty-mode")
def dev_tty_mode(sc):
    # /dev/tty root:tty 0620: chmod 0666 through an O_PATH handle of the probed node.
    setup(sc)
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.chown("/dev/tty", 0, 5)
    os.chmod("/dev/tty", 0o620)
    sc.check.eq(user_opens_dev_tty(sc), "EACCES", "before: a user opening /dev/tty")
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("dev-tty-broken", "chmod 0666 /dev/tty", "done")])
    sc.check.eq("%04o" % stat.S_IMODE(os.lstat("/dev/tty").st_mode), "0666", "mode after repair")
    expect_findings(sc, report, status, [])
    sc.check.eq(user_opens_dev_tty(sc), "tty", "after: a user opening /dev/tty")
    expect_audit_agrees(sc, [])


@case("dev-tty-not-device")
def dev_tty_not_device(sc):
    # A regular file at /dev/tty: never deleted by repair; the remedy is for a person.
    setup(sc)
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.unlink("/dev/tty")
    with open("/dev/tty", "w") as f:
        f.write("keep me\n")
    report, status, err = run_repair(sc)
    act = action(sc, report, "dev-tty-broken")
    sc.check.eq(act.get("result"), "refused", "the action on a regular file")
    with open("/dev/tty") as f:
        sc.check.eq(f.read(), "keep me\n", "the file is untouched")
    expect_findings(sc, report, status, ["dev-tty-broken"])


def config_file(sc, text):
    """A ptsguard.conf in the case's private work area."""
    path = os.path.join(sc.workdir, "ptsguard.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


@case("ptmx-missing-symlink")
def ptmx_missing_symlink(sc):
    # CreatePtmx=symlink and an instance that lets everyone open its ptmx: the link systemd's
    # PrivateDevices= makes, verified by an unprivileged open through it.
    setup(sc, ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=666")
    dev = pts_device()
    report, status, err = run_repair(sc, "--config", config_file(sc, "[Repair]\nCreatePtmx=symlink\n"))
    expect_actions(sc, report, [("ptmx-missing", "ln -s pts/ptmx /dev/ptmx", "done")])
    expect_detail(sc, action(sc, report, "ptmx-missing"), r"verified")
    sc.check.eq(os.readlink("/dev/ptmx") if os.path.islink("/dev/ptmx") else None, "pts/ptmx", "the /dev/ptmx that repair created")
    expect_findings(sc, report, status, [])
    expect_unprivileged_pty(sc, dev, "0620")
    expect_audit_agrees(sc, [])


@case("ptmx-missing-symlink-locked")
def ptmx_missing_symlink_locked(sc):
    # CreatePtmx=symlink, but pts/ptmx has the kernel's default mode 000: a link there would
    # lock users out (ptmx-locked), so the repair makes the node.
    setup(sc, ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    report, status, err = run_repair(sc, "--config", config_file(sc, "[Repair]\nCreatePtmx=symlink\n"))
    expect_actions(sc, report, [("ptmx-missing", "mknod -m 0666 /dev/ptmx c 5 2", "done")])
    st = os.lstat("/dev/ptmx")
    sc.check.true(stat.S_ISCHR(st.st_mode), "a char node, not a link: mode %o" % st.st_mode)
    expect_findings(sc, report, status, [])
    expect_audit_agrees(sc, [])


@case("ptmx-missing-symlink-race")
def ptmx_missing_symlink_race(sc):
    # Between plan and act, pts/ptmx loses its mode 0666: the link is refused, not made.
    setup(sc, ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=666")
    report, status, err = run_repair(
        sc,
        "--config",
        config_file(sc, "[Repair]\nCreatePtmx=symlink\n"),
        between=lambda: os.chmod("/dev/pts/ptmx", 0o600),
    )
    expect_actions(sc, report, [("ptmx-missing", "ln -s pts/ptmx /dev/ptmx", "refused")])
    expect_detail(sc, action(sc, report, "ptmx-missing"), r"no longer the mode 0666 ptmx")
    sc.check.true(not os.path.lexists("/dev/ptmx"), "nothing was created at /dev/ptmx")


@case("ptmx-mode-no-peer")
def ptmx_mode_no_peer(sc):
    # A kernel without TIOCGPTPEER (before 4.13; here a seccomp filter answers ENOTTY): the
    # verification opens the slave by its name instead, and the repair is verified, not failed.
    python = "/usr/bin/python3"
    r = subprocess.run([python, "-c", "import seccomp"], stdin=sc.null, capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("%s has no seccomp module (Debian: python3-seccomp)" % python)
    setup(sc, ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", HEALTHY)
    report, status, err = run_repair(sc, wrapper=[python, SECCOMP_EXEC, "ioctl=0x5441:ENOTTY"])
    expect_actions(sc, report, [("ptmx-mode", "chmod 0666 /dev/ptmx", "done")])
    expect_detail(sc, action(sc, report, "ptmx-mode"), r"verified")
    expect_findings(sc, report, status, [])


@case("ptmx-mode")
def ptmx_mode(sc):
    setup(sc, ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", HEALTHY)
    dev = pts_device()
    ino = os.lstat("/dev/ptmx").st_ino
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("ptmx-mode", "chmod 0666 /dev/ptmx", "done")])
    st = os.lstat("/dev/ptmx")
    sc.check.eq(
        (stat.S_ISCHR(st.st_mode), "%04o" % stat.S_IMODE(st.st_mode), st.st_ino),
        (True, "0666", ino),
        "/dev/ptmx after repair (char, mode, the same inode)",
    )
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["ptmx-mode"])
    expect_unprivileged_pty(sc, dev, "0620")
    expect_audit_agrees(sc, [])


@case("options-lost-and-ptmx-mode")
def options_lost_and_ptmx_mode(sc):
    # The usual broken host (the scenarios' formats-consistent state): both
    # are repairable, so one run must leave a healthy, verified host.
    setup(sc, ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", "mode=620")
    dev = pts_device()
    report, status, err = run_repair(sc)
    expect_actions(
        sc,
        report,
        [
            ("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done"),
            ("ptmx-mode", "chmod 0666 /dev/ptmx", "done"),
        ],
    )
    expect_options(sc, top_mount(), {"gid": "5", "mode": "620"})
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["devpts-options-lost", "ptmx-mode"])
    expect_unprivileged_pty(sc, dev, "0620")


# ---------------------------------------------------------------------------
# Slaves


@case("session-owner")
def session_owner(sc):
    """A user's session on a slave root still owns (podman exec -t): repair gives the slave to
    the session's uid, group and mode kept, and the user then reopens it by name; a slave of
    root's own session (su - user from root's terminal) is left root's."""
    setup(sc)
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, path = session_pty(sc, "user")
    _, su_path = session_pty(sc, "su")
    su_before = lstat_tuple(su_path)
    if user_reopens(sc, path) != "EACCES":
        raise SetupError("the user can reopen %s before the repair" % path)
    report, status, err = run_repair(sc)
    expect_actions(sc, report, [("pty-owner-not-session-user", "chown %d %s" % (UNPRIVILEGED_UID, path), "done")])
    expect_detail(sc, action(sc, report, "pty-owner-not-session-user"), r"verified: uid %d opened %s by name" % (UNPRIVILEGED_UID, re.escape(path)))
    sc.check.eq(owner_mode(path), {"uid": UNPRIVILEGED_UID, "gid": TTY_GID, "mode": "0620"}, "%s after repair" % path)
    sc.check.eq(user_reopens(sc, path), "ok", "the user reopening %s by name after repair" % path)
    sc.check.eq(lstat_tuple(su_path), su_before, "root's own session's slave is untouched")
    expect_findings(sc, report, status, [])
    expect_outcome_lines(sc, err, done=["pty-owner-not-session-user"])
    expect_audit_agrees(sc, [])


@case("slave-perms")
def slave_perms(sc):
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=600")  # no gid=: slaves get their creator's group
    users = [sc.hold(unprivileged=True)[1] for _ in range(2)]
    _, rooted = sc.hold(unprivileged=False)
    if [u["index"] for u in users] + [rooted["index"]] != [0, 1, 2] or (rooted["uid"], rooted["gid"]) != (0, 0):
        raise SetupError("unexpected ptys: %s %s" % (users, rooted))
    sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")  # fixed by hand
    dev = pts_device()
    root_slave = "/dev/pts/2"
    root_before = lstat_tuple(root_slave)

    report, status, err = run_repair(sc)
    expect_actions(
        sc,
        report,
        [
            ("pty-slave-perms", "chgrp 5 /dev/pts/%d && chmod 0620 /dev/pts/%d" % (i, i), r)
            for i, r in ((0, "done"), (1, "done"), (2, "refused"))
        ],
    )
    for a in report.get("actions") or []:
        if (a.get("command") or "").endswith("/dev/pts/2"):
            expect_detail(sc, a, r"owned by root")
    for i in (0, 1):
        sc.check.eq(
            owner_mode("/dev/pts/%d" % i),
            {"uid": UNPRIVILEGED_UID, "gid": TTY_GID, "mode": "0620"},
            "/dev/pts/%d after repair" % i,
        )
    sc.check.eq(lstat_tuple(root_slave), root_before, "the root-owned slave is untouched (lstat before vs after)")
    # The root-owned slave is still wrong, and still reported.
    expect_findings(sc, report, status, ["pty-slave-perms"])
    f = sc.finding(report, "pty-slave-perms")
    if f is not None:
        sc.check.eq(
            [{k: s.get(k) for k in ("index", "uid", "gid", "mode")} for s in f.get("evidence", {}).get("slaves") or []],
            [{"index": 2, "uid": 0, "gid": 0, "mode": "0600"}],
            "pty-slave-perms evidence after repair",
        )
    expect_outcome_lines(sc, err, done=["pty-slave-perms"] * 2, failed=["pty-slave-perms"])
    expect_unprivileged_pty(sc, dev, "0620")


@case("config-mode-pinned-slaves")
def config_mode_pinned_slaves(sc):
    # Mode=600 pinned, a devpts without gid= and two users' slaves in their own group: the report
    # names one mode everywhere (the remount and the chmod of the slaves), and repair sets it.
    # Before the devpts options module, pty-slave-perms said `chmod 0620` and repair set 0620.
    with mode_pinned_config() as conf:
        setup(sc)
        sc.mount_devpts("/dev/pts", "mode=600")
        users = [sc.hold(unprivileged=True)[1] for _ in range(2)]
        if [u["index"] for u in users] != [0, 1]:
            raise SetupError("unexpected ptys: %s" % users)
        dev = pts_device()

        audit = sc.run_ptsguard("audit", "--json", "--config", conf)
        report = sc._parse_report(audit, "ptsguard audit --json --config")
        remedies = {f.get("id"): f.get("remedy") for f in report.get("findings", [])}
        slaves = re.fullmatch(r"chgrp 5 (\S+ \S+) && chmod 0600 \1", remedies.pop("pty-slave-perms", "") or "")
        sc.check.eq(
            sorted(slaves.group(1).split()) if slaves else remedies,
            ["/dev/pts/0", "/dev/pts/1"],
            "pty-slave-perms remedy under Mode=600: chgrp 5 SLAVES && chmod 0600 SLAVES",
        )
        sc.check.eq(
            remedies,
            {"devpts-options-lost": "mount -o remount,gid=5,mode=600 /dev/pts"},
            "the other remedies under Mode=600",
        )
        f = sc.finding(report, "devpts-options-lost")
        if f is not None:
            sc.check.eq(f.get("evidence", {}).get("expected_modes"), ["0600"], "expected_modes under Mode=600")

        report, status, err = run_repair(sc, "--config", conf)
        expect_actions(
            sc,
            report,
            [("devpts-options-lost", "mount -o remount,gid=5,mode=600 /dev/pts", "done")]
            + [("pty-slave-perms", "chgrp 5 /dev/pts/%d && chmod 0600 /dev/pts/%d" % (i, i), "done") for i in (0, 1)],
        )
        for i in (0, 1):
            sc.check.eq(
                owner_mode("/dev/pts/%d" % i),
                {"uid": UNPRIVILEGED_UID, "gid": TTY_GID, "mode": "0600"},
                "/dev/pts/%d after repair" % i,
            )
        expect_findings(sc, report, status, [])
        expect_unprivileged_pty(sc, dev, "0600")


@case("config-mode-pinned-slave-620")
def config_mode_pinned_slave_620(sc):
    # Mode=600 pinned; the instance now has gid=5,mode=600, but a user's slave was made while it
    # had mode=620. Under the pin that slave is a finding and repair sets 0600. (Before, the check
    # and the plan accepted 620 or 600 whatever was pinned: nothing was reported or repaired.)
    with mode_pinned_config() as conf:
        setup(sc)
        sc.mount_devpts("/dev/pts", "gid=5,mode=620")
        _, held = sc.hold(unprivileged=True)
        sc.sh("mount", "-o", "remount,gid=5,mode=600", "/dev/pts")
        slave = "/dev/pts/%d" % held["index"]
        dev = pts_device()

        report, status, err = run_repair(sc, "--config", conf)
        expect_actions(sc, report, [("pty-slave-perms", "chgrp 5 %s && chmod 0600 %s" % (slave, slave), "done")])
        sc.check.eq(owner_mode(slave), {"uid": UNPRIVILEGED_UID, "gid": TTY_GID, "mode": "0600"}, "%s after repair" % slave)
        expect_findings(sc, report, status, [])
        expect_unprivileged_pty(sc, dev, "0600")


# ---------------------------------------------------------------------------
# --dry-run and idempotence


@case("dry-run")
def dry_run(sc):
    setup(sc, ptmx="char")
    sc.mount_devpts("/dev/pts", "mode=600")
    sc.hold(unprivileged=True)
    os.chmod("/dev/ptmx", 0o600)
    audit = sc.audit()
    audit_status = sc.reports["live"][1]
    paths = ["/dev", "/dev/ptmx"] + pts_nodes()
    mi_before, nodes_before = mountinfo_text(), node_state(paths)

    report, status, err = run_repair(sc, "--dry-run")

    sc.check.eq(mountinfo_text(), mi_before, "mountinfo after --dry-run")
    sc.check.eq(node_state(paths), nodes_before, "lstat of /dev/ptmx and the slaves after --dry-run")
    expect_actions(
        sc,
        report,
        [
            ("devpts-options-lost", "mount -o remount,gid=5,mode=600 /dev/pts", "planned"),
            ("ptmx-mode", "chmod 0666 /dev/ptmx", "planned"),
            # The slave gets the mode the remount keeps for new ptys (600), not a second rule's 620.
            ("pty-slave-perms", "chgrp 5 /dev/pts/0 && chmod 0600 /dev/pts/0", "planned"),
        ],
    )
    sc.check.eq(report.get("findings"), audit.get("findings"), "findings of --dry-run vs audit")
    sc.check.eq(status, audit_status, "exit status of --dry-run vs audit")
    sc.check.eq(status, 2, "exit status of --dry-run")
    expect_outcome_lines(sc, err)


@case("idempotent")
def idempotent(sc):
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=620")
    first, status, _ = run_repair(sc, label="first repair")
    expect_actions(
        sc, first, [("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done")], "first repair"
    )
    sc.check.eq(status, 0, "exit status of the first repair")
    paths = ["/dev", "/dev/ptmx"] + pts_nodes()
    mi, nodes = mountinfo_text(), node_state(paths)

    second, status, err = run_repair(sc, label="second repair")
    sc.check.eq(second.get("actions"), [], "actions of the second repair")
    expect_findings(sc, second, status, [], "second repair")
    sc.check.eq(mountinfo_text(), mi, "mountinfo after the second repair")
    sc.check.eq(node_state(paths), nodes, "lstat of /dev/ptmx and /dev/pts after the second repair")
    expect_outcome_lines(sc, err)


# ---------------------------------------------------------------------------
# The world moves between plan and act


@case("race-ptmx-symlink")
def race_ptmx_symlink(sc):
    setup(sc, ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", HEALTHY)
    victim = os.path.join(sc.workdir, "victim")
    with open(victim, "w") as f:
        f.write("root's secret\n")
    os.chown(victim, 0, 0)
    os.chmod(victim, 0o600)
    victim_before = lstat_tuple(victim)

    def swap():
        os.unlink("/dev/ptmx")
        os.symlink(victim, "/dev/ptmx")

    report, status, err = run_repair(sc, between=swap)
    expect_actions(sc, report, [("ptmx-mode", "chmod 0666 /dev/ptmx", "refused")])
    expect_detail(sc, action(sc, report, "ptmx-mode"), r"refused")
    sc.check.eq(lstat_tuple(victim), victim_before, "the victim file (lstat before vs after)")
    sc.check.eq(owner_mode(victim), {"uid": 0, "gid": 0, "mode": "0600"}, "the victim's owner and mode")
    sc.check.true(os.path.islink("/dev/ptmx"), "/dev/ptmx is no longer the symlink the test put there")
    expect_findings(sc, report, status, ["ptmx-not-device"])
    expect_outcome_lines(sc, err, failed=["ptmx-mode"])


@case("race-slave-symlink")
def race_slave_symlink(sc):
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=600")
    _, held = sc.hold(unprivileged=True)
    sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")
    slave = "/dev/pts/%d" % held["index"]
    victim = os.path.join(sc.workdir, "victim")
    with open(victim, "w") as f:
        f.write("root's file\n")
    os.chown(victim, 0, 0)
    os.chmod(victim, 0o644)
    victim_before = lstat_tuple(victim)

    def swap():
        # A tmpfs over /dev/pts with a symlink named like the flagged slave.
        sc.mount("tmpfs", "/dev/pts", "mode=755")
        os.symlink(victim, slave)

    report, status, err = run_repair(sc, between=swap)
    expect_actions(sc, report, [("pty-slave-perms", "chgrp 5 %s && chmod 0620 %s" % (slave, slave), "refused")])
    expect_detail(sc, action(sc, report, "pty-slave-perms"), r"refused")
    sc.check.eq(lstat_tuple(victim), victim_before, "the victim file (lstat before vs after)")
    sc.check.eq(owner_mode(victim), {"uid": 0, "gid": 0, "mode": "0644"}, "the victim's owner, group and mode")
    # The held pty is now on a covered instance.
    expect_findings(sc, report, status, ["devpts-orphan-in-use", "pts-covered"])
    expect_outcome_lines(sc, err, failed=["pty-slave-perms"])


@case("race-slave-index-reused")
def race_slave_index_reused(sc):
    # uid 1000's slave /dev/pts/0 was made without gid= and is planned for chgrp/chmod. Before
    # repair acts, uid 1000 closes it and uid 1001 opens a new pty, which gets index 0 again
    # (same device, same inode number: index + 3), and runs `mesg n` on it (chmod 0600). Repair
    # must leave that pty alone: it is not the one probed (another owner, another change time).
    other_uid = UNPRIVILEGED_UID + 1
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=600")
    first, held = sc.hold(unprivileged=True)
    if held["index"] != 0:
        raise SetupError("unexpected pty: %s" % held)
    sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")
    state = {}

    def reuse():
        first.stdin.close()
        first.wait(timeout=10)
        argv = ["setpriv", "--reuid=%d" % other_uid, "--regid=%d" % other_uid, "--clear-groups", sc.pty_probe, "--hold"]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sc.helpers.append(p)
        res = json.loads(p.stdout.readline())
        if not res.get("ok") or res.get("index") != 0 or res.get("uid") != other_uid:
            raise SetupError("uid %d did not get index 0 again: %s" % (other_uid, res))
        # `mesg n`, by the owner: group write off.
        sc.sh("setpriv", "--reuid=%d" % other_uid, "--regid=%d" % other_uid, "--clear-groups", "chmod", "0600", "/dev/pts/0")
        state["before"] = lstat_tuple("/dev/pts/0")

    report, status, err = run_repair(sc, between=reuse)
    expect_actions(sc, report, [("pty-slave-perms", "chgrp 5 /dev/pts/0 && chmod 0620 /dev/pts/0", "refused")])
    expect_detail(sc, action(sc, report, "pty-slave-perms"), r"refused.*owner or change time")
    sc.check.eq(owner_mode("/dev/pts/0"), {"uid": other_uid, "gid": TTY_GID, "mode": "0600"}, "uid %d's new /dev/pts/0 after repair" % other_uid)
    sc.check.eq(lstat_tuple("/dev/pts/0"), state.get("before"), "uid %d's pty untouched (lstat before vs after)" % other_uid)
    expect_outcome_lines(sc, err, failed=["pty-slave-perms"])


@case("race-remount-overmount")
def race_remount_overmount(sc):
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=620")
    covered = top_mount()

    def overmount():
        sc.mount_devpts("/dev/pts", HEALTHY)

    report, status, err = run_repair(sc, between=overmount)
    expect_actions(sc, report, [("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "refused")])
    expect_detail(sc, action(sc, report, "devpts-options-lost"), r"something is now mounted on top")
    now = mounts_by_id().get(covered["mount_id"])
    if sc.check.true(now is not None, "the covered mount %d is gone" % covered["mount_id"]):
        sc.check.eq(now["super_options"], covered["super_options"], "options of the covered instance")
        sc.check.eq(now["mount_options"], covered["mount_options"], "per-mount options of the covered mount")
    stack = mount_stack("/dev/pts")
    sc.check.eq([m["mount_id"] for m in stack][:1], [covered["mount_id"]], "the bottom of the stack")
    expect_findings(sc, report, status, ["devpts-overmount"])
    expect_outcome_lines(sc, err, failed=["devpts-options-lost"])


# ---------------------------------------------------------------------------
# Stacks


@case("centos6-stack")
def centos6_stack(sc):
    setup(sc)
    initramfs_pts = sc.scratch_dir("initramfs-pts")
    sc.mount_devpts(initramfs_pts, HEALTHY)
    lower_dev = devnum(os.stat(initramfs_pts).st_dev)
    sc.hold(unprivileged=False, ptmx=os.path.join(initramfs_pts, "ptmx"))
    sc.sh("mount", "--move", initramfs_pts, "/dev/pts")
    sc.mount_devpts("/dev/pts", "mode=620")  # `mount -a` without gid=
    upper_dev = pts_device()
    stack = mount_stack("/dev/pts")
    if [m["device"] for m in stack] != [lower_dev, upper_dev] or lower_dev == upper_dev:
        raise SetupError("unexpected stack at /dev/pts: %s" % stack)
    lower_before = mounts_by_id()[stack[0]["mount_id"]]

    report, status, err = run_repair(sc)
    expect_actions(
        sc,
        report,
        [
            ("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done"),
            ("devpts-orphan-in-use", None, "refused"),
            ("devpts-overmount", None, "refused"),
        ],
    )
    for check in ("devpts-orphan-in-use", "devpts-overmount"):
        expect_detail(sc, action(sc, report, check), r"not repaired automatically", r"remedy: \S")
    top = top_mount()
    sc.check.eq(top["device"], upper_dev, "the top instance is still the visible one")
    expect_options(sc, top, {"gid": "5", "mode": "620"}, what="the top instance")
    lower_after = mounts_by_id().get(stack[0]["mount_id"])
    sc.check.eq(
        lower_after and (lower_after["super_options"], lower_after["mount_options"]),
        (lower_before["super_options"], lower_before["mount_options"]),
        "options of the covered instance",
    )
    expect_findings(sc, report, status, ["devpts-orphan-in-use", "devpts-overmount"])
    sc.check.eq(status, 2, "exit status (the orphan in use is still critical)")
    expect_outcome_lines(sc, err, done=["devpts-options-lost"])
    expect_unprivileged_pty(sc, upper_dev, "0620")


# ---------------------------------------------------------------------------
# The remount API


@case("fallback-mount2")
def fallback_mount2(sc):
    python = sc.system_python
    if not python or not os.access(python, os.X_OK):
        raise Skip("no %s for the seccomp wrapper" % (python or "system python"))
    r = subprocess.run([python, "-c", "import seccomp"], stdin=sc.null, capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("%s has no seccomp module (Debian: python3-seccomp): %s" % (python, r.stderr.strip()))
    setup(sc, ptmx="symlink")
    sc.mount_devpts("/dev/pts", "nosuid,noexec,mode=620,ptmxmode=666,max=4096")
    before = top_mount()
    dev = pts_device()
    report, status, err = run_repair(sc, wrapper=[python, SECCOMP_EXEC, "fspick:ENOSYS"])
    command = "mount -o remount,gid=5,mode=620,ptmxmode=666,max=4096 /dev/pts"
    expect_actions(sc, report, [("devpts-options-lost", command, "done")])
    expect_detail(sc, action(sc, report, "devpts-options-lost"), r"^remounted through mount\(2\); verified: ")
    after = top_mount()
    sc.check.eq(after["mount_id"], before["mount_id"], "the same mount after repair")
    expect_options(sc, after, {"gid": "5", "mode": "620", "ptmxmode": "666", "max": "4096"})
    sc.check.eq(after["mount_options"], before["mount_options"], "per-mount options after a mount(2) remount")
    for flag in ("nosuid", "noexec"):
        sc.check.true(flag in after["mount_options"], "per-mount flag %s lost: %s" % (flag, after["mount_options"]))
    expect_findings(sc, report, status, [])
    expect_unprivileged_pty(sc, dev, "0620")


# ---------------------------------------------------------------------------
# The journal


def start_journald(sc):
    if not os.access(JOURNALD, os.X_OK):
        raise Skip("no %s" % JOURNALD)
    # A private /run (so a private journal socket) and a volatile journal
    # that reads no kernel messages: nothing reaches the host's journal or
    # /var/log/journal.
    sc.mount("tmpfs", "/run", "mode=755")
    if os.path.isdir("/var/log/journal"):
        sc.mount("tmpfs", "/var/log/journal", "mode=755")
    os.makedirs("/run/systemd/journald.conf.d")
    with open("/run/systemd/journald.conf.d/ptsguard-test.conf", "w") as f:
        f.write(
            "[Journal]\nStorage=volatile\nReadKMsg=no\nForwardToSyslog=no\n"
            "ForwardToKMsg=no\nForwardToConsole=no\nForwardToWall=no\n"
            "RateLimitIntervalSec=0\n"
        )
    sc.journald_log = os.path.join(sc.workdir, "journald.log")
    logf = open(sc.journald_log, "w")
    env = dict(os.environ, SYSTEMD_LOG_TARGET="console")
    env.pop("NOTIFY_SOCKET", None)
    # Without the audit capabilities journald leaves the kernel's audit state
    # alone (it would otherwise send AUDIT_SET, a change to the whole host).
    argv = ["setpriv", "--bounding-set=-audit_control,-audit_read,-audit_write", JOURNALD]
    p = subprocess.Popen(argv, stdin=sc.null, stdout=logf, stderr=subprocess.STDOUT, env=env)
    sc.journald = p
    deadline = time.monotonic() + 5
    while not os.path.exists("/run/systemd/journal/socket"):
        if p.poll() is not None or time.monotonic() > deadline:
            logf.flush()
            raise SetupError("systemd-journald did not start (%s): %s" % (p.poll(), open(logf.name).read()))
        time.sleep(0.02)
    return p


def stop_journald(sc):
    p = getattr(sc, "journald", None)
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def journal_entries(match):
    r = subprocess.run(
        ["journalctl", "--directory=/run/log/journal", "-o", "json", "--no-pager", match],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()], r


@case("journal")
def journal(sc):
    setup(sc)
    sc.mount_devpts("/dev/pts", "mode=620")
    try:
        start_journald(sc)
        audit = sc.audit()
        sc.expect(audit, ["devpts-options-lost"])
        message_id = (sc.finding(audit, "devpts-options-lost") or {}).get("message_id")
        report, status, err = run_repair(sc)
        expect_actions(sc, report, [("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done")])
        expect_findings(sc, report, status, [])
        expect_outcome_lines(sc, err)  # to the journal, not stderr

        deadline = time.monotonic() + 5
        while True:
            entries, r = journal_entries("PTSGUARD_STATE=repaired")
            if entries or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if not entries:
            log("journalctl (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
        fields = ("PTSGUARD_STATE", "PTSGUARD_CHECK", "MESSAGE_ID", "PRIORITY", "PTSGUARD_MOUNTPOINT")
        sc.check.eq(
            [{k: e.get(k) for k in fields} for e in entries],
            [
                {
                    "PTSGUARD_STATE": "repaired",
                    "PTSGUARD_CHECK": "devpts-options-lost",
                    "MESSAGE_ID": message_id,
                    "PRIORITY": "5",
                    "PTSGUARD_MOUNTPOINT": "/dev/pts",
                }
            ],
            "journal entries with PTSGUARD_STATE=repaired",
        )
        sc.check.true(
            all(isinstance(e.get("MESSAGE"), str) and e["MESSAGE"] for e in entries),
            "a journal entry without MESSAGE: %s" % entries,
        )
    finally:
        stop_journald(sc)
        if sc.check.failures and getattr(sc, "journald_log", None):
            with open(sc.journald_log) as f:
                log("systemd-journald's output:\n" + f.read())


# ---------------------------------------------------------------------------
# An unprivileged attacker against the verification child

ATTACKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "signal-attacker")
NOBODY = 65534
MS_REMOUNT = 32


def start_attacker(sc, pid_file, uid=NOBODY):
    p = subprocess.Popen(
        [sys.executable, ATTACKER, "--uid", str(uid), "--pid-file", pid_file],
        stdin=sc.null,
        stdout=subprocess.PIPE,
        text=True,
    )
    if p.stdout.readline().strip() != "ready":
        p.kill()
        p.wait()
        raise SetupError("the attacker did not start")
    return p


def stop_attacker(p):
    """SIGTERM the attacker; its counts."""
    p.terminate()
    out, _ = p.communicate(timeout=RUN_TIMEOUT)
    return json.loads(out.strip().splitlines()[-1])


def remount_legacy(target, data):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if libc.mount(b"devpts", target.encode(), b"devpts", MS_REMOUNT, data.encode()) < 0:
        e = ctypes.get_errno()
        raise SetupError("remount %s: %s" % (target, os.strerror(e)))


@case("verify-attacker")
def verify_attacker(sc):
    # A process of uid 65534 (nobody, the uid the verification runs as) SIGSTOPs and
    # SIGKILLs every child of ptsguard repair it sees, whatever its uid. Each repair must
    # finish (the harness's run timeout) with the remount done and verified; the attacker
    # must never have reached a child. Three rounds, three verifications.
    setup(sc)
    fd, pid_file = tempfile.mkstemp(prefix="ptsguard-attacked-")
    os.close(fd)
    os.chmod(pid_file, 0o644)
    # The wrapper names ptsguard's pid before becoming it, so the attacker can find its
    # children from the first one on.
    wrapper = ["/bin/sh", "-c", 'echo $$ > "$0"; exec "$@"', pid_file]
    attacker = start_attacker(sc, pid_file)
    try:
        sc.mount_devpts("/dev/pts", "mode=620")
        for round_ in range(3):
            if round_:  # mount(2)'s remount resets what it is not given: gid= is lost again
                remount_legacy("/dev/pts", "mode=620")
            with open(pid_file, "w"):
                pass
            report, status, err = run_repair(sc, wrapper=wrapper, label="repair round %d" % round_)
            expect_actions(sc, report, [("devpts-options-lost", "mount -o remount,gid=5,mode=620 /dev/pts", "done")])
            expect_detail(
                sc,
                action(sc, report, "devpts-options-lost"),
                r"verified: a pty opened by uid 65534 got group 5 and mode 0620",
            )
            expect_findings(sc, report, status, [])
    finally:
        counts = stop_attacker(attacker)
        os.unlink(pid_file)
    log("attacker: %s" % counts)
    sc.check.eq(counts["hit"], 0, "no verification child could be signalled by uid %d" % NOBODY)


# ---------------------------------------------------------------------------


def configure(sc, args):
    sc.system_python = args.system_python


if __name__ == "__main__":
    sys.exit(
        cli_main(
            CASES,
            __file__,
            __doc__,
            options=[("--system-python", {"default": SYSTEM_PYTHON})],
            configure=configure,
        )
    )
