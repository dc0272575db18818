# SPDX-License-Identifier: GPL-2.0-or-later
"""Containers of Debian's real runtimes, judged inside and from the host.

Each case starts one or more containers (harness.py) in a private mount namespace of its own,
then asserts, for each container:

1. inside, the ground truth: `ptsguard audit --json` run the runtime's way (runc exec, podman
   exec, docker exec, lxc-attach, chroot, nsenter) finds exactly the expected ids, with the
   exit status its findings give; and pty-probe, run there as an unprivileged user, allocates a
   pty that is what users of that setup really get (group tty, mode 0620, the same pty by name);
2. from the host, when the build has them (audit does not refuse the options as unknown; with
   CI=true nothing here is skipped once they exist): `audit --namespace PID --json` reports the
   container's namespace with the expected ids, the exit status the worst of host and
   namespace; `audit --all-namespaces --json` lists it once, attributed to its runtime, and the
   host namespace with what the host has.

The host (the case's namespace) is audited with a plain `ptsguard audit --json` too: it must be
clean except where a case breaks it on purpose (a chroot's --rbind /dev on shared propagation).

Findings that look wrong but are today's verdict are listed in DISPUTED with the reason: they
are asserted (so that the day they change, the case says so), and printed as DISPUTED.

    containers.py --ptsguard P --pty-probe P --build-root B CASE   one case (root)
    containers.py --list | --check-registered CASE...

Exit 0 pass, 1 fail, 77 skip (not root, a runtime missing). On a failure the log of each
container (its runtime's output) is printed; PTSGUARD_CONTAINERS_DUMP=1 prints every report.
"""

import json
import os
import re
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import testlib  # noqa: E402
from harness import HEALTHY_PTY, NOBODY, SEVERITY_EXIT, Failure, Host, log, run  # noqa: E402
from testlib import EXIT_SKIP, Skip  # noqa: E402

CASES, case = testlib.case_registry()

# Findings that are today's verdict but that the ground truth contradicts: key -> (where it
# shows: "inside", "host" or "both", why it looks wrong).
DISPUTED = {}


def expect(ct, inside=(), host=None, pty=None, disputed=(), listed=True):
    """What ct must show: inside, the ids of an audit run in it; host, the ids of its
    namespace audited from the host (default: the same); pty, pty-probe's fields as an
    unprivileged user; disputed, DISPUTED keys behind some of those ids; listed, whether
    --all-namespaces lists it apart from the host (a chroot shares the host's namespace, and is
    listed as one of its chroots, named by its root)."""
    ct.expect = {
        "inside": sorted(inside),
        "host": sorted(inside if host is None else host),
        "pty": dict(HEALTHY_PTY if pty is None else pty),
        "disputed": list(disputed),
        "listed": listed,
    }
    return ct


# --------------------------------------------------------------------------
# Running ptsguard


def has_option(ptsguard, option, *value):
    """Whether audit knows option: asked together with --snapshot of a file that does not
    exist, so that nothing is audited whether it does or not."""
    r = run([ptsguard, "audit", option, *value, "--snapshot", "/nonexistent/ptsguard-containers-probe"], check=False)
    return re.search(r"(unknown|unrecognized) option '?%s" % re.escape(option), r.stdout + r.stderr) is None


def features(ptsguard):
    """Which namespace options this build has: the one switch for the host-side assertions."""
    return {"namespace": has_option(ptsguard, "--namespace", "1"), "all-namespaces": has_option(ptsguard, "--all-namespaces")}


def ptsguard(h, *args, argv=None, timeout=60):
    """Run ptsguard (on the host, or argv: inside a container); on a hang, say where it waits
    (wchan, kernel stack, syscall) before killing it."""
    argv = argv or [h.ptsguard_src] + list(args)
    p = subprocess.Popen(argv, stdin=harness.NULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        where = []
        for pid in [p.pid] + harness.descendants(p.pid):
            for f in ("comm", "wchan", "syscall", "stack"):
                try:
                    with open("/proc/%d/%s" % (pid, f)) as fh:
                        where.append("%d %s: %s" % (pid, f, fh.read().strip()))
                except OSError:
                    pass
        p.kill()
        out, err = p.communicate()
        raise Failure("%s did not finish within %ds; it waited in:\n  %s\nstdout: %s\nstderr: %s" % (" ".join(argv), timeout, "\n  ".join(where), out[-1000:], err[-1000:]))
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def parse_report(r, what, check):
    try:
        report = json.loads(r.stdout)
    except ValueError as e:
        raise Failure("%s printed no JSON (%s), exit %d:\n%s\n%s" % (what, e, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    if os.environ.get("PTSGUARD_CONTAINERS_DUMP") == "1":
        log("---- %s (exit %d) ----\n%s" % (what, r.returncode, testlib.pretty(report)))
    problems = testlib.report_problems(report)
    check.true(not problems, "%s: the report matches its schema:\n  %s" % (what, "\n  ".join(problems)))
    return report


def ids_of(report):
    return sorted(f["id"] for f in (report or {}).get("findings", []))


def worst_exit(*reports):
    return max([SEVERITY_EXIT[f["severity"]] for r in reports for f in (r or {}).get("findings", [])] + [0])


def describe(report):
    return "; ".join("%s %s: %s" % (f["severity"], f["id"], f.get("summary", "")) for f in (report or {}).get("findings", [])) or "no findings"


def slaves_named(report):
    """The slaves pty-slave-perms names, by path: the same pty must be named inside and from
    the host (ids alone would hide a host side that adds slaves)."""
    return sorted(sl.get("path") for f in (report or {}).get("findings", []) if f["id"] == "pty-slave-perms" for sl in (f.get("evidence") or {}).get("slaves", []))


def check_ids(h, what, report, want, disputed=(), where="inside"):
    got = ids_of(report)
    ok = h.check.eq(got, want, "%s: finding ids (%s)" % (what, describe(report)))
    for key in disputed:
        if DISPUTED[key][0] in (where, "both"):
            log("DISPUTED %s: %s" % (what, DISPUTED[key][1]))
    return ok


# --------------------------------------------------------------------------
# The assertions every case ends with


def verify(h, host_expect=()):
    """Everything above, for every container the case started, and the host."""
    feats = features(h.ptsguard_src)
    log("this build: --namespace %s, --all-namespaces %s" % ("yes" if feats["namespace"] else "not yet (host-side --namespace assertions inactive)", "yes" if feats["all-namespaces"] else "not yet (attribution assertions inactive)"))

    # The host: a plain audit of the case's namespace.
    r = ptsguard(h, "audit", "--json")
    host_report = parse_report(r, "host audit", h.check)
    log("host (this namespace): exit %d, %s" % (r.returncode, describe(host_report)))
    check_ids(h, "host audit", host_report, sorted(host_expect))
    h.check.eq(r.returncode, worst_exit(host_report), "host audit: exit status")

    for ct in h.containers:
        e = ct.expect
        if e is None:
            continue
        # 1. inside: ptsguard, the runtime's way
        r = ptsguard(h, argv=ct.exec(["ptsguard", "audit", "--json"]))
        inside = parse_report(r, "%s: audit inside" % ct.label, h.check)
        log("%s inside: exit %d, %s" % (ct.label, r.returncode, describe(inside)))
        check_ids(h, "%s: audit inside" % ct.label, inside, e["inside"], e["disputed"])
        h.check.eq(r.returncode, worst_exit(inside), "%s: audit inside: exit status" % ct.label)

        # ... and what an unprivileged user really gets there
        r = run(ct.exec(["pty-probe"], user=ct.user_ids()), check=False)
        try:
            res = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise Failure("%s: pty-probe printed no JSON (exit %d): %s %s" % (ct.label, r.returncode, r.stdout, r.stderr))
        log("%s: pty as uid %d inside: %s" % (ct.label, ct.user_ids()[0], json.dumps(res, sort_keys=True)))
        got = {k: res.get(k) for k in e["pty"]}
        h.check.eq(got, e["pty"], "%s: pty-probe as an unprivileged user inside" % ct.label)

        # 2. from the host
        if feats["namespace"]:
            r = ptsguard(h, "audit", "--namespace", str(ct.pid), "--json")
            whole = parse_report(r, "%s: audit --namespace %d" % (ct.label, ct.pid), h.check)
            entry = namespace_entry(whole, ct)
            if h.check.true(entry is not None, "%s: audit --namespace %d has an entry for mount namespace %d:\n%s" % (ct.label, ct.pid, ct.mntns, r.stdout[-3000:])):
                log("%s from the host: exit %d, %s" % (ct.label, r.returncode, describe(entry.get("report"))))
                check_ids(h, "%s: audit --namespace from the host" % ct.label, entry.get("report"), e["host"], e["disputed"], "host")
                h.check.eq(slaves_named(entry.get("report")), slaves_named(inside), "%s: the slaves pty-slave-perms names from the host, as inside" % ct.label)
                h.check.eq(r.returncode, worst_exit(whole, entry.get("report")), "%s: audit --namespace: exit status, the worst of host and namespace" % ct.label)

    if feats["all-namespaces"]:
        verify_all_namespaces(h, host_expect)


def namespace_entry(report, ct):
    for n in (report or {}).get("namespaces") or []:
        if n.get("mntns") == ct.mntns and (n.get("pid") == ct.pid or ct.mntns != harness.mntns(os.getpid())):
            return n
    for n in (report or {}).get("namespaces") or []:
        if n.get("pid") == ct.pid:
            return n
    return None


def is_kernel_thread(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[6]) & 0x00200000 != 0
    except (OSError, TypeError, ValueError, IndexError):
        return False


def verify_all_namespaces(h, host_expect):
    r = ptsguard(h, "audit", "--all-namespaces", "--json", timeout=120)
    whole = parse_report(r, "audit --all-namespaces", h.check)
    entries = whole.get("namespaces") or []
    by_ns = {}
    for n in entries:
        by_ns.setdefault(n.get("mntns"), []).append(n)
    ours = harness.mntns(os.getpid())
    check_ids(h, "audit --all-namespaces: the host", whole, sorted(host_expect))
    h.check.eq([n.get("pid") for n in by_ns.get(ours, []) if "root" not in n], [], "audit --all-namespaces: the host's own namespace (%d) is the report itself, not an entry (only its chroots are, with root)" % ours)
    # This case's processes share the machine's pid namespace: kernel threads are listed in
    # /proc, kdevtmpfs in a mount namespace of its own (devtmpfs at its root, no /dev/ptmx).
    # None of them is a container.
    kthreads = [n.get("pid") for n in entries if is_kernel_thread(n.get("pid"))]
    h.check.eq(kthreads, [], "audit --all-namespaces: no entry is a kernel thread's namespace")
    reports = [whole]
    for ct in h.containers:
        e = ct.expect
        if e is None:
            continue
        got = by_ns.get(ct.mntns, [])
        if ct.mntns == ours:
            # A chroot of the host: its item is the one of its root, as the kernel names it.
            try:
                root = os.readlink("/proc/%d/root" % ct.pid)
            except OSError:
                root = None
            got = [n for n in got if n.get("root") == root]
            h.check.true(root is not None and root != "/", "%s: its process's root (%s) is a chroot's" % (ct.label, root))
        if not e["listed"]:
            h.check.eq(len(got), 0, "%s shares the host's mount namespace: no entry of its own" % ct.label)
            continue
        if not h.check.eq(len(got), 1, "%s: audit --all-namespaces lists mount namespace %d once" % (ct.label, ct.mntns)):
            continue
        n = got[0]
        reports.append(n.get("report"))
        log("%s in --all-namespaces: container %s, %s" % (ct.label, json.dumps(n.get("container"), sort_keys=True), describe(n.get("report"))))
        check_ids(h, "%s: audit --all-namespaces" % ct.label, n.get("report"), e["host"], e["disputed"], "host")
        c = n.get("container")
        if ct.manager is None:
            h.check.true(c is None or c.get("manager") == "unknown", "%s: nothing on the host names a manager (cgroup %s): container null or unknown, got %s" % (ct.label, ct.cgroups, c))
        elif h.check.true(isinstance(c, dict), "%s: attributed to %s, got %s" % (ct.label, ct.manager, c)):
            h.check.eq(c.get("manager"), ct.manager, "%s: container.manager" % ct.label)
            if ct.manager in ("docker", "podman", "containerd"):
                h.check.eq(c.get("id"), ct.container_id, "%s: container.id" % ct.label)
            else:
                h.check.eq(c.get("name"), ct.container_id, "%s: container.name" % ct.label)
        h.check.true(isinstance(n.get("pid"), int) and harness.mntns(n["pid"]) == ct.mntns if isinstance(n.get("pid"), int) and harness.pid_alive(n["pid"]) else False,
                     "%s: the entry's pid (%s) is a process of that namespace" % (ct.label, n.get("pid")))
    h.check.eq(r.returncode, worst_exit(whole, *[n.get("report") for n in entries]), "audit --all-namespaces: exit status, the worst over the host and every namespace")


# --------------------------------------------------------------------------
# The cases: healthy ones first, then the known-broken setups

def report_inside(h, ct):
    """The report of `ptsguard audit --json` run inside ct."""
    return json.loads(ptsguard(h, argv=ct.exec(["ptsguard", "audit", "--json"])).stdout)


def report_from_host(h, ct):
    """ct's report in `ptsguard audit --namespace PID --json` run on the host ({} if absent)."""
    whole = json.loads(ptsguard(h, "audit", "--namespace", str(ct.pid), "--json").stdout)
    return (namespace_entry(whole, ct) or {}).get("report") or {}


def findings_with(report, check_id):
    return [f for f in report.get("findings", []) if f["id"] == check_id]


def probe_ran_inside_as(h, ct, uid):
    """The allocation probe of an audit run inside ct ran as uid:uid (the highest id of a user
    namespace that maps no nobody) and got a working pty."""
    probe = report_inside(h, ct).get("probe") or {}
    h.check.eq({k: probe.get(k) for k in ("performed", "failed_step", "uid", "gid")}, {"performed": True, "failed_step": None, "uid": uid, "gid": uid},
               "inside: the probe ran as the namespace's highest id and got a working pty: %s" % json.dumps(probe, sort_keys=True))


@case("runc")
def runc_case(h):
    """runc with a `runc spec` bundle: its own tmpfs /dev, devpts gid=5, ptmx -> pts/ptmx."""
    expect(h.start(harness.OCIBundle(h, "runc")))
    verify(h)


@case("crun")
def crun_case(h):
    """crun with the same bundle (it refuses a hybrid cgroup layout: unified unmounted)."""
    expect(h.start(harness.Crun(h, "crun")))
    verify(h)


@case("podman")
def podman_case(h):
    """Rootful podman --rootfs, plain and --privileged (its own /dev either way)."""
    expect(h.start(harness.Podman(h, "podman")))
    expect(h.start(harness.Podman(h, "podman-privileged", ["--privileged"])))
    verify(h)


@case("podman-small-map")
def podman_small_map_case(h):
    """Rootful podman with a user namespace of 1,024 ids (--uidmap/--gidmap 0:300000:1024, the
    size podman --userns=auto gives): its devpts has gid=5 in the container's numbers (the
    host's 300005), and nobody (65534) is not mapped there, so the allocation probe inside runs
    as the highest id mapped, 1023."""
    ct = harness.Podman(h, "podman-small-map", ["--uidmap", "0:300000:1024", "--gidmap", "0:300000:1024"])
    expect(h.start(ct))
    verify(h)
    probe_ran_inside_as(h, ct, 1023)


@case("podman-rootless")
def podman_rootless_case(h):
    """Rootless podman as a test user with a subordinate range: ids 1-65536 of the container
    map to 200000-265535, its devpts shows gid=200004 in the host's numbers (gid 5 inside).
    cgroupfs on cgroup v1 gives a rootless container no cgroup: nothing attributes it."""
    ct = harness.Podman(h, "podman-rootless", rootless=True)
    ct.manager = None
    expect(h.start(ct))
    verify(h)


@case("podman-rootless-host-dev")
def podman_rootless_host_dev_case(h):
    """Rootless podman --privileged -v /dev:/dev, as toolbox and distrobox keep the host's /dev:
    a user namespace of its own on the host's devpts instance, whose gid=5 it does not map, so
    its ptys are in the overflow group there. devpts-gid-mismatch inside and from the host, but
    no remount is its remedy from the host: gid= set for the container on the host's instance
    would take the tty group from the host's new ptys."""
    ct = harness.Podman(h, "podman-rootless-host-dev", ["--privileged", "-v", "/dev:/dev"], rootless=True)
    ct.manager = None
    expect(h.start(ct), inside=["devpts-gid-mismatch"], host=["devpts-gid-mismatch", "devpts-host-instance"],
           pty=dict(ok=True, uid=harness.USER_UID, gid=NOBODY, mode="0620", by_name="same"))
    verify(h)
    f = findings_with(report_from_host(h, ct), "devpts-gid-mismatch")
    if h.check.eq(len(f), 1, "the host's report of the container has devpts-gid-mismatch"):
        h.check.eq(((f[0].get("evidence") or {}).get("host_instance"), f[0].get("repairable")), (True, False),
                   "from the host: the host's instance, not repairable")
        h.check.true((f[0].get("remedy") or "").startswith("do not remount /dev/pts"), "from the host: no remount: %r" % f[0].get("remedy"))


@case("docker")
def docker_case(h):
    """A private dockerd, the cached tree imported as an image: default, --privileged, and
    --privileged -v /dev:/dev (broken: the host's /dev, its devpts and its ptys)."""
    d = harness.Dockerd(h)
    h.cleanups.append(d.stop)
    d.start()
    expect(h.start(harness.Docker(h, "docker", d)))
    expect(h.start(harness.Docker(h, "docker-privileged", d, ["--privileged"])))
    expect(h.start(harness.Docker(h, "docker-host-dev", d, ["--privileged", "-v", "/dev:/dev"])), host=["devpts-host-instance"])
    verify(h)


@case("lxc")
def lxc_case(h):
    """LXC, privileged: devpts max=1028, pts/ptmx bound on /dev/ptmx, the console a pty."""
    # Its console pty (mode 0700, bound on /dev/console) is LXC's choice, not a finding.
    expect(h.start(harness.Lxc(h, "lxc")))
    verify(h)


@case("lxc-unprivileged")
def lxc_unprivileged_case(h):
    """LXC with lxc.idmap 0 -> 100000 (65536 ids), the tree shifted to match."""
    expect(h.start(harness.Lxc(h, "lxc-unprivileged", unprivileged=True)))
    verify(h)


@case("nspawn")
def nspawn_case(h):
    """systemd-nspawn running a command (no --boot)."""
    expect(h.start(harness.Nspawn(h, "nspawn")))
    verify(h)


@case("nspawn-userns")
def nspawn_userns_case(h):
    """systemd-nspawn -U: --private-users=100000:65536 on the shifted tree."""
    expect(h.start(harness.Nspawn(h, "nspawn-userns", userns=True)))
    verify(h)


@case("bwrap")
def bwrap_case(h):
    """Unprivileged bubblewrap with --dev /dev: a user namespace mapping the one user, where
    devpts cannot take gid=5; new ptys get the user's own group. The contract still reports
    devpts-options-lost there (with a remedy that says gid= cannot be set)."""
    ct = h.start(harness.Bwrap(h, "bwrap"))
    uid = h.user["uid"]
    expect(ct, inside=["devpts-options-lost"], pty=dict(ok=True, uid=uid, gid=uid, mode="0620", by_name="same"))
    verify(h)


@case("schroot")
def schroot_case(h):
    """schroot's default profile: /dev and /dev/pts bound from the host, no namespace of its own:
    listed by --all-namespaces as a chroot of the host's, named by its root."""
    expect(h.start(harness.Schroot(h, "schroot")))
    verify(h)


@case("chroot")
def chroot_case(h):
    """A plain chroot: --rbind /dev, --make-rslave, /proc; listed as a chroot of the host's."""
    expect(h.start(harness.Chroot(h, "chroot")))
    verify(h)


@case("ctr")
def ctr_case(h):
    """Real containerd, tasks made with ctr: `ctr run --rootfs` (its default spec: a tmpfs /dev,
    devpts gid=5, ptmx -> pts/ptmx), and one in a user namespace mapping 0-65535 to
    100000-165535 on the shifted tree (ctr run --config: ctr 1.6 ignores --uidmap with
    --rootfs). Both in containerd's default cgroup, /ptsct/<id>: attributed containerd/<id>."""
    d = harness.Containerd(h)
    h.cleanups.append(d.stop)
    d.start()
    expect(h.start(harness.Ctr(h, "ctr", d)))
    ct = expect(h.start(harness.Ctr(h, "ctr-userns", d, spec=harness.ctr_userns, shifted=True)))
    with open("/proc/%d/uid_map" % ct.pid) as f:
        h.check.eq(f.read().split(), ["0", str(harness.ROOT_RANGE[0]), str(harness.ROOT_RANGE[1])], "ctr-userns: its user namespace maps 0-65535 to 100000-165535")
    verify(h)
    # Nothing but containerd's state makes /<namespace>/<id> a task: the same layout of
    # cgroups, made by root for a process of no task, is no container.
    fake = harness.CgroupSleeper(h, "ctr-not-a-task", "%s/not-a-task-%d" % (harness.CONTAINERD_NAMESPACE, os.getpid()))
    h.start(fake)
    entry = all_namespaces_entry(h, fake)
    h.check.eq((entry or {}).get("container"), None, "a process in /%s/<name> that containerd does not run: container null, got %s" % (harness.CONTAINERD_NAMESPACE, (entry or {}).get("container")))


POD_UID = "2ca4a155-3599-498d-bb9d-4446693fa3ea"


@case("kubepods")
def kubepods_case(h):
    """Processes in the cgroups kubelet makes for a pod's container, made here by root: the
    systemd driver's kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
    cri-containerd-<id>.scope, and the cgroupfs driver's kubepods/besteffort/pod<uid>/<id>
    (which names no runtime). Judged by --all-namespaces: the container's id and its pod's uid
    in JSON, Prometheus (pod_uid) and the text header (pod <uid>). The same layout below a pod
    cgroup delegated to a user (who could name it anything) is "delegated", with no pod."""
    cid = os.urandom(32).hex()
    uid_ = POD_UID.replace("-", "_")
    systemd = h.start(harness.CgroupSleeper(h, "kubepods-systemd", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope" % (uid_, cid)))
    cgroupfs = h.start(harness.CgroupSleeper(h, "kubepods-cgroupfs", "kubepods/besteffort/pod%s/%s" % (POD_UID, cid)))
    other_uid = "9692aa0e-748e-11e8-8dfa-76d458035df6"
    pod_slice = "kubepods-burstable-pod%s.slice" % other_uid.replace("-", "_")
    # A top of its own (kubepods.slice is the first sleeper's): kubelet's --cgroup-root.
    forged = h.start(harness.CgroupSleeper(h, "kubepods-delegated", "k8s-%d/kubepods.slice/kubepods-burstable.slice/%s/cri-containerd-%s.scope" % (os.getpid(), pod_slice, cid),
                                           owned=("k8s-%d/kubepods.slice/kubepods-burstable.slice/%s" % (os.getpid(), pod_slice), h.user["uid"])))
    want = {
        systemd: {"manager": "containerd", "id": cid, "name": None, "pod_uid": POD_UID},
        cgroupfs: {"manager": "unknown", "id": cid, "name": None, "pod_uid": POD_UID},
        forged: {"manager": "delegated", "id": None, "name": pod_slice, "pod_uid": None},
    }
    whole = parse_report(ptsguard(h, "audit", "--all-namespaces", "--json", timeout=120), "audit --all-namespaces", h.check)
    for ct, c in want.items():
        got = [n for n in whole.get("namespaces") or [] if n.get("mntns") == ct.mntns]
        if h.check.eq(len(got), 1, "%s: listed once" % ct.label):
            h.check.eq(got[0].get("container"), c, "%s: its container (cgroup %s)" % (ct.label, ct.path))
    r = ptsguard(h, "audit", "--all-namespaces", "--format", "prometheus", timeout=120)
    series = [l for l in r.stdout.splitlines() if l.startswith("ptsguard_findings{") and any('mntns="%d"' % ct.mntns in l for ct in want)]
    log("prometheus, these namespaces:\n" + "\n".join(series))
    for ct, c in want.items():
        lines = [l for l in series if 'mntns="%d"' % ct.mntns in l]
        h.check.eq(len(lines), 3, "%s: its three ptsguard_findings series" % ct.label)
        for l in lines:
            if c["pod_uid"]:
                h.check.true(re.search(r',container="%s/%s",pod_uid="%s"\}' % (c["manager"], cid[:12], POD_UID), l), "%s: labelled with its container and pod_uid: %s" % (ct.label, l))
            else:
                h.check.true("pod_uid=" not in l, "%s: no pod_uid label: %s" % (ct.label, l))
    # The text report names the pod in the block of a namespace with findings: break the first
    # one's devpts (ptmxmode=000: ptmx-locked) in its own mount namespace only.
    run(["nsenter", "-t", str(systemd.pid), "-m", "--", "mount", "-t", "devpts", "-o", "newinstance,gid=5,mode=620,ptmxmode=000", "devpts", "/dev/pts"])
    r = ptsguard(h, "audit", "--all-namespaces", "--no-color", timeout=120)
    blocks, _ = text_blocks(r.stdout)
    header = blocks.get(systemd.mntns, ("", ""))[0]
    log("text header of %s: %r" % (systemd.label, header))
    h.check.true(header.endswith("containerd/%s, pod %s" % (cid[:12], POD_UID)), "the text header names the container and its pod: %r" % header)


def all_namespaces_entry(h, ct, fmt="json"):
    whole = parse_report(ptsguard(h, "audit", "--all-namespaces", "--json", timeout=120), "audit --all-namespaces", h.check)
    got = [n for n in whole.get("namespaces") or [] if n.get("mntns") == ct.mntns]
    h.check.eq(len(got), 1, "%s: audit --all-namespaces lists mount namespace %d once" % (ct.label, ct.mntns))
    return got[0] if got else None


DAEMON_CONFIG = """[Repair]
Policy=off

[Daemon]
StateFile=%s
PrometheusFile=%s

[Namespaces]
Audit=all
ScanSec=1
"""


def verify_daemon(h, broken):
    """The daemon with [Namespaces] Audit=all on this host (no journal here: its transitions
    go to standard error): each of broken ({container: [ids]}) is found, its findings detected
    under its container's label and mount namespace."""
    conf = os.path.join(h.scratch, "daemon.conf")
    with open(conf, "w") as f:
        f.write(DAEMON_CONFIG % (os.path.join(h.scratch, "state.json"), os.path.join(h.scratch, "ptsguard.prom")))
    err_path = os.path.join(h.scratch, "daemon.stderr")
    with open(err_path, "w") as err:
        p = subprocess.Popen([h.ptsguard_src, "daemon", "--config", conf], stdin=harness.NULL, stdout=err, stderr=subprocess.STDOUT, start_new_session=True)

    def text():
        with open(err_path) as f:
            return f.read()

    def line_of(ct, check_id):
        want = "ptsguard: [%s/%s, mount namespace %d] [detected] %s " % (ct.manager, ct.container_id, ct.mntns, check_id)
        return next((l for l in text().splitlines() if l.startswith(want)), None)

    try:
        for ct, ids in broken.items():
            for i in ids:
                try:
                    wait_for_line = harness.wait_for("the daemon's %s of %s" % (i, ct.label), lambda: line_of(ct, i), timeout=30)
                    log("daemon: %s" % wait_for_line)
                except Failure:
                    h.check.fail("%s: the daemon detects %s in mount namespace %d as %s/%s; its output:\n%s" % (ct.label, i, ct.mntns, ct.manager, ct.container_id, text()[-3000:]))
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    h.check.eq(p.returncode, 0, "the daemon exits 0 on SIGTERM")


# ---- known-broken setups


@case("ctr-host-dev")
def ctr_host_dev_case(h):
    """ctr run --rootfs --mount type=bind,src=/dev,dst=/dev,options=rbind:rw: the host's /dev
    (this case's imitation), its devpts and its ptys, over the task's own. Healthy inside;
    devpts-host-instance from the host and from the daemon, attributed containerd/<id>."""
    d = harness.Containerd(h)
    h.cleanups.append(d.stop)
    d.start()
    ct = h.start(harness.Ctr(h, "ctr-host-dev", d, ["--mount", "type=bind,src=/dev,dst=/dev,options=rbind:rw"]))
    expect(ct, host=["devpts-host-instance"])
    verify(h)
    verify_daemon(h, {ct: ["devpts-host-instance"]})


@case("ctr-devpts-no-gid")
def ctr_devpts_no_gid_case(h):
    """A containerd task whose /dev/pts was mounted without gid= (ctr's spec with gid=5 taken
    out): new ptys get their opener's group, not tty. Found inside, from the host and by the
    daemon, attributed containerd/<id>."""
    d = harness.Containerd(h)
    h.cleanups.append(d.stop)
    d.start()
    ct = h.start(harness.Ctr(h, "ctr-devpts-no-gid", d, spec=harness.ctr_devpts_without_gid))
    expect(ct, inside=["devpts-options-lost"], pty=dict(ok=True, uid=harness.USER_UID, gid=harness.USER_UID, mode="0620", by_name="same"))
    verify(h)
    verify_daemon(h, {ct: ["devpts-options-lost"]})


@case("runc-host-dev")
def runc_host_dev_case(h):
    """runc given the host's /dev by an rbind (after its own tmpfs /dev): the container's ptys
    are the host's. Inside, everything looks healthy (it is the host's healthy instance);
    from the host it is devpts-host-instance."""
    dev = {"destination": "/dev", "type": "bind", "source": "/dev", "options": ["rbind", "rw"]}
    expect(h.start(harness.OCIBundle(h, "runc-host-dev", mounts=[dev])), host=["devpts-host-instance"])
    verify(h)


@case("runc-foreign-ptmx")
def runc_foreign_ptmx_case(h):
    """A container (root with CAP_MKNOD, here made from the host's side) turns its /dev/ptmx
    into c 10:237, a device its own device cgroup forbids it to open. Never opened from the
    host: the probe looks at the node first (O_PATH), says "not-ptmx" and opens nothing, and
    ptmx-not-device is the finding, inside and from the host alike. A probe that opened it
    would report grantpt failing on whatever that device is."""
    ct = h.start(harness.OCIBundle(h, "runc-foreign-ptmx"))
    # (mknod -m cannot chmod a node there: a separate chmod.)
    run(["nsenter", "-t", str(ct.pid), "-m", "--", "sh", "-ec", "rm -f /dev/ptmx; mknod /dev/ptmx c 10 237; chmod 666 /dev/ptmx"])
    # Users inside meet the container's device cgroup: EPERM, whatever the mode.
    expect(ct, inside=["ptmx-not-device"], pty=dict(ok=False, step="open", error="EPERM"))
    verify(h)
    probe = report_from_host(h, ct).get("probe") or {}
    h.check.eq((probe.get("performed"), probe.get("reason"), probe.get("steps")), (False, "not-ptmx", []),
               "from the host: the probe opened nothing: %s" % json.dumps(probe, sort_keys=True))


@case("podman-host-dev")
def podman_host_dev_case(h):
    """podman run --privileged -v /dev:/dev: the host's /dev, its devpts and its ptys."""
    ct = harness.Podman(h, "podman-host-dev", ["--privileged", "-v", "/dev:/dev"])
    expect(h.start(ct), host=["devpts-host-instance"])
    verify(h)


@case("bwrap-host-dev")
def bwrap_host_dev_case(h):
    """bubblewrap as root with --dev-bind /dev /dev."""
    expect(h.start(harness.Bwrap(h, "bwrap-host-dev", host_dev=True)), host=["devpts-host-instance"], pty=dict(ok=True, gid=5, mode="0620", by_name="same"))
    verify(h)


@case("chroot-shared-dev")
def chroot_shared_dev_case(h):
    """A chroot's --rbind /dev left a peer of a shared /dev, then `mount -t devpts devpts
    /dev/pts` inside it: the new devpts (no gid=, mode=600) propagates onto the host's
    /dev/pts. The host, and everyone in it, now allocates from it: devpts-overmount with the
    propagation named, and devpts-options-lost for the top. The chroot sees the same."""
    ct = h.start(harness.Chroot(h, "chroot-shared-dev", shared=True))
    broken = ["devpts-options-lost", "devpts-overmount"]
    # The host also has the chroot's own stack (its bind, then the new devpts) on its mount
    # table; `--namespace PID` of the chroot's process judges what is under its root, as the
    # audit inside does.
    on_host = broken + ["devpts-overmount"]
    expect(ct, inside=broken, pty=dict(ok=True, uid=harness.USER_UID, gid=harness.USER_UID, mode="0600", by_name="same"))
    verify(h, host_expect=on_host)
    report = json.loads(ptsguard(h, "audit", "--json").stdout)
    for f in report.get("findings", []):
        if f["id"] == "devpts-overmount":
            log("host devpts-overmount on %s: remedy: %s" % ((f.get("evidence") or {}).get("mountpoint"), f.get("remedy")))
    over = [f for f in report.get("findings", []) if f["id"] == "devpts-overmount" and (f.get("evidence") or {}).get("mountpoint") == "/dev/pts"]
    if h.check.eq(len(over), 1, "one devpts-overmount on the host's /dev/pts"):
        remedy = over[0].get("remedy") or ""
        h.check.true("make-rslave" in remedy and ct.root + "/dev" in remedy, "the remedy for the host's /dev/pts names the propagation from the chroot's bind (--make-rslave %s/dev): %r" % (ct.root, remedy))


@case("userns-host-gid")
def userns_host_gid_case(h):
    """A user namespace mapping 0-65535 to 100000-165535 whose devpts was mounted by the host's
    root with gid=5: the host's tty group, which the namespace does not map. New slaves belong
    to the overflow group there: devpts-gid-mismatch, unmapped."""
    ct = harness.Unshare(h, "userns-host-gid", "newinstance,gid=5,mode=620,ptmxmode=666")
    expect(h.start(ct), inside=["devpts-gid-mismatch"], pty=dict(ok=True, uid=harness.USER_UID, gid=NOBODY, mode="0620", by_name="same"))
    verify(h)
    f = findings_with(report_inside(h, ct), "devpts-gid-mismatch")
    if f:
        h.check.eq((f[0].get("evidence") or {}).get("unmapped"), True, "inside: devpts-gid-mismatch evidence says unmapped")
    # The remedy, as a person would take it from the host's report: its command, run by the
    # host's root in the container's mount namespace and root. Then the container is healthy
    # and its ptys are in its own tty group.
    f = findings_with(report_from_host(h, ct), "devpts-gid-mismatch")
    if h.check.eq(len(f), 1, "the host's report of the container has devpts-gid-mismatch"):
        remedy = f[0].get("remedy") or ""
        log("remedy from the host: %s" % remedy)
        cmd = remedy.split(", run by the host's root")[0]
        m = re.fullmatch(r"mount -o remount,(\S+) /dev/pts", cmd)
        if h.check.true(cmd != remedy and m, "the remedy is a remount to run from the host: %r" % remedy):
            # mount(8) of the container's tree would run setuid to its shifted owner and refuse:
            # the same mount(2) call, made in the container's mount namespace and root.
            remount_in(ct.pid, "/dev/pts", m.group(1))
            healthy_after(h, ct, "the remedy's command")
            # Broken again as it was, then ptsguard's own repair from the host.
            remount_in(ct.pid, "/dev/pts", "gid=5")
            r = ptsguard(h, "repair", "--namespace", str(ct.pid))
            log("repair --namespace: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
            healthy_after(h, ct, "ptsguard repair --namespace")


@case("userns-nested")
def userns_nested_case(h):
    """A container in a container (unprivileged LXD or LXC nesting): a user namespace inside
    another, whose root mounted its devpts with gid=5, its own tty group. Healthy. Inside,
    mountinfo prints gid=165541 (the host's number) while /proc/self/gid_map numbers its outside
    ids as the outer namespace does ("0 65536 1024"): translated with that map alone, gid=
    would look unmapped (gentoo#14240). The namespace maps no nobody: the probe inside runs as
    its highest id, 1023."""
    ct = harness.NestedUserns(h, "userns-nested", "newinstance,gid=5,mode=620,ptmxmode=666")
    expect(h.start(ct))
    verify(h)
    probe_ran_inside_as(h, ct, 1023)


@case("userns-nested-outer-gid")
def userns_nested_outer_gid_case(h):
    """The same nesting, its devpts mounted by the outer container's root with gid=5: the
    outer's tty group (the host's 100005), which the inner namespace does not map. Its ptys
    belong to the overflow group there: devpts-gid-mismatch, seen as unmapped from the host;
    and the remedy's gid, as the host numbers the container's tty group, repairs it. Inside,
    the map numbers outside ids as the outer namespace does: the remedy's gid is the tty group
    as the outer numbers it (65541), for the outer's root to set, and that repairs it too."""
    ct = harness.NestedUserns(h, "userns-nested-outer-gid", None)
    h.start(ct)
    ct.mount_as_outer("newinstance,gid=5,mode=620,ptmxmode=666")
    expect(ct, inside=["devpts-gid-mismatch"], pty=dict(ok=True, uid=harness.USER_UID, gid=NOBODY, mode="0620", by_name="same"))
    verify(h)
    f = findings_with(report_inside(h, ct), "devpts-gid-mismatch")
    remedy = (f[0].get("remedy") or "") if f else ""
    log("remedy inside: %s" % remedy)
    m = re.match(r"mount -o remount,(\S+) /dev/pts, run in this mount namespace by the root of this user namespace's parent", remedy)
    if h.check.true(m and "gid=65541," in m.group(1) + ",", "inside: a remount with the tty group as the outer numbers it (65541), by the outer's root: %r" % remedy):
        ct.mount_as_outer(m.group(1), remount=True)
        healthy_after(h, ct, "the inside remedy's remount by the outer root")
        ct.mount_as_outer("gid=5,mode=620,ptmxmode=666", remount=True)  # broken again, for the host's remedy
    f = findings_with(report_from_host(h, ct), "devpts-gid-mismatch")
    if h.check.eq(len(f), 1, "the host's report of the nested container has devpts-gid-mismatch"):
        h.check.eq((f[0].get("evidence") or {}).get("unmapped"), True, "from the host: evidence says unmapped")
        remedy = f[0].get("remedy") or ""
        h.check.true("gid=165541," in remedy, "the remedy sets the container's tty group as the host numbers it (165541): %r" % remedy)
        remount_in(ct.pid, "/dev/pts", "gid=165541,mode=620,ptmxmode=666")
        healthy_after(h, ct, "the remedy's remount")


def remount_in(pid, path, options):
    """mount -o remount,OPTIONS PATH as the host's root in the mount namespace and root of pid."""
    code = ("import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = os.open('/proc/%d/ns/mnt', os.O_RDONLY)\n"
            "root = os.open('/proc/%d/root', os.O_RDONLY | os.O_DIRECTORY)\n"
            "if libc.setns(fd, 0x00020000) != 0: sys.exit('setns: %%s' %% os.strerror(ctypes.get_errno()))\n"
            "os.fchdir(root); os.chroot('.')\n"
            "if libc.mount(None, b'%s', None, 32, b'%s') != 0: sys.exit('mount: %%s' %% os.strerror(ctypes.get_errno()))\n"
            % (pid, pid, path, options))
    run([sys.executable, "-c", code])


def healthy_after(h, ct, what):
    check_ids(h, "after %s: audit inside" % what, report_inside(h, ct), [])
    r = run(ct.exec(["pty-probe"], user=ct.user_ids()), check=False)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    h.check.eq((res.get("ok"), res.get("gid")), (True, 5), "after %s: a pty inside is in the container's tty group 5 (%s)" % (what, r.stdout.strip()))


# ---- all of them at once


def text_blocks(text):
    """The text report of --all-namespaces: {mntns: (header, block text)} and the closing
    "N other namespaces: no findings" count (None when absent)."""
    blocks, rest = {}, None
    for part in re.split(r"(?m)^(?===+ mount namespace )", text):
        m = re.match(r"== mount namespace (\d+) \((.*)\) ==\n", part)
        if m:
            blocks[int(m.group(1))] = (m.group(2), part)
    m = re.search(r"(?m)^(\d+) other namespaces?: no findings$", text)
    if m:
        rest = int(m.group(1))
    return blocks, rest


@case("fleet")
def fleet_case(h):
    """One container of each runtime at once, healthy and broken side by side, as a container
    host has them: the JSON of every one as in its own case, and the text report a person reads
    first. Each broken container must have a block of its own that names its runtime and
    container, each finding with its remedy; the healthy ones only the closing count."""
    d = harness.Dockerd(h)
    h.cleanups.append(d.stop)
    d.start()
    host_dev = {"destination": "/dev", "type": "bind", "source": "/dev", "options": ["rbind", "rw"]}
    healthy = [
        # First: it unmounts the hybrid layout's unified cgroup in this namespace, which is
        # busy once nspawn runs.
        h.start(harness.Crun(h, "crun")),
        h.start(harness.OCIBundle(h, "runc")),
        h.start(harness.Podman(h, "podman")),
        h.start(harness.Docker(h, "docker", d)),
        h.start(harness.Lxc(h, "lxc")),
        h.start(harness.Lxc(h, "lxc-unprivileged", unprivileged=True)),
        h.start(harness.Nspawn(h, "nspawn")),
        h.start(harness.Nspawn(h, "nspawn-userns", userns=True)),
    ]
    for ct in healthy:
        expect(ct)
    uid = h.user["uid"]
    # Each broken container: its findings, and what its block says of running the remedies
    # (None: nothing to run; "nsenter": how to get inside; "repair": and that repair applies it).
    broken = {
        expect(h.start(harness.Bwrap(h, "bwrap")), inside=["devpts-options-lost"], pty=dict(ok=True, uid=uid, gid=uid, mode="0620", by_name="same")): (["devpts-options-lost"], None),
        expect(h.start(harness.OCIBundle(h, "runc-host-dev", mounts=[host_dev])), host=["devpts-host-instance"]): (["devpts-host-instance"], "nsenter"),
        expect(h.start(harness.Docker(h, "docker-host-dev", d, ["--privileged", "-v", "/dev:/dev"])), host=["devpts-host-instance"]): (["devpts-host-instance"], "nsenter"),
        expect(h.start(harness.Unshare(h, "userns-host-gid", "newinstance,gid=5,mode=620,ptmxmode=666", own_tree=True)), inside=["devpts-gid-mismatch"],
               pty=dict(ok=True, uid=harness.USER_UID, gid=NOBODY, mode="0620", by_name="same")): (["devpts-gid-mismatch"], "repair"),
    }
    verify(h)

    r = ptsguard(h, "audit", "--all-namespaces", "--no-color", timeout=120)
    log("---- audit --all-namespaces (exit %d) ----\n%s%s" % (r.returncode, r.stdout, r.stderr))
    blocks, rest = text_blocks(r.stdout)
    for ct, (ids, hint) in broken.items():
        if not h.check.true(ct.mntns in blocks, "%s: the text report has a block for mount namespace %d" % (ct.label, ct.mntns)):
            continue
        header, block = blocks[ct.mntns]
        if ct.manager:
            h.check.true(re.search(r"\b%s/%s" % (re.escape(ct.manager), re.escape((ct.container_id or "")[:12])), header),
                         "%s: its block's header names %s and the container (%r)" % (ct.label, ct.manager, header))
        hp = re.match(r"pid (\d+)", header)
        h.check.true(hp is not None and harness.pid_alive(int(hp.group(1))) and harness.mntns(int(hp.group(1))) == ct.mntns,
                     "%s: its block's header names a process of the container's namespace (%r)" % (ct.label, header))
        for i in ids:
            m = re.search(r"(?m)^  %s: .*\n    remedy: \S.*$" % re.escape(i), block)
            h.check.true(m is not None, "%s: its block says %s and what to do about it:\n%s" % (ct.label, i, block))
        if hp:
            pid = hp.group(1)
            # The hint pins what was listed: the namespace, its root and the process's start.
            said = ("repair" if re.search(r"ptsguard repair --namespace %s --target mntns:%d,root:\d+:\d+,start:\d+ applies" % (pid, ct.mntns), block)
                    else "nsenter" if "(nsenter -t %s -a -r -w)" % pid in block else None)
            h.check.eq(said, hint, "%s: what its block says of running the remedies:\n%s" % (ct.label, block))
    for ct in healthy:
        h.check.true(ct.mntns not in blocks, "%s (healthy): no block of its own in the text report" % ct.label)
    h.check.true(rest is not None and rest >= len(healthy), "the text report ends with the healthy rest counted (at least %d): %r" % (len(healthy), rest))
    # Prometheus: a series for each finding of each broken container, labelled with both.
    r = ptsguard(h, "audit", "--all-namespaces", "--format", "prometheus", timeout=120)
    ours = {ct.mntns: ct for ct in broken}
    log("---- audit --all-namespaces --format prometheus, the containers' findings ----\n%s" % "\n".join(
        line for line in r.stdout.splitlines() if line.startswith("ptsguard_finding{") and any('mntns="%d"' % n in line for n in ours)))
    for ct, (ids, _) in broken.items():
        for i in ids:
            want = re.compile(r'^ptsguard_finding\{check="%s",severity="\w+",mntns="%d",container="%s"\} 1$' % (
                re.escape(i), ct.mntns, re.escape(ct.manager + "/" + (ct.container_id or "")[:12]) if ct.manager else ""), re.M)
            h.check.true(want.search(r.stdout), "%s: prometheus has its %s series, labelled with its namespace and container" % (ct.label, i))
    j = ptsguard(h, "audit", "--all-namespaces", "--json", timeout=120)
    whole = parse_report(j, "audit --all-namespaces", h.check)
    want = worst_exit(whole, *[n.get("report") for n in whole.get("namespaces") or []])
    h.check.eq(r.returncode, want, "audit --all-namespaces (text): exit status, the worst over every namespace")


# --------------------------------------------------------------------------


def run_case(name, args):
    try:
        testlib.enter_private_namespace([os.path.abspath(__file__)] + sys.argv[1:], harness.NS_MARKER, harness.TOOLS, "mount namespaces, container runtimes", Failure)
    except Skip as e:
        log("SKIP %s: %s" % (name, e))
        return EXIT_SKIP
    except Failure as e:
        log("FAIL %s: %s" % (name, e))
        return 1
    h = Host(args)
    h.slot = list(CASES).index(name)
    t0 = time.monotonic()
    status = 1
    # The host's /dev/null, which runtimes meet as the stdio of what they start: a case leaves
    # it as it found it (crun chowns a container process's stdio to that process's user).
    null_fd = os.open("/dev/null", os.O_PATH)
    null_before = os.fstat(null_fd)
    try:
        h.setup()
        log("setup (tree cached, /dev, /run, users) in %.1fs" % (time.monotonic() - t0))
        CASES[name](h)
    except Exception as e:  # a broken setup or a crash is a failure, never a skip
        log("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        if not isinstance(e, Failure):
            traceback.print_exc(file=sys.stdout)
        for ct in h.containers:
            text = ct.log_text()
            if text:
                log("---- %s log ----\n%s" % (ct.label, text))
    else:
        status = 0
    finally:
        t1 = time.monotonic()
        h.cleanup()
        log("cleanup in %.1fs; case took %.1fs" % (time.monotonic() - t1, time.monotonic() - t0))
        null_after = os.fstat(null_fd)
        os.close(null_fd)
        ids = lambda st: (st.st_uid, st.st_gid, oct(st.st_mode))
        h.check.eq(ids(null_after), ids(null_before), "the host's /dev/null keeps its owner and mode")
    if h.check.failures:
        log("FAIL %s: %d assertion(s) failed:\n%s" % (name, len(h.check.failures), "\n".join("- " + f for f in h.check.failures)))
        return 1
    if status == 0:
        log("PASS %s" % name)
    return status


def main():
    required = ("--ptsguard", "--pty-probe", "--build-root")
    args, names = testlib.case_args(CASES, __file__, __doc__, [(flag, {}) for flag in required], required, single=True)
    return run_case(names[0], args)


if __name__ == "__main__":
    sys.exit(main())
