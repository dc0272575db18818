#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ptsguard command line: bad input is refused cleanly, and the catalog
commands answer. No root needed.

    cli.py --ptsguard PATH [--version-expected V] CASE [CASE...|all]
    cli.py --list
    cli.py --check-registered CASE...   (meson's list must match ours)

Every error case must exit with exactly 3 (never a signal), print nothing on
stdout, and say on stderr what was wrong: the file given, and the key or the
line at fault. Standard library only.
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from testlib import case_registry  # noqa: E402

TIMEOUT = 20

# spec/checks.md, contract version 1. Hard-coded on purpose: the test must not
# depend on the spec being beside the tree.
CATALOG = {
    "ptmx-missing": "critical",
    "ptmx-not-device": "critical",
    "ptmx-mode": "warning",
    "ptmx-no-devpts": "critical",
    "ptmx-locked": "critical",
    "ptmx-replaced": "warning",
    "pts-covered": "critical",
    "devpts-options-lost": "critical",
    "devpts-gid-mismatch": "warning",
    "devpts-overmount": "warning",
    "devpts-orphan-in-use": "critical",
    "devpts-shared-instance": "warning",
    "devpts-foreign-defaults": "info",
    "pty-slave-perms": "warning",
    "pt-chown-setuid": ("critical", "warning"),  # depends on user namespaces
    "pty-capacity": "warning",
    "fstab-devpts-options": "warning",
    "kernel-single-instance": "info",
}
assert len(CATALOG) == 18

SUBCOMMANDS = ("audit", "snapshot", "repair", "daemon", "checks", "explain")

# A healthy multi-instance host, written by hand after spec/interface.md.
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

    def run(self, *args, stdin_data=None):
        argv = [self.ptsguard] + list(args)
        r = subprocess.run(
            argv,
            input=stdin_data if stdin_data is not None else b"",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
        )
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


@case("format-bogus")
def format_bogus(ctx):
    expect_error(ctx.run("audit", "--format", "bogus"), "bogus")


@case("checks-format-bogus")
def checks_format_bogus(ctx):
    expect_error(ctx.run("checks", "--format", "bogus"), "bogus")


@case("min-severity-bogus")
def min_severity_bogus(ctx):
    expect_error(ctx.run("audit", "--min-severity", "bogus"), "bogus")


@case("missing-argument")
def missing_argument(ctx):
    expect_error(ctx.run("audit", "--snapshot"), "--snapshot")


@case("explain-unknown")
def explain_unknown(ctx):
    r = ctx.run("explain", "no-such-id")
    # Every known id is listed, so the user can pick the right one.
    expect_error(r, "no-such-id", *sorted(CATALOG))


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
    report = parse_json(r)
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
    return sorted(f["id"] for f in parse_json(r)["findings"]), r.returncode


@case("config-applied")
def config_applied(ctx):
    problems = []
    for text, want_ids, want_status in (
        ("", [], 0),
        ("[Devpts]\nMode=620\n", [], 0),
        ("[Devpts]\nMode=600\n", ["devpts-options-lost"], 2),
        ("[Devpts]\nMode=600\n[Ignore]\nChecks=devpts-options-lost\n", [], 0),
        ("[Devpts]\nMode=600\n[Ignore]\nMountpoints=/dev\n", [], 0),
        ("[Devpts]\nTTYGroup=7\n", ["devpts-gid-mismatch", "pty-slave-perms"], 1),  # slaves in group 5 too
        ("[Daemon]\nCoalesceMSec=500\n", [], 0),
    ):
        got = config_audit(ctx, text)
        if got != (want_ids, want_status):
            problems.append("config %r: findings %s, exit %d; expected %s, exit %d" % (text, got[0], got[1], want_ids, want_status))
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


@case("config-missing")
def config_missing(ctx):
    missing = os.path.join(ctx.tmpdir, "no-such.conf")
    expect_error(ctx.run("audit", "--config", missing), missing)
    expect_error(ctx.run("repair", "--config", missing), missing)


# ---------------------------------------------------------------------------
# The catalog commands


def catalog_entries(doc):
    if isinstance(doc, dict):
        for key in ("checks", "catalog"):
            if isinstance(doc.get(key), list):
                return doc[key]
    if isinstance(doc, list):
        return doc
    return None


@case("checks-json")
def checks_json(ctx):
    r = ctx.run("checks", "--format", "json")
    expect_ok(r)
    entries = catalog_entries(parse_json(r))
    if entries is None or not all(isinstance(e, dict) for e in entries):
        raise Failed("expected a list of check objects (top level or under 'checks')\n" + describe(r))
    ids = [e.get("id") for e in entries]
    problems = []
    if sorted(ids) != sorted(CATALOG):
        problems.append(
            "ids differ from the catalog:\n  missing: %s\n  extra: %s\n  duplicated: %s"
            % (
                sorted(set(CATALOG) - set(ids)),
                sorted(set(ids) - set(CATALOG)),
                sorted({i for i in ids if ids.count(i) > 1}),
            )
        )
    for e in entries:
        want = CATALOG.get(e.get("id"))
        if want is None:
            continue
        allowed = want if isinstance(want, tuple) else (want,)
        if e.get("severity") not in allowed:
            problems.append("%s: severity %r, expected %s" % (e.get("id"), e.get("severity"), " or ".join(allowed)))
        if not isinstance(e.get("summary"), str) or not e["summary"].strip():
            problems.append("%s: no summary" % e.get("id"))
    if problems:
        raise Failed("\n".join(problems) + "\n" + describe(r))


@case("checks-text")
def checks_text(ctx):
    r = ctx.run("checks")
    expect_ok(r)
    missing = [i for i in CATALOG if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(i), r.out)]
    if missing:
        raise Failed("`ptsguard checks` does not list %s\n%s" % (missing, describe(r)))


@case("explain-options-lost")
def explain_options_lost(ctx):
    r = ctx.run("explain", "devpts-options-lost")
    expect_ok(r)
    if "remount" not in r.out:
        raise Failed("the explanation gives no remedy with 'remount'\n" + describe(r))


@case("explain-all")
def explain_all(ctx):
    problems = []
    for i in sorted(CATALOG):
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


@case("help")
def help_(ctx):
    r = ctx.run("--help")
    expect_ok(r)
    missing = [s for s in SUBCOMMANDS if s not in r.out]
    if missing:
        raise Failed("--help does not mention %s\n%s" % (missing, describe(r)))


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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptsguard")
    ap.add_argument("--version-expected")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check-registered", action="store_true")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()

    if args.list:
        print("\n".join(CASES))
        return 0
    if args.check_registered:
        missing = sorted(set(CASES) - set(args.cases))
        unknown = sorted(set(args.cases) - set(CASES))
        if missing or unknown:
            print("tests/cli/meson.build and cli.py disagree:")
            print("  not registered in meson.build: %s" % (missing or "-"))
            print("  registered but not in cli.py: %s" % (unknown or "-"))
            return 1
        print("all %d cli cases registered" % len(CASES))
        return 0
    if not args.ptsguard or not args.cases:
        ap.error("--ptsguard and at least one case are required")
    cases = list(CASES) if args.cases == ["all"] else args.cases
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error("unknown case(s): %s (see --list)" % ", ".join(unknown))
    results = [run_one(c, args.ptsguard, args.version_expected) for c in cases]
    return 1 if any(results) else 0


if __name__ == "__main__":
    sys.exit(main())
