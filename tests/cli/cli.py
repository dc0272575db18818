#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ptsguard command line: bad input is refused cleanly, the catalog
commands answer, every check is covered by a fixture, and reports and
snapshots match their JSON Schemas. No root needed.

    cli.py --ptsguard PATH [--version-expected V] CASE [CASE...|all]
    cli.py --list
    cli.py --check-registered CASE...   (meson's list must match ours)

Every error case must exit with exactly 3 (never a signal), print nothing on
stdout, and say on stderr what was wrong: the file given, and the key or the
line at fault. Standard library and python3-jsonschema.
"""

import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402
from testlib import case_registry  # noqa: E402

TIMEOUT = 20

# The check catalog comes from the program (`ptsguard checks --format json`, see
# Ctx.catalog); the fixtures below hold every check to it.
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "snapshots")

# Checks whose severity is the catalog's only when user namespaces are enabled, and
# warning otherwise (the host.user_namespaces of the report says which).
SEVERITY_BY_USER_NAMESPACES = {"pt-chown-setuid"}

SUBCOMMANDS = ("audit", "snapshot", "repair", "daemon", "checks", "explain", "status", "initramfs-record")

# A healthy multi-instance host, written by hand after docs/snapshot.md.
MOUNTINFO_LINES = [
    "21 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro",
    "22 21 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
    "23 21 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=4015620k,nr_inodes=1003905,mode=755",
    "24 23 0:24 / /dev/pts rw,nosuid,noexec,relatime shared:3 - devpts devpts rw,gid=5,mode=620,ptmxmode=000",
    "25 21 0:25 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=805120k,mode=755",
]

BASE_SNAPSHOT = {
    "schema": "ptsguard.snapshot/1",
    "hostname": "cli-test",
    "kernel": {
        "release": "6.1.0-13-amd64",
        "user_namespaces_max": 0,
        "pty_max": 4096,
        "pty_reserve": 1024,
        "pty_nr": 1,
    },
    "tty_gid": 5,
    "mountinfo": "\n".join(MOUNTINFO_LINES) + "\n",
    "fstab": "UUID=0b6e2f2c-1111-4c3e-9d7e-000000000001 / ext4 errors=remount-ro 0 1\n",
    "nodes": [
        {
            "path": "/dev/ptmx",
            "type": "char",
            "mode": "0666",
            "uid": 0,
            "gid": 5,
            "rdev": "5:2",
            "dev": "0:5",
            "target": None,
        },
        {
            "path": "/dev/pts/ptmx",
            "type": "char",
            "mode": "0000",
            "uid": 0,
            "gid": 0,
            "rdev": "5:2",
            "dev": "0:24",
            "target": None,
        },
        {
            "path": "/dev/pts/0",
            "type": "char",
            "mode": "0620",
            "uid": 1000,
            "gid": 5,
            "rdev": "136:0",
            "dev": "0:24",
            "target": None,
        },
    ],
    "holders": [],
    "setuid_helpers": [],
}

CASES, case = case_registry()


class Failed(Exception):
    pass


class Ctx:
    def __init__(self, ptsguard, version_expected, tmpdir):
        self.ptsguard = ptsguard
        self.version_expected = version_expected
        self.tmpdir = tmpdir
        self._catalog = None

    @property
    def catalog(self):
        """id -> entry, from `ptsguard checks --format json` (checked sound by testlib)."""
        if self._catalog is None:
            self._catalog = testlib.catalog(self.ptsguard, Failed)
        return self._catalog

    def run(self, *args, stdin_data=None, stdout=subprocess.PIPE, env=None):
        argv = [self.ptsguard] + list(args)
        r = subprocess.run(
            argv,
            input=stdin_data if stdin_data is not None else b"",
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            env=env,
        )
        if r.stdout is None:
            r.stdout = b""
        r.argv = argv
        r.out = r.stdout.decode("utf-8", "replace")
        r.err = r.stderr.decode("utf-8", "replace")
        return r

    def write(self, name, data):
        path = os.path.join(self.tmpdir, name)
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(path, mode) as f:
            f.write(data)
        return path

    def snapshot_file(self, name, snap):
        return self.write(name, json.dumps(snap, indent=2) + "\n")


def describe(r):
    return "command: %s\nexit status: %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        " ".join(r.argv),
        r.returncode if r.returncode >= 0 else "killed by signal %d" % -r.returncode,
        r.out,
        r.err,
    )


def expect_error(r, *needles):
    """Exit exactly 3, nothing on stdout, a message on stderr naming each needle."""
    problems = []
    if r.returncode < 0:
        problems.append("crashed: killed by signal %d (expected exit 3)" % -r.returncode)
    elif r.returncode != 3:
        problems.append("exit status %d, expected 3" % r.returncode)
    if r.out != "":
        problems.append("printed on stdout for an error (expected nothing)")
    if r.err.strip() == "":
        problems.append("no message on stderr")
    for n in needles:
        if n not in r.err:
            problems.append("stderr does not mention %r" % n)
    for bad in ("AddressSanitizer", "runtime error:", "Segmentation fault", "(null)"):
        if bad in r.err:
            problems.append("stderr shows %r" % bad)
    if problems:
        raise Failed("\n".join(problems) + "\n" + describe(r))


def expect_ok(r):
    if r.returncode != 0:
        raise Failed("exit status %s, expected 0\n%s" % (r.returncode, describe(r)))


def parse_json(r):
    try:
        return json.loads(r.out)
    except ValueError as e:
        raise Failed("stdout is not JSON (%s)\n%s" % (e, describe(r)))


def parse_report(r):
    """stdout as a report, which must match docs/schema/report-1.schema.json."""
    return testlib.validate_report(parse_json(r), " ".join(r.argv), Failed)


def parse_snapshot(r):
    """stdout as a snapshot, which must match docs/schema/snapshot-1.schema.json."""
    return testlib.validate_snapshot(parse_json(r), " ".join(r.argv), Failed)


def with_line(lines, number, text):
    lines = list(lines)
    lines[number - 1] = text
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Usage errors


@case("unknown-subcommand")
def unknown_subcommand(ctx):
    expect_error(ctx.run("frobnicate"), "frobnicate")


@case("unknown-flag")
def unknown_flag(ctx):
    expect_error(ctx.run("audit", "--frobnicate"), "--frobnicate")


@case("no-test-hook-option")
def no_test_hook_option(ctx):
    # The pause between plan and act is a test hook of -Dtest-hooks=true builds (an environment
    # variable there), not an option of the product: refused like any unknown option.
    expect_error(ctx.run("repair", "--dry-run", "--pause-before-act"), "--pause-before-act")


@case("format-bogus")
def format_bogus(ctx):
    expect_error(ctx.run("audit", "--format", "bogus"), "bogus")


@case("checks-format-bogus")
def checks_format_bogus(ctx):
    expect_error(ctx.run("checks", "--format", "bogus"), "bogus")


@case("min-severity-bogus")
def min_severity_bogus(ctx):
    expect_error(ctx.run("audit", "--min-severity", "bogus"), "bogus")


@case("check-unknown")
def check_unknown(ctx):
    """audit --check and --ignore take check ids of the catalog: anything else is a usage error
    naming the option and the id, before anything is audited (whatever the format)."""
    expect_error(ctx.run("audit", "--check", "devpts-overmount", "--check", "no-such-check"), "--check", "no-such-check")
    expect_error(ctx.run("audit", "--format", "plugin", "--ignore", "ptmx-Mode"), "--ignore", "ptmx-Mode")
    expect_error(ctx.run("audit", "--format", "prometheus", "--check"), "--check")


@case("quiet-and-output")
def quiet_and_output(ctx):
    """-q prints nothing and exits with the audit's status; --output FILE writes what standard
    output would have held, replaced atomically, and exits with the audit's status too."""
    fixture = os.path.join(FIXTURES, "everything-wrong.json")
    for flag in ("-q", "--quiet"):
        r = ctx.run("audit", flag, "--snapshot", fixture)
        if (r.returncode, r.out) != (2, ""):
            raise Failed("%s: expected exit 2 and no output\n%s" % (flag, describe(r)))
    plain = ctx.run("audit", "--snapshot", fixture, "--json")
    path = os.path.join(ctx.tmpdir, "report.json")
    r = ctx.run("audit", "--snapshot", fixture, "--json", "--output", path)
    if (r.returncode, r.out) != (2, ""):
        raise Failed("--output: expected exit 2 and nothing on standard output\n%s" % describe(r))
    with open(path) as f:
        written = json.load(f)
    for key in ("generated_at", "duration"):
        written.pop(key, None)
    expected = parse_json(plain)
    for key in ("generated_at", "duration"):
        expected.pop(key, None)
    if written != expected:
        raise Failed("--output wrote another report than standard output gets")
    expect_error(ctx.run("audit", "--snapshot", fixture, "--output", os.path.join(ctx.tmpdir, "no", "such", "dir", "x")), "no/such/dir")


@case("missing-argument")
def missing_argument(ctx):
    expect_error(ctx.run("audit", "--snapshot"), "--snapshot")


@case("explain-unknown")
def explain_unknown(ctx):
    # A typo is answered with the nearest id; an id near none points to the catalog.
    expect_error(ctx.run("explain", "devpts-option-lost"), "unknown check 'devpts-option-lost'", "did you mean 'devpts-options-lost'?")
    expect_error(ctx.run("explain", "no-such-id"), "no-such-id", "ptsguard checks")
    # Among known ones, nothing is printed: every id is looked up first.
    expect_error(ctx.run("explain", "ptmx-mode", "ptmx-mod"), "did you mean 'ptmx-mode'?")
    expect_error(ctx.run("explain"), "expected a check id")


@case("status-no-daemon")
def status_no_daemon(ctx):
    """ptsguard status without a daemon: no state file, a state file that is not a report, and a
    report whose daemon has gone (its pid names no ptsguard daemon) each exit 3 and say why."""
    state = os.path.join(ctx.tmpdir, "status-report.json")
    conf = ctx.write("status.conf", ("[Daemon]\nStateFile=%s\n" % state).encode())
    expect_error(ctx.run("status", "--config", conf), state, "no ptsguard daemon runs")
    with open(state, "w") as f:
        f.write("not json")
    expect_error(ctx.run("status", "--config", conf), state, "is not a ptsguard.report/1")
    report = parse_report(ctx.run("audit", "--snapshot", ctx.snapshot_file("valid.json", BASE_SNAPSHOT), "--json"))
    report["daemon_pid"] = os.getpid()  # a python, not a ptsguard daemon
    with open(state, "w") as f:
        json.dump(report, f)
    r = ctx.run("status", "--config", conf)
    if r.returncode != 3 or "daemon: not running" not in r.out or "no ptsguard daemon runs" not in r.err:
        raise Failed("a state file whose daemon is gone\n%s" % describe(r))


@case("explain-several")
def explain_several(ctx):
    """Several ids, each explained in the order given; --json the catalog rows of checks --json."""
    ids = ["pty-slave-copy", "ptmx-mode", "devpts-read-only"]
    r = ctx.run("explain", *ids)
    if r.returncode != 0:
        raise Failed("exit status %d\n%s" % (r.returncode, describe(r)))
    heads = [line.split(" ")[0] for line in r.out.splitlines() if line and not line.startswith(" ") and "(" in line and line.split(" ")[0] in ctx.catalog]
    if heads != ids or r.out.count("MESSAGE_ID=") != 3:
        raise Failed("explained %s, expected %s\n%s" % (heads, ids, describe(r)))
    j = ctx.run("explain", "--json", *ids)
    rows = json.loads(j.out)
    catalog = {c["id"]: c for c in json.loads(ctx.run("checks", "--json").out)}
    if [c["id"] for c in rows] != ids or any(c != catalog[c["id"]] for c in rows):
        raise Failed("explain --json is not the catalog's rows\n%s" % describe(j))


# ---------------------------------------------------------------------------
# Bad snapshot files


@case("snapshot-missing-file")
def snapshot_missing_file(ctx):
    path = os.path.join(ctx.tmpdir, "no-such-dir", "snapshot.json")
    expect_error(ctx.run("audit", "--snapshot", path), path)


@case("snapshot-directory")
def snapshot_directory(ctx):
    expect_error(ctx.run("audit", "--snapshot", ctx.tmpdir), ctx.tmpdir)


@case("snapshot-empty")
def snapshot_empty(ctx):
    path = ctx.write("empty.json", b"")
    expect_error(ctx.run("audit", "--snapshot", path), path)


@case("snapshot-garbage")
def snapshot_garbage(ctx):
    # Deterministic bytes of every value, NULs and invalid UTF-8 included.
    data = bytes((i * 37 + 11) % 256 for i in range(4096))
    path = ctx.write("garbage.json", data)
    expect_error(ctx.run("audit", "--snapshot", path), path)


@case("snapshot-garbage-text")
def snapshot_garbage_text(ctx):
    path = ctx.write("garbage.txt", "this is not JSON at all\n")
    expect_error(ctx.run("audit", "--snapshot", path, "--json"), path)


@case("snapshot-truncated-json")
def snapshot_truncated_json(ctx):
    text = json.dumps(BASE_SNAPSHOT, indent=2)
    path = ctx.write("truncated.json", text[: len(text) // 2])
    expect_error(ctx.run("audit", "--snapshot", path), path)


@case("snapshot-not-object")
def snapshot_not_object(ctx):
    path = ctx.write("array.json", "[1, 2, 3]\n")
    expect_error(ctx.run("audit", "--snapshot", path), path)


@case("snapshot-wrong-schema")
def snapshot_wrong_schema(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["schema"] = "ptsguard.report/1"
    path = ctx.snapshot_file("schema.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "schema")


@case("snapshot-missing-kernel-release")
def snapshot_missing_kernel_release(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    del snap["kernel"]["release"]
    path = ctx.snapshot_file("no-release.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path, "--json"), path, "kernel.release")


@case("snapshot-missing-mountinfo")
def snapshot_missing_mountinfo(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    del snap["mountinfo"]
    path = ctx.snapshot_file("no-mountinfo.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "mountinfo")


@case("snapshot-wrong-type")
def snapshot_wrong_type(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["tty_gid"] = "five"
    path = ctx.snapshot_file("tty-gid.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "tty_gid")


@case("snapshot-wrong-type-nested")
def snapshot_wrong_type_nested(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["kernel"]["pty_max"] = "4096"
    path = ctx.snapshot_file("pty-max.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "pty_max")


@case("snapshot-bad-mode")
def snapshot_bad_mode(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["nodes"][0]["mode"] = "rw-rw-rw-"
    path = ctx.snapshot_file("mode.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "mode")


@case("snapshot-bad-mode-digits")
def snapshot_bad_mode_digits(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["nodes"][0]["mode"] = "0999"
    path = ctx.snapshot_file("mode-digits.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "mode")


@case("snapshot-bad-device")
def snapshot_bad_device(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["nodes"][0]["rdev"] = "five-two"
    path = ctx.snapshot_file("rdev.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "rdev")


@case("snapshot-mountinfo-bad-line")
def snapshot_mountinfo_bad_line(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["mountinfo"] = with_line(MOUNTINFO_LINES, 3, "this is not a mountinfo line")
    path = ctx.snapshot_file("mountinfo-line3.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "line 3")


@case("snapshot-mountinfo-truncated-line")
def snapshot_mountinfo_truncated_line(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    # Cut before the " - " separator: no fstype, no source, no options.
    snap["mountinfo"] = with_line(MOUNTINFO_LINES, 2, "22 21 0:21 / /proc rw,nosuid,nod")
    path = ctx.snapshot_file("mountinfo-line2.json", snap)
    expect_error(ctx.run("audit", "--snapshot", path), path, "line 2")


# ---------------------------------------------------------------------------
# Snapshots that must be accepted


def expect_healthy_snapshot_report(r):
    expect_ok(r)
    report = parse_report(r)
    problems = []
    if report.get("source") != "snapshot":
        problems.append("source is %r, expected 'snapshot'" % report.get("source"))
    if report.get("findings") != []:
        problems.append("findings of a healthy snapshot: %s" % json.dumps(report.get("findings")))
    if report.get("schema") != "ptsguard.report/1":
        problems.append("schema is %r" % report.get("schema"))
    if problems:
        raise Failed("\n".join(problems) + "\n" + describe(r))


@case("snapshot-valid")
def snapshot_valid(ctx):
    # The control for every bad-snapshot case: the unmodified base is accepted.
    path = ctx.snapshot_file("valid.json", BASE_SNAPSHOT)
    expect_healthy_snapshot_report(ctx.run("audit", "--snapshot", path, "--json"))


@case("snapshot-stdin")
def snapshot_stdin(ctx):
    data = json.dumps(BASE_SNAPSHOT).encode()
    expect_healthy_snapshot_report(ctx.run("audit", "--snapshot", "-", "--json", stdin_data=data))


@case("snapshot-unknown-keys")
def snapshot_unknown_keys(ctx):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    snap["x_vendor_note"] = {"anything": [1, 2, 3]}
    snap["kernel"]["x_extra"] = "ignored"
    snap["nodes"][0]["x_extra"] = True
    path = ctx.snapshot_file("unknown-keys.json", snap)
    expect_healthy_snapshot_report(ctx.run("audit", "--snapshot", path, "--json"))


@case("snapshot-stack-picture")
def snapshot_stack_picture(ctx):
    # The text report draws the stack a finding is about from the snapshot alone: the CentOS 6
    # fixture (a covered instance with two holders under the serving one), once as it is and
    # once with a holder that named itself with terminal controls.
    with open(os.path.join(FIXTURES, "centos6-stack.json")) as f:
        snap = json.load(f)
    picture = (
        "    stack at /dev/pts, bottom to top:\n"
        "      1 mount 29 devpts 0:26 rw,gid=5,mode=620,ptmxmode=000 [covered]\n"
        "          held by pid 812 (sshd) pts/0, pid 901 (%s) pts/3\n"
        "      2 mount 41 devpts 0:41 rw,gid=5,mode=620,ptmxmode=000 [reachable] <- /dev/ptmx\n"
    )
    for comm, shown in (("bash", "bash"), ("\x1b]0;pwn\x07\x1b[2J", "\\x1b]0;pwn\\x07\\x1b[2J")):
        snap["holders"][1]["comm"] = comm
        path = ctx.snapshot_file("stack.json", snap)
        r = ctx.run("audit", "--snapshot", path, "--no-color")
        if r.returncode != 2:
            raise Failed("exit status %s, expected 2\n%s" % (r.returncode, describe(r)))
        try:
            out = r.stdout.decode("ascii")
        except UnicodeDecodeError as e:
            raise Failed("the text report is not ASCII: %s\n%s" % (e, describe(r)))
        if picture % shown not in out:
            raise Failed("no picture of the stack, or not this one:\n%s" % out)
        # Under the first finding about the stack only (the critical orphan), not again under
        # devpts-overmount.
        if out.count("stack at /dev/pts") != 1:
            raise Failed("the stack is drawn %d times:\n%s" % (out.count("stack at /dev/pts"), out))
        if out.index("stack at") < out.index("devpts-orphan-in-use:") or out.index(
            "stack at"
        ) > out.index("devpts-overmount:"):
            raise Failed("the picture is not under devpts-orphan-in-use:\n%s" % out)
        bad = [c for c in out if c != "\n" and not (" " <= c <= "~")]
        if bad:
            raise Failed("characters a terminal or a mail may mangle: %r\n%s" % (bad[:5], out))


@case("holders-skipped-note")
def holders_skipped_note(ctx):
    """Processes the holder scan could not inspect: the text report advises running as root only
    when the scan ran without root and CAP_SYS_PTRACE; otherwise it says what it knows."""
    problems = []
    for scanner, errno_, want, unwanted in (
        ("user", 13, "(run as root for a complete devpts-orphan-in-use check)", None),
        ("root-without-cap-sys-ptrace", 13, "the audit ran as root without CAP_SYS_PTRACE", "run as root for"),
        ("cap-sys-ptrace", 13, "although the audit had CAP_SYS_PTRACE: Permission denied", "run as root for"),
        ("cap-sys-ptrace", None, "although the audit had CAP_SYS_PTRACE: refused", "run as root for"),
        (None, 1, "instances: Operation not permitted.", "run as root for"),
    ):
        snap = dict(BASE_SNAPSHOT, holders_scanned=True, holders_skipped=3)
        if scanner:
            snap["holders_scanner"] = scanner
        if errno_:
            snap["holders_skipped_errno"] = errno_
        r = ctx.run("audit", "--snapshot", ctx.snapshot_file("skipped.json", snap), "--no-color")
        note = [line for line in r.out.splitlines() if "could not be inspected" in line]
        what = "holders_scanner %s, errno %s" % (scanner, errno_)
        if r.returncode != 0 or len(note) != 1:
            problems.append("%s: exit %d, notes %r\n%s" % (what, r.returncode, note, describe(r)))
        elif want not in note[0] or (unwanted and unwanted in note[0]):
            problems.append("%s: the note %r (expected %r%s)" % (what, note[0], want, ", without %r" % unwanted if unwanted else ""))
    if problems:
        raise Failed("\n".join(problems))
    bad = dict(BASE_SNAPSHOT, holders_scanned=True, holders_skipped=1, holders_scanner="root")
    expect_error(ctx.run("audit", "--snapshot", ctx.snapshot_file("bad-scanner.json", bad)), "holders_scanner", "root")


@case("snapshot-output-unwritable")
def snapshot_output_unwritable(ctx):
    where = os.path.join(ctx.tmpdir, "no-such-dir", "snapshot.json")
    expect_error(ctx.run("snapshot", "--output", where), "snapshot: cannot write " + where)
    if os.path.exists(where):
        raise Failed("a snapshot appeared at %s" % where)


# ---------------------------------------------------------------------------
# The configuration (ptsguard.conf(5)) in audit and repair


def config_audit(ctx, config_text, snap=BASE_SNAPSHOT):
    """audit --snapshot of a healthy gid=5,mode=620 host with --config; returns (ids, status)."""
    path = ctx.snapshot_file("config-base.json", snap)
    conf = ctx.write("ptsguard.conf", config_text)
    r = ctx.run("audit", "--snapshot", path, "--config", conf, "--json")
    if r.returncode not in (0, 1, 2):
        raise Failed("audit with --config failed\n" + describe(r))
    return sorted(f["id"] for f in parse_report(r)["findings"]), r.returncode


@case("config-applied")
def config_applied(ctx):
    problems = []
    for text, want_ids, want_status in (
        ("", [], 0),
        ("[Devpts]\nMode=620\n", [], 0),
        # A pinned Mode= is the one healthy mode for the instance and for existing slaves
        # alike: /dev/pts/0 (mode 620) is a pty-slave-perms finding under Mode=600. (It used
        # to pass: the check accepted 620 or 600 whatever the pin, while repair and the
        # remedy set the pinned mode.)
        ("[Devpts]\nMode=600\n", ["devpts-options-lost", "pty-slave-perms"], 2),
        ("[Devpts]\nMode=600\n[Ignore]\nChecks=devpts-options-lost\n", ["pty-slave-perms"], 1),
        ("[Devpts]\nMode=600\n[Ignore]\nMountpoints=/dev\n", [], 0),
        ("[Devpts]\nTTYGroup=7\n", ["devpts-gid-mismatch", "pty-slave-perms"], 1),  # slaves in group 5 too
        ("[Daemon]\nCoalesceMSec=500\n", [], 0),
    ):
        got = config_audit(ctx, text)
        if got != (want_ids, want_status):
            problems.append("config %r: findings %s, exit %d; expected %s, exit %d" % (text, got[0], got[1], want_ids, want_status))
    if problems:
        raise Failed("\n".join(problems))


@case("config-mode-pins-slaves")
def config_mode_pins_slaves(ctx):
    # Slaves at 620 and at 600 (after `mesg n`) on an instance of mode 600: without a pin both
    # are healthy; Mode=600 makes the 620 one a finding, fixed to 0600; Mode=620 (on an instance
    # of mode 620) the 600 one, fixed to 0620.
    def snap(instance_mode):
        s = json.loads(json.dumps(BASE_SNAPSHOT))
        s["mountinfo"] = s["mountinfo"].replace("mode=620", "mode=" + instance_mode)
        slave = next(n for n in s["nodes"] if n["path"] == "/dev/pts/0")
        other = dict(slave, path="/dev/pts/1", rdev="136:1", mode="0600", uid=1001)
        s["nodes"].append(other)
        return s

    problems = []
    for instance_mode, text, want_slaves, want_remedy in (
        ("600", "", [], None),
        ("620", "", [], None),
        ("600", "[Devpts]\nMode=600\n", ["/dev/pts/0"], "chgrp 5 /dev/pts/0 && chmod 0600 /dev/pts/0"),
        ("620", "[Devpts]\nMode=620\n", ["/dev/pts/1"], "chgrp 5 /dev/pts/1 && chmod 0620 /dev/pts/1"),
    ):
        path = ctx.snapshot_file("slaves-%s.json" % instance_mode, snap(instance_mode))
        conf = ctx.write("ptsguard.conf", text)
        r = ctx.run("audit", "--snapshot", path, "--config", conf, "--json")
        found = [f for f in parse_report(r)["findings"]]
        perms = [f for f in found if f["id"] == "pty-slave-perms"]
        got_slaves = [x["path"] for f in perms for x in f["evidence"]["slaves"]]
        got_remedy = perms[0]["remedy"] if perms else None
        if (got_slaves, got_remedy) != (want_slaves, want_remedy) or len(found) != len(perms):
            problems.append("instance mode %s, config %r: findings %s, slaves %s, remedy %r; expected only pty-slave-perms with %s, %r"
                            % (instance_mode, text, [f["id"] for f in found], got_slaves, got_remedy, want_slaves, want_remedy))
    if problems:
        raise Failed("\n".join(problems))


@case("config-snapshot-without")
def config_snapshot_without(ctx):
    # A snapshot may come from another host: without --config, the built-in defaults.
    path = ctx.snapshot_file("config-base.json", BASE_SNAPSHOT)
    expect_healthy_snapshot_report(ctx.run("audit", "--snapshot", path, "--json"))


@case("config-bad")
def config_bad(ctx):
    path = ctx.snapshot_file("config-base.json", BASE_SNAPSHOT)
    conf = ctx.write("bad.conf", "[Devpts]\nMode=620\n\n[Repair]\nPolicy=yes\n")
    want = "%s:5: Policy=yes: expected off or safe" % conf
    expect_error(ctx.run("audit", "--snapshot", path, "--config", conf), "audit: " + want)
    # repair reads it before it looks at anything: no root needed to be refused.
    expect_error(ctx.run("repair", "--dry-run", "--config", conf), "repair: " + want)
    conf = ctx.write("bad-heartbeat.conf", "[Daemon]\nPrometheusHeartbeatSec=0\n")
    want = "%s:2: PrometheusHeartbeatSec=0: expected seconds from 1 to 3600" % conf
    expect_error(ctx.run("audit", "--snapshot", path, "--config", conf), "audit: " + want)


@case("config-probe-bad")
def config_probe_bad(ctx):
    path = ctx.snapshot_file("config-base.json", BASE_SNAPSHOT)
    for text, line, message in (
        ("[Probe]\nUser=no-such-user-of-ptsguard\n", 2, "User=no-such-user-of-ptsguard: no such user"),
        ("[Probe]\nEnabled=yes\nUser=root\n", 3, "User=root: uid 0, gid 0: the probe must run as an unprivileged user"),
        ("[Probe]\n\nEnabled=maybe\n", 3, "Enabled=maybe: expected no or yes"),
        ("[Probes]\nUser=nobody\n", 1, "unknown section [Probes] (expected Devpts, Repair, Probe, Ignore, Daemon or Namespaces)"),
    ):
        conf = ctx.write("probe.conf", text)
        want = "%s:%d: %s" % (conf, line, message)
        expect_error(ctx.run("audit", "--snapshot", path, "--config", conf), "audit: " + want)
        expect_error(ctx.run("repair", "--dry-run", "--config", conf), "repair: " + want)
    conf = ctx.write("probe-ok.conf", "[Probe]\nUser=nobody\nEnabled=no\n")
    expect_healthy_snapshot_report(ctx.run("audit", "--snapshot", path, "--config", conf, "--json"))


@case("probe-docs-table")
def probe_docs_table(ctx):
    """docs/checks.md's table of what each check predicts of the allocation probe is what
    gen-docs prints from the catalog, to the letter; and that table is the catalog's as
    checks --format json says it (probe_predicts), row for row."""
    r = ctx.run("checks", "--format", "json")
    expect_ok(r)
    want = []
    for e in parse_json(r):
        p = e.get("probe_predicts")
        if p:
            want.append((e["id"], ", ".join("`%s`" % x for x in p["steps"]), ", ".join(p["errnos"]) or "any"))
    gen_docs = os.path.join(os.path.dirname(ctx.ptsguard), "gen-docs")
    g = subprocess.run([gen_docs, "predictions-md"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT)
    if g.returncode != 0:
        raise Failed("gen-docs predictions-md failed (%d): %s" % (g.returncode, g.stderr))
    got = []
    for line in g.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            got.append((cells[0].strip("`"), cells[1], cells[2]))
    if got != want:
        raise Failed("gen-docs predictions-md says\n  %s\nchecks --format json says\n  %s"
                     % ("\n  ".join(map(str, got)), "\n  ".join(map(str, want))))
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "checks.md")
    with open(docs) as f:
        text = f.read()
    m = re.search(r"<!-- Generated from the catalog by `gen-docs predictions-md`.*?-->\n(.*?)<!-- end of the generated table -->",
                  text, re.S)
    if not m:
        raise Failed("docs/checks.md has no generated prediction table between its markers")
    if m.group(1) != g.stdout:
        raise Failed("docs/checks.md, The allocation probe: the table is not gen-docs predictions-md's "
                     "(paste its output between the markers)\n--- docs:\n%s--- gen-docs:\n%s"
                     % (m.group(1), g.stdout))


@case("config-too-large")
def config_too_large(ctx):
    # Over 1 MiB, a file is refused from its size, before libeconf reads it: libeconf needs
    # minutes for a 2 MB file (so the old behaviour times this case out), and a sparse 200 MB
    # file would not finish at all.
    path = ctx.snapshot_file("config-base.json", BASE_SNAPSHOT)
    sparse = os.path.join(ctx.tmpdir, "sparse.conf")
    with open(sparse, "w") as f:
        f.truncate(200 << 20)
    dense = ctx.write("dense.conf", "[Devpts]\n" + "# padding\n" * ((2 << 20) // 10))
    for conf, size in ((sparse, 200 << 20), (dense, os.path.getsize(dense))):
        want = "%s: the file is too large (%d bytes, at most 1048576)" % (conf, size)
        expect_error(ctx.run("audit", "--snapshot", path, "--config", conf), "audit: " + want)
        expect_error(ctx.run("repair", "--dry-run", "--config", conf), "repair: " + want)


@case("config-missing")
def config_missing(ctx):
    missing = os.path.join(ctx.tmpdir, "no-such.conf")
    expect_error(ctx.run("audit", "--config", missing), missing)
    expect_error(ctx.run("repair", "--config", missing), missing)


# ---------------------------------------------------------------------------
# The catalog commands


@case("checks-json")
def checks_json(ctx):
    # testlib.catalog() refuses an unsound catalog: empty, an id or message id twice, an
    # unknown severity, a message id that is not 32 hex digits, no summary.
    cat = ctx.catalog
    r = ctx.run("checks", "--format", "json")
    expect_ok(r)
    problems = []
    if [e.get("id") for e in parse_json(r)] != list(cat):
        problems.append("a second `checks --format json` lists other ids or another order")
    for cid, e in cat.items():
        for key in ("explanation", "remedy"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                problems.append("%s: no %s" % (cid, key))
    if not testlib.one_shot_ids(cat):
        problems.append("no check that an audit can report")
    if problems:
        raise Failed("\n".join(problems) + "\n" + describe(r))


@case("checks-text")
def checks_text(ctx):
    r = ctx.run("checks")
    expect_ok(r)
    missing = [i for i in ctx.catalog if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(i), r.out)]
    if missing:
        raise Failed("`ptsguard checks` does not list %s\n%s" % (missing, describe(r)))


def fixture_files():
    files = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))
    if not files:
        raise Failed("no fixtures in %s" % FIXTURES)
    return files


def expected_severity(cat, cid, report):
    sev = cat[cid]["severity"]
    if cid in SEVERITY_BY_USER_NAMESPACES and not report["host"]["user_namespaces"]:
        return "warning"
    return sev


def expected_finding_severity(cat, f, report):
    # A devpts stack hidden under another mount is a fact: info.
    if f["id"] == "devpts-overmount" and f.get("evidence", {}).get("hidden") is True:
        return "info"
    # A session on an unreachable instance whose name opens no other pty here.
    if f["id"] == "pty-instance-unreachable" and f.get("evidence", {}).get("colliding_total") == 0:
        return "warning"
    # One user in a namespace that maps one gid, and no gid= can be set there: a fact too.
    if f.get("evidence", {}).get("single_id_namespace") is True and not f.get("evidence", {}).get("old_userland"):
        return "info"
    # Members of tty: a warning when one is a login user.
    if f["id"] == "tty-group-members":
        return "warning" if f.get("evidence", {}).get("login_users") else "info"
    # A copied slave node is critical as the console only.
    if f["id"] == "pty-slave-copy" and f.get("evidence", {}).get("console") is False:
        return "warning"
    return expected_severity(cat, f["id"], report)


@case("prometheus-worst-severity")
def prometheus_worst_severity(ctx):
    """Two findings of one check at different severities (a visible stack, warning, and a hidden
    one, info): the check's one ptsguard_finding series carries the worse, as the exit status
    does."""
    path = os.path.join(FIXTURES, "hidden-and-visible-stack.json")
    r = ctx.run("audit", "--snapshot", path, "--format", "prometheus")
    if r.returncode != 1:
        raise Failed("exit status %d, expected 1 (a warning)\n%s" % (r.returncode, describe(r)))
    series = [line for line in r.out.splitlines() if line.startswith('ptsguard_finding{check="devpts-overmount"')]
    if series != ['ptsguard_finding{check="devpts-overmount",severity="warning"} 1']:
        raise Failed("the devpts-overmount series: %s\n%s" % (series, describe(r)))


@case("catalog-covered")
def catalog_covered(ctx):
    """Every check an audit can report is reported by at least one fixture (and its
    "_expect" names it); the daemon's transition checks by none. Every finding carries
    its catalog entry's message id and repairable, and its severity."""
    cat = ctx.catalog
    produced = {}  # id -> fixtures
    expected = set()
    problems = []
    for path in fixture_files():
        name = os.path.basename(path)
        with open(path) as f:
            fixture = json.load(f)
        expected |= {e.get("id") for e in fixture.get("_expect", {}).get("findings", [])}
        r = ctx.run("audit", "--snapshot", path, "--json")
        if r.returncode not in (0, 1, 2):
            raise Failed("audit of fixture %s failed\n%s" % (name, describe(r)))
        report = parse_report(r)
        for f in report["findings"]:
            cid = f["id"]
            produced.setdefault(cid, []).append(name)
            if cid not in cat:
                problems.append("%s: finding %r is not in the catalog" % (name, cid))
                continue
            for key in ("message_id", "repairable"):
                # A finding may say that its check's repair cannot work here (a gid= its user
                # namespace cannot name, a replaced node to restore), never the reverse.
                if key == "repairable" and f[key] is False:
                    continue
                if f[key] != cat[cid][key]:
                    problems.append("%s: %s of %s is %r, the catalog says %r" % (name, key, cid, f[key], cat[cid][key]))
            if f["severity"] != expected_finding_severity(cat, f, report):
                problems.append("%s: severity of %s is %r, expected %r" % (name, cid, f["severity"], expected_finding_severity(cat, f, report)))
    for cid in testlib.one_shot_ids(cat):
        if cid not in produced:
            problems.append("%s: no fixture in tests/data/snapshots produces it" % cid)
        elif cid not in expected:
            problems.append("%s: produced by %s but no fixture's _expect names it" % (cid, ", ".join(produced[cid])))
    for cid, e in cat.items():
        if e["daemon_only"] and cid in produced:
            problems.append("%s: a daemon transition, yet a one-shot audit of %s reports it" % (cid, ", ".join(produced[cid])))
    if problems:
        raise Failed("\n".join(problems))


@case("schemas")
def schemas(ctx):
    """docs/schema: both are valid schemas; every fixture, a live snapshot and a live
    report match them; and documents that break the contract are rejected."""
    import jsonschema

    problems = []
    for path in (testlib.REPORT_SCHEMA, testlib.SNAPSHOT_SCHEMA):
        with open(path) as f:
            schema = json.load(f)
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            problems.append("%s is not a valid 2020-12 schema: %s" % (path, e.message))
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            problems.append("%s does not declare draft 2020-12" % path)
    if problems:
        raise Failed("\n".join(problems))

    for path in fixture_files():
        with open(path) as f:
            problems += testlib.snapshot_problems(json.load(f))
    problems += testlib.snapshot_problems(BASE_SNAPSHOT)

    # The live host, whatever state it is in.
    live_snapshot = ctx.run("snapshot")
    expect_ok(live_snapshot)
    parse_snapshot(live_snapshot)
    live = ctx.run("audit", "--json")
    if live.returncode not in (0, 1, 2):
        raise Failed("live audit failed\n" + describe(live))
    report = parse_report(live)
    path = ctx.snapshot_file("base.json", BASE_SNAPSHOT)
    r = ctx.run("audit", "--snapshot", path, "--json")
    expect_ok(r)
    healthy = parse_report(r)

    # Each mutation breaks the contract; each must be rejected, at the pointer given.
    def broken(doc, pointer, change):
        doc = copy.deepcopy(doc)
        parts = pointer.strip("/").split("/")
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        change(parent, int(parts[-1]) if isinstance(parent, list) else parts[-1])
        return doc

    def drop(parent, key):
        del parent[key]

    def setter(value):
        def set_(parent, key):
            parent[key] = value

        return set_

    finding = {
        "id": "devpts-options-lost",
        "severity": "critical",
        "message_id": "0" * 32,
        "summary": "a finding",
        "mount_ids": [24],
        "devices": ["0:24"],
        "evidence": {"anything": ["goes", 1]},
        "remedy": "mount -o remount,gid=5,mode=620 /dev/pts",
        "repairable": True,
    }
    with_finding = copy.deepcopy(healthy)
    with_finding["findings"] = [finding]
    with_finding["summary"]["critical"] = 1
    problems += ["a report with a finding: " + p for p in testlib.report_problems(with_finding)]
    # Growth at the top level is allowed (namespaces, and what version 1 adds).
    grown = copy.deepcopy(healthy)
    grown["x_future"] = {"anything": True}
    grown["namespaces"] = [{"mntns": 4026532451, "pid": 81234, "pids_total": 12, "container": None, "report": copy.deepcopy(healthy)}]
    problems += ["a report with namespaces: " + p for p in testlib.report_problems(grown)]

    for what, doc, pointer in (
        ("report without summary", broken(healthy, "/summary", drop), "(the root)"),
        ("report without schema", broken(healthy, "/schema", drop), "(the root)"),
        ("report with a bad schema", broken(healthy, "/schema", setter("ptsguard.report/2")), "/schema"),
        ("report with a bad severity", broken(with_finding, "/findings/0/severity", setter("major")), "/findings/0/severity"),
        ("report with a short message id", broken(with_finding, "/findings/0/message_id", setter("abc")), "/findings/0/message_id"),
        ("report with a bad device", broken(with_finding, "/findings/0/devices/0", setter("0-24")), "/findings/0/devices/0"),
        ("report with evidence not an object", broken(with_finding, "/findings/0/evidence", setter([])), "/findings/0/evidence"),
        ("report with an unknown finding key", broken(with_finding, "/findings/0/x", setter(1)), "/findings/0"),
        ("report with a bad ptmx kind", broken(healthy, "/ptmx/kind", setter("fifo")), "/ptmx/kind"),
        ("report with a three-digit mode", broken(healthy, "/ptmx/mode", setter("666")), "/ptmx/mode"),
        ("report with a bad summary count", broken(healthy, "/summary/info", setter(-1)), "/summary/info"),
        ("namespace report with namespaces", broken(grown, "/namespaces/0/report/namespaces", setter([])), "/namespaces/0/report"),
        ("snapshot with a bad mode", broken(BASE_SNAPSHOT, "/nodes/0/mode", setter("rw-rw-rw-")), "/nodes/0/mode"),
        ("snapshot with mode digits 9", broken(BASE_SNAPSHOT, "/nodes/0/mode", setter("0999")), "/nodes/0/mode"),
        ("snapshot with a bad rdev", broken(BASE_SNAPSHOT, "/nodes/0/rdev", setter("five-two")), "/nodes/0/rdev"),
        ("snapshot char node without rdev", broken(BASE_SNAPSHOT, "/nodes/0/rdev", drop), "/nodes/0"),
        ("snapshot without kernel.release", broken(BASE_SNAPSHOT, "/kernel/release", drop), "/kernel"),
        ("snapshot with tty_gid a string", broken(BASE_SNAPSHOT, "/tty_gid", setter("five")), "/tty_gid"),
        ("snapshot with a bad node type", broken(BASE_SNAPSHOT, "/nodes/0/type", setter("fifo")), "/nodes/0/type"),
    ):
        check = testlib.snapshot_problems if what.startswith("snapshot") else testlib.report_problems
        got = check(doc)
        if not got:
            problems.append("%s: accepted" % what)
        elif not any(" at %s: " % pointer in g for g in got):
            problems.append("%s: rejected, but not at %s: %s" % (what, pointer, got))
    # The same mutation through the harness's entry point fails with the schema and the pointer.
    try:
        testlib.validate_report(broken(healthy, "/summary", drop), "the healthy report without summary", Failed)
        problems.append("validate_report() accepted a report without summary")
    except Failed as e:
        if "docs/schema/report-1.schema.json" not in str(e) or "'summary' is a required property" not in str(e):
            problems.append("validate_report() does not name the schema and the missing key: %s" % e)
    if report["schema"] != "ptsguard.report/1":
        problems.append("live report schema %r" % report["schema"])
    if problems:
        raise Failed("\n".join(problems))


@case("explain-options-lost")
def explain_options_lost(ctx):
    r = ctx.run("explain", "devpts-options-lost")
    expect_ok(r)
    if "remount" not in r.out:
        raise Failed("the explanation gives no remedy with 'remount'\n" + describe(r))


@case("explain-all")
def explain_all(ctx):
    problems = []
    for i in sorted(ctx.catalog):
        r = ctx.run("explain", i)
        if r.returncode != 0 or len(r.out.strip()) < 40:
            problems.append(describe(r))
    if problems:
        raise Failed("explain failed or said almost nothing:\n" + "\n\n".join(problems))


@case("version")
def version(ctx):
    r = ctx.run("--version")
    expect_ok(r)
    if ctx.version_expected:
        if ctx.version_expected not in r.out:
            raise Failed("--version does not print %s\n%s" % (ctx.version_expected, describe(r)))
    elif not re.search(r"\d+\.\d+", r.out):
        raise Failed("--version prints no version number\n" + describe(r))
    m = re.fullmatch(r"ptsguard (\S+)(?: \(git (\S+)\))?\n", r.out)
    if not m:
        raise Failed("--version is not 'ptsguard VERSION' or 'ptsguard VERSION (git DESCRIBE)'\n" + describe(r))
    # A build from a git checkout names its commit; this test runs from the source tree it was built from.
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    if os.path.exists(os.path.join(source, ".git")) and shutil.which("git") and not m.group(2):
        raise Failed("built from a git checkout, but --version names no git description\n" + describe(r))
    report = parse_report(ctx.run("audit", "--snapshot", ctx.snapshot_file("valid.json", BASE_SNAPSHOT), "--json"))
    want = {"name": "ptsguard", "version": m.group(1), "git": m.group(2)}
    if report.get("generator") != want:
        raise Failed("generator in the JSON report is %r, --version says %r" % (report.get("generator"), want))


@case("help")
def help_(ctx):
    r = ctx.run("--help")
    expect_ok(r)
    missing = [s for s in SUBCOMMANDS if s not in r.out]
    if missing:
        raise Failed("--help does not mention %s\n%s" % (missing, describe(r)))
    # Each command's options as ptsguard(8)'s synopsis lists them, in that command's lines.
    blocks, cmd = {}, None
    for line in r.out.splitlines():
        m = re.match(r"  ([a-z-]+) ", line)
        if m and m.group(1) in SUBCOMMANDS:
            cmd = m.group(1)
        elif not line.startswith(" "):
            cmd = None
        if cmd:
            blocks[cmd] = blocks.get(cmd, "") + line + "\n"
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "man", "ptsguard.8.scd")) as f:
        synopsis = f.read().split("# SYNOPSIS", 1)[1].split("# DESCRIPTION", 1)[0]
    lacking = []
    for m in re.finditer(r"^\*ptsguard ([a-z-]+)\*(.*)$", synopsis, re.M):
        for opt in sorted(set(re.findall(r"\*(--[a-z-]+)\*", m.group(2)))):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), blocks.get(m.group(1), "")):
                lacking.append("%s %s" % (m.group(1), opt))
    if lacking:
        raise Failed("--help lacks what ptsguard(8)'s synopsis lists: %s\n%s" % (lacking, describe(r)))


# ---------------------------------------------------------------------------
# The command line's habits: per-command --help, usage on standard error, write errors,
# conflicting formats, colour

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def command_options(cmd):
    """Every long option of cmd's getopt_long table (src/cli/cmd-*.c), with the shared ones of
    the *_OPTIONS macros of src/cli/cli.h it names."""
    with open(os.path.join(SOURCE, "src", "cli", "cmd-%s.c" % cmd.replace("-record", ""))) as f:
        src = f.read()
    with open(os.path.join(SOURCE, "src", "cli", "cli.h")) as f:
        header = f.read()
    opts = set(re.findall(r'^\s*\{ "([a-z][a-z-]*)", *[a-z_]*_argument', src, re.M))
    for macro in re.findall(r"^\s*([A-Z_]+_OPTIONS),", src, re.M):
        body = re.search(r"^#define %s\b((?:.*\\\n)*.*)$" % macro, header, re.M)
        if not body:
            raise Failed("%s of src/cli/cmd-%s.c is not a macro of src/cli/cli.h" % (macro, cmd))
        opts |= set(re.findall(r'"([a-z][a-z-]*)"', body.group(1)))
    return sorted("--" + o for o in opts)


@case("man-sections")
def man_sections(ctx):
    """ptsguard(8): every paragraph of the Journal section is about the journal (a FILES entry
    once landed in one of its sentences), and FILES lists the shell completion files."""
    with open(os.path.join(SOURCE, "man", "ptsguard.8.scd")) as f:
        text = f.read()

    def section(start, level):
        body = text.split("\n" + start + "\n", 1)[1]
        return re.split(r"^#{1,%d} " % level, body, maxsplit=1, flags=re.M)[0]

    problems = []
    journal = section("## Journal", 2)
    for line in journal.splitlines():
        if "completion" in line or "site-functions" in line:
            problems.append("the Journal section holds %r" % line)
    files = section("# FILES", 1)
    for path in ("_/usr/share/bash-completion/completions/ptsguard_", "_/usr/share/zsh/site-functions/\\_ptsguard_"):
        if not re.search(r"^%s" % re.escape(path), files, re.M) and not re.search(r"^_.*, %s$" % re.escape(path), files, re.M):
            problems.append("FILES has no entry for %s" % path)
    if problems:
        raise Failed("\n".join(problems))


@case("help-per-command")
def help_per_command(ctx):
    """`ptsguard CMD --help` (and -h): that command's usage on stdout, exit 0, every option
    of its getopt table named; not the global usage."""
    problems = []
    for cmd in SUBCOMMANDS:
        for flag in ("--help", "-h"):
            r = ctx.run(cmd, flag)
            what = "%s %s" % (cmd, flag)
            if r.returncode != 0 or r.err:
                problems.append("%s: exit status %d, stderr %r (expected 0 and nothing)" % (what, r.returncode, r.err))
            if not r.out.startswith("Usage: ptsguard %s" % cmd):
                problems.append("%s: does not start with 'Usage: ptsguard %s':\n%s" % (what, cmd, r.out[:300]))
            if cmd != "explain":
                lacking = [o for o in command_options(cmd) if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), r.out)]
                if lacking:
                    problems.append("%s: lacks %s" % (what, " ".join(lacking)))
    if problems:
        raise Failed("\n".join(problems))


@case("no-arguments")
def no_arguments(ctx):
    """`ptsguard` alone: a short usage on stderr, exit 3, nothing on stdout."""
    r = ctx.run()
    expect_error(r, "Usage: ptsguard COMMAND", *SUBCOMMANDS)
    if len(r.err.splitlines()) > 5:
        raise Failed("the usage without a command is not short (%d lines)\n%s" % (len(r.err.splitlines()), describe(r)))


@case("usage-errors")
def usage_errors(ctx):
    """An unknown option of each command: stderr, nothing on stdout, exit 3 (the daemon's 1,
    for systemd, as ptsguard(8) says), pointing at that command's own --help."""
    problems = []
    for cmd in SUBCOMMANDS:
        if cmd == "explain":
            r, hint = ctx.run(cmd, "ptmx-mode", "extra"), ""
        else:
            r, hint = ctx.run(cmd, "--frobnicate"), "(see ptsguard %s --help)" % cmd
        want = 1 if cmd == "daemon" else 3
        if r.returncode != want or r.out or not r.err.startswith("ptsguard: %s: " % cmd) or hint not in r.err:
            problems.append("%s: exit %d (expected %d), stdout %r, stderr %r (expected %r in it)" % (cmd, r.returncode, want, r.out, r.err, hint))
    if problems:
        raise Failed("\n".join(problems))


@case("write-error")
def write_error(ctx):
    """Standard output is /dev/full: every command that writes there says "write error" and
    exits 3, --help and --version included."""
    if not os.path.exists("/dev/full"):
        raise Failed("no /dev/full on this machine")
    snap = ctx.snapshot_file("valid.json", BASE_SNAPSHOT)
    runs = [
        ("--help",),
        ("--version",),
        ("checks",),
        ("checks", "--json"),
        ("explain", "ptmx-mode"),
        ("audit", "--snapshot", snap),
        ("audit", "--snapshot", snap, "--json"),
        ("audit", "--snapshot", snap, "--format", "prometheus"),
        ("snapshot", "--no-probe"),
        ("snapshot", "--no-probe", "--output", "-"),
    ] + [(cmd, "--help") for cmd in SUBCOMMANDS]
    problems = []
    with open("/dev/full", "wb") as full:
        for args in runs:
            r = ctx.run(*args, stdout=full)
            if r.returncode != 3 or "write error: No space left on device" not in r.err:
                problems.append("ptsguard %s > /dev/full: exit %d, stderr %r (expected 3 and 'write error')" % (" ".join(args), r.returncode, r.err))
    if problems:
        raise Failed("\n".join(problems))


@case("format-conflict")
def format_conflict(ctx):
    """Two format options naming different formats are a usage error, whatever their order;
    the same one twice is not."""
    snap = ctx.snapshot_file("valid.json", BASE_SNAPSHOT)
    expect_error(ctx.run("audit", "--snapshot", snap, "--json", "--format", "text"), "--json", "--format text")
    expect_error(ctx.run("audit", "--snapshot", snap, "--format", "prometheus", "--json"), "--format prometheus", "--json")
    expect_error(ctx.run("checks", "--format", "text", "--format", "json"), "--format text", "--format json")
    expect_error(ctx.run("repair", "--dry-run", "--format=json", "--format=text"), "--format json", "--format text")
    r = ctx.run("audit", "--snapshot", snap, "--json", "--format", "json")
    expect_ok(r)
    parse_report(r)
    r = ctx.run("checks", "--json", "--json")
    expect_ok(r)
    parse_json(r)


def run_on_pty(ctx, args, env):
    """ptsguard ARGS with standard output a terminal: (status, what it wrote there)."""
    import pty

    master, slave = pty.openpty()
    try:
        r = ctx.run(*args, stdout=slave, env=env)
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the writer has gone
                break
            if not chunk:
                break
            out += chunk
        return r, out.decode("utf-8", "replace")
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


@case("color")
def color(ctx):
    """--color=always|never|auto (--color alone: always; --no-color: never) for audit and
    repair; under auto, colour on a terminal only, and NO_COLOR counts only when not empty."""
    lost = copy.deepcopy(BASE_SNAPSHOT)
    lost["mountinfo"] = with_line(MOUNTINFO_LINES, 4, MOUNTINFO_LINES[3].replace("gid=5,mode=620", "mode=600"))
    snap = ctx.snapshot_file("lost.json", lost)
    base_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    base_env["TERM"] = "xterm"
    esc = "\033["
    problems = []

    def check(what, got, want_color):
        if (esc in got) != want_color:
            problems.append("%s: %s colour\n%s" % (what, "no" if want_color else "unwanted", got[:400]))

    for opts, want in ((["--color=always"], True), (["--color"], True), (["--color=never"], False), (["--no-color"], False), (["--color=auto"], False), ([], False)):
        r = ctx.run("audit", "--snapshot", snap, *opts, env=base_env)
        if r.returncode not in (1, 2) or "devpts-options-lost" not in r.out:
            problems.append("audit %s: exit %d, no devpts-options-lost\n%s" % (" ".join(opts), r.returncode, describe(r)))
        check("audit %s into a pipe" % " ".join(opts), r.out, want)
    for opts, extra, want in (
        ([], {}, True),
        (["--color=auto"], {}, True),
        ([], {"NO_COLOR": ""}, True),
        ([], {"NO_COLOR": "1"}, False),
        (["--color=always"], {"NO_COLOR": "1"}, True),
        (["--no-color"], {}, False),
        (["--color=never"], {}, False),
        ([], {"TERM": "dumb"}, False),
    ):
        r, out = run_on_pty(ctx, ["audit", "--snapshot", snap] + opts, dict(base_env, **extra))
        check("audit %s on a terminal with %s" % (" ".join(opts), extra or "no NO_COLOR"), out, want)
    expect_error(ctx.run("audit", "--snapshot", snap, "--color=sometimes"), "--color", "sometimes")
    expect_error(ctx.run("repair", "--dry-run", "--color=sometimes"), "--color", "sometimes")
    if problems:
        raise Failed("\n".join(problems))


# ---------------------------------------------------------------------------


def run_one(name, ptsguard, version_expected):
    if not os.access(ptsguard, os.X_OK):
        print("FAIL %s: no executable ptsguard at %s" % (name, ptsguard))
        return 1
    with tempfile.TemporaryDirectory(prefix="ptsguard-cli-") as tmpdir:
        ctx = Ctx(os.path.abspath(ptsguard), version_expected, tmpdir)
        try:
            CASES[name](ctx)
        except Failed as e:
            print("FAIL %s:\n%s" % (name, e))
            return 1
        except subprocess.TimeoutExpired as e:
            print("FAIL %s: timed out after %ss: %s" % (name, TIMEOUT, " ".join(e.cmd)))
            return 1
    print("PASS %s" % name)
    return 0


def main():
    args, cases = testlib.case_args(CASES, __file__, __doc__, (("--ptsguard", {}), ("--version-expected", {})), ("--ptsguard",))
    results = [run_one(c, args.ptsguard, args.version_expected) for c in cases]
    return 1 if any(results) else 0


if __name__ == "__main__":
    sys.exit(main())
