#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ptsguard scenarios on the real kernel, one function per case.

    scenarios.py --ptsguard PATH --pty-probe PATH CASE [CASE...|all]
    scenarios.py --list
    scenarios.py --check-registered CASE...   (meson's list must match ours)

Each case runs as root in a private mount namespace of its own (see
harness.py) and asserts the exact set of findings of `ptsguard audit --json`,
the exit status, the evidence the case is about, and that auditing a snapshot
of the same state finds exactly the same. Exit 0 pass, 1 fail, 77 skip (not
root, or no mount namespaces here).
"""

import errno
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    subordinate_ids,
    userns_argv,
    OpenWatch,
    SetupError,
    Skip,
    TTY_GID,
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    devnum,
    expected_severity,
    log,
    mount_stack,
    other_namespace_masters,
    read_mountinfo,
    session_pty,
    user_reopens,
    case_registry,
    cli_main,
)

CASES, case = case_registry()

HEALTHY = "gid=5,mode=620"
NOBODY = 65534  # the allocation probe's user
REMEDY_620 = "mount -o remount,gid=5,mode=620 /dev/pts"
REMEDY_600 = "mount -o remount,gid=5,mode=600 /dev/pts"


def pts_device():
    return devnum(os.stat("/dev/pts").st_dev)


def top_mount(mountpoint):
    stack = mount_stack(mountpoint)
    if not stack:
        raise SetupError("nothing is mounted at %s" % mountpoint)
    return stack[-1]


def project(items, keys):
    """Only the given keys of each dict: assert what the contract fixes, no more."""
    if not isinstance(items, list):
        return items
    return [{k: it.get(k) for k in keys} if isinstance(it, dict) else it for it in items]


def check_instance(sc, report, device, options=None, mounts=None):
    inst = sc.instance(report, device)
    if inst is None:
        return None
    if options is not None:
        sc.check.eq(inst.get("options"), options, "options of instance %s" % device)
    if mounts is not None:
        sc.check.eq(
            project(inst.get("mounts"), ("mount_id", "parent_id", "mountpoint", "covered", "covered_by")),
            mounts,
            "mounts of instance %s" % device,
        )
    return inst


def instance_mount(m, covered_by=None):
    return {
        "mount_id": m["mount_id"],
        "parent_id": m["parent_id"],
        "mountpoint": m["mountpoint"],
        "covered": covered_by is not None,
        "covered_by": covered_by,
    }


def check_options_evidence(sc, f, gid, mode, remedy):
    if f is None:
        return
    ev = f.get("evidence", {})
    sc.check.eq(
        {k: ev.get(k) for k in ("mountpoint", "gid", "mode")},
        {"mountpoint": "/dev/pts", "gid": gid, "mode": mode},
        "%s evidence" % f.get("id"),
    )
    top = top_mount("/dev/pts")
    sc.check.eq(f.get("devices"), [top["device"]], "%s devices" % f.get("id"))
    sc.check.eq(f.get("mount_ids"), [top["mount_id"]], "%s mount_ids" % f.get("id"))
    if isinstance(remedy, str):
        sc.check.eq(f.get("remedy"), remedy, "%s remedy" % f.get("id"))
    elif remedy is not None:
        sc.check.true(
            remedy.fullmatch(f.get("remedy") or "") is not None,
            "%s remedy %r does not match %r" % (f.get("id"), f.get("remedy"), remedy.pattern),
        )


def check_stack_evidence(sc, f, stack):
    """devpts-overmount evidence: the stack at /dev/pts, bottom to top."""
    if f is None:
        return
    ev = f.get("evidence", {})
    sc.check.eq(ev.get("mountpoint"), "/dev/pts", "devpts-overmount evidence mountpoint")
    want = [{"mount_id": m["mount_id"], "device": m["device"], "fstype": "devpts"} for m in stack]
    got = project(ev.get("stack"), ("mount_id", "device", "fstype"))
    sc.check.eq(got, want, "devpts-overmount evidence stack (bottom to top)")
    for i, entry in enumerate(ev.get("stack") or []):
        opts = entry.get("options") if isinstance(entry, dict) else None
        sc.check.true(
            isinstance(opts, str) and "gid=5" in opts and "mode=620" in opts,
            "devpts-overmount stack[%d].options should carry gid=5,mode=620: %r" % (i, opts),
        )
    sc.check.eq(
        sorted(f.get("mount_ids") or []),
        sorted(m["mount_id"] for m in stack),
        "devpts-overmount mount_ids",
    )


# ---------------------------------------------------------------------------
# Healthy hosts


@case("healthy-char")
def healthy_char(sc):
    sc.setup_base(ptmx="char")
    sc.mount_devpts("/dev/pts", HEALTHY)
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq((report.get("ptmx") or {}).get("kind"), "char", "ptmx.kind")
    sc.check.eq((report.get("ptmx") or {}).get("rdev"), "5:2", "ptmx.rdev")
    sc.check.eq((report.get("ptmx") or {}).get("mode"), "0666", "ptmx.mode")
    sc.expect_serving(report, dev)
    check_instance(
        sc,
        report,
        dev,
        options={"gid": 5, "mode": "0620", "ptmxmode": "0000", "max": None},
        mounts=[instance_mount(top_mount("/dev/pts"))],
    )
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620", dev=dev)
    # --no-probe: the report (and a snapshot) say the probe was skipped, and why.
    for argv, what in ((["audit", "--json", "--no-probe"], "audit --no-probe"), (["snapshot", "--no-probe"], "snapshot --no-probe")):
        r = sc.run_ptsguard(*argv)
        probe = (sc._parse_report(r, what).get("probe") or {})
        sc.check.eq((probe.get("performed"), probe.get("reason")), (False, "disabled"), "%s: probe %s" % (what, probe))


@case("healthy-symlink")
def healthy_symlink(sc):
    sc.setup_base(ptmx="symlink")
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=0666")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq((report.get("ptmx") or {}).get("kind"), "symlink", "ptmx.kind")
    sc.check.eq((report.get("ptmx") or {}).get("target"), "pts/ptmx", "ptmx.target")
    sc.expect_serving(report, dev)
    check_instance(sc, report, dev, options={"gid": 5, "mode": "0620", "ptmxmode": "0666", "max": None})
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620", dev=dev)


@case("healthy-bind")
def healthy_bind(sc):
    # LXC and pbuilder: /dev/pts/ptmx bind-mounted onto /dev/ptmx.
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=0666")
    open("/dev/ptmx", "w").close()
    sc.sh("mount", "--bind", "/dev/pts/ptmx", "/dev/ptmx")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq((report.get("ptmx") or {}).get("kind"), "bind", "ptmx.kind")
    # The serving mount is the instance's root, where its slaves are (the bind at /dev/ptmx
    # reaches the same instance but holds no slave).
    sc.expect_serving(report, dev)
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620", dev=dev)


@case("ptmx-bind-host-node")
def ptmx_bind_host_node(sc):
    """A sandbox's /dev/ptmx bound from the host's /dev/ptmx (a char node beside the host's own
    devpts), with a devpts of its own at /dev/pts: since 4.7 the kernel looks for pts beside the
    node within the bind's own mount, and every open fails with ENOENT. The remedy, run as
    printed, links pts/ptmx instead. The healthy control is healthy-bind (a bind of the
    instance's own pts/ptmx)."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    host = sc.scratch_dir("host-dev")
    os.makedirs(os.path.join(host, "pts"), exist_ok=True)
    sc.sh("mount", "-t", "devpts", "-o", "newinstance,gid=5,mode=620,ptmxmode=0666", "devpts", os.path.join(host, "pts"))
    sc.mknod_ptmx(path=os.path.join(host, "ptmx"))
    open("/dev/ptmx", "w").close()
    sc.sh("mount", "--bind", os.path.join(host, "ptmx"), "/dev/ptmx")
    res = sc.probe()
    sc.check.eq((res.get("ok"), res.get("step"), res.get("error")), (False, "open", "ENOENT"),
                "a user's open of the bound node fails with ENOENT (%s)" % res)
    report = sc.audit()
    sc.expect(report, ["ptmx-bind-no-instance"])
    sc.check.eq((report.get("ptmx") or {}).get("serving_mount_id"), None, "the report names no serving instance")
    f = sc.finding(report, "ptmx-bind-no-instance") or {}
    sc.check.eq((f.get("evidence") or {}).get("confirmed_by_probe"), True, "the probe confirms it")
    command = (f.get("remedy") or "").split(" (or ")[0]
    sc.check.true(command.startswith("umount /dev/ptmx && rm -f /dev/ptmx && ln -s pts/ptmx /dev/ptmx"),
                  "the remedy links pts/ptmx: %r" % command)
    sc.sh("sh", "-c", command)
    report = sc.audit()
    sc.expect(report, [])
    res = sc.probe()
    sc.check.eq(res.get("ok"), True, "after the remedy a user gets a pty (%s)" % res)


@case("healthy-mode600")
def healthy_mode600(sc):
    # systemd 258's default.
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=5,mode=600")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, [])
    sc.expect_serving(report, dev)
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0600", dev=dev)


@case("healthy-mode600-held")
def healthy_mode600_held(sc):
    # On a mode=600 instance a user's open pty is 0600 group tty: correct,
    # not a pty-slave-perms finding.
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=5,mode=600")
    dev = pts_device()
    _, held = sc.hold(unprivileged=True)
    sc.expect_probe(held, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0600", dev=dev)
    report = sc.audit()
    sc.expect(report, [])
    sc.expect_serving(report, dev)


@case("fstab-healthy")
def fstab_healthy(sc):
    sc.setup_base(fstab="# static file system information\ndevpts /dev/pts devpts gid=5,mode=620 0 0\n")
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, [])
    sc.expect_serving(report, pts_device())


# ---------------------------------------------------------------------------
# Options of the serving instance


@case("options-lost-nogid")
def options_lost_nogid(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=620")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, ["devpts-options-lost"])
    check_options_evidence(sc, sc.finding(report, "devpts-options-lost"), None, "0620", REMEDY_620)
    sc.expect_serving(report, dev)
    res = sc.probe()
    # Without gid= a slave gets its creator's group.
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=UNPRIVILEGED_GID, mode="0620", dev=dev)


@case("options-lost-nogid-mode600")
def options_lost_nogid_mode600(sc):
    # The kernel's defaults (what this test host's own /dev/pts has): mode 600
    # is healthy, so the remedy keeps it and only adds the group.
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=600")
    report = sc.audit()
    sc.expect(report, ["devpts-options-lost"])
    check_options_evidence(sc, sc.finding(report, "devpts-options-lost"), None, "0600", REMEDY_600)
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=UNPRIVILEGED_GID, mode="0600")


@case("options-lost-mode644")
def options_lost_mode644(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=5,mode=644")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, ["devpts-options-lost"])
    check_options_evidence(sc, sc.finding(report, "devpts-options-lost"), 5, "0644", REMEDY_620)
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0644", dev=dev)


@case("gid-mismatch")
def gid_mismatch(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=100,mode=620")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, ["devpts-gid-mismatch"])
    # Setting the group alone is enough here: mount(8) keeps the other options.
    remedy = re.compile(r"mount -o remount,gid=5(,mode=620)? /dev/pts")
    check_options_evidence(sc, sc.finding(report, "devpts-gid-mismatch"), 100, "0620", remedy)
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=100, mode="0620", dev=dev)


def bind_group_file(text):
    """Bind a group database over /etc/group (in this namespace only), before setup_base(), so
    that a --daemon run's daemon reads it too."""
    import tempfile

    d = tempfile.mkdtemp(prefix="ptsguard-group-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", d], check=True)
    path = os.path.join(d, "group")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    subprocess.run(["mount", "--bind", path, "/etc/group"], check=True)
    return path


@case("tty-group-members")
def tty_group_members(sc):
    """A user put into tty (old advice for mosh, screen, write) can write to every terminal of
    mode 620, mesg n or not: shown by writing to another user's held slave. Reported as a
    warning naming the member, as info for a system account; the remedy, run as printed,
    removes them, and the audit is quiet again."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    with open("/etc/group") as f:
        group = f.read()
    with open("/etc/passwd") as f:
        passwd = f.read()
    group = re.sub(r"^tty:([^:]*):5:.*$", r"tty:\1:5:ptsmember,backup", group, flags=re.M)
    passwd += "ptsmember:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (UNPRIVILEGED_UID + 1, UNPRIVILEGED_GID)
    etc = sc.scratch_dir("etc")
    for name, text in (("group", group), ("passwd", passwd)):
        with open(os.path.join(etc, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(etc, name), 0o644)
    sc.sh("mount", "--bind", os.path.join(etc, "group"), "/etc/group")
    sc.sh("mount", "--bind", os.path.join(etc, "passwd"), "/etc/passwd")
    # Someone else's session, mesg n (mode 600 would be mesg n; 620 is what devpts gives).
    _, held = sc.hold(unprivileged=True)
    slave = "/dev/pts/%d" % held["index"]
    r = subprocess.run(["setpriv", "--reuid=%d" % (UNPRIVILEGED_UID + 1), "--regid=%d" % UNPRIVILEGED_GID, "--init-groups",
                        "sh", "-c", "printf x > " + slave], stdin=sc.null, capture_output=True, text=True)
    sc.check.eq(r.returncode, 0, "a member of tty writes to another user's terminal: %s" % r.stderr.strip())
    report = sc.audit()
    sc.expect(report, ["tty-group-members"], {"tty-group-members": "warning"})
    f = sc.finding(report, "tty-group-members") or {}
    members = (f.get("evidence") or {}).get("members") or []
    sc.check.eq([(m.get("name"), m.get("login_user")) for m in members], [("ptsmember", True), ("backup", False)],
                "the members, the login user told from the system account")
    sc.check.eq(f.get("severity"), "warning", "a login user in tty is a warning")
    # gpasswd renames its files into place: over a bind mount it cannot, so the member list is
    # edited as it would: the remedy's users removed.
    command = (f.get("remedy") or "").split(" (")[0]
    sc.check.eq(command, "gpasswd -d ptsmember tty && gpasswd -d backup tty", "the remedy removes each member")
    with open(os.path.join(etc, "group"), "w") as g:
        g.write(re.sub(r"^tty:([^:]*):5:.*$", r"tty:\1:5:", group, flags=re.M))
    report = sc.audit()
    sc.expect(report, [])


@case("tty-group-large")
def tty_group_large(sc):
    # Group tty is gid 7 with 600 members (about 6 KB, more than a 4 KiB getgrnam_r() buffer).
    # It once read as "no tty group", so gid 5: devpts-gid-mismatch on a healthy gid=7 instance,
    # and repair remounted with gid=5.
    members = ",".join("member%04d" % i for i in range(600))
    path = bind_group_file("root:x:0:\nnogroup:x:65534:\ntty:x:7:%s\n" % members)
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=7,mode=620")
    dev = pts_device()
    report = sc.audit()
    sc.check.eq((report.get("host") or {}).get("tty_gid"), 7, "host.tty_gid of the report")
    # Its 600 members (no user database entry: not known as login users) are a fact, told in
    # bounded words: the evidence lists 64 and counts them all, the remedy names 8.
    sc.expect(report, ["tty-group-members"])
    f = sc.finding(report, "tty-group-members") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((f.get("severity"), ev.get("members_total"), len(ev.get("members") or []), ev.get("login_users")),
                ("info", 600, 64, 0), "tty-group-members, bounded")
    sc.check.true(len(f.get("remedy") or "") < 600, "the remedy stays short: %d bytes" % len(f.get("remedy") or ""))
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=7, mode="0620", dev=dev)

    # An entry no buffer may hold (over 1 MiB): an error, never the fallback gid 5.
    with open(path, "w") as f:
        f.write("root:x:0:\ntty:x:7:%s\n" % ",".join("member%07d" % i for i in range(100000)))
    r = sc.run_ptsguard("audit", "--json")
    sc.check.eq(r.returncode, 3, "audit with an unreadable tty group: exit status (stdout %r)" % r.stdout[:200])
    sc.check.true("tty" in r.stderr and "group" in r.stderr, "the error names the tty group: %r" % r.stderr)


# ---------------------------------------------------------------------------
# Stacks


def check_stack_picture(sc, stack, holders):
    """The text report's picture of the stack at /dev/pts (stack bottom to top, its top serving;
    holders: the lines under each layer, or None), live and from the snapshot sc.audit() took,
    the same, in printable ASCII."""
    lines = ["    stack at /dev/pts, bottom to top:"]
    for i, m in enumerate(stack):
        top = i == len(stack) - 1
        lines.append(
            "      %d mount %d %s %s %s [%s]%s"
            % (i + 1, m["mount_id"], m["fstype"], m["device"], m["super_options"],
               "reachable" if top else "covered", " <- /dev/ptmx" if top else "")
        )
        if holders[i]:
            lines.append("          " + holders[i])
    want = "\n".join(lines) + "\n"
    live = sc.run_ptsguard("audit", "--no-color")
    offline = sc.run_ptsguard("audit", "--snapshot", os.path.join(sc.workdir, "snapshot.json"), "--no-color")
    for what, r in (("live", live), ("audit --snapshot", offline)):
        sc.check.true(want in r.stdout, "the %s text report draws the stack:\n%s\nwanted:\n%s" % (what, r.stdout, want))
        sc.check.eq(r.stdout.count("stack at "), 1, "pictures in the %s text report" % what)
        sc.check.true(all(c == "\n" or " " <= c <= "~" for c in r.stdout),
                      "the %s text report is printable ASCII:\n%r" % (what, r.stdout))


@case("snapshot-redact")
def snapshot_redact(sc):
    """snapshot --redact, for a public bug report: the CentOS 6 stack with a pty held on the
    covered instance (its holder's process name in the snapshot), a user in the tty group and an
    NFS line in fstab. Redacted, none of those names is left anywhere in the file, each is a
    stable placeholder, and the snapshot audits to the same findings as the one not redacted.
    Both say when and by which ptsguard they were taken, and audit --snapshot says so first."""
    fstab = "# static file system information\nfiler.example.internal:/export/home /home nfs rw,hard 0 0\n"
    sc.setup_base(fstab=fstab)
    lower = sc.scratch_dir("lower-pts")
    sc.mount_devpts(lower, HEALTHY)
    # A holder, whose process name is the snapshot's to hide.
    sc.hold(unprivileged=False, ptmx=os.path.join(lower, "ptmx"))
    sc.sh("mount", "--move", lower, "/dev/pts")
    sc.mount_devpts("/dev/pts", HEALTHY)
    with open("/etc/group") as f:
        group = re.sub(r"^tty:([^:]*):5:.*$", r"tty:\1:5:alicesecretuser", f.read(), flags=re.M)
    sc.bind_file("/etc/group", group)
    plain, redacted = os.path.join(sc.workdir, "plain.json"), os.path.join(sc.workdir, "redacted.json")
    for path, extra in ((plain, []), (redacted, ["--redact"])):
        r = sc.run_ptsguard("snapshot", *extra, "--output", path)
        sc.check.eq(r.returncode, 0, "snapshot %s: exit status (%s)" % (" ".join(extra), r.stderr.strip()))
    with open(plain) as f:
        plain_text = f.read()
    with open(redacted) as f:
        text = f.read()
    for secret in ("pty-probe", "alicesecretuser", "filer.example.internal", os.uname().nodename):
        sc.check.true(secret in plain_text, "the plain snapshot holds %r" % secret)
        sc.check.true(secret not in text, "the redacted snapshot has no %r" % secret)
    doc = json.loads(text)
    sc.check_schema(doc, "a redacted snapshot", snapshot=True)
    sc.check.eq(doc.get("hostname"), "host", "the host name's placeholder")
    sc.check.eq(sorted({h.get("comm") for h in doc.get("holders") or []}), ["process-1"], "the holder's placeholder")
    sc.check.eq([m.get("name") for m in doc.get("tty_members") or []], ["user-1"], "the member's placeholder")
    sc.check.true("server-1:" not in doc.get("fstab", "") and "server-1 /home nfs" in doc.get("fstab", ""),
                  "the NFS server's placeholder in fstab: %r" % doc.get("fstab"))
    sc.check.true(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", doc.get("captured_at") or "") is not None,
                  "captured_at: %r" % doc.get("captured_at"))
    sc.check.eq((doc.get("generator") or {}).get("name"), "ptsguard", "the generator")
    audits = []
    for path in (plain, redacted):
        r = sc.run_ptsguard("audit", "--snapshot", path, "--json")
        audits.append(sorted(f["id"] for f in json.loads(r.stdout)["findings"]))
    sc.check.eq(audits[1], audits[0], "the redacted snapshot audits as the plain one")
    sc.check.true("devpts-orphan-in-use" in audits[0], "the stack's held pty is among them: %s" % audits[0])
    text_report = sc.run_ptsguard("audit", "--snapshot", redacted, "--no-color").stdout
    sc.check.true(re.search(r"^ptsguard audit of host \(.*, snapshot captured \S+Z by ptsguard ", text_report, re.M) is not None,
                  "the header says when and by what: %r" % text_report[:300])


@case("centos6-stack")
def centos6_stack(sc):
    sc.setup_base()
    # The initramfs instance, with a pty held open on it...
    initramfs_pts = sc.scratch_dir("initramfs-pts")
    sc.mount_devpts(initramfs_pts, HEALTHY)
    lower_dev = devnum(os.stat(initramfs_pts).st_dev)
    lower_holder, lower_pty = sc.hold(unprivileged=False, ptmx=os.path.join(initramfs_pts, "ptmx"))
    # ...moved to /dev/pts, then `mount -a` mounts a second one on top.
    sc.sh("mount", "--move", initramfs_pts, "/dev/pts")
    sc.mount_devpts("/dev/pts", HEALTHY)
    upper_dev = pts_device()
    _, upper_pty = sc.hold(unprivileged=False)

    stack = mount_stack("/dev/pts")
    if [m["device"] for m in stack] != [lower_dev, upper_dev] or lower_dev == upper_dev:
        raise SetupError("unexpected stack at /dev/pts: %s" % stack)
    if (lower_pty["dev"], lower_pty["index"]) != (lower_dev, 0) or (
        upper_pty["dev"],
        upper_pty["index"],
    ) != (upper_dev, 0):
        raise SetupError("the held ptys are not index 0 on each instance: %s %s" % (lower_pty, upper_pty))

    report = sc.audit()
    sc.expect(report, ["devpts-orphan-in-use", "devpts-overmount"])

    orphan = sc.finding(report, "devpts-orphan-in-use")
    if orphan is not None:
        sc.check.eq(
            project(orphan.get("evidence", {}).get("holders"), ("pid", "comm", "index", "colliding_index")),
            [{"pid": lower_holder.pid, "comm": "pty-probe", "index": 0, "colliding_index": 0}],
            "devpts-orphan-in-use evidence holders",
        )
        sc.check.eq(orphan.get("devices"), [lower_dev], "devpts-orphan-in-use devices")
    check_stack_evidence(sc, sc.finding(report, "devpts-overmount"), stack)

    sc.expect_serving(report, upper_dev)
    lower = check_instance(
        sc,
        report,
        lower_dev,
        mounts=[instance_mount(stack[0], covered_by=stack[1]["mount_id"])],
    )
    if lower is not None:
        sc.check.true(
            {"pid": lower_holder.pid, "comm": "pty-probe", "index": 0}
            in project(lower.get("holders"), ("pid", "comm", "index")),
            "the covered instance's holders should list pid %d index 0: %s"
            % (lower_holder.pid, lower.get("holders")),
        )
    check_instance(sc, report, upper_dev, mounts=[instance_mount(stack[1])])
    check_stack_picture(sc, stack, ["held by pid %d (pty-probe) pts/0" % lower_holder.pid, None])


@case("boot-centos6-recipe")
def boot_centos6_recipe(sc):
    """The CentOS 6 recipe end to end: the initramfs hook's real record (initramfs-record) sees
    the initramfs devpts and a root fstab that mounts devpts again; after "switch-root" the
    fstab mount lands on top; the audit names the covered instance as born in the initramfs and
    says the prediction came true."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    initramfs_dev = pts_device()
    sc.mount("tmpfs", "/run", "mode=755")
    newroot = sc.scratch_dir("sysroot")
    os.makedirs(os.path.join(newroot, "etc"))
    os.makedirs(os.path.join(newroot, "dev"))  # switch_root moves /dev there
    with open(os.path.join(newroot, "etc", "fstab"), "w") as f:
        f.write("UUID=0a1b / ext4 defaults 0 1\ndevpts /dev/pts devpts gid=5,mode=620 0 0\n")
    r = sc.run_ptsguard("initramfs-record", "--newroot", newroot, "--phase", "pre-pivot")
    if r.returncode != 0:
        raise SetupError("initramfs-record failed (%d): %s" % (r.returncode, r.stderr))
    with open("/run/ptsguard/initramfs.json") as f:
        record = json.load(f)
    sc.check.eq(record["prediction"]["double_mount"], True, "the hook predicts the second mount")

    # mount -a in the new root
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, ["devpts-overmount"])
    f = sc.finding(report, "devpts-overmount")
    if f is not None:
        stack = f["evidence"]["stack"]
        sc.check.eq([m.get("origin") for m in stack], ["initramfs", None], "origin of each mount in the stack")
        sc.check.eq(stack[0]["device"], initramfs_dev, "the bottom is the initramfs instance")
        sc.check.true("initramfs" in f["summary"], "the summary says so: " + f["summary"])
    boot = report.get("boot") or {}
    sc.check.eq(boot.get("initramfs_record"), True, "report.boot.initramfs_record")
    sc.check.eq(boot.get("prediction_came_true"), True, "report.boot.prediction_came_true")


@case("stack-audit-unprivileged")
def stack_audit_unprivileged(sc):
    """A non-root audit cannot see root's fds: no false all-clear, the gap is reported."""
    sc.setup_base()
    lower = sc.scratch_dir("lower-pts")
    sc.mount_devpts(lower, HEALTHY)
    sc.hold(unprivileged=False, ptmx=os.path.join(lower, "ptmx"))
    sc.sh("mount", "--move", lower, "/dev/pts")
    sc.mount_devpts("/dev/pts", HEALTHY)
    # a copy the user can execute whatever the permissions along the build directory's path
    binary = os.path.join(sc.workdir, "ptsguard")
    shutil.copyfile(sc.ptsguard, binary)
    os.chmod(binary, 0o755)
    as_user = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", binary, "audit"]
    r = subprocess.run(as_user + ["--json"], stdin=sc.null, capture_output=True, text=True, timeout=30)
    report = json.loads(r.stdout)
    sc.check_schema(report, "non-root audit --json")
    ids = sorted(f["id"] for f in report["findings"])
    sc.check.eq(ids, ["devpts-overmount"], "a non-root audit sees the stack but not root's holders")
    scan = report.get("holders_scan", {})
    sc.check.true(scan.get("performed") is True, "holders were looked for: %s" % scan)
    sc.check.true(scan.get("processes_skipped", 0) > 0, "skipped processes are counted: %s" % scan)
    text = subprocess.run(as_user + ["--no-color"], stdin=sc.null, capture_output=True, text=True, timeout=30)
    sc.check.true("could not be inspected" in text.stdout, "the text report says so:\n" + text.stdout)
    # Nor can it become another user: no allocation probe, and the report says why.
    probe = report.get("probe") or {}
    sc.check.eq((probe.get("performed"), probe.get("reason"), probe.get("steps")), (False, "not-root", []),
                "the probe of a non-root audit: %s" % probe)
    sc.check.true("allocation probe: not performed: not root" in text.stdout, "the text report says so:\n" + text.stdout)
    # root sees the holder
    root = sc.audit()
    sc.expect(root, ["devpts-orphan-in-use", "devpts-overmount"])
    sc.check.eq(root["holders_scan"]["processes_skipped"], 0, "root skips no process")


@case("stack-orphans-via-dev-ptmx")
def stack_orphans_via_dev_ptmx(sc):
    # The everyday route: ptys allocated through the /dev/ptmx char node
    # (whose master fds live on /dev, not on devpts), then a second devpts
    # mounted on top. Index 0 collides with the top instance's pty, index 1
    # does not.
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    lower_dev = pts_device()
    lower = [sc.hold(unprivileged=True) for _ in range(2)]
    sc.mount_devpts("/dev/pts", HEALTHY)
    upper_dev = pts_device()
    _, upper_pty = sc.hold(unprivileged=True)
    if [p[1]["index"] for p in lower] != [0, 1] or upper_pty["index"] != 0 or lower_dev == upper_dev:
        raise SetupError("unexpected allocation: %s %s" % ([p[1] for p in lower], upper_pty))
    stack = mount_stack("/dev/pts")

    report = sc.audit()
    sc.expect(report, ["devpts-orphan-in-use", "devpts-overmount"])
    orphan = sc.finding(report, "devpts-orphan-in-use")
    if orphan is not None:
        holders = project(orphan.get("evidence", {}).get("holders"), ("pid", "comm", "index", "colliding_index"))
        if isinstance(holders, list):
            holders = sorted(holders, key=lambda h: (str(h.get("index")), str(h.get("pid"))))
        sc.check.eq(
            holders,
            [
                {"pid": lower[0][0].pid, "comm": "pty-probe", "index": 0, "colliding_index": 0},
                {"pid": lower[1][0].pid, "comm": "pty-probe", "index": 1, "colliding_index": None},
            ],
            "devpts-orphan-in-use evidence holders",
        )
        sc.check.eq(orphan.get("devices"), [lower_dev], "devpts-orphan-in-use devices")
    check_stack_evidence(sc, sc.finding(report, "devpts-overmount"), stack)
    sc.expect_serving(report, upper_dev)


@case("orphan-escape-name")
def orphan_escape_name(sc):
    # An unprivileged process holds a pty on an instance that gets covered, after naming itself
    # (prctl(PR_SET_NAME)) with terminal control sequences: set the window title, clear the
    # screen. The name reaches the devpts-orphan-in-use summary and remedy. The text report must
    # show it escaped, never raw; the JSON report keeps it exact.
    name = "\x1b]0;pwn\x07\x1b[2J"
    holder_py = (
        "import ctypes, os, sys\n"
        "master, slave = os.openpty()\n"
        "ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    p = subprocess.Popen(
        ["setpriv", "--reuid=%d" % UNPRIVILEGED_UID, "--regid=%d" % UNPRIVILEGED_UID, "--clear-groups",
         "/usr/bin/python3", "-c", holder_py, name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    sc.helpers.append(p)
    if p.stdout.readline().strip() != "ready":
        raise SetupError("the holder did not start")
    sc.mount_devpts("/dev/pts", HEALTHY)

    report = sc.audit()
    sc.expect(report, ["devpts-orphan-in-use", "devpts-overmount"])
    orphan = sc.finding(report, "devpts-orphan-in-use")
    if orphan is not None:
        comms = [h.get("comm") for h in orphan.get("evidence", {}).get("holders") or []]
        sc.check.eq(comms, [name], "JSON evidence: the name exactly as the process set it")
    text = sc.run_ptsguard("audit", "--no-color")
    sc.check.true("\x1b" not in text.stdout and "\x07" not in text.stdout,
                  "no raw ESC or BEL in the text report:\n%r" % text.stdout)
    sc.check.true("\\x1b]0;pwn\\x07\\x1b[2J" in text.stdout,
                  "the name appears escaped in the text report:\n%s" % text.stdout)


def held_fd(pid, index):
    """(fd, stat) of the fd of process pid whose file is pty slave index, from its /proc."""
    for name in os.listdir("/proc/%d/fd" % pid):
        try:
            st = os.stat("/proc/%d/fd/%s" % (pid, name))
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and 136 <= os.major(st.st_rdev) <= 143 and (
            (os.major(st.st_rdev) - 136) * 256 + os.minor(st.st_rdev) == index
        ):
            return int(name), st
    raise SetupError("process %d holds no slave %d" % (pid, index))


def session_on(sc, pid, fd):
    """A process whose standard output and error are the pty fd of process pid (reopened
    through /proc, which works for an instance mounted nowhere): a shell's session on it.
    Return its process and the fd the finding names (1)."""
    tty = os.open("/proc/%d/fd/%d" % (pid, fd), os.O_RDWR | os.O_NOCTTY)
    p = subprocess.Popen(["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                         stdout=tty, stderr=tty)
    os.close(tty)
    sc.helpers.append(p)
    return p, 1


def check_unreachable(sc, report, device, holders, colliding):
    """The pty-instance-unreachable finding of device names exactly holders [(pid, comm, fd,
    index)], colliding or not; and its name /dev/pts/N here opens another pty, or nothing."""
    f = sc.finding(report, "pty-instance-unreachable")
    if f is None:
        return
    ev = f.get("evidence", {})
    sc.check.eq(ev.get("device"), device, "the unreachable instance")
    got = sorted(
        (h.get("pid"), h.get("comm"), h.get("fd"), h.get("end"), h.get("index"), h.get("colliding_index"))
        for h in ev.get("holders") or []
    )
    want = sorted((pid, comm, fd, "slave", index, index if colliding else None) for pid, comm, fd, index in holders)
    sc.check.eq(got, want, "pty-instance-unreachable holders")
    sc.check.eq(f.get("severity"), "critical" if colliding else "warning", "severity")
    sc.check.eq(f.get("repairable"), False, "not repairable")
    for pid, comm, fd, index in holders:
        sc.check.true("pid %d (%s) fd %d on pts %d" % (pid, comm, fd, index) in f.get("summary", ""),
                      "the summary names pid %d fd %d: %s" % (pid, fd, f.get("summary")))
        sc.check.true(str(pid) in f.get("remedy", ""), "the remedy names pid %d: %s" % (pid, f.get("remedy")))
        # What the session gets: its terminal is not the pty its name opens here.
        held = os.stat("/proc/%d/fd/%d" % (pid, fd))
        name = "/dev/pts/%d" % index
        if colliding:
            sc.check.true(os.stat(name).st_dev != held.st_dev, "%s opens another instance's pty" % name)
        else:
            sc.check.true(not os.path.exists(name), "%s names nothing here" % name)


def stranded_session(sc, take_index):
    """A session holds a pty of /dev/pts's instance; then `umount -l /dev/pts` and a new devpts
    mount (a chroot tool's teardown, a careless remount); take_index: a new session then gets
    the same index on the new instance."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    old_dev = pts_device()
    # pty-probe keeps the slave and the master (the latter through the ptmx node of /dev, whose
    # instance cannot be told from outside); a session has the slave as its output.
    holder, pty = sc.hold(unprivileged=True)
    probe_fd = held_fd(holder.pid, pty["index"])[0]
    session, fd = session_on(sc, holder.pid, probe_fd)
    sc.sh("umount", "-l", "/dev/pts")
    sc.mount("devpts", "/dev/pts", "gid=5,mode=620", source="devpts")
    new_dev = pts_device()
    if take_index:
        _, new_pty = sc.hold(unprivileged=True)
        if new_pty["index"] != pty["index"]:
            raise SetupError("the new pty did not take index %d: %s" % (pty["index"], new_pty))
    if old_dev == new_dev or pty["dev"] != old_dev:
        raise SetupError("unexpected instances: %s %s %s" % (old_dev, new_dev, pty))
    report = sc.audit()
    sc.expect(report, ["pty-instance-unreachable"],
              None if take_index else {"pty-instance-unreachable": "warning"})
    check_unreachable(sc, report, old_dev, [(holder.pid, "pty-probe", probe_fd, pty["index"]),
                                            (session.pid, "python3", fd, pty["index"])], take_index)
    sc.expect_serving(report, new_dev)


@case("stranded-session-collides")
def stranded_session_collides(sc):
    stranded_session(sc, True)


@case("stranded-session")
def stranded_session_alone(sc):
    stranded_session(sc, False)


@case("stranded-session-healthy")
def stranded_session_healthy(sc):
    """The same sessions on the instance mounted at /dev/pts, after the same remount: nothing."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.sh("umount", "-l", "/dev/pts")
    sc.mount("devpts", "/dev/pts", "gid=5,mode=620", source="devpts")
    holder, pty = sc.hold(unprivileged=True)
    sc.hold(unprivileged=False, ptmx="/dev/pts/ptmx")
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq(pty["dev"], pts_device(), "held on the mounted instance")


# Run in a mount namespace of its own (unshare -m): a devpts instance mounted there only, a pty
# allocated on it; its slave is sent over the socket (fd argv[2]) and the master kept.
FOREIGN_ALLOCATOR = """
import array, os, socket, sys, fcntl
d = sys.argv[1]
os.system("mount -t devpts -o newinstance,ptmxmode=0666,gid=5,mode=620 devpts " + d)
m = os.open(d + "/ptmx", os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(m, 0x40045431, array.array("i", [0]))  # TIOCSPTLCK
n = array.array("I", [0]); fcntl.ioctl(m, 0x80045430, n)  # TIOCGPTN
slave = os.open("%s/%d" % (d, n[0]), os.O_RDWR | os.O_NOCTTY)
sock = socket.socket(fileno=int(sys.argv[2]))
socket.send_fds(sock, [b"%d %d" % (os.stat(d).st_dev, n[0])], [slave, m])
os.close(slave)
sys.stdin.read()
"""


@case("pty-from-other-namespace")
def pty_from_other_namespace(sc):
    """A process here holds a slave of an instance mounted only in another mount namespace
    (flatpak-spawn --host, old lxc exec): found, critical since its index names another pty
    here."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, here = sc.hold(unprivileged=True)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    where = sc.scratch_dir("foreign-pts")
    alloc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", "-c", FOREIGN_ALLOCATOR, where,
         str(theirs.fileno())],
        stdin=subprocess.PIPE, pass_fds=[theirs.fileno()],
    )
    sc.helpers.append(alloc)
    theirs.close()
    msg, fds, _, _ = socket.recv_fds(ours, 100, 2)
    ours.close()
    if len(fds) != 2:
        raise SetupError("the allocator did not send the slave and the master: %d fds" % len(fds))
    dev_raw, index = (int(x) for x in msg.split())
    foreign_dev = devnum(dev_raw)
    # The holder: a process of this namespace given that slave (the shell flatpak-spawn starts).
    holder = subprocess.Popen(["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                              stdout=fds[0], stderr=fds[0])
    sc.helpers.append(holder)
    held = 1
    # A manager here keeping both ends of the same pty (lxc-start keeps its containers' ttys
    # so): their keeper, not a session on one, not named.
    manager = subprocess.Popen(["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                               pass_fds=fds)
    sc.helpers.append(manager)
    for fd in fds:
        os.close(fd)
    if index != here["index"] or foreign_dev == pts_device():
        raise SetupError("unexpected allocation: index %d on %s, here %s" % (index, foreign_dev, here))
    if any(m["fstype"] == "devpts" and m["device"] == foreign_dev for m in read_mountinfo_devpts()):
        raise SetupError("the foreign instance is mounted here")
    report = sc.audit()
    sc.expect(report, ["pty-instance-unreachable"])
    check_unreachable(sc, report, foreign_dev, [(holder.pid, "python3", held, index)], True)


def read_mountinfo_devpts():
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            out.append({"fstype": right.split()[0], "device": left.split()[2]})
    return out


@case("slackware-stack")
def slackware_stack(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount_devpts("/dev/pts", HEALTHY)
    stack = mount_stack("/dev/pts")
    if len(stack) != 2 or stack[0]["device"] == stack[1]["device"]:
        raise SetupError("unexpected stack at /dev/pts: %s" % stack)
    report = sc.audit()
    sc.expect(report, ["devpts-overmount"])
    check_stack_evidence(sc, sc.finding(report, "devpts-overmount"), stack)
    sc.expect_serving(report, stack[1]["device"])


# ---------------------------------------------------------------------------
# /dev/ptmx and the way to its instance


@case("ptmx-locked")
def ptmx_locked(sc):
    sc.setup_base(ptmx="symlink")
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=000")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, ["ptmx-locked"])
    f = sc.finding(report, "ptmx-locked")
    if f is not None:
        sc.check.eq(f.get("devices"), [dev], "ptmx-locked devices")
        remedy = f.get("remedy") or ""
        sc.check.true(
            "remount" in remedy and "ptmxmode=" in remedy and "/dev/pts" in remedy,
            "ptmx-locked remedy should remount /dev/pts with ptmxmode=: %r" % remedy,
        )
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=13, error="EACCES")


@case("ptmx-locked-bind")
def ptmx_locked_bind(sc):
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)  # ptmxmode defaults to 000
    open("/dev/ptmx", "w").close()
    sc.sh("mount", "--bind", "/dev/pts/ptmx", "/dev/ptmx")
    report = sc.audit()
    sc.expect(report, ["ptmx-locked"])
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=13, error="EACCES")


@case("pts-covered")
def pts_covered(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    devpts_dev = pts_device()
    sc.mount("tmpfs", "/dev/pts", "mode=755")
    report = sc.audit()
    sc.expect(report, ["pts-covered"])
    f = sc.finding(report, "pts-covered")
    if f is not None:
        sc.check.true(
            devpts_dev in (f.get("devices") or []),
            "pts-covered devices should name the hidden instance %s: %s" % (devpts_dev, f.get("devices")),
        )
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=19, error="ENODEV")


@case("dev-covered")
def dev_covered(sc):
    # A second /dev on top hides the devpts mount below it.
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount("tmpfs", "/dev", "mode=755")
    os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod("/dev/null", 0o666)
    os.mknod("/dev/tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
    os.chmod("/dev/tty", 0o666)
    sc.mknod_ptmx()
    os.mkdir("/dev/pts", 0o755)
    report = sc.audit()
    sc.expect(report, ["pts-covered"])
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=19, error="ENODEV")


@case("no-devpts")
def no_devpts(sc):
    sc.setup_base()
    report = sc.audit()
    sc.expect(report, ["ptmx-no-devpts"])
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=19, error="ENODEV")


@case("pts-symlink")
def pts_symlink(sc):
    """/dev/pts a symlink to a directory, nothing devpts mounted. A /dev/ptmx char node finds its
    instance by a mount on the name pts itself, never through a link: the usual remedy, mkdir -p
    and mount, follows the link, mounts on its target and leaves every open failing ENODEV. The
    remedy names the link and removes it first; following it does repair nothing."""
    sc.setup_base()
    os.rmdir("/dev/pts")
    os.mkdir("/dev/pts-real", 0o755)
    os.symlink("pts-real", "/dev/pts")
    report = sc.audit()
    sc.expect(report, ["ptmx-no-devpts"])
    f = sc.finding(report, "ptmx-no-devpts") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((ev.get("pts_state"), ev.get("pts_target")), ("symlink", "pts-real"), "evidence: pts is a link")
    remedy = f.get("remedy") or ""
    sc.check.true("symlink" in remedy and "rm /dev/pts && mkdir /dev/pts && mount -t devpts" in remedy,
                  "the remedy names the link and removes it first: %r" % remedy)
    sc.check.true(not remedy.startswith("mkdir -p"), "the remedy is not the mkdir -p that follows the link: %r" % remedy)
    # What the old remedy did: it mounts through the link, and nobody gets a pty all the same.
    sc.sh("sh", "-c", "mkdir -p /dev/pts && mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode=000 devpts /dev/pts")
    sc.check.true(any(m["mountpoint"] == "/dev/pts-real" and m["fstype"] == "devpts" for m in read_mountinfo()),
                  "mount followed the link to /dev/pts-real")
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=19, error="ENODEV")
    sc.expect(sc.audit(), ["ptmx-no-devpts"])
    # The remedy as given: the link removed, a directory and devpts in its place.
    sc.sh("umount", "/dev/pts-real")
    sc.sh("sh", "-c", remedy[remedy.index("rm /dev/pts"):].split(" (or")[0])
    report = sc.audit()
    sc.expect(report, [])
    res = sc.probe()
    sc.expect_probe(res, ok=True)


@case("ptmx-missing")
def ptmx_missing(sc):
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, ["ptmx-missing"])
    sc.check.eq((report.get("ptmx") or {}).get("kind"), "missing", "ptmx.kind")
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=2, error="ENOENT")


# What a user gets from /dev/tty in a session of their own whose controlling terminal is a new
# pty (as after an ssh login): "tty" (it opened, and is a terminal), "not-a-tty" (it opened
# something else), or the errno name of the open.
OPEN_DEV_TTY = r"""
import errno, os, pty
r, w = os.pipe()
pid, master = pty.fork()
if pid == 0:
    os.close(r)
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        msg = "tty" if os.isatty(fd) else "not-a-tty"
    except OSError as e:
        msg = errno.errorcode.get(e.errno, str(e.errno))
    os.write(w, msg.encode())
    os._exit(0)
os.close(w)
print(os.read(r, 64).decode())
os.waitpid(pid, 0)
"""


def user_opens_dev_tty(sc):
    r = sc.sh("setpriv", "--reuid=%d" % UNPRIVILEGED_UID, "--regid=%d" % UNPRIVILEGED_GID,
              "--clear-groups", sys.executable, "-c", OPEN_DEV_TTY)
    return r.stdout.strip()


@case("dev-tty-healthy")
def dev_tty_healthy(sc):
    """/dev/tty c 5:0 mode 0666 (what setup_base makes): nothing to say, and a user opens it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq(user_opens_dev_tty(sc), "tty", "a user opens their terminal through /dev/tty")


@case("dev-tty-missing")
def dev_tty_missing(sc):
    """A hand-made /dev without /dev/tty (WSL1, a chroot): ptys allocate, /dev/tty is ENOENT."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.unlink("/dev/tty")
    report = sc.audit()
    sc.expect(report, ["dev-tty-broken"])
    f = sc.finding(report, "dev-tty-broken")
    sc.check.eq(f.get("evidence", {}).get("problem"), "missing", "evidence.problem")
    sc.check.eq(f.get("remedy"), "mknod -m 0666 /dev/tty c 5 0", "remedy")
    sc.check.eq(f.get("repairable"), True, "repairable")
    sc.check.eq(sc.probe().get("ok"), True, "ptys still allocate")
    sc.check.eq(user_opens_dev_tty(sc), "ENOENT", "a user opening /dev/tty")


@case("dev-tty-mode")
def dev_tty_mode(sc):
    """/dev/tty root:tty 0620, as for a slave: users outside group tty get EACCES."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.chown("/dev/tty", 0, TTY_GID)
    os.chmod("/dev/tty", 0o620)
    report = sc.audit()
    sc.expect(report, ["dev-tty-broken"])
    f = sc.finding(report, "dev-tty-broken")
    sc.check.eq(f.get("evidence", {}).get("problem"), "mode", "evidence.problem")
    sc.check.eq(f.get("remedy"), "chmod 0666 /dev/tty", "remedy")
    sc.check.eq(user_opens_dev_tty(sc), "EACCES", "a user opening /dev/tty")


@case("dev-tty-not-device")
def dev_tty_not_device(sc):
    """/dev/tty a regular file (a /dev copied as files): it opens, but is no terminal."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.unlink("/dev/tty")
    with open("/dev/tty", "w"):
        pass
    os.chmod("/dev/tty", 0o666)
    report = sc.audit()
    sc.expect(report, ["dev-tty-broken"])
    f = sc.finding(report, "dev-tty-broken")
    sc.check.eq(f.get("evidence", {}).get("problem"), "not-device", "evidence.problem")
    sc.check.eq(f.get("repairable"), False, "repairable (never deletes a file)")
    sc.check.eq(user_opens_dev_tty(sc), "not-a-tty", "a user opening /dev/tty")


@case("dev-tty-wrong-rdev")
def dev_tty_wrong_rdev(sc):
    """/dev/tty made as c 5:1 (the console) by a slip, root's 0600: not the controlling
    terminal, and users cannot open it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.unlink("/dev/tty")
    os.mknod("/dev/tty", 0o666 | stat.S_IFCHR, os.makedev(5, 1))
    os.chmod("/dev/tty", 0o600)
    report = sc.audit()
    sc.expect(report, ["dev-tty-broken"])
    f = sc.finding(report, "dev-tty-broken")
    sc.check.eq(f.get("evidence", {}).get("problem"), "not-device", "evidence.problem")
    sc.check.eq(f.get("evidence", {}).get("rdev"), "5:1", "evidence.rdev")
    sc.check.eq(user_opens_dev_tty(sc), "EACCES", "a user opening /dev/tty")


@case("ptmx-regular-file")
def ptmx_regular_file(sc):
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    with open("/dev/ptmx", "w") as f:
        f.write("not a device\n")
    os.chmod("/dev/ptmx", 0o666)
    report = sc.audit()
    sc.expect(report, ["ptmx-not-device"])
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="unlock", error="ENOTTY")


@case("ptmx-dangling-symlink")
def ptmx_dangling_symlink(sc):
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.symlink("/nonexistent", "/dev/ptmx")
    report = sc.audit()
    sc.expect(report, ["ptmx-not-device"])
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=2, error="ENOENT")


@case("ptmx-wrong-rdev")
def ptmx_wrong_rdev(sc):
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mknod_ptmx(0o666, rdev=(1, 3))
    report = sc.audit()
    sc.expect(report, ["ptmx-not-device"])
    sc.check.eq((report.get("ptmx") or {}).get("rdev"), "1:3", "ptmx.rdev")
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="unlock", error="ENOTTY")


@case("ptmx-mode")
def ptmx_mode(sc):
    sc.setup_base(ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    # Only root can allocate: the warning predicts the probe's EACCES, but users are without
    # ptys all the same, so the failure is reported too, critical, naming the warning.
    sc.expect(report, ["ptmx-mode", "pty-allocation-fails"])
    sc.check.eq((report.get("ptmx") or {}).get("mode"), "0600", "ptmx.mode")
    mode = sc.finding(report, "ptmx-mode") or {}
    fails = sc.finding(report, "pty-allocation-fails") or {}
    sc.check.eq((mode.get("evidence") or {}).get("confirmed_by_probe"), True, "ptmx-mode confirmed by the probe")
    sc.check.eq(((fails.get("evidence") or {}).get("predicted_by"), (fails.get("evidence") or {}).get("step"), fails.get("remedy")),
                ("ptmx-mode", "open_ptmx", "chmod 0666 /dev/ptmx, the remedy of ptmx-mode"), "pty-allocation-fails names the warning and takes its remedy")
    # Repairing the warning repairs both: no action of its own for the failure it predicted.
    plan = sc._parse_report(sc.run_ptsguard("repair", "--dry-run", "--format", "json"), "repair --dry-run")
    sc.check.eq([(a.get("check"), a.get("result")) for a in plan.get("actions") or []],
                [("ptmx-mode", "planned")], "repair --dry-run plans the warning's chmod alone")
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=13, error="EACCES")


# ---------------------------------------------------------------------------
# Other instances, slaves, helpers, fstab


@case("chroot-foreign-defaults")
def chroot_foreign_defaults(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    serving_dev = pts_device()
    base = "/srv" if os.path.isdir("/srv") else sc.scratch_dir("srv")
    sc.mount("tmpfs", base, "mode=755")
    chroot_pts = os.path.join(base, "buildroot/dev/pts")
    os.makedirs(chroot_pts)
    sc.mount_devpts(chroot_pts)  # xen-create-image: no options at all
    chroot = top_mount(chroot_pts)
    report = sc.audit()
    sc.expect(report, ["devpts-foreign-defaults"])
    f = sc.finding(report, "devpts-foreign-defaults")
    if f is not None:
        sc.check.eq(f.get("devices"), [chroot["device"]], "devpts-foreign-defaults devices")
        sc.check.eq(f.get("mount_ids"), [chroot["mount_id"]], "devpts-foreign-defaults mount_ids")
    sc.expect_serving(report, serving_dev)


# Runs as nobody: allocates a pty, says its index, and closes it 20 ms after someone lists
# /dev/pts (inotify's IN_ACCESS comes with getdents): what another ptsguard's probe looks like to
# an audit that lists the slaves in the middle of that probe's few milliseconds.
TRANSIENT_PTY = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
master, slave = os.openpty()
index = os.ttyname(slave).rsplit("/", 1)[1]  # (ttyname may list /dev/pts itself: watch after)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, b"/dev/pts", 0x1) < 0:
    sys.exit("inotify: %s" % os.strerror(ctypes.get_errno()))
print(index, flush=True)
os.read(fd, 4096)
time.sleep(0.02)  # long enough for the lister to stat what it listed
os.close(slave)
os.close(master)
print("closed", flush=True)
"""


@case("slave-perms-transient")
def slave_perms_transient(sc):
    """A slave of the probe user (nobody) that is gone a moment after the audit listed /dev/pts
    is another ptsguard's probe (the daemon's, beside `ptsguard audit`), not a finding; one of
    the same user that stays is reported like any other."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=600")
    nobody = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
    _, held = sc.hold(wrap=nobody)
    p = subprocess.Popen(nobody + [sys.executable, "-c", TRANSIENT_PTY], stdout=subprocess.PIPE, text=True)
    sc.helpers.append(p)
    transient = p.stdout.readline().strip()
    if not transient.isdigit() or not os.path.exists("/dev/pts/" + transient):
        raise SetupError("the transient pty was not allocated: %r" % transient)
    sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")
    report = sc.audit()
    sc.check.eq(p.stdout.readline().strip(), "closed", "the transient pty was closed when the audit listed /dev/pts")
    sc.expect(report, ["pty-slave-perms"])
    f = sc.finding(report, "pty-slave-perms")
    if f is not None:
        sc.check.eq(
            project(f.get("evidence", {}).get("slaves"), ("index", "uid")),
            [{"index": held["index"], "uid": NOBODY}],
            "pty-slave-perms lists the slave that stayed and not the one that went (%s)" % transient,
        )


@case("slave-perms")
def slave_perms(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "mode=600")
    _, held = sc.hold(unprivileged=True)
    if (held["uid"], held["gid"], held["mode"]) != (UNPRIVILEGED_UID, UNPRIVILEGED_GID, "0600"):
        raise SetupError("the held pty is not 1000:1000 0600: %s" % held)
    sc.sh("mount", "-o", "remount,gid=5,mode=620", "/dev/pts")
    report = sc.audit()
    sc.expect(report, ["pty-slave-perms"])
    f = sc.finding(report, "pty-slave-perms")
    if f is not None:
        sc.check.eq(
            project(f.get("evidence", {}).get("slaves"), ("index", "uid", "gid", "mode")),
            [{"index": held["index"], "uid": UNPRIVILEGED_UID, "gid": UNPRIVILEGED_GID, "mode": "0600"}],
            "pty-slave-perms evidence slaves",
        )
    # The remount itself took: new ptys are right.
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620")


@case("session-owner-root")
def session_owner_root(sc):
    """podman exec -t, sudo-rs -i: root holds the master, the session is the user's, the slave
    stays root:tty 0620, and the user cannot reopen their own terminal by name. Another mount
    namespace holds masters of the same numbers through a ptmx outside devpts (CI's runner on
    the host does): the helper is named the holder, not it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    other_namespace_masters(sc)
    helper, path = session_pty(sc, "user")
    st = os.stat(path)
    if (st.st_uid, st.st_gid, st.st_mode & 0o777) != (0, TTY_GID, 0o620):
        raise SetupError("the session's slave is not root:tty 0620: %s" % st)
    sc.check.eq(user_reopens(sc, path), "EACCES", "the user reopening their terminal %s by name" % path)
    report = sc.audit()
    sc.expect(report, ["pty-owner-not-session-user"])
    f = sc.finding(report, "pty-owner-not-session-user")
    if f is not None:
        ev = f.get("evidence", {})
        sc.check.eq((ev.get("path"), ev.get("uid")), (path, 0), "evidence: the slave and its owner")
        session = ev.get("session") or {}
        sc.check.eq((session.get("uid"), session.get("leader_comm")), (UNPRIVILEGED_UID, "python3"),
                    "evidence.session: its uid and leader")
        sc.check.eq(session.get("sid"), session.get("leader_pid"), "evidence.session: the leader leads it")
        sc.check.eq(((ev.get("holder") or {}).get("pid"), (ev.get("holder") or {}).get("uid")),
                    (helper.pid, 0), "evidence.holder: the helper holding the master")
        sc.check.eq(f.get("remedy"), "chown %d %s" % (UNPRIVILEGED_UID, path), "remedy")
        sc.check.eq(f.get("repairable"), True, "repairable")


@case("session-owner-user")
def session_owner_user(sc):
    """login, sshd: the slave given to the session's user: quiet, and the user reopens it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, path = session_pty(sc, "owned")
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq(user_reopens(sc, path), "ok", "the user reopening their terminal %s by name" % path)


@case("session-owner-su")
def session_owner_su(sc):
    """su - user from root's terminal: root's shell leads the session, a user's shell runs in
    it; the terminal is root's, rightly root's: quiet."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, path = session_pty(sc, "su")
    report = sc.audit()
    sc.expect(report, [])


@case("pt-chown")
def pt_chown(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount("tmpfs", "/usr/libexec", "mode=755")
    helper = "/usr/libexec/pt_chown"
    with open(helper, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chown(helper, 0, 0)
    os.chmod(helper, 0o4755)
    report = sc.audit()
    sc.expect(report, ["pt-chown-setuid"])
    f = sc.finding(report, "pt-chown-setuid")
    if f is not None:
        sc.check.eq(f.get("severity"), expected_severity(sc.catalog, "pt-chown-setuid"), "pt-chown-setuid severity")
        sc.check.eq(
            project(f.get("evidence", {}).get("helpers"), ("path", "mode", "uid")),
            [{"path": helper, "mode": "4755", "uid": 0}],
            "pt-chown-setuid evidence helpers",
        )


@case("fstab")
def fstab(sc):
    sc.setup_base(fstab="# static file system information\ndevpts /dev/pts devpts defaults 0 0\n")
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, ["fstab-devpts-options"])
    f = sc.finding(report, "fstab-devpts-options")
    if f is not None:
        ev = f.get("evidence", {})
        sc.check.eq(
            {"line": ev.get("line"), "options": ev.get("options")},
            {"line": 2, "options": "defaults"},
            "fstab-devpts-options evidence",
        )


@case("fstab-ptmx-relock")
def fstab_ptmx_relock(sc):
    """/dev/ptmx a pts/ptmx link (every container, nspawn, PrivateDevices=) and an fstab line
    with gid=5,mode=620 but no ptmxmode=: healthy now, and the next remount with that line (what
    systemd-remount-fs runs at boot) resets ptmxmode to 000 and locks every non-root allocation.
    The finding names the line and gives a fixed one; the remount is then done, as boot would,
    with the line as it was (locked) and as the remedy gives it (stays healthy). The control
    beside it, the same line beside a character /dev/ptmx, is fstab-healthy."""
    line = "devpts /dev/pts devpts gid=5,mode=620 0 0\n"
    sc.setup_base(ptmx="symlink", fstab="# static file system information\n" + line)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=0666")
    report = sc.audit()
    sc.expect(report, ["fstab-devpts-options"])
    f = sc.finding(report, "fstab-devpts-options") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((ev.get("line"), ev.get("options"), ev.get("ptmx_through_instance")), (2, "gid=5,mode=620", True),
                "fstab-devpts-options evidence")
    fixed = "devpts /dev/pts devpts gid=5,mode=620,ptmxmode=0666 0 0"
    sc.check.eq(f.get("remedy"), "edit /etc/fstab line 2 to: " + fixed, "the remedy gives the fixed line")
    sc.check.true("ptmxmode" in (f.get("summary") or ""), "the summary says ptmxmode: %r" % f.get("summary"))
    # What boot does with the line as it is: mount -o remount takes fstab's options.
    sc.sh("mount", "-o", "remount", "/dev/pts")
    res = sc.probe()
    sc.check.eq((res.get("ok"), res.get("error")), (False, "EACCES"), "after the remount a user gets EACCES (%s)" % res)
    locked = sc.audit()
    sc.check.true("ptmx-locked" in [x.get("id") for x in locked.get("findings", [])],
                  "the remount with the old line locked /dev/ptmx (ptmx-locked)")
    # The line as the remedy gives it, the instance healthy again, and the same remount.
    sc.bind_file("/etc/fstab", "# static file system information\n" + fixed + "\n")
    sc.sh("mount", "-o", "remount,gid=5,mode=620,ptmxmode=0666", "/dev/pts")
    sc.sh("mount", "-o", "remount", "/dev/pts")
    report = sc.audit()
    sc.expect(report, [])
    res = sc.probe()
    sc.check.eq(res.get("ok"), True, "after the remount with the fixed line a user gets a pty (%s)" % res)


# ---------------------------------------------------------------------------
# The other output formats agree with the JSON


@case("formats-consistent")
def formats_consistent(sc):
    sc.setup_base(ptmx="char", ptmx_mode=0o600)
    sc.mount_devpts("/dev/pts", "mode=620")
    report = sc.audit()
    ids = ["devpts-options-lost", "ptmx-mode", "pty-allocation-fails"]
    sc.expect(report, ids)
    status = sc.reports["live"][1]

    text = sc.run_ptsguard("audit", "--no-color")
    sc.check.eq(text.returncode, status, "exit status of the text audit")
    for fid in ids:
        sc.check.true(fid in text.stdout, "text output should name %s:\n%s" % (fid, text.stdout))
    sc.check.true(REMEDY_620 in text.stdout, "text output should give the remedy %r" % REMEDY_620)
    sc.check.true("\x1b[" not in text.stdout, "text output to a pipe has colour escapes")

    prom = sc.run_ptsguard("audit", "--format", "prometheus")
    sc.check.eq(prom.returncode, status, "exit status of the prometheus audit")
    lines = prom.stdout.splitlines()
    for want in (
        'ptsguard_finding{check="devpts-options-lost",severity="critical"} 1',
        'ptsguard_finding{check="ptmx-mode",severity="warning"} 1',
        'ptsguard_findings{severity="critical"} 2',
        'ptsguard_findings{severity="warning"} 1',
    ):
        sc.check.true(want in lines, "prometheus output lacks the line %r:\n%s" % (want, prom.stdout))
    # Valid for Prometheus' own linter (the CI installs promtool; without it this fails).
    promtool = shutil.which("promtool")
    sc.check.true(promtool is not None, "promtool is not installed (Debian package prometheus)")
    if promtool:
        lint = subprocess.run([promtool, "check", "metrics"], input=prom.stdout, capture_output=True, text=True)
        sc.check.eq((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics")


# ---------------------------------------------------------------------------
# Version 1.1: what users get through the wrong instance, a blocked path, uid=


@case("ptmx-foreign-instance")
def ptmx_foreign_instance(sc):
    """/dev/ptmx leads into another instance: ptsname() says /dev/pts/0, which there is
    someone else's pty."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    pts_dev = pts_device()
    # index 0 on /dev/pts: another session
    _, theirs = sc.hold(unprivileged=False, ptmx="/dev/pts/ptmx")
    other = sc.scratch_dir("chroot-pts")
    sc.mount_devpts(other, HEALTHY + ",ptmxmode=0666")
    other_dev = devnum(os.stat(other).st_dev)
    os.symlink(os.path.join(other, "ptmx"), "/dev/ptmx")
    if theirs["index"] != 0 or theirs["dev"] != pts_dev:
        raise SetupError("the held pty is not index 0 on /dev/pts: %s" % theirs)
    report = sc.audit()
    sc.expect(report, ["ptmx-foreign-instance"])
    f = sc.finding(report, "ptmx-foreign-instance")
    if f is not None:
        ev = f.get("evidence", {})
        sc.check.eq(
            {k: ev.get(k) for k in ("serving_device", "serving_mountpoint", "pts_path")},
            {"serving_device": other_dev, "serving_mountpoint": other, "pts_path": "/dev/pts"},
            "ptmx-foreign-instance evidence",
        )
        sc.check.eq((ev.get("pts_mount") or {}).get("device"), pts_dev, "evidence pts_mount.device")
    # As root, the slave reopened by its name is a different pty from the one allocated.
    res = sc.probe(unprivileged=False)
    sc.expect_probe(res, ok=True, index=0, dev=other_dev, by_name="other")
    # A user allocates fine, then cannot reopen "their" terminal: the name is root's pty.
    res = sc.probe()
    sc.expect_probe(res, ok=True, dev=other_dev, by_name="EACCES")


@case("devpts-uid-set")
def devpts_uid_set(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", "gid=5,mode=620,uid=0")
    dev = pts_device()
    report = sc.audit()
    sc.expect(report, ["devpts-uid-set"])
    f = sc.finding(report, "devpts-uid-set")
    if f is not None:
        sc.check.eq(f.get("evidence", {}).get("uid"), 0, "devpts-uid-set evidence uid")
        sc.check.eq(f.get("remedy", "").endswith("mount -o remount,gid=5,mode=620 /dev/pts"), True,
                    "the remedy remounts without uid=: %r" % f.get("remedy"))
        sc.check.eq(f.get("repairable"), False, "devpts-uid-set is not repairable")
    # The user's new slave belongs to root: they cannot reopen their own terminal.
    res = sc.probe()
    sc.expect_probe(res, ok=True, uid=0, gid=TTY_GID, mode="0620", dev=dev, by_name="EACCES")


@case("pty-path-blocked-dev")
def pty_path_blocked_dev(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.chmod("/dev", 0o700)
    report = sc.audit()
    sc.expect(report, ["pty-path-blocked"])
    f = sc.finding(report, "pty-path-blocked")
    if f is not None:
        sc.check.eq(
            f.get("evidence", {}).get("directories"),
            [{"path": "/dev", "uid": 0, "gid": 0, "mode": "0700"}],
            "pty-path-blocked evidence",
        )
        sc.check.eq(f.get("remedy"), "chmod o+x /dev", "pty-path-blocked remedy")
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", errno=13, error="EACCES")


@case("pty-path-blocked-pts")
def pty_path_blocked_pts(sc):
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    os.chmod("/dev/pts", 0o700)  # the devpts root itself
    report = sc.audit()
    sc.expect(report, ["pty-path-blocked"])
    f = sc.finding(report, "pty-path-blocked")
    if f is not None:
        sc.check.eq(
            project(f.get("evidence", {}).get("directories"), ("path", "mode")),
            [{"path": "/dev/pts", "mode": "0700"}],
            "pty-path-blocked evidence",
        )
    # Allocation works (TIOCGPTPEER needs no path); opening the slave by name does not.
    res = sc.probe()
    sc.expect_probe(res, ok=True, gid=TTY_GID, by_name="EACCES")


# ---------------------------------------------------------------------------
# The allocation probe: failures nothing in the mount table predicts

SECCOMP_EXEC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "seccomp-exec")
TIOCSPTLCK = 0x40045431


def unpredicted_failure(sc, report, step, errno_name, errno_number, ioctl_denied=None):
    sc.expect(report, ["pty-allocation-fails"])
    f = sc.finding(report, "pty-allocation-fails")
    if f is not None:
        want = {"step": step, "errno": {"name": errno_name, "number": errno_number}, "uid": 65534, "gid": 65534,
                "ptsname": None}
        if ioctl_denied:
            want["ioctl_denied"] = ioctl_denied
        sc.check.eq(f.get("evidence"), want, "pty-allocation-fails evidence")
        if ioctl_denied:
            # An ioctl denied on a master that opened: the remedy follows the failing step to
            # ioctl filtering, and never blames the device cgroup, which cannot deny it.
            remedy = f.get("remedy") or ""
            sc.check.true(ioctl_denied in remedy and "LANDLOCK_ACCESS_FS_IOCTL_DEV" in remedy and "seccomp" in remedy,
                          "the remedy names the ioctl and ioctl filtering: %r" % remedy)
            sc.check.true("device cgroup (c 5:2" not in remedy, "the remedy does not blame the device cgroup: %r" % remedy)
        sc.check.eq(f.get("repairable"), False, "pty-allocation-fails is not repairable")


@case("probe-seccomp-unlock")
def probe_seccomp_unlock(sc):
    """A healthy mount table, but a seccomp filter (inherited by the probe's child, as by every
    program started under it) fails unlockpt()'s TIOCSPTLCK with EPERM: only the allocation
    probe sees it."""
    r = subprocess.run(["/usr/bin/python3", "-c", "import seccomp"], stdin=sc.null, capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("/usr/bin/python3 has no seccomp module (Debian: python3-seccomp): %s" % r.stderr.strip())
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit(wrap=[SECCOMP_EXEC, "ioctl=0x%x:EPERM" % TIOCSPTLCK])
    unpredicted_failure(sc, report, "unlockpt", "EPERM", 1, ioctl_denied="TIOCSPTLCK")
    sc.check.eq((report.get("probe") or {}).get("failed_step"), "unlockpt", "probe.failed_step")
    # The same system without the filter: nothing to report.
    report = sc.audit()
    sc.expect(report, [])


LANDLOCK_EXEC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "landlock-exec")


@case("probe-landlock-ioctl")
def probe_landlock_ioctl(sc):
    """A healthy mount table, and the audit (with its probe) runs in a Landlock domain that
    handles the right to use ioctls on devices (LANDLOCK_ACCESS_FS_IOCTL_DEV, Linux 6.10)
    without granting it, as agent and build sandboxes do: /dev/ptmx opens, and grantpt()'s
    TIOCGPTN fails with EACCES. A user in that sandbox fails the same way; the finding names
    ioctl filtering. Beside it, the control: the same domain granting the right beneath /dev."""
    r = subprocess.run([LANDLOCK_EXEC, "true"], stdin=sc.null, capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("landlock-exec cannot run here (exit %d): %s" % (r.returncode, r.stderr.strip()))
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    denied = [LANDLOCK_EXEC]
    res = sc.probe(wrap=denied)
    # pty-probe opens /dev/ptmx, then unlocks it (TIOCSPTLCK): that first ioctl is denied.
    sc.check.eq((res.get("ok"), res.get("step"), res.get("error")), (False, "unlock", "EACCES"),
                "a user in the sandbox: the first ioctl after the open fails with EACCES (%s)" % res)
    report = sc.audit(wrap=denied)
    unpredicted_failure(sc, report, "grantpt", "EACCES", 13, ioctl_denied="TIOCGPTN")
    # The control: the right granted beneath /dev, as a sandbox that means to allow ptys does.
    granted = [LANDLOCK_EXEC, "--grant", "/dev"]
    res = sc.probe(wrap=granted)
    sc.check.eq(res.get("ok"), True, "a user in the sandbox granted IOCTL_DEV under /dev gets a pty (%s)" % res)
    report = sc.audit(wrap=granted)
    sc.expect(report, [])


TIOCGPTPEER = 0x5441


def audit_without_peer(sc):
    """The live audit, its snapshot and the snapshot's audit, with TIOCGPTPEER failing ENOTTY
    as on a kernel before 4.13 (a seccomp filter the probe's child inherits). Returns the live
    report and exit status; checks the snapshot's audit agrees."""
    r = subprocess.run(["/usr/bin/python3", "-c", "import seccomp"], stdin=sc.null, capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("/usr/bin/python3 has no seccomp module (Debian: python3-seccomp): %s" % r.stderr.strip())
    sc.wrap = ["/usr/bin/python3", SECCOMP_EXEC, "ioctl=0x%x:ENOTTY" % TIOCGPTPEER]
    live = sc.run_ptsguard("audit", "--json")
    snap = os.path.join(sc.workdir, "snapshot-no-peer.json")
    s = sc.run_ptsguard("snapshot", "--output", snap)
    sc.wrap = []
    if s.returncode != 0:
        raise SetupError("ptsguard snapshot under the filter exited %d: %s" % (s.returncode, s.stderr))
    report = json.loads(live.stdout)
    sc.reports["live"] = (report, live.returncode)
    sc.check_schema(report, "audit --json without TIOCGPTPEER")
    off = sc.run_ptsguard("audit", "--snapshot", snap, "--json")
    off_report = json.loads(off.stdout)
    sc.check.eq(off_report.get("findings"), report.get("findings"), "audit --snapshot vs live, no TIOCGPTPEER")
    sc.check.eq(off.returncode, live.returncode, "exit status of audit --snapshot vs live, no TIOCGPTPEER")
    probe = report.get("probe") or {}
    sc.check.eq((probe.get("slave_via"), (probe.get("peer_errno") or {}).get("name")), ("path", "ENOTTY"),
                "the probe says it checked the slave by its path (%s)" % probe)
    return report, live.returncode


@case("probe-no-peer")
def probe_no_peer(sc):
    """A kernel without TIOCGPTPEER (before 4.13: RHEL 7, Debian 9, Ubuntu 16.04) answers ENOTTY:
    no failure; the probe opens the slave by its path, checks it is the slave of its index on
    the master's instance, and says so. Without the filter the peer is used."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    report, status = audit_without_peer(sc)
    sc.expect(report, [])
    sc.check.eq(status, 0, "exit status without TIOCGPTPEER")
    probe = report.get("probe") or {}
    sc.check.eq((probe.get("failed_step"), len(probe.get("steps") or [])), (None, 7), "every step passed")
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq((report.get("probe") or {}).get("slave_via"), "peer", "with TIOCGPTPEER: slave_via")


@case("probe-table-moves")
def probe_table_moves(sc):
    """A devpts mounted on /dev/pts while the probe holds its pty, its slave not yet looked up
    (the test hook PTSGUARD_TEST_PROBE_HOLD_MSEC of a build with -Dtest-hooks=true holds it
    there): the master is on the instance below, its name now leads into the new one, where no
    such pty is. That failure says nothing of either instance; the probe allocates once more,
    and the new /dev/pts serves it."""
    if os.environ.get("PTSGUARD_TEST_HOOKS") != "1":
        raise Skip("needs a build with -Dtest-hooks=true (the probe's hold)")
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    before = set(os.listdir("/dev/pts"))
    p = subprocess.Popen([sc.ptsguard, "audit", "--json"], stdin=sc.null, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, PTSGUARD_TEST_PROBE_HOLD_MSEC="1000"))
    held = None
    for _ in range(400):
        held = [n for n in set(os.listdir("/dev/pts")) - before if n.isdigit()]
        if held or p.poll() is not None:
            break
        time.sleep(0.005)
    sc.check.true(held, "the probe's pty appeared on /dev/pts while it was held")
    sc.mount_devpts("/dev/pts", HEALTHY)
    new = pts_device()
    out, err = p.communicate(timeout=30)
    report = sc._parse_report(subprocess.CompletedProcess(p.args, p.returncode, out, err), "audit --json")
    probe = report.get("probe") or {}
    sc.check.eq((probe.get("failed_step"), len(probe.get("steps") or [])), (None, 7),
                "every step of the second allocation passed: %s" % probe)
    sc.check.eq(probe.get("ptsname"), "/dev/pts/0", "the second pty is the first of the new instance")
    sc.check.true("pty-allocation-fails" not in [f["id"] for f in report.get("findings", [])],
                  "no pty-allocation-fails: %s" % [f["id"] for f in report.get("findings", [])])
    sc.check.eq(devnum(os.stat("/dev/pts").st_dev), new, "the new instance still on /dev/pts")


@case("probe-no-peer-foreign")
def probe_no_peer_foreign(sc):
    """The broken variant beside probe-no-peer: /dev/ptmx leads into another instance, whose
    /dev/pts/0 names someone else's pty. Without TIOCGPTPEER the path check still finds that
    the name leads to another pty (not the master's instance): compare fails, as
    ptmx-foreign-instance predicts."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    pts_dev = pts_device()
    _, theirs = sc.hold(unprivileged=False, ptmx="/dev/pts/ptmx")
    other = sc.scratch_dir("chroot-pts")
    sc.mount_devpts(other, HEALTHY + ",ptmxmode=0666")
    os.symlink(os.path.join(other, "ptmx"), "/dev/ptmx")
    if theirs["index"] != 0 or theirs["dev"] != pts_dev:
        raise SetupError("the held pty is not index 0 on /dev/pts: %s" % theirs)
    # Theirs open to everyone: the name opens, and only the instance tells it is not ours
    # (the same index, a pty slave: without the instance check it would pass).
    os.chmod("/dev/pts/0", 0o666)
    report, status = audit_without_peer(sc)
    sc.expect(report, ["ptmx-foreign-instance"])
    probe = report.get("probe") or {}
    sc.check.eq(probe.get("failed_step"), "compare", "the name leads to another pty")
    f = sc.finding(report, "ptmx-foreign-instance") or {}
    sc.check.eq(f.get("evidence", {}).get("confirmed_by_probe"), True, "confirmed_by_probe")


@case("probe-no-peer-beside")
def probe_no_peer_beside(sc):
    """Without TIOCGPTPEER, /dev/ptmx a symlink to a plain c 5:2 node in a directory whose `pts`
    is another devpts: the kernel puts the master on the instance beside the node, not on the
    namespace's /dev/pts. /dev/pts/0 there is someone else's pty, open to everyone: the probe
    finds the name leads off the master's instance and never opens it."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY)
    pts_dev = pts_device()
    _, theirs = sc.hold(unprivileged=False, ptmx="/dev/pts/ptmx")
    if theirs["index"] != 0 or theirs["dev"] != pts_dev:
        raise SetupError("the held pty is not index 0 on /dev/pts: %s" % theirs)
    beside = sc.scratch_dir("beside")
    os.mkdir(os.path.join(beside, "pts"), 0o755)
    sc.mount_devpts(os.path.join(beside, "pts"), HEALTHY)
    sc.mknod_ptmx(path=os.path.join(beside, "ptmx"))
    os.symlink(os.path.join(beside, "ptmx"), "/dev/ptmx")
    os.chmod("/dev/pts/0", 0o666)
    watch = OpenWatch()
    try:
        watch.watch("/dev/pts/0")
        report, status = audit_without_peer(sc)
        opened = watch.opened()
    finally:
        watch.close()
    sc.check.eq(opened, [], "the other pty's slave was never opened")
    probe = report.get("probe") or {}
    sc.check.eq(probe.get("failed_step"), "compare", "the name leads off the master's instance: %s" % probe)
    sc.expect(report, ["ptmx-foreign-instance"])
    f = sc.finding(report, "ptmx-foreign-instance") or {}
    sc.check.eq(f.get("evidence", {}).get("confirmed_by_probe"), True, "confirmed_by_probe")


@case("probe-pts-nodev")
def probe_pts_nodev(sc):
    """devpts mounted nodev: ptys allocate, every slave open fails EACCES. mountinfo says nodev:
    the remedy names the flag and the remount without it, not an LSM or the device cgroup."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY + ",nodev")
    sc.wrap = []
    live = sc.run_ptsguard("audit", "--json")
    report = json.loads(live.stdout)
    sc.reports["live"] = (report, live.returncode)
    sc.expect(report, ["pty-allocation-fails"])
    f = sc.finding(report, "pty-allocation-fails") or {}
    sc.check.eq((f.get("evidence", {}).get("step"), f.get("evidence", {}).get("nodev")), ("open_slave", "/dev/pts"),
                "evidence: the slave open failed, on a nodev devpts")
    sc.check.true("remount,dev /dev/pts" in (f.get("remedy") or "") and "nodev" in (f.get("remedy") or ""),
                  "the remedy names nodev and the remount without it: %r" % f.get("remedy"))
    # The healthy variant beside it: the same mount without nodev.
    sc.sh("mount", "-o", "remount,dev", "/dev/pts")
    report = sc.audit()
    sc.expect(report, [])


@case("probe-dev-nodev")
def probe_dev_nodev(sc):
    """/dev mounted nodev: opening the /dev/ptmx node fails with EACCES for everyone, whatever its
    mode. No check reads /dev's mount flags; the allocation probe meets it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.catalog  # read now: with nodev, /dev/null cannot be opened either
    sc.sh("mount", "-o", "remount,nodev", "/dev")
    report = sc.audit()
    unpredicted_failure(sc, report, "open_ptmx", "EACCES", 13)


ATTACKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "signal-attacker")


def attacked_audits(sc, uid, rounds):
    """Audit `rounds` times while a process of uid SIGSTOPs and SIGKILLs, in turn, every child of
    ptsguard it sees; return the live reports and the attacker's counts."""
    import tempfile

    fd, pid_file = tempfile.mkstemp(prefix="ptsguard-attacked-", dir=sc.workdir)
    os.close(fd)
    os.chmod(pid_file, 0o644)
    attacker = subprocess.Popen(
        [sys.executable, ATTACKER, "--uid", str(uid), "--pid-file", pid_file],
        stdin=sc.null, stdout=subprocess.PIPE, text=True,
    )
    reports = []
    try:
        if attacker.stdout.readline().strip() != "ready":
            raise SetupError("the signal attacker did not start")
        # The wrapper names ptsguard's pid before becoming it: the attacker sees its first child.
        wrapper = ["/bin/sh", "-c", 'echo $$ > "$0"; exec "$@"', pid_file]
        for _ in range(rounds):
            with open(pid_file, "w"):
                pass
            # A sanitizer build's leak check runs at exit in a helper task, a child like any
            # other to an attacker as root, who stops it: the exit would then wait for ever.
            env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
            r = subprocess.run(wrapper + [sc.ptsguard, "audit", "--json"], stdin=sc.null,
                               capture_output=True, text=True, timeout=60, env=env)
            report = sc._parse_report(r, "ptsguard audit --json under attack")
            sc.validate_report(report, r.returncode, "live")
            reports.append(report)
    finally:
        attacker.terminate()
        out, _ = attacker.communicate(timeout=20)
    return reports, json.loads(out.strip().splitlines()[-1])


@case("probe-attacked")
def probe_attacked(sc):
    """Processes of uid nobody, the uid the probe allocates as, SIGSTOP and SIGKILL every child of
    ptsguard: they cannot reach the probe's child (its real and saved uid stay root's),
    so every audit completes with a working pty found. Root, which can, only makes the probe
    inconclusive (retried, then "interfered"), never a failure."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    reports, counts = attacked_audits(sc, 65534, 3)
    log("attacker as nobody: %s" % counts)
    sc.check.eq(counts["hit"], 0, "no probe child could be signalled by uid 65534")
    for i, report in enumerate(reports):
        sc.check.eq([f.get("id") for f in report.get("findings", [])], [], "audit %d under attack: findings" % i)
        probe = report.get("probe") or {}
        sc.check.eq((probe.get("performed"), probe.get("failed_step")), (True, None),
                    "audit %d under attack: the probe ran and found a working pty (%s)" % (i, probe))
    reports, counts = attacked_audits(sc, 0, 1)
    log("attacker as root: %s" % counts)
    for i, report in enumerate(reports):
        sc.check.eq([f.get("id") for f in report.get("findings", [])], [], "audit %d attacked by root: findings" % i)
        probe = report.get("probe") or {}
        sc.check.true(
            (probe.get("performed"), probe.get("failed_step")) == (True, None)
            or (probe.get("performed"), probe.get("reason")) == (False, "interfered"),
            "audit %d attacked by root: the probe succeeded or says it was interfered with: %s" % (i, probe),
        )
    # Nothing the attacked probes opened is left open.
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq(sorted(os.listdir("/dev/pts")), ["ptmx"], "no pty left open on /dev/pts")


@case("hidden-stack")
def hidden_stack(sc):
    """A stack at /dev/pts hidden under a new /dev (a container's): info, says what hides it."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount("tmpfs", "/dev", "mode=755")
    new_dev = top_mount("/dev")
    os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod("/dev/null", 0o666)
    os.mknod("/dev/tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
    os.chmod("/dev/tty", 0o666)
    os.symlink("pts/ptmx", "/dev/ptmx")
    os.mkdir("/dev/pts", 0o755)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=0666")
    dev = devnum(os.stat("/dev/pts").st_dev)
    report = sc.audit()
    sc.expect(report, ["devpts-overmount"], severities={"devpts-overmount": "info"})
    f = sc.finding(report, "devpts-overmount")
    if f is not None:
        ev = f.get("evidence", {})
        sc.check.eq(f.get("severity"), "info", "a hidden stack is info")
        sc.check.eq(ev.get("hidden"), True, "evidence hidden")
        sc.check.eq((ev.get("hidden_by") or {}).get("mount_id"), new_dev["mount_id"], "evidence hidden_by")
        sc.check.true("reachable" not in f.get("summary", "").replace("none of them is reachable", ""),
                      "the summary claims nothing reachable: %r" % f.get("summary"))
    serving = [i.get("device") for i in report.get("instances", []) if i.get("serving")]
    sc.check.eq(serving, [dev], "the serving instance is the new /dev's")
    res = sc.probe()
    sc.expect_probe(res, ok=True, gid=TTY_GID, mode="0620", dev=dev, by_name="same")


def give_slave_errno(uid=1000, gid=5):
    """What a privileged program that hands a new pty to a logging-in user gets (sshd, login,
    sudo's use_pty chown the slave): None, or the errno name of the chown."""
    master, slave = os.openpty()
    try:
        os.fchown(slave, uid, gid)
        return None
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        os.close(slave)
        os.close(master)


def read_only_case(sc, level, remedy_start):
    """The audit names a read-only serving devpts (at level), a login cannot be given its
    slave, and the remedy's command, run as printed, makes both right."""
    sc.check.eq(give_slave_errno(), "EROFS", "a slave cannot be given to a user (%s read-only)" % level)
    report = sc.audit()
    sc.check.true("devpts-read-only" in [f.get("id") for f in report.get("findings", [])],
                  "devpts-read-only is reported")
    f = sc.finding(report, "devpts-read-only") or {}
    sc.check.eq(((f.get("evidence") or {}).get("read_only"), f.get("severity")), (level, "critical"),
                "devpts-read-only evidence and severity")
    remedy = f.get("remedy") or ""
    sc.check.true(remedy.startswith(remedy_start), "the remedy %r starts with %r" % (remedy, remedy_start))
    command = remedy.split(" (")[0]
    sc.sh("sh", "-c", command)
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq(give_slave_errno(), None, "after %r a slave can be given to a user" % command)


@case("devpts-read-only-mount")
def devpts_read_only_mount(sc):
    """/dev/pts read-only as a mount (what a recursive read-only bind of /dev gives a container
    since Linux 5.12): allocation works, chown of the slave fails EROFS; remount,bind,rw."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.sh("mount", "-o", "remount,bind,ro", "/dev/pts")
    read_only_case(sc, "mount", "mount -o remount,bind,rw /dev/pts")


@case("devpts-read-only-super")
def devpts_read_only_super(sc):
    """A bind of one slave (a container's console) remounted read-only without bind: the
    instance's superblock becomes read-only under every mount of it, /dev/pts's own mount flag
    still rw. The remedy remounts the instance rw with its options."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, held = sc.hold(unprivileged=False)
    open("/dev/console", "w").close()
    sc.sh("mount", "--bind", "/dev/pts/%d" % held["index"], "/dev/console")
    sc.sh("mount", "-o", "remount,ro,gid=5,mode=620", "/dev/console")
    read_only_case(sc, "superblock", "mount -o remount,rw,gid=5,mode=620 /dev/pts")


@case("dev-console-slave-copy")
def dev_console_slave_copy(sc):
    """A runtime copied a pty slave as a device node onto /dev/console (docker-in-docker,
    --device=/dev/pts/N:/dev/console): every open of it fails with EIO. The remedy, run as
    printed, binds the slave itself, which is quiet (the control: LXC's and nspawn's way)."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    _, held = sc.hold(unprivileged=False)
    index = held["index"]
    os.mknod("/dev/console", 0o600 | stat.S_IFCHR, os.makedev(136, index))
    try:
        os.close(os.open("/dev/console", os.O_RDWR | os.O_NOCTTY))
        got = None
    except OSError as e:
        got = errno.errorcode.get(e.errno)
    sc.check.eq(got, "EIO", "an open of the copied node fails with EIO")
    report = sc.audit()
    sc.expect(report, ["pty-slave-copy"])
    f = sc.finding(report, "pty-slave-copy") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((f.get("severity"), ev.get("path"), ev.get("index"), ev.get("console")),
                ("critical", "/dev/console", index, True), "pty-slave-copy severity and evidence")
    command = (f.get("remedy") or "").split(" (")[0]
    sc.check.eq(command, "rm /dev/console && touch /dev/console && mount --bind /dev/pts/%d /dev/console" % index,
                "the remedy binds the slave")
    sc.sh("sh", "-c", command)
    os.close(os.open("/dev/console", os.O_RDWR | os.O_NOCTTY))
    report = sc.audit()
    sc.expect(report, [])


@case("pty-capacity-reserve")
def pty_capacity_reserve(sc):
    """kernel.pty.reserve on the real kernel: this case's private mount namespace is not the
    initial one, so its own devpts instance stops at kernel.pty.max less kernel.pty.reserve
    (the host's, mounted from the initial mount namespace, would go on to max). Masters
    are opened here until ENOSPC, then all but 50 below that limit released, and the audit
    judges the instance against the limit it really has. Runs alone: for a moment no instance
    outside the initial mount namespace on the machine can allocate."""
    import resource

    def sysctl(name):
        with open("/proc/sys/kernel/pty/" + name) as f:
            return int(f.read())

    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    pty_max, reserve = sysctl("max"), sysctl("reserve")
    limit = pty_max - reserve
    if limit <= 100 or pty_max > 65536:
        raise SetupError("kernel.pty.max %d, reserve %d: outside what this case can fill" % (pty_max, reserve))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, pty_max + 256), max(hard, pty_max + 256)))
    masters, err = [], None
    try:
        while len(masters) < pty_max:
            try:
                masters.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC))
            except OSError as e:
                err = e.errno
                break
        nr_full = sysctl("nr")
        sc.check.eq(err, errno.ENOSPC, "this namespace's instance ran out with ENOSPC")
        sc.check.true(limit - 2 <= nr_full < pty_max - 1,
                      "it ran out at kernel.pty.nr %d: max %d less reserve %d, not max" % (nr_full, pty_max, reserve))
        # Back below the limit by 50: near it, not at it.
        while masters and sysctl("nr") > limit - 50:
            os.close(masters.pop())
        report = sc.audit()
        sc.expect(report, ["pty-capacity"])
        f = sc.finding(report, "pty-capacity") or {}
        ev = f.get("evidence") or {}
        sc.check.eq((ev.get("limit"), ev.get("reserve_available"), ev.get("scope")), (limit, False, "serving-instance"),
                    "pty-capacity judged against max less reserve: %s" % ev)
    finally:
        for fd in masters:
            os.close(fd)


@case("lxc-bind-capacity")
def lxc_bind_capacity(sc):
    """LXC's layout: pts/ptmx bind-mounted over /dev/ptmx, max=16, 15 in use, one slave group 0
    mode 0666: slaves and capacity are found under the instance's own mountpoint."""
    sc.setup_base(ptmx=None)
    sc.mount_devpts("/dev/pts", HEALTHY + ",ptmxmode=0666,max=16")
    open("/dev/ptmx", "w").close()
    sc.sh("mount", "--bind", "/dev/pts/ptmx", "/dev/ptmx")
    dev = pts_device()
    held = [sc.hold(unprivileged=False)[1] for _ in range(15)]
    os.chown("/dev/pts/3", 0, 0)
    os.chmod("/dev/pts/3", 0o666)
    report = sc.audit()
    sc.expect(report, ["pty-capacity", "pty-slave-perms"])
    cap = sc.finding(report, "pty-capacity")
    if cap is not None:
        sc.check.eq(
            {k: cap.get("evidence", {}).get(k) for k in ("mountpoint", "max", "in_use")},
            {"mountpoint": "/dev/pts", "max": 16, "in_use": len(held)},
            "pty-capacity evidence",
        )
        sc.check.true("/dev/ptmx" not in cap.get("summary", ""), "the summary names /dev/pts: %r" % cap.get("summary"))
    perms = sc.finding(report, "pty-slave-perms")
    if perms is not None:
        sc.check.eq(
            project(perms.get("evidence", {}).get("slaves"), ("index", "path", "gid", "mode")),
            [{"index": 3, "path": "/dev/pts/3", "gid": 0, "mode": "0666"}],
            "pty-slave-perms evidence",
        )
    sc.expect_serving(report, dev)
    res = sc.probe()
    sc.expect_probe(res, ok=True, index=15, gid=TTY_GID, by_name="same")
    res = sc.probe()  # the 16th is free again; the 17th would fail: one more held proves it
    sc.hold(unprivileged=False)
    res = sc.probe()
    sc.expect_probe(res, ok=False, step="open", error="ENOSPC")


@case("propagated-stack")
def propagated_stack(sc):
    """grml#53, fai#74: a chroot's `mount --rbind /dev` of a shared /dev; devpts mounted inside
    it propagates back onto the host's /dev/pts. The remedy is about propagation and names the
    mount it came from."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    host_dev = pts_device()
    sc.sh("mount", "--make-rshared", "/dev")
    chroot_dev = os.path.join(sc.scratch_dir("chroot"), "dev")
    os.makedirs(chroot_dev)
    sc.sh("mount", "--rbind", "/dev", chroot_dev)
    sc.mount_devpts(os.path.join(chroot_dev, "pts"), HEALTHY)
    stack = mount_stack("/dev/pts")
    if len(stack) != 2 or stack[0]["device"] != host_dev:
        raise SetupError("devpts did not propagate onto /dev/pts: %s" % stack)
    origin = top_mount(os.path.join(chroot_dev, "pts"))
    report = sc.audit()
    sc.expect(report, ["devpts-overmount", "devpts-overmount"])
    f = [x for x in report.get("findings", []) if (x.get("evidence") or {}).get("mountpoint") == "/dev/pts"]
    sc.check.eq(len(f), 1, "one devpts-overmount finding at /dev/pts")
    if f:
        ev = f[0].get("evidence", {})
        sc.check.eq(
            project([ev.get("propagated_from")], ("mount_id", "mountpoint", "peer_of"))[0],
            {"mount_id": origin["mount_id"], "mountpoint": origin["mountpoint"], "peer_of": stack[1]["mount_id"]},
            "devpts-overmount evidence propagated_from",
        )
        sc.check.true(
            "mount --make-rslave %s" % chroot_dev in (f[0].get("remedy") or ""),
            "the remedy makes the chroot's bind a slave: %r" % f[0].get("remedy"),
        )
    # The chroot's own stack (the bind of the host's devpts, the new one on top) is where the
    # mount was made: not a boot's double mount, but the source of the copy on /dev/pts.
    chroot_pts = os.path.join(chroot_dev, "pts")
    f = [x for x in report.get("findings", []) if (x.get("evidence") or {}).get("mountpoint") == chroot_pts]
    sc.check.eq(len(f), 1, "one devpts-overmount finding at %s" % chroot_pts)
    if f:
        ev, remedy = f[0].get("evidence", {}), f[0].get("remedy") or ""
        sc.check.eq(
            project([ev.get("propagated_to")], ("mount_id", "mountpoint", "peer_of"))[0],
            {"mount_id": stack[1]["mount_id"], "mountpoint": "/dev/pts", "peer_of": origin["mount_id"]},
            "devpts-overmount evidence propagated_to",
        )
        sc.check.true(
            "boot" not in remedy and "umount %s" % chroot_pts in remedy and "mount --make-rslave %s" % chroot_dev in remedy,
            "the chroot's remedy unmounts the source and makes the bind a slave, and blames no boot: %r" % remedy,
        )
    sc.expect_serving(report, stack[1]["device"])
    res = sc.probe()
    sc.expect_probe(res, ok=True, gid=TTY_GID, dev=stack[1]["device"], by_name="same")
    # The chroot's remedy, followed: its unmount takes the copy on /dev/pts with it.
    sc.sh("umount", chroot_pts)
    sc.check.eq([m["device"] for m in mount_stack("/dev/pts")], [host_dev], "after umount %s, /dev/pts holds the host's devpts alone" % chroot_pts)


@case("pidns-mount-namespace")
def pidns_mount_namespace(sc):
    """Whether the audit runs in the initial mount namespace is never judged by pid 1: in its own
    pid namespace (a container's init is pid 1) it is unknown, and said so. nsenter -m alone into
    such a container leaves /proc/self dangling: the error names the file."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    report = sc.audit()
    sc.expect(report, [])
    sc.check.eq((report.get("host") or {}).get("mount_namespace"), "other",
                "this case's own private mount namespace, told by kthreadd")
    inner = sc.sh("unshare", "--pid", "--fork", "--mount", "--mount-proc", sc.ptsguard, "audit", "--json", ok=False)
    try:
        inner_report = json.loads(inner.stdout)
    except ValueError:
        raise SetupError("no JSON from the audit in a pid namespace (%d): %s" % (inner.returncode, inner.stderr))
    sc.validate_report(inner_report, inner.returncode, "live")
    sc.check.eq((inner_report.get("host") or {}).get("mount_namespace"), "unknown",
                "in its own pid namespace (pid 1 is its init) the mount namespace is unknown")
    sc.check.eq(inner.returncode, 0, "exit status in a pid namespace")

    holder = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "sleep", "60"],
        stdin=sc.null, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        nsenter_names_the_file(sc, holder)
    finally:
        holder.kill()
        holder.wait()


def nsenter_names_the_file(sc, holder):
    child = None
    for _ in range(100):
        try:
            with open("/proc/%d/task/%d/children" % (holder.pid, holder.pid)) as f:
                pids = f.read().split()
        except OSError:
            pids = []
        if pids:
            child = pids[0]
            break
        subprocess.run(["sleep", "0.05"])
    if child is None:
        raise SetupError("the pid namespace's init did not start")
    r = sc.sh("nsenter", "-t", child, "-m", sc.ptsguard, "audit", ok=False)
    sc.check.true("/proc/self/mountinfo" in r.stderr, "the error names the file: %r" % r.stderr)
    if "LeakSanitizer has encountered a fatal error" in r.stderr:
        # LeakSanitizer needs /proc/self at exit and turns the status into 1 without it.
        log("not checking the exit status: a sanitizer build cannot exit cleanly without /proc/self")
        return
    sc.check.eq(r.returncode, 3, "exit status of an audit that cannot read mountinfo")


# ---------------------------------------------------------------------------
# User namespaces: judged in their own numbers

def run_in_userns(sc, ids, script, outside=100000):
    """Run script (sh) as root of a new user and mount namespace mapping `ids` ids from
    `outside`, the way rootless podman's is made (unshare --map-users, newuidmap). The
    subordinate id ranges newuidmap requires are added for the time the maps are written, then
    the files are put back as they were. Returns the script's exit status."""
    with subordinate_ids(outside, ids):
        p = subprocess.Popen(
            userns_argv(outside, ids) + ["echo mapped; " + script],
            stdin=sc.null, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        first = p.stdout.readline()
    out, err = p.communicate(timeout=60)
    if first.strip() != "mapped":
        raise SetupError("the user namespace was not made: %r %s" % (first, err))
    return p.returncode, out, err


def userns_audit(sc, ids, setup, probe_as_user=True):
    """Build /dev inside a new user namespace with `setup` (sh), audit it there live and by
    snapshot, allocate a pty there; return (report, probe result)."""
    out = sc.scratch_dir("userns-out")
    # Owned by the namespace's root (host uid 100000, run_in_userns()'s default): ptsguard writes
    # its output only into a directory of root's or its own.
    os.chown(out, 100000, 100000)
    os.chmod(out, 0o755)
    os.chmod(sc.workdir, 0o755)
    probe = '"%s"' % sc.pty_probe
    if probe_as_user:
        probe = "setpriv --reuid=%d --regid=%d --clear-groups %s" % (UNPRIVILEGED_UID, UNPRIVILEGED_GID, probe)
    script = (
        setup
        + '; P="%s"; O="%s"' % (sc.ptsguard, out)
        + '; "$P" audit --json > "$O/live.json" && echo 0 > "$O/live.rc" || echo $? > "$O/live.rc"'
        + '; "$P" snapshot --output "$O/snap.json"'
        + '; %s > "$O/probe.json" || true' % probe
        + '; "$P" repair --format json > "$O/repair.json" 2>"$O/repair.err" || true'
        + '; grep devpts /proc/self/mountinfo > "$O/after-repair" || true'
    )
    rc, _, err = run_in_userns(sc, ids, script)
    if rc != 0:
        raise SetupError("the user namespace setup failed (%d): %s" % (rc, err))
    with open(os.path.join(out, "live.json")) as f:
        live = json.load(f)
    with open(os.path.join(out, "live.rc")) as f:
        sc.reports["live"] = (live, int(f.read()))
    with open(os.path.join(out, "snap.json")) as f:
        snap = json.load(f)
    sc.check_schema(snap, "ptsguard snapshot in a user namespace", snapshot=True)
    off = sc.run_ptsguard("audit", "--snapshot", os.path.join(out, "snap.json"), "--json")
    off_report = json.loads(off.stdout)
    sc.validate_report(live, sc.reports["live"][1], "live")
    sc.validate_report(off_report, off.returncode, "snapshot")
    sc.check.eq(off_report.get("findings"), live.get("findings"), "findings offline vs live in the user namespace")
    with open(os.path.join(out, "probe.json")) as f:
        res = json.loads(f.read().strip() or "{}")
    sc.check.eq(off_report.get("probe"), live.get("probe"), "the probe offline vs live in the user namespace")
    if probe_as_user:
        sc.check_probe_agrees(live, res, "live report in the user namespace")
    with open(os.path.join(out, "repair.json")) as f:
        sc.userns_repair = f.read()
    with open(os.path.join(out, "after-repair")) as f:
        sc.userns_after_repair = f.read()
    return live, snap, res


USERNS_DEV = (
    "mount -t tmpfs -o mode=755 tmpfs /dev; ln -s pts/ptmx /dev/ptmx; mkdir /dev/pts"
    "; touch /dev/null /dev/tty; mount --bind %s /dev/null; mount --bind %s.tty /dev/tty"
)


def userns_dev(sc):
    """The start of a user namespace's setup: a /dev of its own (USERNS_DEV), with /dev/null and
    /dev/tty bound from nodes made here, which the namespace could not make."""
    null = os.path.join(sc.workdir, "null")
    if not os.path.exists(null):
        open(null, "w").close()
        os.chmod(null, 0o666)
        os.mknod(null + ".tty", 0o666 | stat.S_IFCHR, os.makedev(5, 0))
        os.chmod(null + ".tty", 0o666)
    return USERNS_DEV % (null, null)


@case("userns-rootless-healthy")
def userns_rootless_healthy(sc):
    """Rootless podman/runc: ids 0-65535 mapped to 100000-165535, a new /dev, devpts gid=5:
    healthy, although mountinfo prints gid=100005."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    setup = userns_dev(sc) + "; mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts"
    report, snap, res = userns_audit(sc, 65536, setup)
    sc.expect(report, [])
    sc.check.true("gid=100005" in snap.get("mountinfo", ""), "mountinfo in the namespace prints gid=100005")
    sc.check.true((snap.get("gid_map") or "").split() == ["0", "100000", "65536"], "the snapshot keeps gid_map: %r" % snap.get("gid_map"))
    serving = [i for i in report.get("instances", []) if i.get("serving")]
    sc.check.eq([i.get("options", {}).get("gid") for i in serving], [5], "the serving instance's gid, in the namespace's numbers")
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620", by_name="same")


@case("userns-rootless-host-stack")
def userns_rootless_host_stack(sc):
    """The same rootless container over a host whose /dev/pts has two stacked devpts: that stack
    stays locked under the container's new /dev. Nothing reachable is affected: info only."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount_devpts("/dev/pts", HEALTHY)
    setup = userns_dev(sc) + "; mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts"
    report, snap, res = userns_audit(sc, 65536, setup)
    sc.expect(report, ["devpts-overmount"], severities={"devpts-overmount": "info"})
    f = sc.finding(report, "devpts-overmount")
    if f is not None:
        sc.check.eq(f.get("severity"), "info", "the hidden host stack is info")
        sc.check.eq((f.get("evidence") or {}).get("hidden"), True, "evidence hidden")
        sc.check.eq(((f.get("evidence") or {}).get("hidden_by") or {}).get("mountpoint"), "/dev",
                    "hidden by the container's /dev")
    sc.expect_probe(res, ok=True, uid=UNPRIVILEGED_UID, gid=TTY_GID, mode="0620", by_name="same")


@case("userns-single-id-old-userland")
def userns_single_id_old_userland(sc):
    """unshare -r over a root whose userland is glibc 2.17's layout (libc.so.6 a link to
    libc-2.17.so, as CentOS 7's, in /usr/lib64): such a glibc's grantpt() chowns every slave to
    the tty group, which a namespace mapping one gid cannot name, so nobody there gets a pty.
    The same namespace over a current userland is userns-single-id (info)."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    lib64 = sc.scratch_dir("lib64")
    for name in os.listdir("/usr/lib64"):
        src = os.path.join("/usr/lib64", name)
        if os.path.islink(src):
            os.symlink(os.readlink(src), os.path.join(lib64, name))
    os.symlink("libc-2.17.so", os.path.join(lib64, "libc.so.6"))
    setup = (
        userns_dev(sc)
        + "; mount -t devpts -o mode=620,ptmxmode=666 devpts /dev/pts"
        + "; mount --bind %s /usr/lib64" % lib64
    )
    report, snap, res = userns_audit(sc, 1, setup, probe_as_user=False)
    sc.expect(report, ["devpts-options-lost"])
    f = sc.finding(report, "devpts-options-lost") or {}
    ev = f.get("evidence") or {}
    sc.check.eq((f.get("severity"), ev.get("single_id_namespace"), (ev.get("old_userland") or {}).get("glibc")),
                ("critical", True, 17), "critical, naming glibc 2.17")
    remedy = f.get("remedy") or ""
    sc.check.true("map a range" in remedy and "fakeroot" in remedy, "the remedy maps a range or uses fakeroot: %r" % remedy)
    sc.check.eq(((snap or {}).get("userland") or {}).get("glibc_minor"), 17, "the snapshot records the userland")


@case("userns-single-id")
def userns_single_id(sc):
    """unshare -r, unprivileged bubblewrap: one id mapped; gid=5 cannot be mounted (EINVAL), and
    the one user's ptys work. devpts-options-lost is info there, its remedy says gid= cannot be
    set, and repair does not try."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    setup = (
        userns_dev(sc)
        + "; if mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts 2>/dev/null; then exit 9; fi"
        + "; mount -t devpts -o mode=620,ptmxmode=666 devpts /dev/pts"
    )
    report, snap, res = userns_audit(sc, 1, setup, probe_as_user=False)
    sc.expect(report, ["devpts-options-lost"], {"devpts-options-lost": "info"})
    f = sc.finding(report, "devpts-options-lost")
    if f is not None:
        sc.check.eq(f.get("repairable"), False, "not repairable where gid= cannot be set")
        # One user, who gets working ptys: a fact to report, not a failure.
        sc.check.eq(f.get("severity"), "info", "info in a namespace that maps one gid")
        sc.check.eq(report.get("summary", {}).get("critical"), 0, "nothing critical for the one user's working ptys")
        sc.check.true("cannot be set" in (f.get("remedy") or ""), "the remedy says gid= cannot be set: %r" % f.get("remedy"))
        sc.check.true("remount" not in (f.get("remedy") or ""), "no remount remedy: %r" % f.get("remedy"))
    top = [line for line in sc.userns_after_repair.splitlines() if " /dev/pts " in line][-1:]
    sc.check.true(top and "gid=" not in top[0], "repair left the mount alone: %r" % top)
    sc.check.true("remount" not in sc.userns_repair or "not repaired" in sc.userns_repair,
                  "repair did not try a remount: %s" % sc.userns_repair)
    # Every action refused there says why (ns-target-repair-single-id: from the host).
    for a in json.loads(sc.userns_repair or "{}").get("actions") or []:
        sc.check.true(isinstance(a.get("detail"), str) and "single gid" in a["detail"],
                      "the refusal says the namespace maps a single gid: %s" % a)
    # It works for the one user there is; there is no other user to probe as.
    sc.expect_probe(res, ok=True, uid=0, gid=0, mode="0620", by_name="same")
    probe = report.get("probe") or {}
    sc.check.eq(
        {k: probe.get(k) for k in ("performed", "reason", "setup_step")},
        {"performed": False, "reason": "setup-failed", "setup_step": "privileges"},
        "the allocation probe cannot become nobody where only one id is mapped",
    )
    sc.check.eq((probe.get("errno") or {}).get("name"), "EINVAL", "setresgid() of an unmapped gid")


# ---------------------------------------------------------------------------


if __name__ == "__main__":
    sys.exit(cli_main(CASES, __file__, __doc__))
