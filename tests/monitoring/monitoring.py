#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What monitoring reads of a one-shot audit, on the real kernel: the Prometheus
exposition (`promtool check metrics` on every one, with filters and from an
audit that could not run), the series a filter leaves out, the
monitoring-plugin line, ptsguard-textfile.service and the command it runs, and
the node-problem-detector wrapper of contrib/.

Each case runs as root in a private mount namespace of its own with a
hand-made /dev (the scenario harness, tests/scenario/harness.py), so breaking
devpts touches nothing of the host.

    monitoring.py --ptsguard PATH --pty-probe PATH --units DIR CASE

Standard library only (and promtool, systemd-analyze).
"""

import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scenario"))

from harness import Skip, case_registry, cli_main, log  # noqa: E402

SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(SOURCE, "tests", "data", "snapshots")
NPD_DIR = os.path.join(SOURCE, "contrib", "node-problem-detector")
HEALTHY = "gid=5,mode=620"
TEXTFILE = "/var/lib/prometheus/node-exporter/ptsguard.prom"

CASES, case = case_registry()


def configure(sc, args):
    sc.units = args.units


def version(sc):
    r = sc.run_ptsguard("--version")
    m = re.match(r"ptsguard (\S+)", r.stdout)
    if not m:
        raise RuntimeError("ptsguard --version: %r" % r.stdout)
    return m.group(1)


def promtool_clean(sc, text, what):
    promtool = shutil.which("promtool")
    if promtool is None:
        sc.check.fail("promtool is not installed (Debian package prometheus)")
        return
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    sc.check.eq((r.returncode, r.stdout + r.stderr), (0, ""), "promtool check metrics: %s\n%s" % (what, text))


def series(text):
    """{'name{labels}': value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = value
    return out


def malformed_snapshot(sc):
    path = os.path.join(sc.workdir, "malformed.json")
    with open(path, "w") as f:
        f.write("{\n")
    return path


def break_stack(sc):
    """/dev/pts: a healthy devpts covered by one mounted with defaults (a stack, and the options
    of the one on top lost)."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    sc.mount_devpts("/dev/pts", "mode=644")


def report_ids(sc, *args):
    r = sc.run_ptsguard("audit", "--json", *args)
    report = json.loads(r.stdout)
    return {f["id"]: f["severity"] for f in report["findings"]}, r.returncode


@case("exposition-promtool")
def exposition_promtool(sc):
    """Every exposition a one-shot audit writes passes `promtool check metrics`, and has
    ptsguard_build_info and ptsguard_audit_success; none has a counter. An audit that could not
    run still writes one: ptsguard_audit_success 0 and why, exit status 3."""
    break_stack(sc)
    want_version = 'ptsguard_build_info{version="%s"}' % version(sc)
    bad = malformed_snapshot(sc)
    runs = [
        ("live", [], None),
        ("live --min-severity critical", ["--min-severity", "critical"], None),
        ("live --check devpts-overmount", ["--check", "devpts-overmount"], None),
        ("live --ignore devpts-options-lost", ["--ignore", "devpts-options-lost"], None),
        ("live --all-namespaces", ["--all-namespaces"], None),
        ("fixture everything-wrong", ["--snapshot", os.path.join(FIXTURES, "everything-wrong.json")], None),
        ("fixture healthy-char", ["--snapshot", os.path.join(FIXTURES, "healthy-char.json")], None),
        ("malformed snapshot", ["--snapshot", bad], "snapshot"),
        ("missing configuration", ["--config", os.path.join(sc.workdir, "none.conf")], "configuration"),
    ]
    for what, args, failure in runs:
        r = sc.run_ptsguard("audit", "--format", "prometheus", *args)
        promtool_clean(sc, r.stdout, what)
        s = series(r.stdout)
        sc.check.eq(s.get(want_version), "1", "%s: %s 1" % (what, want_version))
        sc.check.true(not re.search(r"^# TYPE \S+ counter$", r.stdout, re.M), "%s: a one-shot audit writes no counter:\n%s" % (what, r.stdout))
        sc.check.true("_total" not in r.stdout, "%s: no ..._total series:\n%s" % (what, r.stdout))
        if failure:
            sc.check.eq(r.returncode, 3, "%s: exit status" % what)
            sc.check.eq(s.get("ptsguard_audit_success"), "0", "%s: ptsguard_audit_success 0" % what)
            sc.check.eq(s.get('ptsguard_audit_error{reason="%s"}' % failure), "1", "%s: the reason:\n%s" % (what, r.stdout))
            sc.check.true(not any(k.startswith("ptsguard_finding") for k in s), "%s: no finding series from an audit that did not run" % what)
            sc.check.true(r.stderr.strip() != "", "%s: the error on standard error too" % what)
        else:
            sc.check.true(r.returncode in (0, 1, 2), "%s: exit status %d (%s)" % (what, r.returncode, r.stderr))
            sc.check.eq(s.get("ptsguard_audit_success"), "1", "%s: ptsguard_audit_success 1" % what)
            sc.check.true("ptsguard_audit_error" not in r.stdout, "%s: no ptsguard_audit_error" % what)


@case("filtered-left-out")
def filtered_left_out(sc):
    """A stack at /dev/pts whose top lost its options: devpts-overmount (warning) and
    devpts-options-lost (critical). What a filter leaves out is left out of the exposition, never
    written as 0, and the text says how many were not shown."""
    break_stack(sc)
    found, status = report_ids(sc)
    sc.check.eq((found.get("devpts-overmount"), found.get("devpts-options-lost")), ("warning", "critical"), "the findings of the stack: %s" % found)
    sc.check.eq(status, 2, "exit status of the unfiltered audit")
    overmount = 'ptsguard_finding{check="devpts-overmount",severity="warning"}'
    lost = 'ptsguard_finding{check="devpts-options-lost",severity="critical"}'

    r = sc.run_ptsguard("audit", "--format", "prometheus")
    s = series(r.stdout)
    sc.check.eq((s.get(overmount), s.get(lost)), ("1", "1"), "unfiltered: both series 1")

    r = sc.run_ptsguard("audit", "--format", "prometheus", "--min-severity", "critical")
    s = series(r.stdout)
    sc.check.eq(r.returncode, 2, "--min-severity critical: exit status")
    sc.check.true(not any(k.startswith('ptsguard_finding{check="devpts-overmount"') for k in s), "--min-severity critical: no devpts-overmount series at all:\n" + r.stdout)
    sc.check.eq(s.get(lost), "1", "--min-severity critical: %s 1" % lost)
    sc.check.true(not any(k.startswith("ptsguard_finding{") and 'severity="warning"' in k for k in s), "--min-severity critical: no warning series:\n" + r.stdout)
    sc.check.eq([k for k in s if k.startswith("ptsguard_findings{")], ['ptsguard_findings{severity="critical"}'], "--min-severity critical: only the critical count")
    warnings = sum(1 for v in found.values() if v == "warning")

    t = sc.run_ptsguard("audit", "--no-color", "--min-severity", "critical")
    lines = t.stdout.splitlines()
    criticals = sum(1 for v in found.values() if v == "critical")
    sc.check.eq(lines[0] if lines else "", "ptsguard: CRITICAL: %d critical (%d not shown)" % (criticals, len(found) - criticals), "the text's first line, filtered")
    sc.check.true(lines and lines[-1].startswith("%d critical; not shown: %d warning" % (criticals, warnings)), "the text's count line says what was not shown: %r" % (lines[-1:],))
    sc.check.true("0 warning" not in t.stdout, "the filtered text never says 0 warning:\n" + t.stdout)

    r = sc.run_ptsguard("audit", "--format", "prometheus", "--ignore", "devpts-options-lost")
    s = series(r.stdout)
    sc.check.true(not any(k.startswith('ptsguard_finding{check="devpts-options-lost"') for k in s), "--ignore devpts-options-lost: no series of it:\n" + r.stdout)
    sc.check.eq(s.get(overmount), "1", "--ignore devpts-options-lost: %s 1" % overmount)

    r = sc.run_ptsguard("audit", "--format", "prometheus", "--check", "devpts-overmount")
    s = series(r.stdout)
    sc.check.eq([k for k in s if k.startswith("ptsguard_finding{")], [overmount], "--check devpts-overmount: its series alone")
    sc.check.eq(r.returncode, 1, "--check devpts-overmount: exit status of a warning")
    sc.check.eq(s.get('ptsguard_findings{severity="critical"}'), "0", "--check devpts-overmount: no critical among what is shown")

    r = sc.run_ptsguard("audit", "--format", "plugin", "--check", "devpts-overmount")
    sc.check.eq(
        (r.returncode, r.stdout),
        (1, "PTSGUARD WARNING - devpts-overmount; %d finding%s not shown (filtered) | critical=0 warning=1 info=0\n" % (len(found) - 1, "" if len(found) == 2 else "s")),
        "--format plugin --check devpts-overmount",
    )

    q = sc.run_ptsguard("audit", "-q")
    sc.check.eq((q.returncode, q.stdout), (2, ""), "-q: no output, the exit status")
    q = sc.run_ptsguard("audit", "--quiet", "--check", "devpts-overmount")
    sc.check.eq((q.returncode, q.stdout), (1, ""), "--quiet --check devpts-overmount")


PLUGIN_FIXTURES = [
    ("healthy-char", 0, "PTSGUARD OK - no findings | critical=0 warning=0 info=0"),
    ("hidden-and-visible-stack", 1, "PTSGUARD WARNING - devpts-overmount | critical=0 warning=1 info=1"),
    ("hidden-stack", 0, "PTSGUARD OK - no warning or critical finding; INFO - devpts-overmount | critical=0 warning=0 info=1"),
    (
        "everything-wrong",
        2,
        "PTSGUARD CRITICAL - devpts-options-lost, pt-chown-setuid; WARNING - ptmx-mode, devpts-overmount, fstab-devpts-options | critical=2 warning=3 info=0",
    ),
]


@case("plugin-line")
def plugin_line(sc):
    """`audit --format plugin` prints exactly one line, PTSGUARD <status> - <summary> |
    critical=N warning=N info=N, with the exit status its word says: for OK, WARNING,
    CRITICAL (fixtures and the live stack) and UNKNOWN (an audit that could not run)."""
    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    for name, status, line in PLUGIN_FIXTURES:
        r = sc.run_ptsguard("audit", "--format", "plugin", "--snapshot", os.path.join(FIXTURES, name + ".json"))
        sc.check.eq((r.returncode, r.stdout), (status, line + "\n"), "plugin line of fixture %s" % name)
    r = sc.run_ptsguard("audit", "--format", "plugin")
    sc.check.eq((r.returncode, r.stdout), (0, "PTSGUARD OK - no findings | critical=0 warning=0 info=0\n"), "plugin line, live, healthy")
    bad = malformed_snapshot(sc)
    r = sc.run_ptsguard("audit", "--format", "plugin", "--snapshot", bad)
    sc.check.eq(
        (r.returncode, r.stdout),
        (3, "PTSGUARD UNKNOWN - %s: invalid snapshot: line 2: unexpected end of file (truncated JSON)\n" % bad),
        "plugin line of an audit that could not run",
    )
    sc.sh("mount", "-t", "devpts", "-o", "mode=644", "devpts", "/dev/pts")
    r = sc.run_ptsguard("audit", "--format", "plugin")
    sc.check.true(r.returncode == 2 and re.fullmatch(r"PTSGUARD CRITICAL - devpts-options-lost(, [a-z-]+)*; WARNING - devpts-overmount(, [a-z-]+)*(; INFO - [a-z, -]+)? \| critical=\d+ warning=\d+ info=\d+\n", r.stdout), "plugin line, live stack: exit %d, %r" % (r.returncode, r.stdout))
    # The text report's first line says the same verdict.
    t = sc.run_ptsguard("audit", "--no-color")
    first = t.stdout.splitlines()[0] if t.stdout else ""
    sc.check.true(re.fullmatch(r"ptsguard: CRITICAL: \d+ critical, \d+ warning(, \d+ info)?", first), "the text's first line states the verdict: %r" % first)


def unit_exec_start(sc, name):
    with open(os.path.join(sc.units, name)) as f:
        text = f.read()
    exec_start = [line for line in text.splitlines() if line.startswith("ExecStart=")][0]
    return text, exec_start.split("=", 1)[1].split()


@case("textfile-unit")
def textfile_unit(sc):
    """ptsguard-textfile.service and .timer pass `systemd-analyze verify`; the command the
    service runs replaces node_exporter's textfile atomically while findings are present, exits
    with the audit's status (1 and 2 a success of the unit), and an audit that could not run
    writes ptsguard_audit_success 0 there."""
    text, argv = unit_exec_start(sc, "ptsguard-textfile.service")
    sc.check.eq(argv[1:], ["audit", "--format", "prometheus", "--output", TEXTFILE], "the service's command")
    sc.check.true(re.search(r"^SuccessExitStatus=1 2$", text, re.M), "exit 1 and 2 (findings) do not fail the unit")
    scratch = os.path.join("/run", "ptsguard-textfile-verify-%d" % os.getpid())
    os.makedirs(scratch)
    try:
        with open(os.path.join(scratch, "ptsguard-textfile.service"), "w") as f:
            f.write(text.replace(argv[0], sc.ptsguard))
        shutil.copy(os.path.join(sc.units, "ptsguard-textfile.timer"), scratch)
        r = subprocess.run(
            ["systemd-analyze", "verify", "--man=no", os.path.join(scratch, "ptsguard-textfile.service"), os.path.join(scratch, "ptsguard-textfile.timer")],
            capture_output=True,
            text=True,
        )
        sc.check.eq((r.returncode, r.stdout + r.stderr), (0, ""), "systemd-analyze verify")
    finally:
        shutil.rmtree(scratch)

    break_stack(sc)
    textdir = sc.scratch_dir("node-exporter")
    target = os.path.join(textdir, "ptsguard.prom")
    with open(target, "w") as f:
        f.write("# the last run's\n")
    old = open(target)
    before = os.stat(target)
    args = [a if a != TEXTFILE else target for a in argv[1:]]
    r = sc.run_ptsguard(*args)
    sc.check.eq((r.returncode, r.stdout), (2, ""), "the service's command: the audit's status, nothing on standard output (%s)" % r.stderr)
    with open(target) as f:
        written = f.read()
    after = os.stat(target)
    sc.check.true(after.st_ino != before.st_ino, "the file was replaced (a new inode), not rewritten in place")
    sc.check.eq(old.read(), "# the last run's\n", "a reader of the old file still reads it whole")
    old.close()
    sc.check.eq(after.st_mode & 0o777, 0o644, "the textfile's mode")
    sc.check.eq(sorted(os.listdir(textdir)), ["ptsguard.prom"], "nothing left beside the textfile")
    promtool_clean(sc, written, "the service's textfile")
    s = series(written)
    sc.check.eq(
        (s.get("ptsguard_audit_success"), s.get('ptsguard_finding{check="devpts-options-lost",severity="critical"}')),
        ("1", "1"),
        "the textfile holds the finding:\n" + written,
    )
    # The same output as standard output's, but for the time it was taken.
    direct = sc.run_ptsguard("audit", "--format", "prometheus")
    drop = re.compile(r"^ptsguard_(last_audit_timestamp|audit_duration)_seconds .*$", re.M)
    sc.check.eq(drop.sub("", written), drop.sub("", direct.stdout), "the textfile is what --format prometheus prints")

    r = sc.run_ptsguard(*(args + ["--snapshot", malformed_snapshot(sc)]))
    sc.check.eq(r.returncode, 3, "an audit that could not run: exit 3 (the unit fails)")
    with open(target) as f:
        failed = f.read()
    sc.check.eq(series(failed).get("ptsguard_audit_success"), "0", "an audit that could not run: ptsguard_audit_success 0 in the textfile:\n" + failed)
    promtool_clean(sc, failed, "the textfile of an audit that could not run")


def npd(sc, *args, warning=False):
    env = dict(os.environ, PTSGUARD=sc.ptsguard)
    argv = [os.path.join(NPD_DIR, "ptsguard-npd")] + (["--warning-is-problem"] if warning else []) + list(args)
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)


@case("npd-wrapper")
def npd_wrapper(sc):
    """contrib/node-problem-detector: its monitor config runs ptsguard-npd, which maps the audit's
    status to the plugin protocol (0 OK, 1 problem, 3 unknown) with ptsguard's line as the
    message, on a healthy /dev/pts, a stack (a warning), options lost (critical), and an audit
    that could not run."""
    with open(os.path.join(NPD_DIR, "ptsguard-monitor.json")) as f:
        conf = json.load(f)
    sc.check.eq(conf.get("plugin"), "custom", "a custom plugin monitor")
    conditions = {c["type"] for c in conf.get("conditions", [])}
    for rule in conf.get("rules", []):
        sc.check.eq(os.path.basename(rule.get("path", "")), "ptsguard-npd", "each rule runs ptsguard-npd")
        if rule.get("type") == "permanent":
            sc.check.true(rule.get("condition") in conditions, "the permanent rule's condition is declared: %s" % rule)

    sc.setup_base()
    sc.mount_devpts("/dev/pts", HEALTHY)
    r = npd(sc)
    sc.check.eq((r.returncode, r.stdout), (0, "PTSGUARD OK - no findings | critical=0 warning=0 info=0\n"), "healthy: OK")

    # A second healthy devpts on top: a stack, a warning and nothing else.
    sc.mount_devpts("/dev/pts", HEALTHY)
    found, status = report_ids(sc)
    sc.check.eq((status, found), (1, {"devpts-overmount": "warning"}), "a healthy stack: one warning")
    r = npd(sc)
    sc.check.eq((r.returncode, r.stdout), (0, "PTSGUARD WARNING - devpts-overmount | critical=0 warning=1 info=0\n"), "a warning: OK by default")
    r = npd(sc, warning=True)
    sc.check.eq((r.returncode, r.stdout), (1, "PTSGUARD WARNING - devpts-overmount | critical=0 warning=1 info=0\n"), "a warning with --warning-is-problem: a problem")

    sc.mount_devpts("/dev/pts", "mode=644")
    r = npd(sc)
    sc.check.true(r.returncode == 1 and r.stdout.startswith("PTSGUARD CRITICAL - devpts-options-lost") and r.stdout.count("\n") == 1, "options lost: a problem, the line as message: %d %r" % (r.returncode, r.stdout))
    r = npd(sc, "--ignore", "devpts-options-lost", "--min-severity", "critical", "--check", "devpts-overmount")
    sc.check.true(r.returncode == 0 and r.stdout.startswith("PTSGUARD OK - no findings; "), "audit options pass through: %d %r" % (r.returncode, r.stdout))

    r = npd(sc, "--snapshot", malformed_snapshot(sc))
    sc.check.true(r.returncode == 3 and r.stdout.startswith("PTSGUARD UNKNOWN - ") and r.stdout.count("\n") == 1, "an audit that could not run: unknown: %d %r" % (r.returncode, r.stdout))
    env = dict(os.environ, PTSGUARD=os.path.join(sc.workdir, "no-such-ptsguard"))
    r = subprocess.run([os.path.join(NPD_DIR, "ptsguard-npd")], capture_output=True, text=True, env=env, timeout=20)
    sc.check.true(r.returncode == 3 and r.stdout.startswith("PTSGUARD UNKNOWN - "), "no ptsguard: unknown: %d %r" % (r.returncode, r.stdout))


if __name__ == "__main__":
    sys.exit(cli_main(CASES, __file__, __doc__, options=(("--units", {}),), configure=configure))
