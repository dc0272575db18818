#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ptsguard judging another mount namespace from the host, on the real kernel.

    ns-target.py --ptsguard PATH --pty-probe PATH CASE [CASE...|all]
    ns-target.py --list
    ns-target.py --check-registered CASE...

Each case runs as root in a private mount namespace of its own (harness.py), which plays the
host: a healthy /dev of its own. In it, each case starts a process in a further mount namespace
(a container, a sandbox, a chroot) and audits, snapshots or repairs that namespace from the
host with --namespace PID. Exit 0 pass, 1 fail, 77 skip.
"""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    OpenWatch,
    subordinate_ids,
    userns_argv,
    SetupError,
    Skip,
    TTY_GID,
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    case_registry,
    cli_main,
    devnum,
    read_mountinfo,
)

import testlib  # noqa: E402

CASES, case = case_registry()

HEALTHY = "gid=5,mode=620"

# A namespace's own /dev: tmpfs, ptmx, null, and a devpts with OPTIONS.
OWN_DEV = (
    "mount -t tmpfs -o mode=755 tmpfs /dev; mknod -m 666 /dev/ptmx c 5 2; chmod 666 /dev/ptmx"
    "; mknod -m 666 /dev/null c 1 3; chmod 666 /dev/null; mkdir /dev/pts"
    "; mknod -m 666 /dev/tty c 5 0; chmod 666 /dev/tty"
    "; mount -t devpts -o %s devpts /dev/pts"
)


class Target:
    """A process in a mount namespace of its own, made by `setup` (sh), alive until stopped."""

    def __init__(self, sc, setup, argv=None, then="exec sleep 600"):
        self.sc = sc
        argv = argv or ["unshare", "-m", "--propagation", "private", "sh", "-ec"]
        self.p = subprocess.Popen(
            argv + [setup + "; echo ready; " + then],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sc.helpers.append(self)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.p.kill()
            raise SetupError("the namespace was not made: %r %s" % (line, self.p.stderr.read()))
        self.pid = self.p.pid
        self.mntns = os.stat("/proc/%d/ns/mnt" % self.pid).st_ino
        if self.mntns == os.stat("/proc/self/ns/mnt").st_ino:
            raise SetupError("the target is in the host's mount namespace")

    def send(self, line):
        """A line on its standard input (for a `then` that reads one)."""
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    # The harness's cleanup() treats helpers like pty-probe processes.
    def poll(self):
        return self.p.poll()

    @property
    def stdin(self):
        return self

    def close(self):
        pass

    def wait(self, timeout=None):
        return self.p.wait(timeout)

    def kill(self):
        self.p.kill()

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def audit_ns(sc, target, *extra):
    """audit --namespace PID --json: (host report, the namespace's element, exit status)."""
    r = sc.run_ptsguard("audit", "--namespace", str(target.pid), "--json", *extra)
    report = sc._parse_report(r, "ptsguard audit --namespace --json")
    sc.reports["live"] = (report, r.returncode)
    if r.stderr.strip():
        sc.check.fail("audit --namespace wrote to stderr: %s" % r.stderr)
    sc.check_schema(report, "audit --namespace report")
    nss = report.get("namespaces")
    if not sc.check.true(isinstance(nss, list) and len(nss) == 1, "one element in namespaces[]: %r" % nss):
        return report, {}, r.returncode
    ns = nss[0]
    sc.check.eq(ns.get("mntns"), target.mntns, "namespaces[0].mntns")
    sc.check.eq(ns.get("pid"), target.pid, "namespaces[0].pid")
    sc.check.true(isinstance(ns.get("pids_total"), int) and ns["pids_total"] >= 1, "pids_total >= 1")
    sc.check.true("container" in ns, "namespaces[0] has container")
    inner = ns.get("report") or {}
    sc.validate_report(inner, worst_status(inner), "live")
    sc.validate_report(report, worst_status(report), "live")
    sc.check.eq(r.returncode, max(worst_status(report), worst_status(inner)),
                "exit status: the worst over the host and the namespace")
    return report, ns, r.returncode


def worst_status(report):
    sevs = {f.get("severity") for f in report.get("findings", [])}
    return 2 if "critical" in sevs else 1 if "warning" in sevs else 0


def snapshot_ns(sc, target, inner):
    """snapshot --namespace PID, then audit it offline: the same findings, and it says which
    namespace it was. Returns the snapshot."""
    path = os.path.join(sc.workdir, "ns-snapshot.json")
    r = sc.run_ptsguard("snapshot", "--namespace", str(target.pid), "--output", path)
    if r.returncode != 0:
        raise SetupError("snapshot --namespace exited %d: %s" % (r.returncode, r.stderr))
    with open(path) as f:
        snap = json.load(f)
    sc.check_schema(snap, "snapshot --namespace", snapshot=True)
    nsobj = snap.get("namespace") or {}
    sc.check.eq((nsobj.get("mntns"), nsobj.get("pid")), (target.mntns, target.pid), "the snapshot's namespace")
    off = sc.run_ptsguard("audit", "--snapshot", path, "--json")
    off_report = sc._parse_report(off, "audit --snapshot of a namespace snapshot")
    sc.check_schema(off_report, "offline report of a namespace snapshot")
    sc.check.eq(off_report.get("findings"), inner.get("findings"), "findings offline vs live (namespace)")
    sc.check.eq((off_report.get("namespace") or {}).get("pid"), target.pid, "the offline report names the namespace")
    text = sc.run_ptsguard("audit", "--snapshot", path)
    sc.check.true("mount namespace %d of pid %d" % (target.mntns, target.pid) in text.stdout,
                  "the offline text report names the namespace: %s" % text.stdout[:300])
    return snap


def ids(report):
    return sorted(f.get("id") for f in report.get("findings", []))


def finding(report, fid):
    return next((f for f in report.get("findings", []) if f.get("id") == fid), None)


def host_state():
    """What must not change on the host: its mounts (ids, options) and its /dev nodes."""
    mounts = [(m["mount_id"], m["mountpoint"], m["super_options"]) for m in read_mountinfo()]
    nodes = {}
    for p in ("/dev", "/dev/ptmx", "/dev/pts", "/dev/pts/ptmx"):
        st = os.lstat(p)
        nodes[p] = (st.st_mode, st.st_uid, st.st_gid, st.st_ino)
    return mounts, nodes


@case("healthy")
def ns_healthy(sc):
    """A namespace with its own tmpfs /dev and devpts, healthy: clean, from the host."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
    host, ns, rc = audit_ns(sc, t)
    sc.check.eq(ids(host), [], "host findings")
    inner = ns.get("report") or {}
    sc.check.eq(ids(inner), [], "namespace findings")
    sc.check.eq(rc, 0, "exit status")
    pts = os.stat("/proc/%d/root/dev/pts" % t.pid).st_dev
    serving = [i.get("device") for i in inner.get("instances", []) if i.get("serving")]
    sc.check.eq(serving, [devnum(pts)], "the namespace's serving instance is its own devpts")
    sc.check.true(devnum(pts) != devnum(os.stat("/dev/pts").st_dev), "its own, not the host's")
    snapshot_ns(sc, t, inner)
    text = sc.run_ptsguard("audit", "--namespace", str(t.pid))
    sc.check.true("== mount namespace %d (pid %d" % (t.mntns, t.pid) in text.stdout,
                  "text output has the namespace's block: %s" % text.stdout)


@case("broken-options")
def ns_broken_options(sc):
    """A namespace whose devpts lost gid= and whose /dev/ptmx is 0600: found there, not on the
    healthy host."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, (OWN_DEV % "newinstance,mode=600,ptmxmode=666") + "; chmod 600 /dev/ptmx")
    host, ns, rc = audit_ns(sc, t)
    sc.check.eq(ids(host), [], "host findings")
    inner = ns.get("report") or {}
    # The probe inside, as nobody, cannot open the 0600 node: reported, naming ptmx-mode.
    sc.check.eq(ids(inner), ["devpts-options-lost", "ptmx-mode", "pty-allocation-fails"], "namespace findings")
    sc.check.eq(((finding(inner, "pty-allocation-fails") or {}).get("evidence") or {}).get("predicted_by"), "ptmx-mode",
                "the namespace's failed allocation names ptmx-mode")
    sc.check.eq(rc, 2, "exit status")
    f = finding(inner, "devpts-options-lost")
    if f:
        sc.check.eq(f.get("devices"), [devnum(os.stat("/proc/%d/root/dev/pts" % t.pid).st_dev)], "the namespace's instance")
    snapshot_ns(sc, t, inner)


def own_root_setup(sc, name):
    """sh for Target: a root of its own (a tmpfs with the host's /usr, /etc and the like bound
    in, as a container's image would hold them) with the host's /dev bound on its /dev, entered
    with chroot; the shell there says ready and sleeps (what Target appends is never reached)."""
    root = os.path.join(sc.workdir, name)
    os.mkdir(root)
    return (
        'R=%s; mount -t tmpfs tmpfs "$R"; '
        'for d in /bin /sbin /lib /lib32 /lib64 /usr /etc; do '
        'if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$R$d"; '
        'elif [ -d "$d" ]; then mkdir "$R$d"; mount --rbind "$d" "$R$d"; fi; done; '
        'mkdir "$R/dev" "$R/proc"; mount --rbind /dev "$R/dev"; mount -t proc proc "$R/proc"; '
        "exec chroot \"$R\" /bin/sh -ec 'echo ready; exec sleep 600'" % root
    )


@case("host-dev-bind")
def ns_host_dev_bind(sc):
    """A container given the host's /dev by bind (-v /dev:/dev, bwrap --dev-bind /dev /dev):
    devpts-host-instance, with the instance and the host's mount. The same bind where the
    namespace keeps the host's root (a systemd service's PrivateDevices=, an unshare -m): info,
    root_is_host."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    # The host's /dev bound on the /dev of a root of its own, as a runtime's -v /dev:/dev does.
    t = Target(sc, own_root_setup(sc, "container-root"))
    host, ns, rc = audit_ns(sc, t)
    sc.check.eq(ids(host), [], "host findings")
    inner = ns.get("report") or {}
    sc.check.eq(ids(inner), ["devpts-host-instance"], "namespace findings")
    sc.check.eq(rc, 1, "exit status (warning)")
    f = finding(inner, "devpts-host-instance")
    if f:
        ev = f.get("evidence") or {}
        host_pts = [m for m in read_mountinfo() if m["mountpoint"] == "/dev/pts"][-1]
        sc.check.eq(ev.get("device"), host_pts["device"], "evidence: the host's instance")
        sc.check.eq((ev.get("host_mount") or {}).get("mountpoint"), "/dev/pts", "evidence: the host mount")
        sc.check.eq((ev.get("host_mount") or {}).get("mount_id"), host_pts["mount_id"], "evidence: the host mount id")
        sc.check.eq(ev.get("mntns"), t.mntns, "evidence: the namespace")
        sc.check.eq(ev.get("root_is_host"), False, "evidence: a root of its own")
        sc.check.eq(f.get("severity"), "warning", "severity")
    snapshot_ns(sc, t, inner)
    # The host's root kept, the host's /dev bound over the namespace's.
    t2 = Target(sc, "mount --rbind /dev /dev")
    host, ns, rc = audit_ns(sc, t2)
    inner2 = ns.get("report") or {}
    f = finding(inner2, "devpts-host-instance")
    sc.check.eq((f or {}).get("severity"), "info", "the host's root: info")
    sc.check.eq(((f or {}).get("evidence") or {}).get("root_is_host"), True, "evidence: root_is_host")
    sc.check.eq(rc, 0, "exit status with the host's root (info)")
    snapshot_ns(sc, t2, inner2)
    # Its remedy has no command to run: the text block does not send anyone into the namespace.
    text = sc.run_ptsguard("audit", "--namespace", str(t2.pid), "--no-color").stdout
    block = text[text.find("== mount namespace "):]
    sc.check.true("devpts-host-instance: " in block and "nothing to do for a service's sandbox" in block,
                  "the text block has the info finding:\n%s" % block)
    sc.check.true("nsenter" not in block, "no 'remedies run inside this namespace' line:\n%s" % block)
    # The host's own audit never reports it.
    plain = sc.run_ptsguard("audit", "--json")
    sc.check.eq(ids(json.loads(plain.stdout)), [], "a plain host audit has no devpts-host-instance")


@case("symlink-escape")
def ns_symlink_escape(sc):
    """A chrooted namespace whose /dev/ptmx, /etc/group and /etc/fstab are absolute symlinks to
    host paths: each is resolved inside its root, never to the host's file."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    w = sc.workdir
    # The host's decoys, which a resolution outside the root would find.
    sc.mknod_ptmx(0o600, path=os.path.join(w, "host-ptmx"))
    with open(os.path.join(w, "host-group"), "w") as f:
        f.write("tty:x:777:\n")
    with open(os.path.join(w, "host-fstab"), "w") as f:
        f.write("devpts /dev/pts devpts gid=777,mode=666 0 0\n")
    root = sc.scratch_dir("jail")
    for d in ("dev", "etc", "usr/lib"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.symlink(os.path.join(w, "host-group"), os.path.join(root, "etc/group"))
    os.symlink(os.path.join(w, "host-fstab"), os.path.join(root, "etc/fstab"))
    # A setuid helper outside the root, reached by a link; and a FIFO where a file is read.
    shutil.copyfile("/bin/true", os.path.join(w, "pt_chown"))
    os.chmod(os.path.join(w, "pt_chown"), 0o4755)
    os.symlink(os.path.join(w, "pt_chown"), os.path.join(root, "usr/lib/pt_chown"))
    setup = (
        "mount -t tmpfs -o mode=755 tmpfs {r}/dev; mkdir {r}/dev/pts"
        "; mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode=666 devpts {r}/dev/pts"
        "; ln -s {w}/host-ptmx {r}/dev/ptmx"
    ).format(r=root, w=w)
    chroot_py = "import os,sys,time; os.chroot(sys.argv[1]); os.chdir('/'); print('ready', flush=True); time.sleep(600)"
    # python3 prints "ready" itself, from inside the chroot; what Target appends never runs.
    t = Target(sc, setup + "; exec python3 -c \"%s\" %s" % (chroot_py, root))
    host, ns, rc = audit_ns(sc, t)
    inner = ns.get("report") or {}
    sc.check.eq(inner.get("host", {}).get("tty_gid"), TTY_GID, "tty gid: not the host file's 777 (fallback 5)")
    ptmx = inner.get("ptmx") or {}
    sc.check.eq(ptmx.get("kind"), "symlink", "/dev/ptmx is a symlink in the namespace")
    sc.check.true(ptmx.get("rdev") is None, "the link leads nowhere inside the root: no char node %r" % ptmx)
    sc.check.true("devpts-options-lost" not in ids(inner) and "fstab-devpts-options" not in ids(inner),
                  "no finding from the host's decoy fstab or group: %s" % ids(inner))
    sc.check.true("pt-chown-setuid" not in ids(inner), "the host's pt_chown is not the namespace's: %s" % ids(inner))
    snap = snapshot_ns(sc, t, inner)
    sc.check.eq(snap.get("fstab"), None, "fstab: the link leads nowhere inside the root")
    target_node = [n for n in snap.get("nodes", []) if n.get("path") == os.path.join(w, "host-ptmx")]
    sc.check.eq([n.get("type") for n in target_node], ["missing"], "the link's target, inside the root, is missing")
    sc.check.eq(snap.get("setuid_helpers"), [], "no setuid helper through the link")
    # Setuid helpers inside the root: the multiarch one is found, one in a directory of
    # /usr/lib that is no GNU triplet is not looked for.
    for d in ("usr/lib/x86_64-linux-gnu", "usr/lib/python3"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
        shutil.copyfile("/bin/true", os.path.join(root, d, "pt_chown"))
        os.chmod(os.path.join(root, d, "pt_chown"), 0o4755)
    r = sc.run_ptsguard("audit", "--namespace", str(t.pid), "--json")
    inner = (json.loads(r.stdout).get("namespaces") or [{}])[0].get("report") or {}
    found = [f for f in inner.get("findings", []) if f["id"] == "pt-chown-setuid"]
    sc.check.eq([h.get("path") for f in found for h in f["evidence"]["helpers"]], ["/usr/lib/x86_64-linux-gnu/pt_chown"],
                "the namespace's multiarch pt_chown is found, under its root")
    # /lib a directory of its own, then a link to usr/lib (a merged /usr, where the audit lists
    # the directory once for both patterns): each gives what is really below it.
    os.makedirs(os.path.join(root, "lib/aarch64-linux-gnu"))
    shutil.copyfile("/bin/true", os.path.join(root, "lib/aarch64-linux-gnu/pt_chown"))
    os.chmod(os.path.join(root, "lib/aarch64-linux-gnu/pt_chown"), 0o4755)
    for lib, expected in (("a directory", ["/lib/aarch64-linux-gnu/pt_chown", "/usr/lib/x86_64-linux-gnu/pt_chown"]),
                          ("a link to usr/lib", ["/lib/x86_64-linux-gnu/pt_chown", "/usr/lib/x86_64-linux-gnu/pt_chown"])):
        if lib != "a directory":
            shutil.rmtree(os.path.join(root, "lib"))
            os.symlink("usr/lib", os.path.join(root, "lib"))
        r = sc.run_ptsguard("audit", "--namespace", str(t.pid), "--json")
        inner = (json.loads(r.stdout).get("namespaces") or [{}])[0].get("report") or {}
        found = [f for f in inner.get("findings", []) if f["id"] == "pt-chown-setuid"]
        sc.check.eq(sorted(h.get("path") for f in found for h in f["evidence"]["helpers"]), expected,
                    "multiarch helpers with /lib %s" % lib)
    # Helpers at fixed paths below /usr/lib (one component, and misc/), with /lib a link to it
    # written three ways: each found under both names; and a /lib leading outside the root
    # finds nothing of the host's.
    os.unlink(os.path.join(root, "usr/lib/pt_chown"))
    os.makedirs(os.path.join(root, "usr/lib/misc"))
    for f in ("usr/lib/pt_chown", "usr/lib/misc/pt_chown"):
        shutil.copyfile("/bin/true", os.path.join(root, f))
        os.chmod(os.path.join(root, f), 0o4755)
    usr_lib = ["/usr/lib/misc/pt_chown", "/usr/lib/pt_chown", "/usr/lib/x86_64-linux-gnu/pt_chown"]
    os.makedirs(os.path.join(w, "host-lib/x86_64-linux-gnu"))
    shutil.copyfile("/bin/true", os.path.join(w, "host-lib/x86_64-linux-gnu/pt_chown"))
    os.chmod(os.path.join(w, "host-lib/x86_64-linux-gnu/pt_chown"), 0o4755)
    for link, expected in (("usr/lib", ["/lib/pt_chown", "/lib/x86_64-linux-gnu/pt_chown"] + usr_lib),
                           ("/usr/lib", ["/lib/pt_chown", "/lib/x86_64-linux-gnu/pt_chown"] + usr_lib),
                           ("/../../usr/lib", ["/lib/pt_chown", "/lib/x86_64-linux-gnu/pt_chown"] + usr_lib),
                           (os.path.join(w, "host-lib"), usr_lib)):
        os.unlink(os.path.join(root, "lib"))
        os.symlink(link, os.path.join(root, "lib"))
        r = sc.run_ptsguard("audit", "--namespace", str(t.pid), "--json")
        inner = (json.loads(r.stdout).get("namespaces") or [{}])[0].get("report") or {}
        found = [f for f in inner.get("findings", []) if f["id"] == "pt-chown-setuid"]
        sc.check.eq(sorted(h.get("path") for f in found for h in f["evidence"]["helpers"]), expected,
                    "helpers with /lib -> %s" % link)
    # A FIFO where /etc/group is read: the audit neither blocks nor reads it.
    os.unlink(os.path.join(root, "etc/group"))
    os.mkfifo(os.path.join(root, "etc/group"))
    r = sc.run_ptsguard("audit", "--namespace", str(t.pid), "--json")
    sc.check.eq(r.returncode, 3, "a FIFO as the namespace's /etc/group: could not run (exit 3)")
    sc.check.true("group" in r.stderr, "the message names the group lookup: %r" % r.stderr)
    sc.check.true("not a regular file" in r.stderr, "and says what is wrong with it: %r" % r.stderr)


@case("probe-in-root")
def ns_probe_in_root(sc):
    """The allocation probe of another namespace resolves its paths under the namespace's root
    (never entering it), in a lone child (--namespace) and on the worker (--all-namespaces): it
    reports exactly what the probe of an audit run inside that namespace (nsenter -m) reports. The host holds /dev/pts/0 of its own instance (root's, 0620), so a
    probe that opened the namespace's slave by the host's name would fail there; and a ptmx
    that is a link to pts/ptmx of a ptmxmode=000 instance refuses nobody, where the host's
    /dev/ptmx would not."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.hold()
    link_dev = (
        "mount -t tmpfs -o mode=755 tmpfs /dev; ln -s pts/ptmx /dev/ptmx"
        "; mknod -m 666 /dev/null c 1 3; chmod 666 /dev/null; mkdir /dev/pts"
        "; mknod -m 666 /dev/tty c 5 0; chmod 666 /dev/tty"
        "; mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode=%s devpts /dev/pts"
    )
    for what, setup, failed in (
        ("its own instance", OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666", None),
        ("ptmx a link to pts/ptmx, ptmxmode=000", link_dev % "000", ("open_ptmx", "EACCES")),
        ("ptmx a link to pts/ptmx, ptmxmode=666", link_dev % "666", None),
    ):
        t = Target(sc, setup)
        _, ns, _ = audit_ns(sc, t)
        outside = (ns.get("report") or {}).get("probe") or {}
        r = subprocess.run(["nsenter", "-t", str(t.pid), "-m", "--", sc.ptsguard, "audit", "--json"],
                           stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            inside = json.loads(r.stdout).get("probe") or {}
        except ValueError:
            raise SetupError("audit inside the namespace (%s): %r %s" % (what, r.stdout[:200], r.stderr))
        sc.check.eq(outside, inside, "%s: the probe from the host vs inside the namespace" % what)
        # --all-namespaces: the same probe on the run's one worker (--namespace: a lone child).
        r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
        try:
            every = json.loads(r.stdout).get("namespaces") or []
        except ValueError:
            raise SetupError("audit --all-namespaces: %r %s" % (r.stdout[:200], r.stderr))
        worker = [(n.get("report") or {}).get("probe") for n in every if n.get("mntns") == t.mntns]
        sc.check.eq(worker, [inside], "%s: the probe of --all-namespaces vs inside the namespace" % what)
        sc.check.eq(outside.get("performed"), True, "%s: performed" % what)
        sc.check.eq((outside.get("failed_step"), (outside.get("errno") or {}).get("name")) if failed else
                    (outside.get("failed_step"), outside.get("ptsname")),
                    failed or (None, "/dev/pts/0"),
                    "%s: the probe's outcome" % what)
        t.stop()


class Cgroup:
    """A cgroup of the test's own, made below the machine's hierarchy mounted at root
    (/sys/fs/cgroup/devices for the v1 devices controller, the unified one for v2), removed
    again (thawed, emptied) when the case ends: the machine's cgroups are as before."""

    def __init__(self, sc, root, name):
        if not os.path.isdir(root):
            raise SetupError("no cgroup hierarchy at %s on this machine" % root)
        self.path = os.path.join(root, "ptsguard-test-%s-%d" % (name, os.getpid()))
        os.mkdir(self.path)
        sc.cgroups = getattr(sc, "cgroups", []) + [self]

    def write(self, name, text):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(text)

    def join_argv(self):
        """A shell prefix that moves the shell itself into this cgroup."""
        return "echo $$ > %s/cgroup.procs; " % self.path

    def remove(self, targets):
        if os.path.exists(os.path.join(self.path, "cgroup.freeze")):
            self.write("cgroup.freeze", "0")
        for t in targets:
            t.stop()
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)
        raise SetupError("cannot remove the test's cgroup %s" % self.path)


def unified_root():
    """The cgroup v2 hierarchy: /sys/fs/cgroup itself, or /sys/fs/cgroup/unified (hybrid)."""
    v2 = [m["mountpoint"] for m in read_mountinfo() if m["fstype"] == "cgroup2"]
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if root in v2:
            return root
    raise SetupError("no cgroup v2 hierarchy on this machine")


@case("device-cgroup")
def ns_device_cgroup(sc):
    """A namespace whose device cgroup denies the pty multiplexer (c 5:2 rw, as a container's
    device rules can): nobody there can open /dev/ptmx. The probe from the host joins the
    namespace's cgroups before it drops its privileges, so it meets that rule too and reports
    EPERM at open_ptmx, as a user there would get; a probe left in ptsguard's own cgroup would
    get a working pty and report nothing."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    cg = Cgroup(sc, "/sys/fs/cgroup/devices", "devices")
    try:
        cg.write("devices.deny", "c 5:2 rw")
        t = Target(sc, cg.join_argv() + OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
        # The ground truth: a user in that cgroup and namespace.
        user = subprocess.run(["sh", "-c", cg.join_argv() + "exec nsenter -t %d -m setpriv --reuid=%d --regid=%d --clear-groups %s"
                               % (t.pid, UNPRIVILEGED_UID, UNPRIVILEGED_GID, sc.pty_probe)],
                              stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
        res = json.loads(user.stdout.strip().splitlines()[-1] if user.stdout.strip() else "{}")
        sc.check.eq((res.get("ok"), res.get("error")), (False, "EPERM"), "a user in the namespace's cgroup: %s %s" % (res, user.stderr))
        host, ns, rc = audit_ns(sc, t)
        inner = ns.get("report") or {}
        probe = inner.get("probe") or {}
        sc.check.eq((probe.get("failed_step"), (probe.get("errno") or {}).get("name")), ("open_ptmx", "EPERM"),
                    "the probe met the namespace's device rule: %s" % json.dumps(probe, sort_keys=True))
        sc.check.true("pty-allocation-fails" in ids(inner), "pty-allocation-fails: %s" % ids(inner))
        sc.check.eq(rc, 2, "exit status: critical")
        # The remedy names the device cgroup, by the path the namespace's process is in: a
        # default-allow v1 cgroup lists only "a *:* rwm", its deny rule hidden.
        cg_path = "/" + os.path.basename(cg.path)
        f = next((x for x in inner.get("findings", []) if x.get("id") == "pty-allocation-fails"), {})
        dcg = (f.get("evidence") or {}).get("device_cgroup") or {}
        sc.check.eq((dcg.get("version"), dcg.get("path"), dcg.get("device"), dcg.get("listed")),
                    (1, cg_path, "c 5:2", None), "evidence: the device cgroup: %s" % dcg)
        remedy = f.get("remedy") or ""
        sc.check.true(("the device cgroup %s" % cg_path) in remedy and "c 5:2" in remedy and "LSM" not in remedy,
                      "the remedy names the device cgroup and its path: %r" % remedy)
        snap = sc.run_ptsguard("snapshot", "--namespace", str(t.pid))
        sc.check.eq((json.loads(snap.stdout).get("device_cgroup") or {}).get("path"), cg_path,
                    "the snapshot records the device cgroup")
        r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
        every = json.loads(r.stdout).get("namespaces") or []
        got = [((n.get("report") or {}).get("probe") or {}).get("failed_step") for n in every if n.get("mntns") == t.mntns]
        sc.check.eq(got, ["open_ptmx"], "--all-namespaces: the same probe outcome")
        # The probe's child joined and left: nothing of ours stays in the namespace's cgroup.
        with open(os.path.join(cg.path, "cgroup.procs")) as f:
            sc.check.eq([int(x) for x in f.read().split()], [t.pid], "only the namespace's process is in its cgroup")
    finally:
        cg.remove([t] if "t" in locals() else [])


@case("device-cgroup-pts")
def ns_device_cgroup_pts(sc):
    """A namespace whose v1 device cgroup allows a list of devices, as container runtimes and
    systemd's DevicePolicy=closed write it, with /dev/ptmx but without the slaves (c 136:*):
    ptys allocate, and every slave open fails EPERM. The remedy names the device cgroup, its path
    and the rule missing from its devices.list, not an LSM or seccomp. Beside it, the same cgroup
    with c 136:* allowed: healthy."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    cg = Cgroup(sc, "/sys/fs/cgroup/devices", "devices")
    try:
        cg.write("devices.deny", "a")
        for rule in ("c 1:3 rwm", "c 5:0 rwm", "c 5:2 rwm"):
            cg.write("devices.allow", rule)
        t = Target(sc, cg.join_argv() + OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
        user = subprocess.run(["sh", "-c", cg.join_argv() + "exec nsenter -t %d -m setpriv --reuid=%d --regid=%d --clear-groups %s"
                               % (t.pid, UNPRIVILEGED_UID, UNPRIVILEGED_GID, sc.pty_probe)],
                              stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
        res = json.loads(user.stdout.strip().splitlines()[-1] if user.stdout.strip() else "{}")
        # pty-probe gets its slave by TIOCGPTPEER; the open by name is what programs do.
        sc.check.eq(res.get("by_name"), "EPERM", "a user in the namespace's cgroup opens the slave by name: %s %s" % (res, user.stderr))
        host, ns, rc = audit_ns(sc, t)
        inner = ns.get("report") or {}
        probe = inner.get("probe") or {}
        sc.check.eq((probe.get("failed_step"), (probe.get("errno") or {}).get("name")), ("open_slave", "EPERM"),
                    "the probe met the namespace's device rule: %s" % json.dumps(probe, sort_keys=True))
        sc.check.eq(ids(inner), ["pty-allocation-fails"], "findings")
        cg_path = "/" + os.path.basename(cg.path)
        f = next((x for x in inner.get("findings", []) if x.get("id") == "pty-allocation-fails"), {})
        dcg = (f.get("evidence") or {}).get("device_cgroup") or {}
        sc.check.eq((dcg.get("version"), dcg.get("path"), dcg.get("device"), dcg.get("listed")),
                    (1, cg_path, "c 136:*", False), "evidence: the device cgroup: %s" % dcg)
        remedy = f.get("remedy") or ""
        sc.check.true(("the device cgroup %s" % cg_path) in remedy and "c 136:*" in remedy and "devices.list" in remedy
                      and "LSM" not in remedy, "the remedy names the device cgroup, its path and the rule: %r" % remedy)
        sc.check.eq(rc, 2, "exit status: critical")
        # The healthy variant: the slaves allowed too.
        cg.write("devices.allow", "c 136:* rwm")
        host, ns, rc = audit_ns(sc, t)
        inner = ns.get("report") or {}
        sc.check.eq((ids(inner), (inner.get("probe") or {}).get("failed_step")), ([], None), "c 136:* allowed: healthy")
    finally:
        cg.remove([t] if "t" in locals() else [])


LEASE_HOLDER = r"""
import fcntl, os, signal, sys, time
broken = sys.argv[1]
def on_break(sig, frame):
    open(broken, "w").close()
signal.signal(signal.SIGIO, on_break)
fd = os.open("/dev/ptmx", os.O_RDONLY)
fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)  # F_SETLEASE: any open for writing breaks it
print("ready", flush=True)
while True:
    time.sleep(600)
"""


@case("lease-stall")
def ns_lease_stall(sc):
    """Namespaces whose /dev/ptmx is a regular file holding a read lease: an open for writing
    would wait for the lease to be broken (the lease-break time, 45 s by default) and tell its
    holder (SIGIO). The probe looks at the node without opening it (O_PATH): not the
    multiplexer, so never opened. No lease is broken, every probe says not-ptmx, and
    ptmx-not-device is the finding."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    targets = []
    for i in range(4):
        broken = os.path.join(sc.workdir, "lease-broken-%d" % i)
        setup = ("mount -t tmpfs -o mode=755 tmpfs /dev; touch /dev/ptmx; chmod 666 /dev/ptmx; mkdir /dev/pts"
                 "; mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode=666 devpts /dev/pts"
                 "; exec python3 -c '%s' %s" % (LEASE_HOLDER.replace("'", "'\"'\"'"), broken))
        targets.append((Target(sc, setup), broken))
    r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
    every = {n.get("mntns"): n for n in json.loads(r.stdout).get("namespaces") or []}
    for t, broken in targets:
        sc.check.true(not os.path.exists(broken), "the lease of namespace %d was never broken (nothing opened its /dev/ptmx)" % t.mntns)
        inner = (every.get(t.mntns) or {}).get("report") or {}
        probe = inner.get("probe") or {}
        sc.check.eq((probe.get("performed"), probe.get("reason"), probe.get("steps")), (False, "not-ptmx", []),
                    "namespace %d: the probe opened nothing: %s" % (t.mntns, json.dumps(probe, sort_keys=True)))
        sc.check.true("ptmx-not-device" in ids(inner), "namespace %d: ptmx-not-device: %s" % (t.mntns, ids(inner)))


@case("probe-budget")
def ns_probe_budget(sc):
    """Paused containers (a frozen cgroup v2, as `docker pause` leaves one): a probe child that
    joins such a cgroup is frozen with it and killed at its deadline. Six of them in one
    --all-namespaces run: the probes of a run share one budget, so some are not even started
    and say "skipped", rather than each taking its three attempts. (Counted, not timed.)"""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    cg = Cgroup(sc, unified_root(), "frozen")
    targets = []
    try:
        for i in range(6):
            targets.append(Target(sc, cg.join_argv() + OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666"))
        cg.write("cgroup.freeze", "1")
        r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
        every = {n.get("mntns"): n for n in json.loads(r.stdout).get("namespaces") or []}
        reasons = [(((every.get(t.mntns) or {}).get("report") or {}).get("probe") or {}).get("reason") for t in targets]
        sc.check.true(set(reasons) <= {"interfered", "skipped"}, "every frozen namespace's probe: interfered or skipped: %s" % reasons)
        sc.check.true(reasons.count("skipped") >= 1, "the run's budget left some probes unstarted: %s" % reasons)
        sc.check.true(all(not (every.get(t.mntns) or {}).get("error") for t in targets), "each frozen namespace was judged all the same")
    finally:
        cg.remove(targets)


@case("file-reads")
def ns_file_reads(sc):
    """What a namespace binds over the files ptsguard reads there (/etc/group, /etc/fstab) is
    read with the namespace's identity, never root's, and never from a kernel pseudo file
    system: a root-only host file bound over a rootless namespace's /etc/fstab stays unread; a
    sysfs file over /etc/fstab is not read; /proc/PID/mem over /etc/group is that namespace's
    error (its item says why), never the run's: --all-namespaces goes on and judges the next."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    secret = os.path.join(sc.workdir, "root-only")
    with open(secret, "w") as f:
        f.write("SECRET-ROOT-ONLY devpts /x devpts gid=5 0 0\n")
    os.chmod(secret, 0o600)
    null = user_null(sc)
    # A rootless namespace (root is uid 100000 outside) binds the host's root-only file.
    rootless = userns_target(sc, 65536, USERNS_DEV % (null, null) + "; mount --bind %s /etc/fstab" % secret)
    snap_path = os.path.join(sc.workdir, "rootless.json")
    r = sc.run_ptsguard("snapshot", "--namespace", str(rootless.pid), "--output", snap_path)
    sc.check.eq(r.returncode, 0, "snapshot --namespace: %s" % r.stderr)
    with open(snap_path) as f:
        text = f.read()
    sc.check.true("SECRET-ROOT-ONLY" not in text, "the root-only file is not in the namespace's snapshot")
    sc.check.eq(json.loads(text).get("fstab"), None, "its fstab: not readable by its root, so none")
    # A sysfs file over /etc/fstab: a pseudo file system, not read.
    sysfs = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666" + "; mount --bind /sys/kernel/uevent_seqnum /etc/fstab")
    r = sc.run_ptsguard("snapshot", "--namespace", str(sysfs.pid), "--output", snap_path)
    with open(snap_path) as f:
        sc.check.eq(json.load(f).get("fstab"), None, "a sysfs file as fstab: not read")
    # /proc/PID/mem over /etc/group: that namespace cannot be judged, the others are.
    mem = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666" + "; mount --bind /proc/$$/mem /etc/group")
    healthy = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
    r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
    try:
        report = json.loads(r.stdout)
    except ValueError:
        raise SetupError("--all-namespaces printed no whole JSON (exit %d): %s %s" % (r.returncode, r.stdout[-300:], r.stderr))
    sc.check_schema(report, "--all-namespaces with a namespace in error")
    every = {n.get("mntns"): n for n in report.get("namespaces") or []}
    bad = every.get(mem.mntns) or {}
    sc.check.eq(bad.get("report", "absent"), None, "the namespace in error has no report")
    # Refused either way: opened as its root without CAP_SYS_PTRACE (EACCES), or found on proc.
    sc.check.true("/etc/group" in (bad.get("error") or ""), "its error says why: %r" % bad.get("error"))
    sc.check.true(isinstance((every.get(healthy.mntns) or {}).get("report"), dict), "the next namespace is judged")
    sc.check.true("cannot write the report" not in r.stderr, "no write error: %r" % r.stderr)
    worst = max([worst_status(report)] + [worst_status(n.get("report") or {}) for n in report.get("namespaces") or []])
    sc.check.eq(r.returncode, worst or 3, "exit status: the worst finding, else 3 for the namespace not judged")
    text = sc.run_ptsguard("audit", "--all-namespaces")
    sc.check.true("mount namespace %d (pid %d): not judged:" % (mem.mntns, mem.pid) in text.stdout, "the text report names it: %s" % text.stdout[-500:])
    # The report itself cannot be written: that, and only that, is the run's error.
    os.mknod("/dev/full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    with open("/dev/full", "w") as full:
        r = subprocess.run([sc.ptsguard, "audit", "--all-namespaces", "--json"], stdin=sc.null, stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    sc.check.eq(r.returncode, 3, "a report that cannot be written: exit 3")
    # Said once, as GNU tools say it when standard output fails (cli/main.c, close_stdout()).
    sc.check.true("write error: No space left on device" in r.stderr, "it says so: %r" % r.stderr)


def kernel_stacks(pid):
    """Where pid and its descendants wait in the kernel (/proc/PID/stack), for a failure message."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/stack" % p) as f:
                out.append("pid %d (%s):\n%s" % (p, open("/proc/%d/comm" % p).read().strip(), f.read()))
            with open("/proc/%d/task/%d/children" % (p, p)) as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return "\n".join(out)


@case("file-hung-fuse")
def ns_file_hung_fuse(sc):
    """A FUSE file whose daemon stopped answering (a hung sshfs, a stopped fuse-overlayfs),
    bound over a namespace's /etc/group: every request on it waits until the daemon answers.
    --all-namespaces never waits with it: the run ends, that namespace's tty group is not read
    from there (the namespace says so, or is judged without it), and the next one is judged."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    mnt = os.path.join(sc.workdir, "fuse")
    fuse = testlib.HungFuse(mnt, error=SetupError)
    try:
        stuck = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666" + "; mount --bind %s/file /etc/group" % mnt)
        healthy = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
        fuse.hang()
        t0 = time.monotonic()
        p = subprocess.Popen([sc.ptsguard, "audit", "--all-namespaces", "--json"], stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sc.check.true(False, "--all-namespaces waited on the hung FUSE file (no exit within 60 s): %s" % kernel_stacks(p.pid))
            p.kill()
            p.communicate()
            return
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            raise SetupError("--all-namespaces printed no whole JSON (exit %d): %s %s" % (r.returncode, r.stdout[-300:], r.stderr))
        sc.check_schema(report, "--all-namespaces with a hung FUSE file")
        every = {n.get("mntns"): n for n in report.get("namespaces") or []}
        item = every.get(stuck.mntns) or {}
        testlib.log("the run ended after %.1fs; the namespace with the hung file: %s" % (time.monotonic() - t0, json.dumps(item.get("error") or (item.get("report") or {}).get("findings"))[:300]))
        sc.check.true(item != {}, "the namespace with the hung file is listed")
        sc.check.true(item.get("report") is not None or "/etc/group" in (item.get("error") or ""),
                      "judged, or its error names the file: %r" % item.get("error"))
        sc.check.true(isinstance((every.get(healthy.mntns) or {}).get("report"), dict), "the next namespace is judged")
        # Root without CAP_SETUID and CAP_SETGID (a restricted container's root) has no ids to
        # take: it reads as itself, and is bounded the same way.
        t0 = time.monotonic()
        p = subprocess.Popen(["setpriv", "--bounding-set=-setuid,-setgid", sc.ptsguard, "audit", "--namespace", str(stuck.pid), "--json"],
                             stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sc.check.true(False, "--namespace without CAP_SETUID waited on the hung FUSE file (no exit within 60 s): %s" % kernel_stacks(p.pid))
            p.kill()
            p.communicate()
            return
        testlib.log("the run without CAP_SETUID ended after %.1fs (exit %d): %s" % (time.monotonic() - t0, p.returncode, err.strip()[-300:]))
        sc.check.true("/etc/group" in err, "it says the group database was not read: %r" % err[-300:])
    finally:
        fuse.release()
        fuse.stop()


@case("chroot-hung-fuse")
def ns_chroot_hung_fuse(sc):
    """A process chrooted into a FUSE file system whose daemon then stops answering (anyone may
    mount one in a user namespace of their own). Every lookup there would wait on that daemon:
    listing namespaces and chroots stats roots from the kernel's cache, and a namespace or
    chroot whose /, /dev, /etc or /usr is FUSE is not judged from outside but named, with why.
    --all-namespaces ends, and the namespace beside it is judged."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    mnt = os.path.join(sc.workdir, "fuse-root")
    fuse = testlib.HungFuse(mnt, error=SetupError)
    chrooted = None
    try:
        healthy = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
        chroot_py = "import os,sys,time; os.chroot(sys.argv[1]); print('ready', flush=True); time.sleep(600)"
        chrooted = subprocess.Popen([sys.executable, "-c", chroot_py, mnt], stdin=sc.null, stdout=subprocess.PIPE, text=True)
        if chrooted.stdout.readline().strip() != "ready":
            raise SetupError("the process did not chroot into the FUSE file system")
        fuse.hang()
        p = subprocess.Popen([sc.ptsguard, "audit", "--all-namespaces", "--json"], stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sc.check.true(False, "--all-namespaces waited on the hung FUSE root (no exit within 60 s): %s" % kernel_stacks(p.pid))
            p.kill()
            p.communicate()
            return
        try:
            report = json.loads(out)
        except ValueError:
            raise SetupError("--all-namespaces printed no whole JSON (exit %d): %s %s" % (p.returncode, out[-300:], err))
        sc.check_schema(report, "--all-namespaces with a root on a hung FUSE")
        items = report.get("namespaces") or []
        every = {n.get("mntns"): n for n in items}
        sc.check.true(isinstance((every.get(healthy.mntns) or {}).get("report"), dict), "the namespace beside it is judged")
        fused = [n for n in items if n.get("root") == mnt]
        sc.check.eq(len(fused), 1, "the chroot on FUSE is listed once, by its root: %s" % [(n.get("mntns"), n.get("root")) for n in items])
        if fused:
            sc.check.true(fused[0].get("report") is None and "FUSE" in (fused[0].get("error") or ""),
                          "not judged, and its error says FUSE: %r" % fused[0].get("error"))
        # --namespace of that process: the same reason, exit 3, no wait.
        p = subprocess.Popen([sc.ptsguard, "audit", "--namespace", str(chrooted.pid)], stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sc.check.true(False, "--namespace waited on the hung FUSE root: %s" % kernel_stacks(p.pid))
            p.kill()
            p.communicate()
            return
        sc.check.eq(p.returncode, 3, "--namespace of the chrooted process: exit 3 (%s)" % err.strip())
        sc.check.true("FUSE" in err, "it says FUSE: %r" % err)
    finally:
        fuse.release()
        if chrooted:
            chrooted.kill()
            chrooted.wait()
        fuse.stop()


@case("root-elsewhere")
def ns_root_elsewhere(sc):
    """A process in a mount namespace of its own whose root is a tree of another namespace
    (chroot through /proc/PID/root of a process there): its own mountinfo, printed relative to
    that root, shows nothing of what it sees. It is not judged on that empty table (which
    would say ptmx-no-devpts beside its own working pty): --namespace says it cannot be
    judged, --all-namespaces gives it an error item."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    other = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
    chroot_py = "import os,sys,time; os.chroot(sys.argv[1]); os.chdir('/'); print('ready', flush=True); time.sleep(600)"
    t = Target(sc, "exec python3 -c \"%s\" /proc/%d/root" % (chroot_py, other.pid))
    r = sc.run_ptsguard("audit", "--namespace", str(t.pid), "--json")
    sc.check.eq(r.returncode, 3, "--namespace: cannot be judged (exit 3); stdout %s" % r.stdout[:300])
    sc.check.true("outside its mount namespace" in r.stderr, "it says why: %r" % r.stderr)
    sc.check.true("ptmx-no-devpts" not in r.stdout, "no verdict from the empty table")
    r = sc.run_ptsguard("audit", "--all-namespaces", "--json")
    every = {n.get("mntns"): n for n in json.loads(r.stdout).get("namespaces") or []}
    item = every.get(t.mntns) or {}
    sc.check.true("outside its mount namespace" in (item.get("error") or ""), "its item's error: %r" % item)
    sc.check.true(isinstance((every.get(other.mntns) or {}).get("report"), dict), "the other namespace is judged as usual")


@case("exits")
def ns_target_exits(sc):
    """The target exits between opening and reading its namespace: exit 3 naming the PID. A
    PID that does not exist: exit 3 too."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
    env = dict(os.environ, PTSGUARD_TEST_PAUSE_NAMESPACE="1")
    p = subprocess.Popen([sc.ptsguard, "audit", "--namespace", str(t.pid), "--json"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if "test hook" not in line:
        p.kill()
        p.wait()
        raise Skip("no pause: a build without -Dtest-hooks=true (%r)" % line)
    t.stop()
    out, err = p.communicate(input="go\n", timeout=20)
    sc.check.eq(p.returncode, 3, "exit status when the target exited mid-audit")
    sc.check.true("process %d exited" % t.pid in err, "the message names the process: %r" % err)
    sc.check.eq(out, "", "no report printed")
    r = sc.run_ptsguard("audit", "--namespace", str(t.pid))
    sc.check.eq(r.returncode, 3, "exit status for a process that does not exist")
    sc.check.true("--namespace %d: no such process" % t.pid in r.stderr, "message: %r" % r.stderr)
    r = sc.run_ptsguard("audit", "--namespace", "abc")
    sc.check.eq(r.returncode, 3, "exit status for a PID that is not a number")


def user_null(sc):
    """An empty world-writable file in the scenario's work area, which a user namespace binds
    over its /dev/null (it may not make the node)."""
    null = os.path.join(sc.workdir, "null")
    open(null, "w").close()
    os.chmod(null, 0o666)
    # and a /dev/tty node beside it (NULL.tty), which it binds over its /dev/tty
    os.mknod(null + ".tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
    os.chmod(null + ".tty", 0o666)
    return null


def userns_target(sc, ids_count, setup, outside=100000):
    """A Target in a new user and mount namespace mapping ids_count ids from outside (as
    rootless podman's), with the subordinate ranges newuidmap needs added only while it runs."""
    with subordinate_ids(outside, ids_count):
        return Target(sc, setup, argv=userns_argv(outside, ids_count))


USERNS_DEV = (
    "mount -t tmpfs -o mode=755 tmpfs /dev; ln -s pts/ptmx /dev/ptmx; mkdir /dev/pts"
    "; touch /dev/null /dev/tty; mount --bind %s /dev/null; mount --bind %s.tty /dev/tty"
    "; mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts"
)


@case("userns-rootless")
def ns_userns_rootless(sc):
    """A rootless container (ids 0-65535 as 100000-165535, its own /dev, devpts gid=5), judged
    from the host: clean, its gid translated through its gid_map, its nodes in its own ids."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    null = user_null(sc)
    os.chmod(sc.workdir, 0o755)
    t = userns_target(sc, 65536, USERNS_DEV % (null, null))
    host, ns, rc = audit_ns(sc, t)
    inner = ns.get("report") or {}
    sc.check.eq(ids(host), [], "host findings")
    sc.check.eq(ids(inner), [], "namespace findings (no false devpts-gid-mismatch)")
    sc.check.eq(rc, 0, "exit status")
    serving = [i for i in inner.get("instances", []) if i.get("serving")]
    sc.check.eq([i.get("options", {}).get("gid") for i in serving], [TTY_GID], "gid in the namespace's numbers")
    snap = snapshot_ns(sc, t, inner)
    sc.check.true("gid=100005" in snap.get("mountinfo", ""), "its mountinfo prints gid=100005")
    sc.check.eq((snap.get("gid_map") or "").split(), ["0", "100000", "65536"], "the snapshot keeps its gid_map")
    dev = [n for n in snap.get("nodes", []) if n.get("path") == "/dev"]
    sc.check.eq([(n.get("uid"), n.get("gid")) for n in dev], [(0, 0)], "/dev is root's in its own ids")


@case("userns-host-dev")
def ns_userns_host_dev(sc):
    """A container in a user namespace of its own (65,536 ids from 100000) that kept the host's
    /dev, as toolbox and distrobox containers bind it: its ptys are in the host's tty group,
    which it does not map. devpts-gid-mismatch stands, but no remount is its remedy: the
    instance is the host's, and gid=100005 set there for the container would take the tty
    group from the host's new ptys. Judged from the host that is known (host_instance, manual);
    seen from inside it is not, and the remedy warns of it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = userns_target(sc, 65536, "true")
    before = host_state()
    host, ns, rc = audit_ns(sc, t)
    inner = ns.get("report") or {}
    sc.check.eq(ids(host), [], "host findings")
    sc.check.eq(ids(inner), ["devpts-gid-mismatch", "devpts-host-instance"], "namespace findings")
    f = finding(inner, "devpts-gid-mismatch") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((ev.get("unmapped"), ev.get("host_instance")), (True, True), "evidence: unmapped, the host's instance")
    sc.check.true((f.get("remedy") or "").startswith("do not remount /dev/pts for this namespace: it is the host's own devpts instance"),
                  "the remedy is no remount: %r" % f.get("remedy"))
    snapshot_ns(sc, t, inner)
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
    sc.check.eq(host_state(), before, "the host's mounts and /dev nodes are unchanged by repair --namespace")
    actions = {a.get("check"): (a.get("result"), a.get("detail") or "") for a in json.loads(r.stdout or "{}").get("actions", [])}
    result, detail = actions.get("devpts-gid-mismatch", (None, ""))
    sc.check.true(result == "refused" and "do not remount" in detail, "repair --namespace leaves it to a person: %s" % actions)
    # Inside, as its root: the same finding, and the remount by the parent's root comes with its warning.
    r = subprocess.run(["nsenter", "-t", str(t.pid), "-U", "-m", "-S", "0", "-G", "0", "--", sc.ptsguard, "audit", "--json"],
                       stdin=sc.null, capture_output=True, text=True, timeout=60)
    report = sc._parse_report(r, "ptsguard audit --json inside")
    sc.check.eq(ids(report), ["devpts-gid-mismatch"], "findings inside")
    remedy = (finding(report, "devpts-gid-mismatch") or {}).get("remedy") or ""
    sc.check.true(remedy.startswith("mount -o remount,gid=100005,") and "not if it is the host's own /dev/pts bound in" in remedy,
                  "inside: the host's remount, and when not to run it: %r" % remedy)


@case("repair-single-id")
def ns_repair_single_id(sc):
    """repair --namespace of a user namespace that maps a single id (unshare -r, unprivileged
    bubblewrap) whose own devpts is locked (ptmxmode=000): its tty group has no id outside it, so
    repair refuses the remount, and says why in the action's detail (it once said nothing:
    "detail": null). Nothing changes, there or on the host."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    null = user_null(sc)
    os.chmod(sc.workdir, 0o755)
    t = userns_target(sc, 1, (
        "mount -t tmpfs -o mode=755 tmpfs /dev; ln -s pts/ptmx /dev/ptmx; mkdir /dev/pts"
        "; touch /dev/null /dev/tty; mount --bind %s /dev/null; mount --bind %s.tty /dev/tty"
        "; mount -t devpts -o mode=620,ptmxmode=000 devpts /dev/pts" % (null, null)))
    before = host_state()
    pts_before = [line for line in open("/proc/%d/mountinfo" % t.pid).read().splitlines() if " - devpts " in line]
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
    sc.check.eq(host_state(), before, "the host's mounts and /dev nodes are unchanged")
    pts_after = [line for line in open("/proc/%d/mountinfo" % t.pid).read().splitlines() if " - devpts " in line]
    sc.check.eq(pts_after, pts_before, "the namespace's devpts is unchanged")
    try:
        out = json.loads(r.stdout)
    except ValueError:
        raise SetupError("repair --namespace printed no JSON (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
    actions = out.get("actions") or []
    sc.check.true(actions, "repair planned something: %s" % actions)
    for a in actions:
        sc.check.true(isinstance(a.get("detail"), str) and a["detail"].strip(),
                      "every action says what became of it: %s" % a)
    locked = [a for a in actions if a.get("check") == "ptmx-locked"]
    sc.check.eq([a.get("result") for a in locked], ["refused"], "the remount for ptmx-locked is refused: %s" % actions)
    detail = (locked[0].get("detail") if locked else None) or ""
    sc.check.true("maps a single" in detail and "gid 5" in detail,
                  "the refusal says the namespace maps a single id and names the tty group: %r" % detail)
    sc.check.eq(r.returncode, 2, "exit status: still broken (ptmx-locked)")


@case("repair")
def ns_repair(sc):
    """repair --namespace of a broken namespace: fixed there, verified by a pty allocated there,
    and nothing on the host changes."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, (OWN_DEV % "newinstance,mode=600,ptmxmode=666") + "; chmod 600 /dev/ptmx")
    before = host_state()
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
    after = host_state()
    sc.check.eq(after, before, "the host's mounts and /dev nodes are unchanged by repair --namespace")
    try:
        out = json.loads(r.stdout)
    except ValueError:
        raise SetupError("repair --namespace printed no JSON (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
    sc.check.eq(r.returncode, 0, "exit status after repair: %s" % r.stderr)
    results = sorted((a.get("check"), a.get("result")) for a in out.get("actions", []))
    sc.check.eq(results, [("devpts-options-lost", "done"), ("ptmx-mode", "done")], "repair actions")
    sc.check.eq(ids(out), [], "findings after repair (the namespace's)")
    sc.check.eq((out.get("namespace") or {}).get("pid"), t.pid, "the repair report names the namespace")
    host, ns, rc = audit_ns(sc, t)
    sc.check.eq(ids(ns.get("report") or {}), [], "a fresh audit of the namespace is clean")
    mi = open("/proc/%d/mountinfo" % t.pid).read()
    pts = [line for line in mi.splitlines() if " /dev/pts " in line and "devpts" in line][-1]
    sc.check.true("gid=5" in pts and "mode=600" in pts, "the namespace's devpts now has gid=5: %s" % pts)
    sc.check.eq(stat.S_IMODE(os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode), 0o666, "its /dev/ptmx is 0666")
    # What a user there gets now.
    probe = subprocess.run(["nsenter", "-t", str(t.pid), "-m", "setpriv", "--reuid=%d" % UNPRIVILEGED_UID,
                            "--regid=%d" % UNPRIVILEGED_GID, "--clear-groups", sc.pty_probe],
                           stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
    res = json.loads(probe.stdout.strip() or "{}")
    sc.check.eq((res.get("ok"), res.get("gid"), res.get("mode")), (True, TTY_GID, "0600"), "a pty in the namespace: %s" % res)


@case("repair-tty-planted-ptmx")
def ns_repair_tty_planted_ptmx(sc):
    """repair --namespace of a namespace whose /dev/tty is missing (repair makes it) and whose
    /dev/ptmx its root replaced with another character device (c 1:3 here; a container with
    CAP_MKNOD may plant one its device cgroup refuses it, a watchdog that reboots the host when
    closed uncleanly). /dev/tty's verification allocates through the allocation probe, which
    looks at /dev/ptmx with O_PATH and never opens what is not c 5:2: inotify sees no open of
    the planted node, and the verification fails, saying why."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, (OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
               + "; rm /dev/tty /dev/ptmx; mknod -m 666 /dev/ptmx c 1 3; chmod 666 /dev/ptmx")
    planted = "/proc/%d/root/dev/ptmx" % t.pid
    watch = OpenWatch()
    try:
        # The directory: an open of anything the namespace put in its /dev (the planted node,
        # its /dev/null, the /dev/tty repair makes) is seen.
        watch.watch("/proc/%d/root/dev" % t.pid)
        r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
        opened = watch.opened()
    finally:
        watch.close()
    try:
        out = json.loads(r.stdout)
    except ValueError:
        raise SetupError("repair --namespace printed no JSON (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
    sc.check.eq(opened, [], "nothing in the namespace's /dev was opened (the planted /dev/ptmx, its /dev/null)")
    tty = [a for a in out.get("actions", []) if a.get("check") == "dev-tty-broken"]
    sc.check.eq([a.get("result") for a in tty], ["failed"], "the /dev/tty action: %s" % tty)
    sc.check.true(tty and "not the pty multiplexer" in (tty[0].get("detail") or ""),
                  "its detail says /dev/ptmx is no multiplexer: %s" % tty)
    st = os.lstat("/proc/%d/root/dev/tty" % t.pid)
    sc.check.eq((stat.S_ISCHR(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev)), (True, 5, 0),
                "/dev/tty was made in the namespace")


@case("repair-device-cgroup")
def ns_repair_device_cgroup(sc):
    """repair --namespace of a namespace whose device cgroup denies the pty multiplexer (c 5:2
    rw) and whose /dev/ptmx is mode 0600: the chmod is made, but a user there still gets no pty.
    The verification joins the namespace's cgroups, as the audit's probe does, meets that rule
    and says the action failed; from ptsguard's own cgroup it would claim it done."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    cg = Cgroup(sc, "/sys/fs/cgroup/devices", "devices")
    try:
        cg.write("devices.deny", "c 5:2 rw")
        t = Target(sc, cg.join_argv() + (OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
                   + "; chmod 600 /dev/ptmx")
        r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
        try:
            out = json.loads(r.stdout)
        except ValueError:
            raise SetupError("repair --namespace printed no JSON (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
        acts = [a for a in out.get("actions", []) if a.get("check") == "ptmx-mode"]
        sc.check.eq([a.get("result") for a in acts], ["failed"], "the ptmx-mode action: %s" % acts)
        sc.check.true(acts and "open_ptmx failed with EPERM" in (acts[0].get("detail") or ""),
                      "its detail names the device rule's EPERM: %s" % acts)
        sc.check.eq(stat.S_IMODE(os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode), 0o666,
                    "the chmod was made")
        # The verification's child joined and left: only the namespace's process is there.
        with open(os.path.join(cg.path, "cgroup.procs")) as f:
            sc.check.eq([int(x) for x in f.read().split()], [t.pid], "only the namespace's process is in its cgroup")
    finally:
        cg.remove([t] if "t" in locals() else [])


def devpts_lines(pid):
    """The devpts mounts of process pid's mount namespace, as its mountinfo prints them."""
    with open("/proc/%d/mountinfo" % pid) as f:
        return [line for line in f.read().splitlines() if " - devpts " in line]


def own_mntns():
    return os.stat("/proc/self/ns/mnt").st_ino


@case("repair-own-namespace")
def ns_repair_own_namespace(sc):
    """repair --namespace PID where PID is a process of ptsguard's own mount namespace (the
    case's, playing the host), as when a container's pid, listed by audit --all-namespaces,
    was reused by a process of the host before the operator typed it: refused with exit 3,
    naming the namespace, and the host's locked devpts (ptmxmode=000) is left as it is, even
    with --mntns naming that namespace. audit --namespace of it only warns. Asked for with
    --allow-own-namespace, it is repaired."""
    sc.setup_base(ptmx="symlink")
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=000")
    host = subprocess.Popen(["sleep", "600"], stdin=subprocess.PIPE)
    sc.helpers.append(host)
    me = own_mntns()
    if os.stat("/proc/%d/ns/mnt" % host.pid).st_ino != me:
        raise SetupError("the host's process is not in the case's mount namespace")
    before, pts = host_state(), devpts_lines(os.getpid())
    for extra in ((), ("--mntns", str(me)), ("--dry-run",)):
        what = " ".join(("repair --namespace PID",) + extra)
        r = sc.run_ptsguard("repair", "--namespace", str(host.pid), "--format", "json", *extra)
        sc.check.eq(r.returncode, 3, "%s of a process of our own namespace: exit status (%s)" % (what, r.stderr))
        sc.check.eq(r.stdout, "", "%s: no report" % what)
        sc.check.true("own mount namespace %d" % me in r.stderr and "--allow-own-namespace" in r.stderr,
                      "%s: the refusal names the namespace and the way to ask for it: %r" % (what, r.stderr))
        sc.check.eq((host_state(), devpts_lines(os.getpid())), (before, pts), "%s: the host is unchanged" % what)
    sc.check.true("ptmxmode=000" in pts[-1], "the host's devpts is still locked: %s" % pts)
    # Reading is harmless: audit --namespace judges it, and warns.
    r = sc.run_ptsguard("audit", "--namespace", str(host.pid), "--json")
    sc.check.eq(r.returncode, 2, "audit --namespace of our own namespace: exit status (%s)" % r.stderr)
    sc.check.true("warning" in r.stderr and "own mount namespace %d" % me in r.stderr,
                  "audit --namespace warns that it is our own namespace: %r" % r.stderr)
    # Asked for: repaired.
    r = sc.run_ptsguard("repair", "--namespace", str(host.pid), "--allow-own-namespace", "--format", "json")
    sc.check.eq(r.returncode, 0, "repair --namespace PID --allow-own-namespace: exit status (%s)" % r.stderr)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        raise SetupError("repair --allow-own-namespace printed no JSON (%d): %s" % (r.returncode, r.stderr))
    sc.check.eq([(a.get("check"), a.get("result")) for a in out.get("actions", [])], [("ptmx-locked", "done")],
                "repair --allow-own-namespace: actions")
    sc.check.true("ptmxmode=666" in devpts_lines(os.getpid())[-1], "the host's devpts is now ptmxmode=666")


@case("repair-mntns")
def ns_repair_mntns(sc):
    """repair --namespace PID --mntns ID (or --namespace PID:ID) acts only when PID's mount
    namespace is ID: given another (the namespace of a process that is not PID's), refused with
    exit 3 and both ids named, nothing changed there or on the host; given its own, repaired."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, (OWN_DEV % "newinstance,mode=600,ptmxmode=666") + "; chmod 600 /dev/ptmx")
    other = Target(sc, OWN_DEV % "newinstance,gid=5,mode=620,ptmxmode=666")
    before, pts = host_state(), devpts_lines(t.pid)
    ptmx = os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode
    for argv in (["--namespace", str(t.pid), "--mntns", str(other.mntns)],
                 ["--namespace", "%d:%d" % (t.pid, other.mntns)],
                 ["--namespace", str(t.pid), "--mntns", str(own_mntns())]):
        what = "repair " + " ".join(argv)
        r = sc.run_ptsguard("repair", *argv, "--format", "json")
        sc.check.eq(r.returncode, 3, "%s: exit status (%s)" % (what, r.stderr))
        sc.check.eq(r.stdout, "", "%s: no report" % what)
        sc.check.true("mount namespace %d, not %d" % (t.mntns, int(argv[-1].split(":")[-1])) in r.stderr,
                      "%s: the refusal names both ids: %r" % (what, r.stderr))
        sc.check.eq(host_state(), before, "%s: the host is unchanged" % what)
        sc.check.eq((devpts_lines(t.pid), os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode), (pts, ptmx),
                    "%s: the namespace is unchanged" % what)
    # Bad usage: exit 3, said.
    for argv, said in ((["--mntns", str(t.mntns)], "give --namespace too"),
                       (["--namespace", "%d:abc" % t.pid], "not a mount namespace id"),
                       (["--namespace", "%d:%d" % (t.pid, t.mntns), "--mntns", str(other.mntns)], "was given already")):
        r = sc.run_ptsguard("repair", *argv)
        sc.check.eq((r.returncode, said in r.stderr), (3, True), "repair %s: exit 3 and %r: %r" % (" ".join(argv), said, r.stderr))
    r = sc.run_ptsguard("repair", "--namespace", "%d:%d" % (t.pid, t.mntns), "--dry-run", "--format", "json")
    sc.check.eq(r.returncode, 2, "--namespace PID:ID (right), --dry-run: the findings (%s)" % r.stderr)
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--mntns", str(t.mntns), "--format", "json")
    sc.check.eq(r.returncode, 0, "--mntns right: repaired, exit 0 (%s)" % r.stderr)
    out = json.loads(r.stdout or "{}")
    sc.check.eq(sorted((a.get("check"), a.get("result")) for a in out.get("actions", [])),
                [("devpts-options-lost", "done"), ("ptmx-mode", "done")], "--mntns right: actions")
    sc.check.eq(host_state(), before, "the host is unchanged by the repair")
    sc.check.eq(stat.S_IMODE(os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode), 0o666, "its /dev/ptmx is 0666")


@case("repair-target-moves")
def ns_repair_target_moves(sc):
    """The process judged by repair --namespace enters another mount namespace between the plan
    and the act (the test hook pauses repair there): each action, checked right before it is
    taken, is refused naming both namespaces, nothing is remounted, exit 3. The same when the
    process exits there."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    broken = (OWN_DEV % "newinstance,mode=600,ptmxmode=666") + "; chmod 600 /dev/ptmx"
    env = dict(os.environ, PTSGUARD_TEST_PAUSE_BEFORE_ACT="1")
    for how in ("moves", "exits"):
        t = Target(sc, broken, then="read line; exec unshare -m --propagation private sleep 600")
        before, pts = host_state(), devpts_lines(t.pid)
        p = subprocess.Popen([sc.ptsguard, "repair", "--namespace", str(t.pid), "--mntns", str(t.mntns), "--format", "json"],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = p.stderr.readline()
        if "test hook" not in line:
            p.kill()
            p.wait()
            raise Skip("no pause: a build without -Dtest-hooks=true (%r)" % line)
        if how == "moves":
            t.send("go")
            for _ in range(200):
                now = os.stat("/proc/%d/ns/mnt" % t.pid).st_ino
                if now != t.mntns:
                    break
                time.sleep(0.02)
            else:
                raise SetupError("the target did not enter a new mount namespace")
        else:
            t.stop()
        out, err = p.communicate(input="go\n", timeout=60)
        err = line + err
        sc.check.eq(p.returncode, 3, "%s: exit status (%s)" % (how, err))
        want = ("is now in mount namespace %d, not %d" % (now, t.mntns) if how == "moves"
                else "process %d exited" % t.pid)
        sc.check.true(want in err, "%s: the message says so: %r" % (how, err))
        sc.check.true("refused" in err and "done" not in err, "%s: every action refused: %r" % (how, err))
        sc.check.eq(host_state(), before, "%s: the host is unchanged" % how)
        if how == "moves":
            # Its new namespace is a copy of the old one, on the same devpts instance: a remount
            # made in the old one would show here too.
            sc.check.eq([line.split(" - ")[1] for line in devpts_lines(t.pid)], [line.split(" - ")[1] for line in pts],
                        "moves: the namespace's devpts options are unchanged")
        t.stop()


@case("repair-host-instance")
def ns_repair_host_instance(sc):
    """A namespace bound to the host's /dev, whose instance lost gid=: repair --namespace refuses
    what belongs to the host, and the host is unchanged."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=600")
    os.chmod("/dev/ptmx", 0o600)
    t = Target(sc, "mount --rbind /dev /dev")
    before = host_state()
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--format", "json")
    sc.check.eq(host_state(), before, "the host's mounts and /dev nodes are unchanged")
    out = json.loads(r.stdout or "{}")
    acted = [(a.get("check"), a.get("result")) for a in out.get("actions", []) if a.get("result") != "refused"]
    sc.check.eq(acted, [], "no action acted on the host's instance or node: %s" % out.get("actions"))
    details = " ".join(a.get("detail") or "" for a in out.get("actions", []))
    sc.check.true("never changes the host" in details, "refusals say why: %s" % details)
    sc.check.eq(r.returncode, 2, "exit status: still broken")


# A process chrooted into argv[1] that keeps a descriptor of its old root: on a line "back" on
# its standard input it goes back there (fchdir + chroot("."), as any process holding such a
# descriptor can, with no race to win) and says "back".
CHROOT_PY = r"""
import os, sys
old = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
os.chroot(sys.argv[1])
os.chdir("/")
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "back":
        os.fchdir(old)
        os.chroot(".")
        os.chdir("/")
        print("back", flush=True)
"""


class Chrooted:
    """A process of the case's own mount namespace (the host's) chrooted into tree, through
    prefix (a setpriv line, or nothing for root)."""

    def __init__(self, sc, tree, prefix=()):
        self.p = subprocess.Popen(list(prefix) + [sys.executable, "-c", CHROOT_PY, tree],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sc.helpers.append(self.p)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.p.kill()
            raise SetupError("the chroot was not made: %r %s" % (line, self.p.stderr.read()))
        self.pid = self.p.pid
        if os.readlink("/proc/%d/root" % self.pid) != tree:
            raise SetupError("the process is not below %s" % tree)

    def back(self):
        self.p.stdin.write("back\n")
        self.p.stdin.flush()
        if self.p.stdout.readline().strip() != "back":
            raise SetupError("the chroot's process did not go back: %s" % self.p.stderr.read())


def chroot_tree(sc, name):
    """A root-owned tree (0755 directories) whose /dev has null and tty but no ptmx: the
    chroot finds ptmx-missing, which repair would mknod."""
    tree = os.path.join(sc.workdir, name)
    os.makedirs(os.path.join(tree, "dev"))
    os.chmod(tree, 0o755)
    os.chmod(os.path.join(tree, "dev"), 0o755)
    for node, dev in (("null", (1, 3)), ("tty", (5, 0))):
        path = os.path.join(tree, "dev", node)
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*dev))
        os.chmod(path, 0o666)
    return tree


def handle_of(pid):
    """What the listing must print to pin process pid: its namespace, root and start time."""
    root = os.stat("/proc/%d/root" % pid)
    with open("/proc/%d/stat" % pid) as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    return "mntns:%d,root:%d:%d,start:%s" % (os.stat("/proc/%d/ns/mnt" % pid).st_ino, root.st_dev, root.st_ino, start)


def repair_hint(sc, pid):
    """The repair command the text listing of audit --namespace PID prints, as argv."""
    r = sc.run_ptsguard("audit", "--namespace", str(pid))
    hint = [line for line in r.stdout.splitlines() if "ptsguard repair --namespace" in line]
    if len(hint) != 1:
        raise SetupError("no repair hint for pid %d in:\n%s%s" % (pid, r.stdout, r.stderr))
    command = hint[0].split("; ptsguard repair ", 1)[1].split(" applies ", 1)[0]
    return hint[0], ["repair"] + command.split()


def dev_listing(tree):
    return sorted((n, os.lstat(os.path.join(tree, "dev", n)).st_ino) for n in os.listdir(os.path.join(tree, "dev")))


@case("repair-chroot-returns")
def ns_repair_chroot_returns(sc):
    """A chroot of the host's own mount namespace, listed by audit --namespace: its listing pins
    it (--target: namespace, root, start time) and carries no --allow-own-namespace. Its
    process then goes back to the host's root through a descriptor of it kept from before: the
    command the listing printed is refused (exit 3, naming the root), and the host's locked
    devpts (ptmxmode=000) is not remounted; nor is anything made in the chroot."""
    sc.setup_base(ptmx="symlink")
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=000")
    tree = chroot_tree(sc, "chroot")
    c = Chrooted(sc, tree)
    line, argv = repair_hint(sc, c.pid)
    want = handle_of(c.pid)
    sc.check.true("--allow-own-namespace" not in line, "the chroot's hint does not take --allow-own-namespace: %r" % line)
    sc.check.eq(argv, ["repair", "--namespace", str(c.pid), "--target", want], "the hint names the process by its handle: %r" % line)
    r = sc.run_ptsguard("audit", "--namespace", str(c.pid), "--json")
    item = (json.loads(r.stdout or "{}").get("namespaces") or [{}])[0]
    sc.check.eq((item.get("root"), item.get("target")), (tree, want), "JSON: the chroot's root and target")
    # While it is there, the command is accepted (and would act inside the chroot).
    r = sc.run_ptsguard(*argv, "--dry-run", "--format", "json")
    sc.check.eq(r.returncode, 2, "the hint's command, --dry-run, before the process moves: its findings (%s)" % r.stderr)
    sc.check.eq([a.get("check") for a in json.loads(r.stdout or "{}").get("actions", [])], ["ptmx-missing"],
                "--dry-run: the chroot's ptmx-missing is what would be repaired")
    before, pts, dev = host_state(), devpts_lines(os.getpid()), dev_listing(tree)
    c.back()
    if os.readlink("/proc/%d/root" % c.pid) != "/":
        raise SetupError("the process is not back at /")
    r = sc.run_ptsguard(*argv, "--format", "json")
    sc.check.eq(r.returncode, 3, "the hint's command once the process is back at /: exit status (%s)" % r.stderr)
    sc.check.eq(r.stdout, "", "no report")
    sc.check.true("its root directory is" in r.stderr and want in r.stderr,
                  "the refusal names the root that differs and the target given: %r" % r.stderr)
    sc.check.eq((host_state(), devpts_lines(os.getpid())), (before, pts), "the host's devpts and /dev are unchanged")
    sc.check.true("ptmxmode=000" in pts[-1], "the host's devpts is still locked: %s" % pts)
    sc.check.eq(dev_listing(tree), dev, "the chroot's /dev is unchanged")


@case("repair-chroot-returns-mid")
def ns_repair_chroot_returns_mid(sc):
    """The chroot's process goes back to the host's root between repair's plan and its act (the
    test hook pauses repair there): the mknod in the chroot, checked right before it is taken,
    is refused naming the root judged, exit 3; nothing is made in the chroot or on the host."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    tree = chroot_tree(sc, "chroot")
    c = Chrooted(sc, tree)
    want = handle_of(c.pid)
    root = os.stat(tree)
    before, dev = host_state(), dev_listing(tree)
    env = dict(os.environ, PTSGUARD_TEST_PAUSE_BEFORE_ACT="1")
    p = subprocess.Popen([sc.ptsguard, "repair", "--namespace", str(c.pid), "--target", want, "--format", "json"],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if "test hook" not in line:
        p.kill()
        p.wait()
        raise Skip("no pause: a build without -Dtest-hooks=true (%r)" % line)
    c.back()
    out, err = p.communicate(input="go\n", timeout=60)
    err = line + err
    sc.check.eq(p.returncode, 3, "exit status (%s)" % err)
    sc.check.true("has another root directory now, not %d:%d" % (root.st_dev, root.st_ino) in err,
                  "the refusal names the root judged: %r" % err)
    sc.check.true("refused" in err and "done" not in err, "every action refused: %r" % err)
    sc.check.eq(dev_listing(tree), dev, "the chroot's /dev is unchanged")
    sc.check.eq(host_state(), before, "the host is unchanged")


@case("repair-target-pid")
def ns_repair_target_pid(sc):
    """repair --namespace PID --target HANDLE where PID is not the process the handle listed
    (as when the listed one exited and its pid went to another): a process entered into the
    same mount namespace and root (only its start time differs) and one of the host (its
    namespace differs) are refused, exit 3, naming what differs; nothing changes in the
    namespace or on the host. The listed process itself, with its handle, is repaired."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    t = Target(sc, (OWN_DEV % "newinstance,mode=600,ptmxmode=666") + "; chmod 600 /dev/ptmx")
    host, ns, rc = audit_ns(sc, t)
    want = handle_of(t.pid)
    sc.check.eq(ns.get("target"), want, "JSON: the namespace's target")
    same = subprocess.Popen(["nsenter", "-t", str(t.pid), "-m", "sleep", "600"], stdin=subprocess.PIPE)
    sc.helpers.append(same)
    other = subprocess.Popen(["sleep", "600"], stdin=subprocess.PIPE)
    sc.helpers.append(other)
    for _ in range(200):
        if os.stat("/proc/%d/ns/mnt" % same.pid).st_ino == t.mntns and os.readlink("/proc/%d/exe" % same.pid).endswith("sleep"):
            break
        time.sleep(0.02)
    else:
        raise SetupError("nsenter did not enter the namespace")
    before, pts, ptmx = host_state(), devpts_lines(t.pid), os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode
    for pid, said in ((same.pid, "its start time is"), (other.pid, "its mount namespace is %d, not %d" % (own_mntns(), t.mntns))):
        r = sc.run_ptsguard("repair", "--namespace", str(pid), "--target", want, "--format", "json")
        sc.check.eq(r.returncode, 3, "pid %d with another's target: exit status (%s)" % (pid, r.stderr))
        sc.check.eq(r.stdout, "", "pid %d: no report" % pid)
        sc.check.true(said in r.stderr and "not the target listed" in r.stderr, "pid %d: the refusal says %r: %r" % (pid, said, r.stderr))
        sc.check.eq((host_state(), devpts_lines(t.pid), os.stat("/proc/%d/root/dev/ptmx" % t.pid).st_mode), (before, pts, ptmx),
                    "pid %d: the host and the namespace are unchanged" % pid)
    for argv, said in ((["--target", "mntns:%d,root:1:2" % t.mntns], "not a target"),
                       (["--target", want], "give --namespace too"),
                       (["--namespace", str(t.pid), "--target", want, "--mntns", str(own_mntns())], "was given already")):
        r = sc.run_ptsguard("repair", *argv)
        sc.check.eq((r.returncode, said in r.stderr), (3, True), "repair %s: exit 3 and %r: %r" % (" ".join(argv), said, r.stderr))
    r = sc.run_ptsguard("repair", "--namespace", str(t.pid), "--target", want, "--format", "json")
    sc.check.eq(r.returncode, 0, "the listed process with its target: repaired (%s)" % r.stderr)
    sc.check.eq(sorted((a.get("check"), a.get("result")) for a in json.loads(r.stdout or "{}").get("actions", [])),
                [("devpts-options-lost", "done"), ("ptmx-mode", "done")], "its actions")
    sc.check.eq(host_state(), before, "the host is unchanged by the repair")


@case("repair-chroot-owner")
def ns_repair_chroot_owner(sc):
    """A user (uid 1000, given CAP_SYS_CHROOT as an ambient capability: chroot needs only
    search permission) chrooted into a tree of root's whose /dev lacks ptmx: the command its
    listing prints refuses to mknod /dev/ptmx there, since uid 1000 could create nothing in
    that /dev; the tree is unchanged. Given that /dev, the same command makes the node."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    tree = chroot_tree(sc, "user-chroot")
    c = Chrooted(sc, tree, ["setpriv", "--reuid=%d" % UNPRIVILEGED_UID, "--regid=%d" % UNPRIVILEGED_GID,
                            "--clear-groups", "--inh-caps=+sys_chroot", "--ambient-caps=+sys_chroot"])
    line, argv = repair_hint(sc, c.pid)
    before, dev = host_state(), dev_listing(tree)
    r = sc.run_ptsguard(*argv, "--format", "json")
    actions = json.loads(r.stdout or "{}").get("actions", [])
    sc.check.eq([(a.get("check"), a.get("result")) for a in actions], [("ptmx-missing", "refused")],
                "%s: the mknod is refused: %s" % (" ".join(argv), r.stderr))
    detail = " ".join(a.get("detail") or "" for a in actions)
    sc.check.true("uid %d" % UNPRIVILEGED_UID in detail and "may not create /dev/ptmx" in detail,
                  "the refusal names the owner and the node: %r" % detail)
    sc.check.eq(r.returncode, 2, "exit status: still broken")
    sc.check.eq(dev_listing(tree), dev, "the chroot's /dev is unchanged")
    sc.check.eq(host_state(), before, "the host is unchanged")
    # The user's own /dev: made there (its verification then fails: the tree has no devpts).
    os.chown(os.path.join(tree, "dev"), UNPRIVILEGED_UID, UNPRIVILEGED_GID)
    r = sc.run_ptsguard(*argv, "--format", "json")
    sc.check.eq([(a.get("check"), a.get("result") != "refused") for a in json.loads(r.stdout or "{}").get("actions", [])],
                [("ptmx-missing", True)], "a /dev of the user's: not refused (%s)" % r.stderr)
    st = os.lstat(os.path.join(tree, "dev", "ptmx"))
    sc.check.eq((stat.S_ISCHR(st.st_mode), st.st_rdev, st.st_uid), (True, os.makedev(5, 2), 0), "its /dev/ptmx is made, root's")


@case("repair-userns-owner")
def ns_repair_userns_owner(sc):
    """A rootless container (ids 0-65535 as 100000-165535) whose /dev is a directory of the
    host's root bound in, without ptmx: repair --namespace refuses to mknod there, since the
    container's root (uid 100000 outside) could create nothing in it; the directory is
    unchanged. Once that directory is the container root's, the node is made."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.chmod(sc.workdir, 0o755)
    tree = chroot_tree(sc, "userns-dev")
    t = userns_target(sc, 65536, "mount --bind %s /dev" % os.path.join(tree, "dev"))
    line, argv = repair_hint(sc, t.pid)
    before, dev = host_state(), dev_listing(tree)
    r = sc.run_ptsguard(*argv, "--format", "json")
    actions = json.loads(r.stdout or "{}").get("actions", [])
    sc.check.eq([(a.get("check"), a.get("result")) for a in actions if a.get("check") == "ptmx-missing"],
                [("ptmx-missing", "refused")], "%s: the mknod is refused: %s" % (" ".join(argv), r.stderr))
    detail = " ".join(a.get("detail") or "" for a in actions)
    sc.check.true("uid 100000 " in detail and "may not create /dev/ptmx" in detail,
                  "the refusal names the container's root and the node: %r" % detail)
    sc.check.eq(dev_listing(tree), dev, "the directory is unchanged")
    sc.check.eq(host_state(), before, "the host is unchanged")
    os.chown(os.path.join(tree, "dev"), 100000, 100000)
    r = sc.run_ptsguard(*argv, "--format", "json")
    results = [(a.get("check"), a.get("result") != "refused") for a in json.loads(r.stdout or "{}").get("actions", [])
               if a.get("check") == "ptmx-missing"]
    sc.check.eq(results, [("ptmx-missing", True)], "a /dev of the container root's: not refused (%s)" % r.stderr)
    sc.check.true(os.path.lexists(os.path.join(tree, "dev", "ptmx")), "its /dev/ptmx is made")


if __name__ == "__main__":
    sys.exit(cli_main(CASES, __file__, __doc__))
