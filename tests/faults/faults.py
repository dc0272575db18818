#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault injection: the daemon and the commands held through faults.

    faults.py --ptsguard PATH [--opt KEY=VALUE]... CASE

Each case runs as root in a private mount namespace with a real journald
(tests/daemon/harness.py), injects one fault, ends it, and asserts that the
daemon is still running, its state file comes to match a fresh `ptsguard
audit` within the harness's deadline (no other timing is asserted), and no
temporary file is left in the state directory. The commands are run with a
generous timeout: reaching it is the failure (a hang). Exit 0 pass, 1 fail,
77 skip.
"""

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))

import daemon as dcases  # noqa: E402
import testlib  # noqa: E402
from harness import (  # noqa: E402
    PROM_FILE,
    SERVICE,
    STATE_FILE,
    TEST_DIR,
    WAIT,
    Checker,
    Daemon,
    Failure,
    Journald,
    default_config,
    finding_ids,
    log,
    main,
    register,
    remount_devpts,
    sys_mount,
    sys_umount,
    wait_for,
    wait_state,
)

STARTUP_DEADLINE = 10  # seconds: STARTUP_DEADLINE_USEC of src/daemon/startup-guard.h
HANG = 60  # seconds after which a command that should finish counts as hung


def settled(c, ptsguard, daemon, what):
    """After a fault: still running, the state file matches a fresh audit, nothing half-written."""
    c.true(daemon.alive(), "%s: the daemon is still running" % what)
    dcases.agree_with_audit(c, ptsguard, what + ": the state file matches a fresh audit")
    state_dir = os.path.dirname(STATE_FILE)
    c.eq(dcases.leftover_temp_files(state_dir), [], what + ": no temporary file left")


def case_run_full(ptsguard, opts):
    """/run full while gid= is lost, then freed (the daemon suite's outputs-retry)."""
    dcases.case_outputs_retry(ptsguard, opts)


ATTACKER = os.path.join(HERE, "..", "helpers", "signal-attacker")


def start_hitter(pid):
    """As root (which the child's real uid, root's, cannot keep out), SIGSTOP and SIGKILL in turn every
    child of pid: the verification children are interfered with on every attempt."""
    pid_file = TEST_DIR + "/target.pid"
    with open(pid_file, "w") as f:
        f.write("%d\n" % pid)
    p = subprocess.Popen([sys.executable, ATTACKER, "--uid", "0", "--pid-file", pid_file], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        raise Failure("the signal attacker did not start")
    return p


def case_verify_stopped(ptsguard, opts):
    """Policy=safe with its verification child stopped, then killed: the daemon does not hang;
    the repair is retried and verified (or, should every attempt be hit, inconclusive, never
    failed), and the state file shows the repaired host."""
    journal = Journald()
    daemon = Daemon(ptsguard, config_text=default_config().replace("Policy=off", "Policy=safe"))
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    hitter = start_hitter(daemon.pid)
    remount_devpts("mode=620")
    # The loss is seen (journaled), and the repair's outcome journaled or the re-probe clean.
    wait_for("the loss of gid= journaled", lambda: any(e["PTSGUARD_CHECK"] == "devpts-options-lost" for e in dcases.transitions(journal, daemon.pid)), timeout=30)
    wait_for("the repair done", lambda: len(dcases.transitions(journal, daemon.pid)) >= 2, timeout=30)
    wait_state("repaired: no findings", lambda r: finding_ids(r) == [], timeout=30)
    hitter.terminate()
    log("children hit: %s" % hitter.communicate(timeout=10)[0].strip())
    states = [e["PTSGUARD_STATE"] for e in dcases.transitions(journal, daemon.pid)]
    c.true("repair-failed" not in states, "an interfered-with verification is no repair failure: %s" % states)
    settled(c, ptsguard, daemon, "after the stopped and killed verification")
    dcases.stop_daemon(c, daemon)
    journal.stop()
    c.done()


def run_bounded(argv, what):
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        raise Failure("%s hung (no exit within %d s)" % (what, HANG))


def case_fifo_inputs(ptsguard, opts):
    """A FIFO at each path ptsguard reads from outside: the initramfs record, /etc/fstab, a
    snapshot file, the new root's etc/fstab of initramfs-record. Each command completes; a
    FIFO given as input is refused naming it; one found on the system is passed over."""
    c = Checker()
    os.makedirs("/run/ptsguard", exist_ok=True)
    os.mkfifo("/run/ptsguard/initramfs.json")
    fifo = TEST_DIR + "/fstab.fifo"
    os.mkfifo(fifo)
    sys_mount(fifo, "/etc/fstab", None, 4096)  # MS_BIND: /etc/fstab is now a FIFO
    r = run_bounded([ptsguard, "audit", "--json"], "audit with FIFOs at the record and fstab")
    c.eq(r.returncode, 0, "audit with a FIFO record and fstab: exit status (stderr: %s)" % r.stderr.strip())

    snap = TEST_DIR + "/snapshot.fifo"
    os.mkfifo(snap)
    r = run_bounded([ptsguard, "audit", "--snapshot", snap], "audit --snapshot FIFO")
    c.eq(r.returncode, 3, "audit --snapshot FIFO: exit status")
    c.true(snap in r.stderr and "not a regular file" in r.stderr, "the error names the file and why: %r" % r.stderr)

    newroot = tempfile.mkdtemp(prefix="newroot-", dir=TEST_DIR)
    os.makedirs(newroot + "/etc")
    os.mkfifo(newroot + "/etc/fstab")
    r = run_bounded(
        [ptsguard, "initramfs-record", "--phase", "pre-pivot", "--newroot", newroot, "--output", "-"],
        "initramfs-record with a FIFO at the new root's etc/fstab",
    )
    c.true("not a regular file" in r.stderr, "initramfs-record says the new root's fstab is not a regular file: %r" % r.stderr)
    c.done()


def special_config_files(directory):
    """Each hostile kind of configuration file, made at directory/NAME by the returned
    functions: a FIFO (libeconf would wait for a writer forever), a sparse 200 MB file (its
    parser would take hours), a symlink to /dev/zero (it would read until memory runs out)."""

    def fifo(path):
        os.mkfifo(path)
        return "not a regular file"

    def huge(path):
        with open(path, "w") as f:
            f.truncate(200 << 20)
        return "the file is too large (%d bytes, at most 1048576)" % (200 << 20)

    def zero(path):
        if not os.path.exists("/dev/zero"):  # the harness's /dev has ptmx and null only
            os.mknod("/dev/zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        os.symlink("/dev/zero", path)
        return "not a regular file"

    return (("FIFO", fifo), ("200 MB file", huge), ("symlink to /dev/zero", zero))


def run_measured(argv, what, **kw):
    """Run argv to its end within HANG; returns (exit status, stderr, peak RSS in KiB)."""
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, text=True, **kw)
    deadline = time.monotonic() + HANG
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            err.seek(0)
            raise Failure("%s hung (no exit within %d s); stderr: %s" % (what, HANG, err.read()[-2000:]))
        time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    return p.returncode, err.read(), usage.ru_maxrss


def case_config_special(ptsguard, opts):
    """A FIFO, a 200 MB file and a symlink to /dev/zero as the configuration file and as a
    drop-in: `ptsguard audit` refuses each (exit 3, naming the file and why) without reading
    it (bounded memory); the daemon does not start on it; a running daemon reloaded onto it
    keeps its previous configuration and carries on auditing."""
    c = Checker()
    vendor, admin = opts.get("vendor_dir"), opts.get("admin_dir")
    if not vendor or not admin:
        raise Failure("--opt vendor_dir=... --opt admin_dir=... are required")
    dcases.overlay_writable(admin + "/ptsguard.conf.d")
    for where in (admin + "/ptsguard.conf", admin + "/ptsguard.conf.d/50-hostile.conf"):
        for kind, make in special_config_files(os.path.dirname(where)):
            what = "%s at %s" % (kind, where)
            why = make(where)
            rc, err, rss = run_measured([ptsguard, "audit"], "audit with a " + what)
            c.eq((rc, err), (3, "ptsguard: audit: %s: %s\n" % (where, why)), "audit, " + what)
            c.true(rss < 64 << 10, "audit, %s: peak RSS %d KiB (the file is not read)" % (what, rss))
            rc, err, _ = run_measured([ptsguard, "daemon"], "daemon with a " + what, env=dict(os.environ, NOTIFY_SOCKET=""))
            c.eq((rc, err), (1, "ptsguard: %s: %s; not starting\n" % (where, why)), "daemon start, " + what)
            os.unlink(where)

    # A reload onto each keeps the previous configuration: Policy=off stays, audits go on.
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    for kind, make in special_config_files(TEST_DIR):
        os.unlink(daemon.config_path)
        why = make(daemon.config_path)
        readies = daemon.notify.count("READY", "1")
        daemon.signal(signal.SIGHUP)
        daemon.notify.wait("READY", "1", after=readies, what="READY=1 after the reload onto a " + kind)
        want = "%s: %s; keeping the previous configuration" % (daemon.config_path, why)
        wait_for("the refusal of the %s journaled" % kind, lambda: any(e.get("MESSAGE") == want for e in journal.entries(_PID=str(daemon.pid))))
        remount_devpts("mode=620")
        wait_state("gid= lost after the reload onto a " + kind, lambda r: finding_ids(r) == ["devpts-options-lost"])
        remount_devpts("gid=5,mode=620")
        wait_state("healthy again after the reload onto a " + kind, lambda r: finding_ids(r) == [])
        os.unlink(daemon.config_path)
        daemon.write_config(default_config())
    settled(c, ptsguard, daemon, "after reloads onto hostile configuration files")
    dcases.stop_daemon(c, daemon)
    journal.stop()
    c.done()


def HungFuse(mountpoint, hung=False):
    return testlib.HungFuse(mountpoint, hung=hung, error=Failure)


def case_hung_fuse(ptsguard, opts):
    """A FUSE daemon that stops answering. Held open by a process that holds a pty of a covered
    instance, its file is stat'ed by the holder scan from what the kernel cached
    (AT_STATX_DONT_SYNC): `ptsguard audit` ends and names the holder. Mounted where a setuid
    pt_chown would be (/usr/libexec), a lookup no flag avoids makes the daemon's first audit
    wait: past the start's deadline the daemon says READY=1 with a degraded STATUS= and feeds the
    watchdog; once the FUSE daemon answers, the audit ends, the state file is written and the
    daemon carries on."""
    c = Checker()
    fuse = HungFuse(TEST_DIR + "/fuse")
    held = os.open(TEST_DIR + "/fuse/file", os.O_RDONLY)
    master, slave = os.openpty()  # on the instance at /dev/pts, held by this process
    sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=5,mode=620")
    fuse.hang()
    r = run_bounded([ptsguard, "audit", "--json"], "audit while a held file's FUSE daemon hangs")
    c.true("devpts-orphan-in-use" in r.stdout, "the holder of the covered instance is found (exit %d, stderr: %s)" % (r.returncode, r.stderr.strip()))
    fuse.release()
    for fd in (held, master, slave):
        os.close(fd)
    sys_umount("/dev/pts")
    fuse.stop()

    journal = Journald()
    fuse = HungFuse("/usr/libexec", hung=True)
    watchdog_usec = 2000000
    daemon = Daemon(ptsguard, watchdog_usec=watchdog_usec)
    ready = wait_for("READY=1 past the start's deadline", lambda: daemon.notify.count("READY", "1") > 0, timeout=STARTUP_DEADLINE + WAIT)
    first = [m for _, m in daemon.notify.all() if m.get("READY") == "1"][0]
    c.true(first.get("STATUS", "").startswith("Degraded: the first audit has not ended after %d s" % STARTUP_DEADLINE), "READY=1 comes with a degraded STATUS=: %r" % first.get("STATUS"))
    c.true("request_wait_answer" in first.get("STATUS", ""), "STATUS= says where the audit waits: %r" % first.get("STATUS"))
    c.true(not os.path.exists(STATE_FILE), "no state file before the first audit ends")
    pings = daemon.notify.count("WATCHDOG", "1")
    wait_for("the watchdog fed while the first audit waits", lambda: daemon.notify.count("WATCHDOG", "1") > pings)
    c.true(ready and daemon.alive(), "the daemon still runs")
    fuse.release()
    wait_state("the first audit's result", lambda r: finding_ids(r) == [])
    wait_for("READY=1 again with the audit's STATUS=", lambda: [m.get("STATUS") for _, m in daemon.notify.all() if m.get("READY") == "1"][1:])
    want = "past its deadline of %d s: the service was reported ready (degraded) before it" % STARTUP_DEADLINE
    wait_for("the late first audit journaled", lambda: any(want in e.get("MESSAGE", "") for e in journal.entries(_PID=str(daemon.pid))))
    remount_devpts("mode=620")
    wait_state("gid= lost after the late start", lambda r: finding_ids(r) == ["devpts-options-lost"])
    settled(c, ptsguard, daemon, "after the hung FUSE daemon answered")
    dcases.stop_daemon(c, daemon)
    fuse.stop()
    journal.stop()
    c.done()


def task_states(pid):
    """The state letter of each thread of pid (D: waiting uninterruptibly, unkillable)."""
    states = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:  # gone
        return states
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                states[tid] = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return states


def case_namespaces_hung_fuse(ptsguard, opts):
    """[Namespaces] Audit=all beside three chroots that a FUSE daemon which stopped answering
    holds: one whose root is a directory of the FUSE mount (the mount lies above its root, so
    its own mount table does not show it), one whose /dev is a directory of it bound there, and
    one whose /dev is a symbolic link to a directory of it (bound at /fuse in the chroot).
    The daemon makes no lookup there (its loop once looked up the chroot's /dev, and waited
    for good, unkillable, while the start guard fed the watchdog): it is ready at once, not
    degraded; WATCHDOG=1 keeps coming from its loop; a devpts broken on the host is seen and
    state-filed; it ends promptly on SIGTERM."""
    c = Checker()
    journal = Journald()
    fuse = HungFuse(TEST_DIR + "/fuse")
    below = TEST_DIR + "/fuse/dir"
    tree = TEST_DIR + "/chroot-dev-on-fuse"
    os.makedirs(tree + "/dev")
    sys_mount(below, tree + "/dev", None, 4096)  # MS_BIND
    linked = TEST_DIR + "/chroot-dev-linked-to-fuse"
    os.makedirs(linked + "/fuse")
    sys_mount(TEST_DIR + "/fuse", linked + "/fuse", None, 4096)
    os.symlink("fuse/dir", linked + "/dev")
    chroot_py = "import os,sys,time; os.chroot(sys.argv[1]); print('ready', flush=True); time.sleep(600)"
    procs = []
    daemon = None
    try:
        for root in (below, tree, linked):
            p = register(subprocess.Popen([sys.executable, "-c", chroot_py, root], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True))
            procs.append(p)
            if p.stdout.readline().strip() != "ready":
                raise Failure("no process chrooted into %s" % root)
        fuse.hang()
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n", watchdog_usec=2000000)
        wait_for("READY=1", lambda: daemon.notify.count("READY", "1") > 0, timeout=STARTUP_DEADLINE + WAIT)
        first = [m for _, m in daemon.notify.all() if m.get("READY") == "1"][0]
        c.true(not first.get("STATUS", "").startswith("Degraded"), "ready without waiting: %r" % first.get("STATUS"))
        wait_state("the first audit", lambda r: finding_ids(r) == [])
        pings = daemon.notify.count("WATCHDOG", "1")
        wait_for("WATCHDOG=1 from the loop", lambda: daemon.notify.count("WATCHDOG", "1") >= pings + 3)
        remount_devpts("mode=620")
        wait_state("gid= lost on the host, beside the hung chroots", lambda r: finding_ids(r) == ["devpts-options-lost"])
        remount_devpts("gid=5,mode=620")
        wait_state("healthy again", lambda r: finding_ids(r) == [])
        pings = daemon.notify.count("WATCHDOG", "1")
        wait_for("WATCHDOG=1 still coming", lambda: daemon.notify.count("WATCHDOG", "1") >= pings + 3)
        states = task_states(daemon.pid)
        c.true("D" not in states.values(), "no thread of the daemon waits uninterruptibly: %s" % states)
        waiting = [pid for pid in os.listdir("/proc") if pid.isdigit() and int(pid) not in (daemon.pid, fuse.proc.pid) and "D" in task_states(int(pid)).values()]
        c.eq(waiting, [], "no process waits uninterruptibly (a probe child left in a FUSE lookup)")
        t0 = time.monotonic()
        daemon.signal(signal.SIGTERM)
        try:
            rc = daemon.proc.wait(WAIT)
            c.eq(rc, 0, "exit status after SIGTERM")
            log("the daemon ended %.2f s after SIGTERM" % (time.monotonic() - t0))
        except subprocess.TimeoutExpired:
            c.true(False, "the daemon did not end within %d s of SIGTERM (threads: %s)" % (WAIT, task_states(daemon.pid)))
    finally:
        fuse.release()  # whatever waits on it ends, and can be killed
        if daemon and daemon.alive():
            daemon.proc.kill()
            daemon.proc.wait()
        for p in procs:
            p.kill()
            p.wait()
        sys_umount(tree + "/dev")
        sys_umount(linked + "/fuse")
        fuse.stop()
        journal.stop()
    c.done()


def case_journal_hung(ptsguard, opts):
    """journald hung (its socket bound, never read), then back: the daemon never waits on it,
    the entries queue, arrive in order once it reads again, and the state file matches a fresh
    audit (the case is tests/daemon's, run here)."""
    dcases.case_journal_hung(ptsguard, opts)


def case_deep_mounts(ptsguard, opts):
    """1,000 tmpfs mounts at a depth of 1,990 directories mounted under a running daemon (the
    analysis was once quadratic in the depth): the daemon follows, sees gid= lost and found,
    and its state file matches a fresh audit."""
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    deep = os.path.join(TEST_DIR, *(["d"] * 1990))
    fd = os.open(TEST_DIR, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1990):  # not os.makedirs(), which recurses once per level
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    for i in range(1000):
        os.mkdir(os.path.join(deep, str(i)))
        sys_mount("tmpfs", os.path.join(deep, str(i)), "tmpfs", 0, "size=4k")
    remount_devpts("mode=620")
    wait_state("gid= lost under 1,000 deep mounts", lambda r: finding_ids(r) == ["devpts-options-lost"])
    remount_devpts("gid=5,mode=620")
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    settled(c, ptsguard, daemon, "with 1,000 mounts 1,990 directories deep")
    dcases.stop_daemon(c, daemon)
    journal.stop()
    c.done()


def case_sighup_storm(ptsguard, opts):
    """200 SIGHUPs in a burst while gid= is lost and found again: the daemon keeps running
    and its state file matches a fresh audit."""
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    for i in range(200):
        daemon.signal(signal.SIGHUP)
        if i == 50:
            remount_devpts("mode=620")
        if i == 150:
            remount_devpts("gid=5,mode=620")
    remount_devpts("mode=620")
    wait_state("gid= lost after the storm", lambda r: finding_ids(r) == ["devpts-options-lost"])
    settled(c, ptsguard, daemon, "after the SIGHUP storm")
    dcases.stop_daemon(c, daemon)
    journal.stop()
    c.done()


# What may sit at an output path, and how the refusal names it (None: written).
OUTPUT_KINDS = {
    "char": "a character device (1:7)",  # /dev/full's numbers
    "fifo": "a FIFO",
    "socket": "a socket",
    "symlink": "a symbolic link",
    "directory": "a directory",
    "regular": None,
    "absent": None,
}


def make_output_node(path, kind, target):
    """kind at path; a symlink leads to target (a /dev/full-like node beside it)."""
    if kind == "char":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        os.chmod(path, 0o666)
    elif kind == "fifo":
        os.mkfifo(path, 0o640)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
    elif kind == "symlink":
        os.symlink(target, path)
    elif kind == "directory":
        os.mkdir(path, 0o750)
    elif kind == "regular":
        with open(path, "w") as f:
            f.write("old\n")


def node_identity(path):
    """What a refusal must leave exactly as it was: type, device number, mode, inode, owner,
    size, and a symlink's target; None when absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    ident = [stat.S_IFMT(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev), oct(stat.S_IMODE(st.st_mode)), st.st_ino, st.st_uid, st.st_size]
    if stat.S_ISLNK(st.st_mode):
        ident.append(os.readlink(path))
    return ident


def output_dir(name, uid=0, gid=0):
    """A tmpfs of its own, owned by uid (the daemon's user for the daemon, which runs as the
    unit runs it), holding a /dev/full-like target for the symlinks."""
    d = TEST_DIR + "/" + name
    os.mkdir(d)
    sys_mount("tmpfs", d, "tmpfs", 0, "mode=755,uid=%d,gid=%d" % (uid, gid))
    target = d + "/full"
    make_output_node(target, "char", None)
    return d, target


def written_json(path):
    try:
        st = os.lstat(path)
        with open(path) as f:
            return stat.S_ISREG(st.st_mode) and json.load(f)
    except (OSError, ValueError):
        return None


def check_command_outputs(c, what, argv_for, is_written):
    """argv_for(path) writes path: each kind at it, refused (exit 3, the message, the node and
    its directory unchanged) or written (exit 0, a regular file, a new inode)."""
    for kind, refused_as in OUTPUT_KINDS.items():
        d, target = output_dir("%s-%s" % (what.split()[0], kind))
        path = d + "/out.json"
        make_output_node(path, kind, target)
        before, listing, target_before = node_identity(path), sorted(os.listdir(d)), node_identity(target)
        r = run_bounded(argv_for(path), "%s to %s" % (what, kind))
        label = "%s at %s" % (what, kind)
        c.eq(node_identity(target), target_before, "%s: the symlinks' target is untouched" % label)
        if refused_as:
            c.eq(r.returncode, 3, "%s: exit status (stderr: %s)" % (label, r.stderr.strip()))
            line = "ptsguard: %s: cannot write %s: it is %s, not a regular file: refused, left as it is" % (what.split()[0], path, refused_as)
            c.true(line in r.stderr.splitlines(), "%s: says %r; stderr: %r" % (label, line, r.stderr))
            c.eq(node_identity(path), before, "%s: the node is unchanged" % label)
            c.eq(sorted(os.listdir(d)), listing, "%s: nothing made beside it" % label)
        else:
            c.eq(r.returncode, 0, "%s: exit status (stderr: %s)" % (label, r.stderr.strip()))
            c.true(is_written(written_json(path)), "%s: the file is written" % label)
            if before:
                c.true(node_identity(path)[4] != before[4], "%s: replaced (a new inode), not written in place" % label)
            c.eq(sorted(os.listdir(d)), sorted(set(listing) | {"out.json"}), "%s: no temporary file left" % label)


def case_output_nodes(ptsguard, opts):
    """Each kind of node (a char device like /dev/full, a FIFO, a socket, a symlink, a
    directory, a regular file, nothing) at each path ptsguard writes: snapshot --output,
    initramfs-record --output, the daemon's StateFile= and PrometheusFile=. Only an absent path
    or a regular file is written; anything else is refused, said, and left exactly as it was.
    Names of standard output write to it, in place."""
    c = Checker()
    check_command_outputs(c, "snapshot", lambda p: [ptsguard, "snapshot", "--no-probe", "--output", p], lambda j: bool(j) and j.get("schema") == "ptsguard.snapshot/1")
    newroot = tempfile.mkdtemp(prefix="newroot-", dir=TEST_DIR)
    os.makedirs(newroot + "/etc")
    with open(newroot + "/etc/fstab", "w") as f:
        f.write("# no devpts line\n")
    check_command_outputs(
        c,
        "initramfs-record",
        lambda p: [ptsguard, "initramfs-record", "--newroot", newroot, "--phase", "pre-pivot", "--output", p],
        lambda j: bool(j) and str(j.get("schema", "")).startswith("ptsguard.initramfs"),
    )

    # The record written to a file, its notes for the kernel log to a standard output that
    # fails: the record counts (exit 0), the lost notes are said.
    with open(newroot + "/etc/fstab", "w") as f:
        f.write("devpts /dev/pts devpts defaults 0 0\n")
    record, full_node = TEST_DIR + "/record.json", TEST_DIR + "/full"
    make_output_node(full_node, "char", None)  # this /dev has no full
    with open(full_node, "w") as full:
        r = subprocess.run([ptsguard, "initramfs-record", "--newroot", newroot, "--phase", "pre-pivot", "--output", record], stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, text=True, timeout=HANG)
    c.eq(r.returncode, 0, "initramfs-record with its notes lost: exit status (stderr: %s)" % r.stderr.strip())
    c.true("notes for the kernel log were lost: No space left on device" in r.stderr, "initramfs-record says its notes were lost: %r" % r.stderr)
    c.true(bool(written_json(record)), "initramfs-record with its notes lost: the record is written")

    # Standard output by its names: written to it in place (a pipe here); a name of it that
    # leads elsewhere is refused, whatever is there.
    os.symlink("/proc/self/fd/1", "/dev/stdout")
    for name in ("-", "/dev/stdout", "/proc/self/fd/1"):
        r = run_bounded([ptsguard, "snapshot", "--no-probe", "--output", name], "snapshot --output " + name)
        c.eq(r.returncode, 0, "snapshot --output %s: exit status (stderr: %s)" % (name, r.stderr.strip()))
        c.true('"ptsguard.snapshot/1"' in r.stdout, "snapshot --output %s: the snapshot on standard output" % name)
    c.true(os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == "/proc/self/fd/1", "/dev/stdout is still the link")
    os.unlink("/dev/stdout")
    os.mknod("/dev/stdout", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    before = node_identity("/dev/stdout")
    r = run_bounded([ptsguard, "snapshot", "--no-probe", "--output", "/dev/stdout"], "snapshot --output /dev/stdout (a device)")
    c.eq((r.returncode, r.stdout, r.stderr), (3, "", "ptsguard: snapshot: cannot write /dev/stdout: a name of standard output that does not lead to it here (refused)\n"), "snapshot --output /dev/stdout when it is another node")
    c.eq(node_identity("/dev/stdout"), before, "/dev/stdout (another node) is unchanged")

    # The daemon: both files of one kind; a refusal is logged, the node left, and the daemon
    # runs on (and stops cleanly).
    for kind, refused_as in OUTPUT_KINDS.items():
        d, target = output_dir("daemon-" + kind, SERVICE["uid"], SERVICE["gid"])
        state, prom = d + "/report.json", d + "/metrics.prom"
        for p in (state, prom):
            make_output_node(p, kind, target)
        before = {p: node_identity(p) for p in (state, prom)}
        listing, target_before = sorted(os.listdir(d)), node_identity(target)
        config = default_config().replace(STATE_FILE, state).replace(PROM_FILE, prom)
        daemon = Daemon(ptsguard, config_text=config, config_path=TEST_DIR + "/ptsguard-%s.conf" % kind)
        daemon.wait_ready()
        label = "the daemon's files at %s" % kind
        if refused_as:
            lines = ["Failed to write %s: it is %s, not a regular file: refused, left as it is" % (p, refused_as) for p in (state, prom)]
            try:
                wait_for("%s: both refusals logged" % label, lambda: all(line in daemon.stderr_text() for line in lines))
            except Failure as e:
                c.fail(str(e))
            # No retry timer for a refusal, which no retry changes: over the timer's first four
            # periods (0.1 s doubling), the first audit stays the only one.
            time.sleep(1.6)
            c.eq({p: node_identity(p) for p in (state, prom)}, before, "%s: the nodes are unchanged" % label)
            c.eq(sorted(os.listdir(d)), listing, "%s: nothing made beside them" % label)
        else:
            wait_for("%s: the state file written" % label, lambda: bool(written_json(state)))
            wait_for("%s: the textfile written" % label, lambda: os.path.isfile(prom) and not os.path.islink(prom) and "ptsguard_" in open(prom).read())
            c.eq(sorted(os.listdir(d)), sorted(set(listing) | {"report.json", "metrics.prom"}), "%s: no temporary file left" % label)
        c.eq(node_identity(target), target_before, "%s: the symlinks' target is untouched" % label)
        c.true(daemon.alive(), "%s: the daemon runs on" % label)
        dcases.stop_daemon(c, daemon)
        daemon.notify.close()
        if refused_as:
            c.true("Stopping after 1 audits" in daemon.stderr_text(), "%s: no audit again for the refusal:\n%s" % (label, daemon.stderr_text()[-1500:]))
    c.done()


CASES = {
    "run-full": (case_run_full, True),
    "verify-stopped": (case_verify_stopped, True),
    "fifo-inputs": (case_fifo_inputs, True),
    "sighup-storm": (case_sighup_storm, True),
    "config-special": (case_config_special, True),
    "hung-fuse": (case_hung_fuse, True),
    "namespaces-hung-fuse": (case_namespaces_hung_fuse, True, True),
    "journal-hung": (case_journal_hung, True),
    "deep-mounts": (case_deep_mounts, True),
    "output-nodes": (case_output_nodes, True),
}

if __name__ == "__main__":
    sys.exit(main(CASES, sys.argv[1:]))
