#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""audit --all-namespaces on the real kernel.

Each case runs as root in a private mount *and pid* namespace (so that /proc
lists only the processes the case starts, whatever else runs on the
machine), with a healthy /dev of its own. Sleepers started with
`unshare --mount` build the namespaces: healthy ones (a tmpfs /dev with a
devpts instance of their own), a broken one (ptmxmode=000 behind a
/dev/ptmx symlink), one that uses the caller's devpts instance. Some are moved
into cgroups named the way docker, podman, LXC and systemd-nspawn name theirs
(a test subtree of the real cgroup v2 hierarchy, removed afterwards), and
systemd-machined's unit link is faked in the case's private /run.
"""

import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))

import harness  # noqa: E402
import testlib  # noqa: E402
from harness import Failure, Skip, log  # noqa: E402

MARKER = "PTSGUARD_NAMESPACES_TEST_PARENT"
CASES, case = testlib.case_registry()
ID_DOCKER = "d6701ec289c56e4391acb11d07474b3139466857a305490575508a8b7a9fcf22"
ID_PODMAN = "0ba8ac17e4e7a31fb82279503552fe94e64bab4745bf6fd2ff231e7c8ca8bed0"
ID_CLAIMED = "5e1f0c1a1ed00000000000000000000000000000000000000000000000c1a1ed"

OWN_DEV = (
    "mount -t tmpfs -o mode=755 tmpfs /dev && mkdir /dev/pts && "
    "mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode={ptmxmode} devpts /dev/pts && "
    "ln -s pts/ptmx /dev/ptmx && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/tty c 5 0"
)


def enter():
    """Re-exec in a private mount and pid namespace with its own /proc."""
    if os.environ.get(MARKER) is not None:
        if os.environ[MARKER] == testlib.mount_ns_id():
            raise Failure("still in the parent's mount namespace")
        return
    if os.geteuid() != 0:
        raise Skip("needs root (mount and pid namespaces)")
    env = dict(os.environ, **{MARKER: testlib.mount_ns_id()})
    sys.stdout.flush()
    os.execvpe(
        "unshare",
        ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "--", sys.executable, os.path.abspath(sys.argv[0])]
        + sys.argv[1:],
        env,
    )


def cgroup2_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    raise Skip("no cgroup v2 hierarchy is mounted")


class World:
    def __init__(self):
        self.sleepers = []
        self.cgroups = []
        self.base = None

    def sleeper(self, name, setup=None):
        """A process in a mount namespace of its own, set up by the shell command setup."""
        ready = "%s/ready-%s" % (harness.TEST_DIR, name)
        script = (setup + " && " if setup else "") + "touch %s && exec sleep 600" % ready
        p = harness.register(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], stdin=subprocess.DEVNULL))
        harness.wait_for("sleeper %s ready" % name, lambda: os.path.exists(ready) or p.poll() is not None)
        if p.poll() is not None:
            raise Failure("sleeper %s exited with %d" % (name, p.returncode))
        self.sleepers.append(p)
        return p

    def cgroup_dir(self, path):
        """A directory of the test subtree, made by root."""
        if self.base is None:
            self.base = os.path.join(cgroup2_root(), "ptsguard-test-%d" % os.getppid())
            os.makedirs(self.base, exist_ok=True)
        d = os.path.join(self.base, path)
        os.makedirs(d, exist_ok=True)
        self.cgroups.append(d)
        return d

    def into_cgroup(self, pid, path):
        d = self.cgroup_dir(path)
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def close(self):
        for p in self.sleepers:
            p.kill()
            p.wait()
        time.sleep(0.1)
        for d in sorted(set(self.cgroups), key=len, reverse=True):
            while d.startswith(self.base) and d != self.base:
                try:
                    os.rmdir(d)
                except OSError:
                    pass
                d = os.path.dirname(d)
        if self.base:
            try:
                os.rmdir(self.base)
            except OSError:
                pass


def mntns(pid):
    return os.stat("/proc/%d/ns/mnt" % pid).st_ino


def audit(ptsguard, *args):
    return subprocess.run([ptsguard, "audit", "--all-namespaces", "--no-color"] + list(args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def setup():
    enter()
    harness.make_private_run()
    harness.make_private_dev()
    harness.make_neutral_fstab()
    # The caller's /dev/ptmx as containers have it, so that its devpts serves it.
    os.unlink("/dev/ptmx")
    os.symlink("pts/ptmx", "/dev/ptmx")
    harness.remount_devpts("gid=5,mode=620,ptmxmode=0666")


@case("json-and-attribution")
def json_and_attribution(ptsguard):
    c = testlib.Checker()
    w = World()
    try:
        healthy = w.sleeper("healthy", OWN_DEV.format(ptmxmode="666"))
        broken = w.sleeper("broken", OWN_DEV.format(ptmxmode="000"))
        shared = w.sleeper("shared")  # the caller's /dev and devpts instance
        docker = w.sleeper("docker", OWN_DEV.format(ptmxmode="666"))
        podman = w.sleeper("podman", OWN_DEV.format(ptmxmode="666"))
        nspawn = w.sleeper("nspawn", OWN_DEV.format(ptmxmode="666"))
        lxc = w.sleeper("lxc", OWN_DEV.format(ptmxmode="666"))
        w.into_cgroup(docker.pid, "system.slice/docker-%s.scope" % ID_DOCKER)
        w.into_cgroup(podman.pid, "machine.slice/libpod-%s.scope/container" % ID_PODMAN)
        w.into_cgroup(nspawn.pid, "machine.slice/machine-deb\\x2dtest.scope/payload")
        w.into_cgroup(lxc.pid, "lxc.payload.web1")

        r = audit(ptsguard, "--json")
        c.eq(r.returncode, 2, "exit status: the broken namespace's critical finding (stderr %r)" % r.stderr)
        doc = json.loads(r.stdout)
        testlib.validate_report(doc, error=Failure)
        c.eq(doc["findings"], [], "the host (the caller) is healthy")
        by_ns = {n["mntns"]: n for n in doc["namespaces"]}
        c.eq(len(doc["namespaces"]), 7, "one entry per namespace: %s" % sorted(by_ns))
        own = mntns(os.getpid())
        c.true(own not in by_ns, "the caller's own namespace is the top-level report, not an entry")

        def ids(p):
            n = by_ns.get(mntns(p.pid))
            if not n:
                c.fail("no entry for pid %d" % p.pid)
                return None
            c.eq(n["pid"], p.pid, "the entry names the process it was judged through")
            c.eq(n["pids_total"], 1, "pids_total of pid %d" % p.pid)
            return sorted(f["id"] for f in n["report"]["findings"] if f["severity"] != "info")

        c.eq(ids(healthy), [], "healthy namespace: nothing above info")
        c.eq(ids(broken), ["ptmx-locked"], "broken namespace: ptmx-locked")
        # The caller's /dev and root kept (a service's sandbox, an unshare -m): a fact, info.
        c.eq(ids(shared), [], "namespace on the caller's instance, with the caller's root: nothing above info")
        sh = [f for f in by_ns[mntns(shared.pid)]["report"]["findings"] if f["id"] == "devpts-host-instance"]
        c.eq([(f["severity"], f["evidence"].get("root_is_host")) for f in sh], [("info", True)], "devpts-host-instance there: info, root_is_host")
        c.eq(by_ns[mntns(healthy.pid)]["container"], None, "no container: null")
        c.eq(by_ns[mntns(docker.pid)]["container"], {"manager": "docker", "id": ID_DOCKER, "name": None, "pod_uid": None}, "docker")
        c.eq(by_ns[mntns(podman.pid)]["container"], {"manager": "podman", "id": ID_PODMAN, "name": None, "pod_uid": None}, "podman")
        c.eq(by_ns[mntns(nspawn.pid)]["container"], {"manager": "nspawn", "id": None, "name": "deb-test", "pod_uid": None}, "nspawn, name unescaped")
        c.eq(by_ns[mntns(lxc.pid)]["container"], {"manager": "lxc", "id": None, "name": "web1", "pod_uid": None}, "lxc")

        # machined's name for the scope, where it has one
        os.makedirs("/run/systemd/machines", exist_ok=True)
        os.symlink("registered-name", "/run/systemd/machines/unit:machine-deb\\x2dtest.scope")
        doc = json.loads(audit(ptsguard, "--json").stdout)
        n = [n for n in doc["namespaces"] if n["mntns"] == mntns(nspawn.pid)][0]
        c.eq(n["container"], {"manager": "nspawn", "id": None, "name": "registered-name", "pod_uid": None}, "machined's name")

        # --min-severity applies to every namespace, and so does the exit status
        r = audit(ptsguard, "--json", "--min-severity", "warning")
        doc = json.loads(r.stdout)
        c.eq(r.returncode, 2, "exit status with --min-severity warning")
        c.true(all(f["severity"] != "info" for n in doc["namespaces"] for f in n["report"]["findings"]), "no info finding left")
        w.sleepers.remove(broken)
        broken.kill()
        broken.wait()
        r = audit(ptsguard, "--json")
        c.eq(r.returncode, 0, "without the broken one: nothing above info left, 0 (stderr %r)" % r.stderr)
    finally:
        w.close()
    return c


@case("text-and-prometheus")
def text_and_prometheus(ptsguard):
    c = testlib.Checker()
    w = World()
    try:
        for i in range(3):
            w.sleeper("healthy%d" % i, OWN_DEV.format(ptmxmode="666"))
        broken = w.sleeper("broken", OWN_DEV.format(ptmxmode="000"))
        w.into_cgroup(broken.pid, "system.slice/docker-%s.scope" % ID_DOCKER)
        ino = mntns(broken.pid)
        r = audit(ptsguard)
        c.eq(r.returncode, 2, "exit status (stderr %r)" % r.stderr)
        out = r.stdout
        with open("/proc/%d/comm" % broken.pid) as f:
            comm = f.read().strip()
        header = "== mount namespace %d (pid %d %s, 1 process, docker/%s) ==" % (ino, broken.pid, comm, ID_DOCKER[:12])
        c.true(header in out, "a block headed by the process and the container: %r in\n%s" % (header, out))
        root = os.stat("/proc/%d/root" % broken.pid)
        with open("/proc/%d/stat" % broken.pid) as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
        target = "mntns:%d,root:%d:%d,start:%s" % (ino, root.st_dev, root.st_ino, start)
        hint = "remedies run inside this namespace (nsenter -t %d -a -r -w) unless one says otherwise; ptsguard repair --namespace %d --target %s applies the repairable one\n" % (broken.pid, broken.pid, target)
        c.true(hint in out, "the block says where its remedies run: %r in\n%s" % (hint, out))
        c.true("ptmx-locked: /dev/ptmx leads to /dev/pts/ptmx with mode 0000" in out, "its finding")
        c.eq(out.count("== mount namespace "), 1, "no block for a namespace with only info findings above the filter")
        c.true(out.rstrip().endswith("3 other namespaces: no findings"), "one line for the rest:\n%s" % out)

        r = audit(ptsguard, "--format", "prometheus")
        c.eq(r.returncode, 2, "prometheus: exit status")
        line = 'ptsguard_finding{check="ptmx-locked",severity="critical",mntns="%d",container="docker/%s"} 1' % (ino, ID_DOCKER[:12])
        c.true(line in r.stdout.splitlines(), "series %s in\n%s" % (line, r.stdout))
        c.true('ptsguard_findings{severity="critical",mntns="%d",container="docker/%s"} 1' % (ino, ID_DOCKER[:12]) in r.stdout, "its count")
        c.eq(r.stdout.count('ptsguard_findings{severity="critical",mntns='), 4, "a count series for every namespace")
        promtool = subprocess.run(["promtool", "check", "metrics"], input=r.stdout, capture_output=True, text=True)
        c.eq((promtool.returncode, promtool.stdout + promtool.stderr), (0, ""), "promtool check metrics")
    finally:
        w.close()
    return c


@case("attribution-delegated")
def attribution_delegated(ptsguard):
    """A cgroup delegated to a user (uid 65534 owns it, as systemd gives each user's manager its
    user@UID.service) in which that user names a child like an LXC container and a grandchild
    like a docker container: the namespace there is `delegated`, named by the delegated
    directory, never docker or lxc, in JSON, text and Prometheus alike; a docker-named cgroup
    root made is still docker."""
    c = testlib.Checker()
    w = World()
    try:
        evil = w.sleeper("evil", OWN_DEV.format(ptmxmode="000"))
        docker = w.sleeper("docker", OWN_DEV.format(ptmxmode="000"))
        w.into_cgroup(docker.pid, "system.slice/docker-%s.scope" % ID_DOCKER)
        owned = w.cgroup_dir("user@65534.service")
        os.chown(owned, 65534, 65534)
        claimed = os.path.join(owned, "lxc.payload.evil", "docker-%s.scope" % ID_CLAIMED)
        # The user makes its own cgroups there; root only moves the sleeper in.
        subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-p", claimed], check=True)
        c.eq(os.stat(claimed).st_uid, 65534, "the user made the docker-named cgroup")
        w.cgroups.append(claimed)
        w.into_cgroup(evil.pid, os.path.relpath(claimed, w.base))

        r = audit(ptsguard, "--json")
        doc = json.loads(r.stdout)
        testlib.validate_report(doc, error=Failure)
        by_ns = {n["mntns"]: n for n in doc["namespaces"]}
        c.eq((by_ns.get(mntns(evil.pid)) or {}).get("container"), {"manager": "delegated", "id": None, "name": "user@65534.service", "pod_uid": None}, "below the delegation: delegated, named by the delegated directory")
        c.eq((by_ns.get(mntns(docker.pid)) or {}).get("container"), {"manager": "docker", "id": ID_DOCKER, "name": None, "pod_uid": None}, "root's docker-named cgroup: docker")
        c.true(ID_CLAIMED not in r.stdout and "lxc.payload.evil" not in r.stdout, "the names the user chose appear nowhere in the report")

        r = audit(ptsguard)
        header = "== mount namespace %d (pid %d sleep, 1 process, delegated/user@65534.service) ==" % (mntns(evil.pid), evil.pid)
        c.true(header in r.stdout, "text: %r in\n%s" % (header, r.stdout))
        c.true(ID_CLAIMED[:12] not in r.stdout and "/evil" not in r.stdout, "text: nothing of the claimed names:\n%s" % r.stdout)
        c.true("docker/%s" % ID_DOCKER[:12] in r.stdout, "text: root's docker container still named")

        r = audit(ptsguard, "--format", "prometheus")
        want = 'ptsguard_finding{check="ptmx-locked",severity="critical",mntns="%d",container="delegated/user@65534.service"} 1' % mntns(evil.pid)
        c.true(want in r.stdout.splitlines(), "prometheus: %s in\n%s" % (want, r.stdout))
        c.true(ID_CLAIMED[:12] not in r.stdout, "prometheus: no claimed id")
    finally:
        w.close()
    return c


# A machine scope as nspawn names it, systemd-escaped (unescaped: a newline, a terminal title
# sequence and a forged line of ptsguard's), and a containerd id, never unescaped, with raw ESC.
HOSTILE_SCOPE = r"machine-x\x0a\x1b]0;pwned\x07ptsguard: [resolved] ptmx-locked (critical).scope"
HOSTILE_NAME = "x\n\x1b]0;pwned\x07ptsguard: [resolved] ptmx-locked (critical)"
HOSTILE_ID = "\x1b]0;pwned\x07\x1b[2J"


@case("text-control-bytes")
def text_control_bytes(ptsguard):
    """Container names and ids from cgroups with control bytes: escaped in the text report,
    exact in JSON."""
    c = testlib.Checker()
    w = World()
    try:
        nspawn = w.sleeper("nspawn", OWN_DEV.format(ptmxmode="000"))
        containerd = w.sleeper("containerd", OWN_DEV.format(ptmxmode="000"))
        w.into_cgroup(nspawn.pid, "machine.slice/" + HOSTILE_SCOPE)
        w.into_cgroup(containerd.pid, "kubepods/pod1234/containerd/" + HOSTILE_ID)

        r = audit(ptsguard, "--json")
        by_ns = {n["mntns"]: n for n in json.loads(r.stdout)["namespaces"]}
        c.eq((by_ns.get(mntns(nspawn.pid)) or {}).get("container"), {"manager": "nspawn", "id": None, "name": HOSTILE_NAME, "pod_uid": None}, "JSON: the name's exact bytes")
        c.eq((by_ns.get(mntns(containerd.pid)) or {}).get("container"), {"manager": "containerd", "id": HOSTILE_ID, "name": None, "pod_uid": None}, "JSON: the id's exact bytes (pod1234 is no pod's uid)")

        r = audit(ptsguard)
        c.eq(r.returncode, 2, "exit status (stderr %r)" % r.stderr)
        for what, text in (("stdout", r.stdout), ("stderr", r.stderr)):
            c.true("\x1b" not in text and "\x07" not in text, "%s: no raw ESC or BEL: %r" % (what, text))
            c.true(not any(line.startswith("ptsguard: [resolved]") for line in text.splitlines()), "%s: no forged line: %r" % (what, text))
        c.true("nspawn/x\\x0a\\x1b]0;pwned\\x07ptsguard: [resolved] ptmx-locked (critical)) ==" in r.stdout, "the name escaped in its block's header:\n%s" % r.stdout)
        c.true("containerd/\\x1b]0;pwned\\x07\\x1b[2J) ==" in r.stdout, "the id (not 64 digits: whole) escaped in its block's header:\n%s" % r.stdout)
    finally:
        w.close()
    return c


def chroot_tree(name, dev):
    """A root directory below the caller's namespace (a tmpfs of the case's own) with the
    machine's /usr bound read-only, as sbuild and pbuilder roots hold a system; dev: "bind" for
    the caller's /dev bound recursively, as chroot recipes do, else a hand-made /dev with
    null and tty but no ptmx and no devpts."""
    tree = os.path.join(harness.TEST_DIR, "chroots", name)
    os.makedirs(tree)
    harness.sys_mount("tmpfs", tree, "tmpfs", 0, "mode=755")
    for d in ("usr", "dev", "etc", "proc", "tmp"):
        os.mkdir(os.path.join(tree, d))
    harness.sys_mount("/usr", os.path.join(tree, "usr"), None, 4096)  # MS_BIND
    subprocess.run(["mount", "-o", "remount,bind,ro", os.path.join(tree, "usr")], check=True)
    for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink("/" + link):
            os.symlink(os.readlink("/" + link), os.path.join(tree, link))
    with open("/etc/group") as f, open(os.path.join(tree, "etc", "group"), "w") as g:
        g.write(f.read())
    if dev == "bind":
        subprocess.run(["mount", "--rbind", "/dev", os.path.join(tree, "dev")], check=True)
    else:
        for node, minor in (("null", (1, 3)), ("tty", (5, 0))):
            path = os.path.join(tree, "dev", node)
            os.mknod(path, 0o666 | 0o020000, os.makedev(*minor))
            os.chmod(path, 0o666)
    return tree


def chrooted(tree):
    """`chroot TREE sleep`, once its root is the tree."""
    p = harness.register(subprocess.Popen(["chroot", tree, "sleep", "600"], stdin=subprocess.DEVNULL))

    def there():
        try:
            return os.readlink("/proc/%d/root" % p.pid) == tree and open("/proc/%d/comm" % p.pid).read().strip() == "sleep"
        except OSError:
            return p.poll() is not None

    harness.wait_for("the chroot's sleep in %r" % tree, there)
    if p.poll() is not None:
        raise Failure("chroot %r exited with %d" % (tree, p.returncode))
    return p


# A chroot's path is named by whoever made the tree: a newline, a terminal title sequence and a
# forged line of ptsguard's.
HOSTILE_ROOT = "sid\n\x1b]0;pwned\x07ptsguard: [resolved] ptmx-missing (critical)"
HOSTILE_ROOT_ESCAPED = "sid\\x0a\\x1b]0;pwned\\x07ptsguard: [resolved] ptmx-missing (critical)"


@case("chroots")
def chroots(ptsguard):
    """Chroots in the caller's own mount namespace (sbuild, pbuilder, mock, arch-chroot roots in
    the host's): each distinct root is an item of its own, judged on its own root. A healthy one
    (the caller's /dev bound recursively) beside a broken one (a hand-made /dev without ptmx) with
    two processes and a path of control bytes: the broken one is named (its root, exact in JSON,
    escaped in text), ptmx-missing, exit 2; gone, exit 0."""
    c = testlib.Checker()
    procs = []
    try:
        good_tree = chroot_tree("good", "bind")
        bad_tree = chroot_tree(HOSTILE_ROOT, "hand-made")
        good = chrooted(good_tree)
        bad = [chrooted(bad_tree), chrooted(bad_tree)]
        procs = [good] + bad
        own = mntns(os.getpid())

        r = audit(ptsguard, "--json")
        c.eq(r.returncode, 2, "exit status: the broken chroot's critical finding (stderr %r)" % r.stderr)
        doc = json.loads(r.stdout)
        testlib.validate_report(doc, error=Failure)
        c.eq([f["id"] for f in doc["findings"] if f["severity"] != "info"], [], "the host (the caller) is healthy")
        ours = [n for n in doc["namespaces"] if n["mntns"] == own]
        by_root = {n.get("root"): n for n in ours}
        c.eq(sorted(by_root, key=str), sorted([good_tree, bad_tree]), "the caller's namespace: one item for each chroot, named by its root, none for itself")
        g, b = by_root.get(good_tree), by_root.get(bad_tree)
        if g:
            c.eq((g["pid"], g["pids_total"]), (good.pid, 1), "the healthy chroot: its process")
            c.eq([f["id"] for f in g["report"]["findings"] if f["severity"] != "info"], [], "the healthy chroot (the caller's /dev bound): nothing above info")
            c.eq((g["report"]["probe"]["performed"], g["report"]["probe"]["failed_step"]), (True, None), "the healthy chroot: a user allocates a pty there")
        if b:
            c.eq((b["pid"], b["pids_total"]), (min(p.pid for p in bad), 2), "the broken chroot: judged through its lowest pid, both processes counted")
            c.eq([f["id"] for f in b["report"]["findings"] if f["severity"] != "info"], ["ptmx-missing"], "the broken chroot: its own /dev judged, not the host's")
            c.eq(b["report"]["probe"]["failed_step"], "open_ptmx", "the broken chroot: the allocation probe fails there too, opening its /dev/ptmx")

        # --namespace PID of a chrooted process: the same judgement, the same root named.
        r = subprocess.run([ptsguard, "audit", "--json", "--namespace", str(bad[0].pid)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        n = json.loads(r.stdout)["namespaces"][0]
        c.eq((r.returncode, n.get("root"), sorted(f["id"] for f in n["report"]["findings"] if f["severity"] != "info")), (2, bad_tree, ["ptmx-missing"]), "--namespace PID of the chroot")

        r = audit(ptsguard)
        c.eq(r.returncode, 2, "text: exit status")
        header = "== mount namespace %d, root %s (pid %d sleep, 2 processes) ==" % (own, os.path.join(os.path.dirname(bad_tree), HOSTILE_ROOT_ESCAPED), min(p.pid for p in bad))
        c.true(header in r.stdout, "text: the chroot's block names its root, escaped: %r in\n%s" % (header, r.stdout))
        for what, text in (("stdout", r.stdout), ("stderr", r.stderr)):
            c.true("\x1b" not in text and "\x07" not in text, "%s: no raw ESC or BEL" % what)
            c.true(not any(line.startswith("ptsguard: [resolved]") for line in text.splitlines()), "%s: no forged line" % what)
        c.true("--allow-own-namespace" not in r.stdout and "ptsguard repair --namespace %d --target mntns:%d," % (min(p.pid for p in bad), own) in r.stdout,
               "text: a chroot of the caller's namespace is repaired by its target, never with --allow-own-namespace:\n%s" % r.stdout)
        c.true(r.stdout.rstrip().endswith("1 other namespace: no findings"), "the healthy chroot: one line:\n%s" % r.stdout)

        r = audit(ptsguard, "--format", "prometheus")
        line = 'ptsguard_finding{check="ptmx-missing",severity="critical",mntns="%d",container="",root="%s"} 1' % (own, bad_tree.replace("\\", "\\\\").replace("\n", "\\n"))
        c.true(line in r.stdout, "prometheus: the chroot's series carry root: %r" % line)
        c.true('ptsguard_findings{severity="critical",mntns="%d",container="",root="%s"} 0' % (own, good_tree) in r.stdout, "prometheus: the healthy chroot's count")

        for p in bad:
            p.kill()
            p.wait()
        r = audit(ptsguard, "--json")
        c.eq(r.returncode, 0, "the broken chroot gone: 0 (stderr %r)" % r.stderr)
        c.eq([n.get("root") for n in json.loads(r.stdout)["namespaces"] if n["mntns"] == own], [good_tree], "only the healthy chroot left")
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return c


# Chroot directories named with bytes that are not UTF-8 (a path is any bytes), and with a
# complete syslog tag of ptsguard's in their name.
RAW_ROOT = b"raw-\xff\xfe-\xc3(-\xed\xa0\x80-\xc3\xa9"
FORGED_ROOT = b"forged [ptsguard check=ptmx-missing state=resolved severity=critical message_id=0] \\ \""
CHECK_SERIES = re.compile(r'^ptsguard_finding\{check="[a-z0-9-]+",severity="[a-z]+"\} [01]$', re.M)


def label_bytes(value):
    """A label value of the exposition as Prometheus reads it, then the name in it: a doubled
    backslash is one, \\xNN the byte NN."""
    value = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value).encode("utf-8")
    return re.sub(rb"\\(\\|x([0-9a-f]{2}))", lambda m: bytes([int(m.group(2), 16)]) if m.group(2) else b"\\", value)


@case("chroot-names")
def chroot_names(ptsguard):
    """Two broken chroots in the caller's namespace, one named with bytes that are not UTF-8 and
    one with a forged syslog tag, quote and backslash in its name: the Prometheus exposition
    passes promtool and keeps the host's own series, each chroot's series labelled with its
    exact root; the JSON is valid UTF-8, matches the schema, and keeps the exact root in
    root_hex. With a devpts at a path that is not UTF-8 in the host's table, the host's
    snapshot is valid UTF-8 and audited gives the live audit's findings and mounts, that
    mountpoint exact in mountpoint_hex."""
    c = testlib.Checker()
    procs = []
    try:
        trees = {}
        for raw in (RAW_ROOT, FORGED_ROOT):
            tree = chroot_tree(raw.decode("utf-8", "surrogateescape"), "hand-made")
            procs.append(chrooted(tree))
            trees[os.fsencode(tree)] = procs[-1]
        # a devpts instance of the host's table at a path that is not UTF-8
        raw_pts = os.path.join(harness.TEST_DIR, "chroots", RAW_ROOT.decode("utf-8", "surrogateescape"), "pts")
        os.mkdir(raw_pts)
        harness.sys_mount("devpts", raw_pts, "devpts", 0, "newinstance,gid=5,mode=620,ptmxmode=000")
        own = mntns(os.getpid())

        r = subprocess.run([ptsguard, "audit", "--all-namespaces", "--format", "prometheus"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        c.eq(r.returncode, 2, "prometheus: exit status (stderr %r)" % r.stderr)
        promtool = subprocess.run(["promtool", "check", "metrics"], input=r.stdout, capture_output=True)
        c.eq((promtool.returncode, (promtool.stdout + promtool.stderr).decode("utf-8", "replace")), (0, ""), "promtool check metrics")
        try:
            text = r.stdout.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            c.fail("prometheus: not UTF-8: %s" % e)
            text = r.stdout.decode("utf-8", "replace")
        c.eq(len(CHECK_SERIES.findall(text)), len(testlib.catalog(ptsguard)), "prometheus: the host's own ptsguard_finding series, one per check")
        c.true(re.search(r'^ptsguard_findings\{severity="critical"\} 0$', text, re.M), "prometheus: the host's own count")
        roots = {label_bytes(m) for m in re.findall(r'ptsguard_finding\{check="ptmx-missing",severity="critical",mntns="%d",container="",root="((?:[^"\\\n]|\\.)*)"\} 1' % own, text)}
        c.true(sorted(roots) == sorted(trees), "prometheus: each broken chroot's ptmx-missing, labelled with its exact root: %r, not %r" % (sorted(trees), sorted(roots)))

        r = subprocess.run([ptsguard, "audit", "--all-namespaces", "--json"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        c.eq(r.returncode, 2, "json: exit status (stderr %r)" % r.stderr)
        try:
            doc = json.loads(r.stdout.decode("utf-8", errors="strict"))
        except (UnicodeDecodeError, ValueError) as e:
            c.fail("json: not valid JSON in UTF-8: %s" % e)
            return c
        testlib.validate_report(doc, error=Failure)
        items = {}
        for n in doc["namespaces"]:
            if n["mntns"] == own and "root" in n:
                items[bytes.fromhex(n["root_hex"]) if "root_hex" in n else n["root"].encode("utf-8")] = n
        c.true(sorted(items) == sorted(trees), "json: one item for each chroot, its exact root: %r, not %r" % (sorted(trees), sorted(items)))
        raw = items.get(os.fsencode(os.path.join(harness.TEST_DIR, "chroots")) + b"/" + RAW_ROOT)
        if raw:
            c.eq(raw["root"], os.path.join(harness.TEST_DIR, "chroots", RAW_ROOT.decode("utf-8", "replace")), "json: root, a byte that is not UTF-8 as U+FFFD")
        for tree, n in items.items():
            c.eq(n["pid"], trees[tree].pid, "json: %r judged through its process" % tree)
            c.eq([f["id"] for f in n["report"]["findings"] if f["severity"] != "info"], ["ptmx-missing"], "json: %r: its own /dev judged" % tree)

        # The host's mount table holds the trees' tmpfs mounts: its snapshot is valid UTF-8 and
        # read back gives the same mounts, their paths exact, and the same findings.
        path = os.path.join(harness.TEST_DIR, "host.json")
        r = subprocess.run([ptsguard, "snapshot", "--output", path], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        c.eq(r.returncode, 0, "snapshot: exit status (stderr %r)" % r.stderr)
        with open(path, "rb") as f:
            raw = f.read()
        try:
            testlib.validate_snapshot(json.loads(raw.decode("utf-8", errors="strict")), error=Failure)
        except (UnicodeDecodeError, ValueError) as e:
            c.fail("snapshot: not valid JSON in UTF-8: %s" % e)
        live = json.loads(subprocess.run([ptsguard, "audit", "--json"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60).stdout.decode("utf-8"))
        r = subprocess.run([ptsguard, "audit", "--json", "--snapshot", path], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        offline = json.loads(r.stdout.decode("utf-8"))
        c.eq([(f["id"], f["summary"]) for f in offline["findings"]], [(f["id"], f["summary"]) for f in live["findings"]], "snapshot: the same findings as live")
        c.eq(offline["instances"], live["instances"], "snapshot: the same instances and mounts")
        pts = [m for i in offline["instances"] for m in i["mounts"] if "mountpoint_hex" in m]
        c.true([bytes.fromhex(m["mountpoint_hex"]) for m in pts] == [os.fsencode(raw_pts)], "snapshot: the devpts at a path that is not UTF-8, exact in mountpoint_hex: %r" % pts)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return c


def bounded(args, what, c, timeout=30):
    """args run to the end within timeout, else a failure (where it waited) and None: the run
    is killed, and reaped once the FUSE daemon answers (the caller releases it)."""
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        waits = []
        for tid in os.listdir("/proc/%d/task" % p.pid):
            try:
                with open("/proc/%d/task/%s/wchan" % (p.pid, tid)) as f:
                    waits.append(f.read())
            except OSError:
                pass
        c.true(False, "%s: no end within %d s, waiting in the kernel at %s" % (what, timeout, waits))
        p.kill()
        HUNG.append(p)
        return None
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def waiting_in_d(*besides):
    """Processes with a thread waiting uninterruptibly (state D), but those given."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in besides:
            continue
        try:
            for tid in os.listdir("/proc/%s/task" % pid):
                with open("/proc/%s/task/%s/stat" % (pid, tid)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "D":
                        out.append(int(pid))
                        break
        except OSError:
            pass
    return out


HUNG = []  # runs killed while they waited on the FUSE daemon: reaped once it answers


@case("chroots-hung-fuse")
def chroots_hung_fuse(ptsguard):
    """Three chroots that a FUSE daemon which stopped answering would hold: one whose root is a
    directory of the FUSE mount (its own mount table, printed relative to that root, does not
    show the mount, which lies above it), one whose /dev is a directory of it bound there, and
    one whose /dev is a symbolic link to a directory of it (bound at /fuse in the chroot).
    Every lookup under either would wait on the daemon, and a process killed there could not
    die. --all-namespaces ends, each is an error item naming FUSE, and the namespace beside
    them is judged; --namespace of either exits 3 saying FUSE."""
    c = testlib.Checker()
    w = World()
    mnt = os.path.join(harness.TEST_DIR, "fuse")
    fuse = testlib.HungFuse(mnt, error=Failure)
    procs = []
    try:
        healthy = w.sleeper("healthy", OWN_DEV.format(ptmxmode="666"))
        below = os.path.join(mnt, "dir")
        chroot_py = "import os,sys,time; os.chroot(sys.argv[1]); print('ready', flush=True); time.sleep(600)"
        p = harness.register(subprocess.Popen([sys.executable, "-c", chroot_py, below], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True))
        procs.append(p)
        if p.stdout.readline().strip() != "ready":
            raise Failure("the process did not chroot into the FUSE mount's directory")
        tree = chroot_tree("dev-on-fuse", "hand-made")
        subprocess.run(["mount", "--bind", below, os.path.join(tree, "dev")], check=True)
        procs.append(chrooted(tree))
        # Its /dev a symbolic link to a directory of the FUSE mount, which its table shows
        # elsewhere (at /fuse): only the lookup through the link reaches it.
        linked = chroot_tree("dev-linked-to-fuse", "hand-made")
        subprocess.run(["umount", "-l", os.path.join(linked, "dev")], stderr=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", os.path.join(linked, "dev")], check=True)
        os.mkdir(os.path.join(linked, "fuse"))
        subprocess.run(["mount", "--bind", mnt, os.path.join(linked, "fuse")], check=True)
        os.symlink("fuse/dir", os.path.join(linked, "dev"))
        procs.append(chrooted(linked))
        fuse.hang()
        t0 = time.monotonic()
        r = bounded([ptsguard, "audit", "--all-namespaces", "--json"], "--all-namespaces with three chroots on a hung FUSE", c)
        if r is not None:
            log("--all-namespaces ended after %.1f s (exit %d)" % (time.monotonic() - t0, r.returncode))
            doc = json.loads(r.stdout)
            testlib.validate_report(doc, error=Failure)
            items = doc.get("namespaces") or []
            by_root = {n.get("root"): n for n in items if n.get("root")}
            for root, what in ((below, "the chroot into the FUSE mount's directory"), (tree, "the chroot whose /dev is on FUSE"),
                               (linked, "the chroot whose /dev links to FUSE")):
                item = by_root.get(root) or {}
                log("%s: %s" % (what, item.get("error")))
                c.true(item.get("report") is None and "FUSE" in (item.get("error") or ""), "%s: an error item naming FUSE: %r" % (what, item))
            c.eq(waiting_in_d(fuse.proc.pid), [], "no process left waiting on the FUSE daemon (a probe in a lookup there)")
            judged = [n for n in items if n.get("pid") == healthy.pid]
            c.true(len(judged) == 1 and isinstance(judged[0].get("report"), dict), "the namespace beside them is judged: %r" % judged)
        for p, what in ((procs[0], "the chroot into the FUSE mount's directory"), (procs[1], "the chroot whose /dev is on FUSE"),
                        (procs[2], "the chroot whose /dev links to FUSE")):
            r = bounded([ptsguard, "audit", "--namespace", str(p.pid)], "--namespace of " + what, c)
            if r is not None:
                log("--namespace of %s: exit %d, %s" % (what, r.returncode, r.stderr.strip()))
                c.eq(r.returncode, 3, "--namespace of %s: exit 3 (%s)" % (what, r.stderr.strip()))
                c.true("FUSE" in r.stderr, "--namespace of %s says FUSE: %r" % (what, r.stderr))
    finally:
        fuse.release()
        for p in HUNG + procs:
            p.kill()
            p.wait()
        subprocess.run(["umount", "-l", os.path.join(harness.TEST_DIR, "chroots", "dev-on-fuse", "dev")], stderr=subprocess.DEVNULL)
        subprocess.run(["umount", "-l", os.path.join(harness.TEST_DIR, "chroots", "dev-linked-to-fuse", "fuse")], stderr=subprocess.DEVNULL)
        w.close()
        fuse.stop()
    return c


@case("exiting-processes")
def exiting_processes(ptsguard):
    """Namespaces whose processes come and go during the walk: never an error."""
    c = testlib.Checker()
    w = World()
    try:
        stays = w.sleeper("stays", OWN_DEV.format(ptmxmode="666"))
        churn = subprocess.Popen(
            ["sh", "-c", "while :; do unshare --mount --propagation private true; done"], stdin=subprocess.DEVNULL
        )
        harness.register(churn)
        try:
            for i in range(20):
                r = audit(ptsguard, "--json")
                # A namespace caught before its process exits shares the caller's devpts
                # (devpts-host-instance, a warning): 0 or 1, never 3.
                c.true(r.returncode in (0, 1), "run %d: exit status %d (stderr %r)" % (i, r.returncode, r.stderr))
                c.eq(r.stderr, "", "run %d: nothing on stderr" % i)
                doc = json.loads(r.stdout)
                c.eq([n["pid"] for n in doc["namespaces"] if n["mntns"] == mntns(stays.pid)], [stays.pid], "run %d: the stable one" % i)
        finally:
            churn.kill()
            churn.wait()
    finally:
        w.close()
    return c


def main():
    args, (name,) = testlib.case_args(CASES, __file__, __doc__, (("--ptsguard", {}),), ("--ptsguard",), single=True)
    try:
        setup()
        c = CASES[name](os.path.abspath(args.ptsguard))
    except Skip as e:
        log("SKIP: %s" % e)
        return testlib.EXIT_SKIP
    except Failure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        harness.stop_children()
    if c.failures:
        for f in c.failures:
            log("FAIL: " + f)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
