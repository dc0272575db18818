#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile input on the real kernel: what other users and other hosts can put
in front of ptsguard. One function per case; each runs as root in a private
mount namespace (tests/scenario/harness.py).

    hostile.py --ptsguard PATH --pty-probe PATH CASE [CASE...|all]
"""

import json
import os
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenario"))

from harness import SetupError, Skip, case_registry, cli_main, devnum, log  # noqa: E402

CASES, case = case_registry()
HEALTHY = "gid=5,mode=620"
SNAPSHOT_LIMIT = 256 << 20
# AddressSanitizer's shadow memory and quarantine multiply what a process holds; the bounds
# below stay bounds, scaled (tests/hostile/meson.build passes --sanitized for such builds).
if "--sanitized" in sys.argv:
    sys.argv.remove("--sanitized")
    os.environ["PTSGUARD_TEST_SANITIZED"] = "1"  # survives the re-exec into the namespace
RSS_SCALE = 4 if os.environ.get("PTSGUARD_TEST_SANITIZED") else 1


def run(argv, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, **kw)


@case("odd-mountpoints")
def odd_mountpoints(sc):
    """Spaces, tabs, newlines, backslashes and a 4,000-byte path survive mountinfo escaping,
    the report and a snapshot round trip byte for byte."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    base = sc.scratch_dir("odd")
    names = ["with space", "tab\there", "new\nline", "back\\slash", "all \t\n\\ of them"]
    deep = os.path.join(base, *(["d" * 250] * 16))  # about 4,000 bytes below base
    paths = [os.path.join(base, n) for n in names] + [deep]
    for p in paths:
        os.makedirs(p, exist_ok=True)
        sc.mount_devpts(p)  # no options: devpts-foreign-defaults, one per path
    sc.check.true(len(deep) > 3900, "the deep path is %d bytes" % len(deep))
    report = sc.audit()
    sc.expect(report, ["devpts-foreign-defaults"] * len(paths))
    got = sorted(f["evidence"]["mountpoint"] for f in report["findings"])
    sc.check.eq(got, sorted(paths), "mountpoints reported exactly as created")
    text = sc.run_ptsguard("audit", "--no-color")
    sc.check.true(text.returncode == 0 and "with space" in text.stdout, "text output:\n" + text.stdout[-2000:])


@case("user-tree-swap")
def user_tree_swap(sc):
    """devpts under a directory a user owns, /dev/ptmx pointing into it: the user swaps the tree
    for a symlink to another instance between plan and act. Repair must refuse and leave both
    instances' options as they were."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", "gid=5,mode=620,ptmxmode=000")  # the victim
    victim_before = option_line("/dev/pts")
    owned = sc.scratch_dir("home")
    os.chown(owned, 1000, 1000)
    d = os.path.join(owned, "d")
    os.makedirs(os.path.join(d, "pts"))
    os.chown(d, 1000, 1000)
    sc.mount_devpts(os.path.join(d, "pts"), "mode=620,ptmxmode=666")  # lost gid: repairable
    os.symlink(os.path.join(d, "pts", "ptmx"), "/dev/ptmx")
    report = sc.audit()
    # /dev/ptmx allocates on the user's instance while ptsname() names /dev/pts/N on the
    # victim's: ptmx-foreign-instance, which no repair touches.
    sc.expect(report, ["devpts-options-lost", "ptmx-foreign-instance"])

    # The pause between plan and act is a test hook (meson option test-hooks).
    if os.environ.get("PTSGUARD_TEST_HOOKS") != "1":
        raise Skip("needs a build with -Dtest-hooks=true (the pause between plan and act)")
    p = subprocess.Popen(
        [sc.ptsguard, "repair", "--json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PTSGUARD_TEST_PAUSE_BEFORE_ACT="1"),
    )
    wait_for_pause(p)
    # The user's move: the tree goes away, a symlink to the victim's directory takes its place.
    user = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
    sc.sh(*user, "mv", d, d + ".moved")
    sc.sh(*user, "ln", "-s", "/dev", d)
    out, err = p.communicate("\n", timeout=60)
    rep = json.loads(out)
    sc.check_schema(rep, "repair --json")
    actions = [(a["check"], a["result"]) for a in rep["actions"]]
    sc.check.eq(
        sorted(actions),
        [("devpts-options-lost", "refused"), ("ptmx-foreign-instance", "refused")],
        "the remount is refused (and the foreign instance left to a person):\n" + out,
    )
    sc.check.eq(option_line("/dev/pts"), victim_before, "the victim instance is untouched")
    sc.check.true("gid=" not in option_line(d + ".moved/pts"), "the moved instance is untouched too")


def wait_for_pause(p):
    line = p.stderr.readline()
    if "paused before acting" not in line:
        p.kill()
        raise SetupError("repair did not pause: %r %s" % (line, p.stderr.read()))


def option_line(mountpoint):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4].encode().decode("unicode_escape") == mountpoint:
                top = line
        return top.split(" - ")[1].split()[2]


def huge_mountinfo(lines):
    chunks = ["1 0 0:1 / / rw - ext4 /dev/vda rw\n", "2 1 0:5 / /dev rw - devtmpfs udev rw\n",
              "3 2 0:26 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n"]
    chunks += ["%d 1 0:%d / /srv/m%d rw,relatime - tmpfs tmpfs rw\n" % (i, i % 1000 + 100, i) for i in range(10, lines)]
    return "".join(chunks)


def snapshot_json(mountinfo, **extra):
    s = {"schema": "ptsguard.snapshot/1", "hostname": "hostile",
         "kernel": {"release": "6.1.0", "user_namespaces_max": 0, "pty_max": 4096, "pty_reserve": 1024, "pty_nr": 0},
         "tty_gid": 5, "mountinfo": mountinfo, "fstab": None,
         "nodes": [{"path": "/dev/ptmx", "type": "char", "mode": "0666", "uid": 0, "gid": 0, "rdev": "5:2",
                    "dev": "0:5", "target": None}],
         "holders": [], "setuid_helpers": []}
    s.update(extra)
    return json.dumps(s)


def max_rss_of(argv, **kw):
    """Run argv, return (CompletedProcess, its peak RSS in KiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = run(argv, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return r, max(after, before)


@case("snapshot-million-mounts")
def snapshot_million_mounts(sc):
    """A snapshot from a host with a million mounts: audited, in bounded memory."""
    sc.setup_base()
    path = os.path.join(sc.scratch_dir("big"), "million.json")
    with open(path, "w") as f:
        f.write(snapshot_json(huge_mountinfo(1000000)))
    size = os.path.getsize(path)
    r, rss = max_rss_of([sc.ptsguard, "audit", "--snapshot", path, "--json"])
    log("1,000,000-line snapshot: %d MiB file, exit %d, peak RSS %d MiB" % (size >> 20, r.returncode, rss >> 10))
    sc.check.eq(r.returncode, 0, "a healthy million-mount snapshot audits clean: %s" % r.stderr[-500:])
    if r.returncode == 0:
        report = json.loads(r.stdout)
        sc.check_schema(report, "audit of the million-mount snapshot")
        sc.check.eq(report["findings"], [], "no findings")
    # bounded: a small multiple of the input, never an unbounded growth
    sc.check.true(rss < RSS_SCALE * (6 * (size >> 10) + 64 * 1024), "peak RSS %d KiB for a %d KiB snapshot" % (rss, size >> 10))


@case("snapshot-gigabyte")
def snapshot_gigabyte(sc):
    """A 1 GiB snapshot (a giant string) is refused with a clean error, by file and by pipe,
    without reading it all into memory."""
    sc.setup_base()
    path = os.path.join(sc.scratch_dir("giant"), "giant.json")
    with open(path, "w") as f:
        f.write('{"schema": "ptsguard.snapshot/1", "hostname": "')
    os.truncate(path, 1 << 30)  # sparse: a 1 GiB string that never ends
    r, rss = max_rss_of([sc.ptsguard, "audit", "--snapshot", path])
    sc.check.eq(r.returncode, 3, "exit 3 for a 1 GiB file")
    sc.check.true("larger than" in r.stderr and path in r.stderr, "names the file and the limit: " + r.stderr)
    sc.check.true(rss < RSS_SCALE * 64 * 1024, "refused before reading it (peak RSS %d KiB)" % rss)

    # Through a pipe the size is unknown: reading stops at the limit.
    feeder = subprocess.Popen([sys.executable, "-c", FEED_GIGABYTE], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    r, rss = max_rss_of([sc.ptsguard, "audit", "--snapshot", "-"], stdin=feeder.stdout)
    feeder.stdout.close()
    feeder.kill()
    feeder.wait()
    sc.check.eq(r.returncode, 3, "exit 3 for 1 GiB on standard input")
    sc.check.true("larger than" in r.stderr, "says why: " + r.stderr)
    sc.check.true(rss < RSS_SCALE * ((SNAPSHOT_LIMIT >> 10) * 2 + 64 * 1024), "bounded by the limit (peak RSS %d KiB)" % rss)


FEED_GIGABYTE = r"""
import sys
out = sys.stdout.buffer
out.write(b'{"hostname": "')
block = b"a" * (1 << 20)
for _ in range(1024):
    out.write(block)
"""


@case("fd-vanish")
def fd_vanish(sc):
    """Processes holding ptys on a covered instance come and go while the holder scan reads
    /proc/<pid>/fd: every audit must finish, find the long-lived holder, and never fail."""
    sc.setup_base()
    lower = sc.scratch_dir("lower")
    sc.mount_devpts(lower, HEALTHY)
    holder, _ = sc.hold(unprivileged=False, ptmx=os.path.join(lower, "ptmx"))
    # A churn of short-lived children that inherit the holder's fds: a parent that opens a pty on
    # the instance and forks children holding it, forever, until killed.
    churn = subprocess.Popen([sys.executable, "-c", CHURN, os.path.join(lower, "ptmx")], stdin=subprocess.PIPE)
    sc.helpers.append(churn)
    time.sleep(0.2)
    sc.sh("mount", "--move", lower, "/dev/pts")
    sc.mount_devpts("/dev/pts", HEALTHY)
    bad = []
    for i in range(60):
        r = sc.run_ptsguard("audit", "--json")
        if r.returncode != 2:
            bad.append((i, r.returncode, r.stderr[-300:]))
            continue
        report = json.loads(r.stdout)
        sc.check_schema(report, "audit --json during the churn")
        ids = {f["id"] for f in report["findings"]}
        if "devpts-orphan-in-use" not in ids:
            bad.append((i, "no orphan finding", ids))
    churn.send_signal(signal.SIGTERM)
    sc.check.eq(bad, [], "every audit during the churn exits 2 with devpts-orphan-in-use")


CHURN = r"""
import os, sys, time, signal
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
while True:
    pid = os.fork()
    if pid == 0:
        time.sleep(0.001)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@case("ten-thousand-slaves")
def ten_thousand_slaves(sc):
    """/dev/pts with 10,000 slaves made while gid= was missing: reported with a bounded list."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=600")
    with open("/proc/sys/kernel/pty/max") as f:
        old_max = int(f.read())
    with open("/proc/sys/kernel/pty/nr") as f:
        in_use = int(f.read())
    with open("/proc/sys/kernel/pty/reserve") as f:
        reserve = int(f.read())  # not available to instances mounted outside the initial namespace
    # Room for 10,000 more below pty-capacity's 90%: the reserve does not count for an
    # instance mounted outside the initial mount namespace, as this one is.
    need = in_use + reserve + 10000 * 10 // 9 + 200
    try:
        if old_max < need:
            with open("/proc/sys/kernel/pty/max", "w") as f:
                f.write(str(need))
        holder = subprocess.Popen(
            ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", sys.executable, "-c", HOLD_MANY, "10000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        sc.helpers.append(holder)
        line = holder.stdout.readline()
        if line.strip() != "10000":
            raise SetupError("could not allocate 10,000 ptys: %r" % line)
        sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")
        report = sc.audit()
        sc.expect(report, ["pty-slave-perms"])
        ev = report["findings"][0]["evidence"]
        sc.check.eq(ev["slaves_total"], 10000, "all 10,000 slaves counted")
        sc.check.eq(len(ev["slaves"]), 64, "the evidence lists a bounded number")
        holder.stdin.close()
        holder.wait(timeout=60)
    finally:
        if old_max < need:
            with open("/proc/sys/kernel/pty/max", "w") as f:
                f.write(str(old_max))


HOLD_MANY = r"""
import os, resource, sys
n = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds = [os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY) for _ in range(n)]
print(len(fds), flush=True)
sys.stdin.read()
"""


if __name__ == "__main__":
    sys.exit(cli_main(CASES, __file__, __doc__))
