# SPDX-License-Identifier: GPL-2.0-or-later
"""Daemon tests: `ptsguard daemon` against the real kernel, journald and udevd.

    daemon.py --ptsguard BUILD/src/ptsguard [--opt KEY=VALUE]... CASE

Cases that need root run in a private mount namespace of their own (see
harness.py) and skip with 77 when not root; CI runs as root and counts a skip
as a failure. Exit 0 pass, 1 fail, 77 skip.
"""

import json
import os
import re
import signal
import socket
import stat
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    default_config,
    PROM_FILE,
    SERVICE,
    STATE_FILE,
    TEST_DIR,
    TTY_GID,
    Checker,
    Daemon,
    Failure,
    Journald,
    NotifySocket,
    WAIT,
    Skip,
    Udevd,
    audit_json,
    catalog,
    finding_ids,
    log,
    main,
    mount_stack,
    read_state,
    register,
    remount_devpts,
    replace_ptmx_with_symlink,
    restore_ptmx_char,
    run,
    state_inode,
    sys_mount,
    sys_umount,
    wait_for,
    wait_state,
)

# How long to keep watching after an expected entry, to catch a duplicate.
SETTLE = 0.3


def transitions(journal, pid):
    """The daemon's PTSGUARD_* entries, in journal order."""
    return [e for e in journal.entries(_PID=str(pid)) if "PTSGUARD_CHECK" in e]


def expected_priority(state, severity):
    if state in ("resolved", "repaired"):
        return "5"
    return {"critical": "2", "warning": "4", "info": "6"}[severity]


def check_entry(c, entry, finding, state, cat, what):
    """One journal entry against the finding (from the state file) it reports."""
    fid = finding["id"]
    c.eq(entry.get("PTSGUARD_CHECK"), fid, what + ": PTSGUARD_CHECK")
    c.eq(entry.get("PTSGUARD_STATE"), state, what + ": PTSGUARD_STATE")
    c.eq(entry.get("MESSAGE_ID"), cat[fid]["message_id"], what + ": MESSAGE_ID from the catalog")
    c.eq(entry.get("PTSGUARD_SEVERITY"), finding["severity"], what + ": PTSGUARD_SEVERITY")
    c.eq(entry.get("PRIORITY"), expected_priority(state, finding["severity"]), what + ": PRIORITY")
    c.true(finding["summary"] in entry.get("MESSAGE", ""), what + ": MESSAGE %r carries the summary %r" % (entry.get("MESSAGE"), finding["summary"]))
    if finding["mount_ids"]:
        c.eq(entry.get("PTSGUARD_MOUNT_ID"), str(finding["mount_ids"][0]), what + ": PTSGUARD_MOUNT_ID")
    else:
        c.true("PTSGUARD_MOUNT_ID" not in entry, what + ": no PTSGUARD_MOUNT_ID for a finding without mounts")
    if finding["devices"]:
        c.eq(entry.get("PTSGUARD_DEVICE"), finding["devices"][0], what + ": PTSGUARD_DEVICE")
    try:
        evidence = json.loads(entry.get("PTSGUARD_EVIDENCE", ""))
    except ValueError:
        c.fail(what + ": PTSGUARD_EVIDENCE is not JSON: %r" % entry.get("PTSGUARD_EVIDENCE"))
        evidence = None
    c.eq(evidence, finding["evidence"], what + ": PTSGUARD_EVIDENCE")


class Steps:
    """Drive the daemon through steps, asserting state file and journal after each."""

    def __init__(self, journal, daemon, cat):
        self.journal = journal
        self.daemon = daemon
        self.cat = cat
        self.c = Checker()
        self.present = {}  # id -> finding (from the state file), while present
        self.n_entries = 0

    def step(self, name, action, expected_ids, new_detected=(), new_resolved=(), check_state=None):
        log("step: %s" % name)
        action()
        report = wait_state("%s: findings %s" % (name, expected_ids), lambda r: finding_ids(r) == sorted(expected_ids))
        n_new = len(new_detected) + len(new_resolved)
        want = self.n_entries + n_new
        wait_for(
            "%s: %d new journal entries" % (name, n_new),
            lambda: len(transitions(self.journal, self.daemon.pid)) >= want,
        )
        time.sleep(SETTLE)
        entries = transitions(self.journal, self.daemon.pid)
        new = entries[self.n_entries :]
        got = sorted((e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in new)
        exp = sorted([(i, "detected") for i in new_detected] + [(i, "resolved") for i in new_resolved])
        self.c.eq(got, exp, "%s: journal entries (check, state)" % name)
        now = {f["id"]: f for f in report["findings"]}
        for e in new:
            fid, state = e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]
            finding = now.get(fid) if state == "detected" else self.present.get(fid)
            if finding is None:
                self.c.fail("%s: entry for %s %s, which is not in the state file" % (name, fid, state))
                continue
            check_entry(self.c, e, finding, state, self.cat, "%s: %s %s" % (name, fid, state))
        self.present = now
        self.n_entries = len(entries)
        self.c.eq(report["summary"], summary_of(report["findings"]), "%s: state file summary" % name)
        if check_state:
            check_state(self.c, report)
        return report


def summary_of(findings):
    s = {"critical": 0, "warning": 0, "info": 0}
    for f in findings:
        s[f["severity"]] += 1
    return s


# --------------------------------------------------------------------------
# Cases


def case_transitions(ptsguard, opts):
    """Break devpts and /dev/ptmx for real; one detected and one resolved entry per transition."""
    cat = catalog(ptsguard)
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    pts = mount_stack("/dev/pts")[0]
    s = Steps(journal, daemon, cat)
    c = s.c

    report = wait_state("first audit", lambda r: True)
    c.eq(finding_ids(report), [], "healthy start: no findings")
    c.eq(report["source"], "live", "state file source")

    def lost(c, r):
        f = r["findings"][0]
        c.eq(f["mount_ids"], [pts], "options-lost names the /dev/pts mount")
        c.eq(f["evidence"].get("mode"), "0644", "options-lost evidence: mode")
        c.eq(f["evidence"].get("gid"), None, "options-lost evidence: no gid")

    s.step("mode=644", lambda: remount_devpts("mode=644"), ["devpts-options-lost"], new_detected=["devpts-options-lost"], check_state=lost)
    s.step("restore", lambda: remount_devpts("gid=%d,mode=620" % TTY_GID), [], new_resolved=["devpts-options-lost"])

    def mismatch(c, r):
        c.eq(r["findings"][0]["mount_ids"], [pts], "gid-mismatch names the /dev/pts mount")
        c.eq(r["instances"][0]["options"]["gid"], 0, "state file: instance gid 0")

    s.step("gid=0", lambda: remount_devpts("gid=0,mode=620"), ["devpts-gid-mismatch"], new_detected=["devpts-gid-mismatch"], check_state=mismatch)
    s.step("restore", lambda: remount_devpts("gid=%d,mode=620" % TTY_GID), [], new_resolved=["devpts-gid-mismatch"])

    def stacked(c, r):
        ids = mount_stack("/dev/pts")
        c.eq(len(ids), 2, "two mounts stacked on /dev/pts")
        c.eq(sorted(r["findings"][0]["mount_ids"]), sorted(ids), "overmount names both mounts of the stack")

    s.step(
        "stack a devpts",
        lambda: sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID),
        ["devpts-overmount"],
        new_detected=["devpts-overmount"],
        check_state=stacked,
    )
    s.step("unmount the top devpts", lambda: sys_umount("/dev/pts"), [], new_resolved=["devpts-overmount"])

    def replaced(c, r):
        f = [f for f in r["findings"] if f["id"] == "ptmx-replaced"][0]
        ev = f["evidence"]
        c.eq(ev["before"]["kind"], "char", "ptmx-replaced evidence: before is the char node")
        c.eq(ev["before"]["rdev"], "5:2", "ptmx-replaced evidence: before rdev")
        c.eq(ev["after"]["kind"], "symlink", "ptmx-replaced evidence: after is a symlink")
        c.eq(ev["after"]["target"], "pts/ptmx", "ptmx-replaced evidence: after target")
        c.eq(ev["udev_event"], None, "ptmx-replaced evidence: no udev event came with it")
        c.eq(r["ptmx"]["kind"], "symlink", "state file: ptmx kind")

    s.step(
        "/dev/ptmx -> pts/ptmx (mode 000)",
        replace_ptmx_with_symlink,
        ["ptmx-locked", "ptmx-replaced"],
        new_detected=["ptmx-locked", "ptmx-replaced"],
        check_state=replaced,
    )
    s.step("restore /dev/ptmx", restore_ptmx_char, [], new_resolved=["ptmx-locked", "ptmx-replaced"])

    # Every transition exactly once over the whole run, in order.
    entries = transitions(journal, daemon.pid)
    seq = [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in entries]
    c.eq(
        seq,
        [
            ("devpts-options-lost", "detected"),
            ("devpts-options-lost", "resolved"),
            ("devpts-gid-mismatch", "detected"),
            ("devpts-gid-mismatch", "resolved"),
            ("devpts-overmount", "detected"),
            ("devpts-overmount", "resolved"),
            ("ptmx-locked", "detected"),
            ("ptmx-replaced", "detected"),
            ("ptmx-locked", "resolved"),
            ("ptmx-replaced", "resolved"),
        ],
        "the whole journal, in order",
    )
    stop_daemon(c, daemon)
    journal.stop()
    c.done()


def case_ptmx_baseline(ptsguard, opts):
    """Creating a missing /dev/ptmx is a fix, not a replacement; replacing the fix then is."""
    cat = catalog(ptsguard)
    os.unlink("/dev/ptmx")
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    s = Steps(journal, daemon, cat)
    wait_state("first audit", lambda r: True)
    s.step("start without /dev/ptmx", lambda: None, ["ptmx-missing"], new_detected=["ptmx-missing"])
    s.step("create /dev/ptmx", restore_ptmx_char, [], new_resolved=["ptmx-missing"])
    s.step("/dev/ptmx -> pts/ptmx", replace_ptmx_with_symlink, ["ptmx-locked", "ptmx-replaced"], new_detected=["ptmx-locked", "ptmx-replaced"])
    s.step("/dev/ptmx -> elsewhere (a second replacement)", lambda: replace_ptmx_with_symlink("/dev/null"), ["ptmx-not-device", "ptmx-replaced"], new_detected=["ptmx-not-device", "ptmx-replaced"], new_resolved=["ptmx-locked"])
    s.step("restore /dev/ptmx", restore_ptmx_char, [], new_resolved=["ptmx-not-device", "ptmx-replaced"])
    stop_daemon(s.c, daemon)
    journal.stop()
    s.c.done()


def stop_daemon(c, daemon):
    """SIGTERM: exit status 0 (under ASan also: no leak); returns seconds it took."""
    rc, took = daemon.stop()
    c.eq(rc, 0, "exit status after SIGTERM (stderr: %s)" % daemon.stderr_text()[-3000:])
    return took


def case_lifecycle(ptsguard, opts):
    """READY=1, STATUS=, the state file = audit --json, SIGHUP good and bad, SIGTERM."""
    c = Checker()
    journal = Journald()
    config = default_config() + "\n[Ignore]\nChecks=\n"
    daemon = Daemon(ptsguard, config_text=config, watchdog_usec=200000)
    ready = daemon.wait_ready()
    c.eq(ready.get("STATUS"), "No findings", "STATUS= sent with READY=1")
    n = daemon.notify.count("WATCHDOG", "1")
    time.sleep(1.0)
    pings = daemon.notify.count("WATCHDOG", "1") - n
    c.true(pings >= 4, "WATCHDOG=1 at least every 200 ms while idle (%d in 1 s)" % pings)

    report = wait_state("first audit", lambda r: True)
    audit = audit_json(ptsguard)
    for key in ("schema", "source", "host", "ptmx", "instances", "findings", "summary"):
        c.eq(report.get(key), audit.get(key), "state file %r equals `audit --json`" % key)
    c.eq(os.stat(STATE_FILE).st_mode & 0o777, 0o644, "state file mode")
    # Nothing but the state file beside it, once any write in flight (our own audit's probe pty
    # wakes the daemon) has been renamed into place.
    state_dir = os.path.dirname(STATE_FILE)
    no_temp_left(c, state_dir, "no temporary files beside the state file", lambda: [n for n in os.listdir(state_dir) if n != os.path.basename(STATE_FILE)])
    with open(PROM_FILE) as f:
        prom = f.read()
    c.true('ptsguard_detections_total{severity="critical"} 0' in prom, "Prometheus file has the daemon's detection counter:\n" + prom)
    c.true("ptsguard_last_audit_timestamp_seconds " in prom, "Prometheus file has the audit timestamp")
    lint = subprocess.run(["promtool", "check", "metrics"], input=prom, capture_output=True, text=True)
    c.eq((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics on the textfile")
    loaded = [e for e in journal.entries(_PID=str(daemon.pid)) if e.get("MESSAGE", "").startswith("Loaded configuration from " + daemon.config_path)]
    c.eq(len(loaded), 1, "the daemon journals the configuration it loaded")

    # SIGHUP with a good configuration: Mode=600 pinned makes the mode=620 devpts unhealthy.
    daemon.write_config(default_config().replace("TTYGroup=tty\n", "TTYGroup=tty\nMode=600\n"))
    daemon.signal(signal.SIGHUP)
    reloading = daemon.notify.wait("RELOADING", "1", what="RELOADING=1 after SIGHUP")
    c.true(reloading.get("MONOTONIC_USEC", "").isdigit(), "MONOTONIC_USEC= with RELOADING=1: %r" % reloading)
    daemon.notify.wait("READY", "1", after=1, what="READY=1 after the reload")
    r = wait_state("Mode=600 pinned: options-lost", lambda r: finding_ids(r) == ["devpts-options-lost"])
    c.eq(r["findings"][0]["evidence"].get("mode"), "0620", "pinned 600: the 620 instance is reported")
    wait_for("STATUS= with the new counts", lambda: daemon.notify.count("STATUS", "Findings: 1 critical, 0 warning, 0 info"))

    # SIGHUP with a broken configuration: logged with file and line, the old one stays.
    broken = default_config().replace("TTYGroup=tty\n", "TTYGroup=tty\nMode=600\nModus=620\n")
    bad_line = broken.splitlines().index("Modus=620") + 1
    daemon.write_config(broken)
    daemon.signal(signal.SIGHUP)
    daemon.notify.wait("RELOADING", "1", after=1, what="RELOADING=1 after the second SIGHUP")
    daemon.notify.wait("READY", "1", after=2, what="READY=1 after the failed reload")
    errors = wait_for(
        "the configuration error in the journal",
        lambda: [e for e in journal.entries(_PID=str(daemon.pid)) if e.get("CONFIG_LINE") == str(bad_line)],
    )
    e = errors[0]
    c.eq(e.get("CONFIG_FILE"), daemon.config_path, "CONFIG_FILE= of the error")
    c.true(
        e.get("MESSAGE", "").startswith("%s:%d: unknown key 'Modus' in [Devpts]" % (daemon.config_path, bad_line)),
        "error message names file and line: %r" % e.get("MESSAGE"),
    )
    c.true("keeping the previous configuration" in e.get("MESSAGE", ""), "error says the old configuration stays")
    c.true(daemon.alive(), "the daemon still runs after a bad reload")
    # The old configuration (Mode=600 pinned) is still in force: mode=600 is healthy now.
    remount_devpts("gid=%d,mode=600" % TTY_GID)
    wait_state("mode=600 under the kept configuration", lambda r: finding_ids(r) == [])
    states = [(x["PTSGUARD_CHECK"], x["PTSGUARD_STATE"]) for x in transitions(journal, daemon.pid)]
    c.eq(states, [("devpts-options-lost", "detected"), ("devpts-options-lost", "resolved")], "journal transitions")

    took = stop_daemon(c, daemon)
    c.true(took < 2.0, "exits promptly after SIGTERM (%.3fs)" % took)
    # The datagram was sent before the daemon exited, but the socket's reader thread may not
    # have taken it in yet: wait for it, then there must be exactly one.
    daemon.notify.wait("STOPPING", "1", what="STOPPING=1 on the notify socket")
    c.true(daemon.notify.count("STOPPING", "1") == 1, "STOPPING=1 sent once")
    log("SIGTERM to exit: %.1f ms" % (took * 1000))
    journal.stop()
    c.done()


UDEV_TEST_RULE = """# ptsguard daemon test: replace /dev/ptmx from a RUN of a change event, the way
# a udev rule replaces it for real; active only while the marker file exists.
ACTION=="change", SUBSYSTEM=="tty", KERNEL=="ptmx", TEST=="%s/replace-ptmx", \\
  RUN+="/bin/sh -c 'ln -s pts/ptmx /dev/.ptmx-udev && mv -T /dev/.ptmx-udev /dev/ptmx'"
""" % (
    TEST_DIR,
)


class UdevMonitor:
    """`udevadm monitor --udev --property` for the tty subsystem, for the seqnums."""

    def __init__(self):
        self.proc = register(subprocess.Popen(
            ["udevadm", "monitor", "--udev", "--property", "--subsystem-match=tty"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        ))
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buf = ""
        # It prints a header once it listens.
        wait_for("udevadm monitor to listen", lambda: self._read() or "UDEV" in self.buf)

    def _read(self):
        try:
            chunk = self.proc.stdout.read()
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            self.buf += chunk
        return False

    def events(self):
        self._read()
        out = []
        for block in self.buf.split("\n\n"):
            props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
            if "SEQNUM" in props:
                out.append(props)
        return out

    def wait_ptmx(self, action, after=0):
        def found():
            hits = [e for e in self.events() if e.get("DEVNAME") == "/dev/ptmx" and e.get("ACTION") == action]
            return hits[after] if len(hits) > after else None

        return wait_for("udev %s event for ptmx" % action, found)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def case_udev(ptsguard, opts):
    """A real udevd: the daemon logs each ptmx event's seqnum and re-audits; ptmx-replaced carries it."""
    c = Checker()
    rules = opts.get("rules")
    if not rules:
        raise Failure("--opt rules=PATH (rules/70-ptsguard.rules) is required")
    with open(rules) as f:
        ptsguard_rules = f.read()
    journal = Journald()
    udevd = Udevd(extra_rules=[("70-ptsguard.rules", ptsguard_rules), ("99-ptsguard-test.rules", UDEV_TEST_RULE)])
    monitor = UdevMonitor()
    # A wider window than the default: the udev event is sent after the RUN program has
    # replaced /dev/ptmx and exited, and both must fall into one window.
    daemon = Daemon(ptsguard, config_text=default_config().replace("CoalesceMSec=20", "CoalesceMSec=200"))
    daemon.wait_ready()
    cat = catalog(ptsguard)
    # ptmxmode=666 so that a symlink to pts/ptmx works: the replacement alone is the finding.
    remount_devpts("gid=%d,mode=620,ptmxmode=666" % TTY_GID)
    wait_state("healthy", lambda r: finding_ids(r) == [] and r["instances"][0]["options"]["ptmxmode"] == "0666")
    time.sleep(SETTLE)

    # 1. A change event: journaled with its seqnum, and a new audit follows.
    inode = state_inode()
    run(["udevadm", "trigger", "--action=change", "--settle", "/sys/class/tty/ptmx"])
    event = monitor.wait_ptmx("change")
    seqnum = event["SEQNUM"]
    seen = wait_for(
        "the daemon's entry for udev seqnum %s" % seqnum,
        lambda: [e for e in journal.entries(_PID=str(daemon.pid)) if e.get("PTSGUARD_UDEV_SEQNUM") == seqnum],
    )
    c.eq(len(seen), 1, "one entry for udev seqnum %s" % seqnum)
    c.eq(seen[0].get("PTSGUARD_UDEV_ACTION"), "change", "PTSGUARD_UDEV_ACTION")
    c.true(("seqnum %s" % seqnum) in seen[0].get("MESSAGE", ""), "the message names the seqnum: %r" % seen[0].get("MESSAGE"))
    wait_for("a re-audit after the udev event (a new state file)", lambda: state_inode() != inode)
    c.eq(finding_ids(read_state()), [], "nothing found after a plain change event")

    # 2. The rule under test matched the ptmx device.
    info = run(["udevadm", "info", "--query=property", "/sys/class/tty/ptmx"]).stdout
    props = dict(line.split("=", 1) for line in info.splitlines() if "=" in line)
    c.true(":ptsguard:" in props.get("TAGS", ""), "70-ptsguard.rules tagged ptmx 'ptsguard': TAGS=%r" % props.get("TAGS"))
    c.true(":systemd:" in props.get("TAGS", ""), "70-ptsguard.rules tagged ptmx 'systemd': TAGS=%r" % props.get("TAGS"))
    c.eq(props.get("SYSTEMD_WANTS"), "ptsguard-audit.service", "70-ptsguard.rules: SYSTEMD_WANTS")

    # 3. udev replaces /dev/ptmx (RUN of the test rule): ptmx-replaced with that event as evidence.
    with open(TEST_DIR + "/replace-ptmx", "w"):
        pass
    n_before = len(transitions(journal, daemon.pid))
    run(["udevadm", "trigger", "--action=change", "--settle", "/sys/class/tty/ptmx"])
    event2 = monitor.wait_ptmx("change", after=1)
    seqnum2 = event2["SEQNUM"]
    c.true(os.path.islink("/dev/ptmx"), "the test rule replaced /dev/ptmx with a symlink")
    r = wait_state("ptmx-replaced", lambda r: finding_ids(r) == ["ptmx-replaced"])
    f = r["findings"][0]
    c.eq(f["evidence"]["udev_event"], {"action": "change", "seqnum": int(seqnum2)}, "ptmx-replaced evidence: the udev event")
    c.eq(f["evidence"]["after"]["target"], "pts/ptmx", "ptmx-replaced evidence: after")
    wait_for("the detected entry", lambda: len(transitions(journal, daemon.pid)) > n_before)
    time.sleep(SETTLE)
    new = transitions(journal, daemon.pid)[n_before:]
    c.eq([(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in new], [("ptmx-replaced", "detected")], "journal: ptmx-replaced detected")
    if new:
        check_entry(c, new[0], f, "detected", cat, "ptmx-replaced detected")
        c.eq(new[0].get("PTSGUARD_UDEV_SEQNUM"), seqnum2, "ptmx-replaced entry: PTSGUARD_UDEV_SEQNUM")
        c.eq(new[0].get("PTSGUARD_UDEV_ACTION"), "change", "ptmx-replaced entry: PTSGUARD_UDEV_ACTION")

    os.unlink(TEST_DIR + "/replace-ptmx")
    restore_ptmx_char()
    wait_state("restored", lambda r: finding_ids(r) == [])
    wait_for("the resolved entry", lambda: len(transitions(journal, daemon.pid)) > n_before + 1)
    time.sleep(SETTLE)
    new = transitions(journal, daemon.pid)[n_before:]
    c.eq(
        [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in new],
        [("ptmx-replaced", "detected"), ("ptmx-replaced", "resolved")],
        "journal: ptmx-replaced detected, then resolved",
    )
    stop_daemon(c, daemon)
    monitor.stop()
    udevd.stop()
    journal.stop()
    c.done()


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


def last_audit_seconds():
    """ptsguard_audit_duration_seconds of the Prometheus file."""
    try:
        with open(PROM_FILE) as f:
            for line in f:
                if line.startswith("ptsguard_audit_duration_seconds "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0.01


def detection_latencies(journal, daemon, n):
    """Remount devpts mode=644 and back n times; ms from the remount to the journal entry.

    Between samples the daemon is left idle longer than its rate limit, so that each sample
    measures a first event after a quiet spell (the storm thread, when running, sees to it that
    it is not quiet at all)."""
    out = []
    for i in range(n):
        for opts, state in (("mode=644", "detected"), ("gid=%d,mode=620" % TTY_GID, "resolved")):
            time.sleep(0.05 + 5 * last_audit_seconds())
            before = len(transitions(journal, daemon.pid))
            t0 = time.time()
            remount_devpts(opts)
            entry = wait_for(
                "%s entry %d" % (state, i),
                lambda: next((e for e in transitions(journal, daemon.pid)[before:] if e["PTSGUARD_STATE"] == state), None),
                interval=0.002,
            )
            out.append((int(entry["__REALTIME_TIMESTAMP"]) - t0 * 1e6) / 1000.0)
    return out


class StormThread:
    """tmpfs mount/umount pairs in a loop until stopped (ctypes releases the GIL)."""

    def __init__(self):
        import threading

        self.target = TEST_DIR + "/storm-bg"
        os.makedirs(self.target, exist_ok=True)
        self.stopped = False
        self.pairs = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()
        self.thread.start()

    def _run(self):
        while not self.stopped:
            sys_mount("tmpfs", self.target, "tmpfs", 0, "size=64k")
            sys_umount(self.target)
            self.pairs += 1

    def stop(self):
        self.stopped = True
        self.thread.join()
        return self.pairs, time.monotonic() - self.t0


STORM_PAIRS = 2000


def storm(n_pairs, at, during):
    """n_pairs tmpfs mount/umount pairs; during() runs after pair `at`. Returns seconds taken."""
    target = TEST_DIR + "/storm"
    os.makedirs(target, exist_ok=True)
    t0 = time.monotonic()
    for i in range(n_pairs):
        sys_mount("tmpfs", target, "tmpfs", 0, "size=64k")
        sys_umount(target)
        if i == at:
            during()
    return time.monotonic() - t0


def tracking_summary(journal, daemon):
    """The daemon's exit line about fanotify mount tracking, parsed; None without tracking."""
    for e in journal.entries(_PID=str(daemon.pid)):
        m = re.match(r"Mount tracking: (\d+) mount events, (\d+) relevant, (\d+) full reads", e.get("MESSAGE", ""))
        if m:
            return {"message": e["MESSAGE"], "events": int(m.group(1)), "relevant": int(m.group(2)), "full_reads": int(m.group(3))}
    return None


def run_storm_case(ptsguard, opts, extra_mounts):
    c = Checker()
    journal = Journald()
    if extra_mounts:
        base = TEST_DIR + "/many"
        os.makedirs(base, exist_ok=True)
        sys_mount("tmpfs", base, "tmpfs", 0, "size=1m")
        t0 = time.monotonic()
        for i in range(extra_mounts):
            d = "%s/%d" % (base, i)
            os.mkdir(d)
            sys_mount("tmpfs", d, "tmpfs", 0, "size=4k")
        with open("/proc/self/mountinfo") as f:
            n_mounts = sum(1 for _ in f)
        log("mount table: %d mounts (%d added in %.1fs)" % (n_mounts, extra_mounts, time.monotonic() - t0))
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    time.sleep(SETTLE)
    log("daemon RSS after start: %d KiB" % daemon.rss_kib())

    idle = detection_latencies(journal, daemon, 10)
    log("detection latency at idle (remount -> journal entry, %d samples): median %.1f ms, p99 %.1f ms; audit %.1f ms" % (len(idle), statistics.median(idle), percentile(idle, 99), last_audit_seconds() * 1000))
    bg = StormThread()
    cpu0 = daemon.cpu_seconds()
    busy = detection_latencies(journal, daemon, 10)
    cpu = daemon.cpu_seconds() - cpu0
    pairs, secs = bg.stop()
    log(
        "detection latency during a storm (%d pairs in %.1fs, %.0f mount events/s; %d samples): median %.1f ms, p99 %.1f ms; daemon CPU %.2fs (%.3f CPU-s per 1000 events)"
        % (pairs, secs, 2 * pairs / secs, len(busy), statistics.median(busy), percentile(busy, 99), cpu, cpu * 1000 / max(1, 2 * pairs))
    )
    wait_state("after the background storm", lambda r: finding_ids(r) == [])

    stacked = {}

    def overmount():
        stacked["t"] = time.time()
        sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)

    before = len(transitions(journal, daemon.pid))
    cpu0 = daemon.cpu_seconds()
    took = storm(STORM_PAIRS, STORM_PAIRS // 2, overmount)
    entry = wait_for(
        "devpts-overmount made during the storm to be journaled",
        lambda: next((e for e in transitions(journal, daemon.pid)[before:] if e["PTSGUARD_CHECK"] == "devpts-overmount"), None),
    )
    # Let the last audit of the storm finish before reading the CPU time.
    time.sleep(0.5)
    cpu = daemon.cpu_seconds() - cpu0
    latency = (int(entry["__REALTIME_TIMESTAMP"]) - stacked["t"] * 1e6) / 1000.0
    c.eq(entry["PTSGUARD_STATE"], "detected", "the overmount entry")
    events = 2 * STORM_PAIRS
    log(
        "storm: %d mount/umount pairs (%d mount table events) in %.2fs; daemon CPU %.3fs (%.3f CPU-s per 1000 events); overmount journaled %.1f ms after the mount"
        % (STORM_PAIRS, events, took, cpu, cpu * 1000.0 / events, latency)
    )
    sys_umount("/dev/pts")
    wait_state("after the storm", lambda r: finding_ids(r) == [])
    c.true(daemon.alive(), "the daemon survived the storm")
    stop_daemon(c, daemon)
    stats = wait_for("the daemon's exit summary", lambda: [e for e in journal.entries(_PID=str(daemon.pid)) if e.get("MESSAGE", "").startswith("Stopping after")])
    log("daemon: %s" % stats[0]["MESSAGE"])
    n_audits = int(stats[0]["MESSAGE"].split()[2])
    # Coalescing: never one audit per raw event.
    c.true(n_audits < events / 4, "audits (%d) are far fewer than the storm's events (%d)" % (n_audits, events))
    tracking = tracking_summary(journal, daemon)
    if tracking:
        log("daemon: %s" % tracking["message"])
        # The storm's mounts are unrelated: each costs a statmount() and never an audit.
        c.true(tracking["relevant"] < 200, "mount events that touched the followed mounts: %d (only the test's own devpts changes)" % tracking["relevant"])
        c.true(tracking["events"] >= events, "fanotify saw every storm event: %d of %d" % (tracking["events"], events))
    else:
        c.true(opts.get("mount_events") == "mountinfo", "the daemon tracked mounts incrementally (MountEvents=auto on this kernel)")
    journal.stop()
    c.done()


def case_storm(ptsguard, opts):
    """2,000 tmpfs mount/umount pairs: bounded CPU, and an overmount in the middle is journaled."""
    run_storm_case(ptsguard, opts, 0)


def case_storm_10k_mounts(ptsguard, opts):
    """The storm again on a 10,000-mount table (as tests/bench/scale-bench measures it)."""
    run_storm_case(ptsguard, opts, 10000)


def case_config_errors(ptsguard, opts):
    """A bad configuration stops the start with file and line (no journal here: standard error)."""
    c = Checker()
    path = TEST_DIR + "/bad.conf"
    cases = [
        ("[Devpts]\nMode=644\n", 2, "Mode=644: expected 620 or 600 (or empty for either)"),
        ("[Devpts]\nTTYGroup=tty\n\n[Daemon]\nBogus=1\n", 5, "unknown key 'Bogus' in [Daemon]"),
        ("[Ignore]\nChecks=ptmx-mode no-such-check\n", 2, "Checks=: unknown check 'no-such-check' (see ptsguard checks)"),
        ("# comment\n[Devpt]\nMode=620\n", 2, "unknown section [Devpt] (expected Devpts, Repair, Probe, Ignore, Daemon or Namespaces)"),
        ("Mode=620\n", 1, "'Mode' is outside of any [Section]"),
        ("[Repair]\nPolicy=yes\n", 2, "Policy=yes: expected off or safe"),
        ("[Daemon]\nCoalesceMSec=20ms\n", 2, "CoalesceMSec=20ms: expected milliseconds from 0 to 10000"),
        ("[Daemon]\nMountEvents=inotify\n", 2, "MountEvents=inotify: expected auto, fanotify or mountinfo"),
        ("[Repair]\nCreatePtmx=link\n", 2, "CreatePtmx=link: expected node or symlink"),
        ("[Daemon]\nHolderRescanSec=-1\n", 2, "HolderRescanSec=-1: expected seconds from 0 to 3600"),
        ("[Daemon]\nAuditCPUPercent=0\n", 2, "AuditCPUPercent=0: expected a percentage from 1 to 100"),
        ("[Daemon]\nStateFile=relative.json\n", 2, "StateFile=relative.json: expected an absolute file name (or empty for none)"),
        ("[Ignore]\nMountpoints=/srv relative\n", 2, "Mountpoints=: 'relative' is not an absolute path"),
        ("[Devpts]\nMode=620\nMode=600\n", 3, "Mode= is set again (first on line 2)"),
        ("[Devpts]\nMode\n", 2, "expected Mode=VALUE"),
        ("[Devpts]\nTTYGroup=no-such-group-here\n", 2, "TTYGroup=no-such-group-here: no such group"),
        ("[Devpts\nMode=620\n", 1, None),
        ("[Namespaces]\nAudit=some\n", 2, "Audit=some: expected none or all"),
        ("[Daemon]\nAuditCPUPercent=5\n[Namespaces]\nAudit=all\nScanSec=0\n", 5, "ScanSec=0: expected seconds from 1 to 3600"),
    ]
    for text, line, message in cases:
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([ptsguard, "daemon", "--config", path], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
        what = "config %r" % text
        c.eq(r.returncode, 1, what + ": exit status")
        prefix = "ptsguard: %s:%d: " % (path, line)
        c.true(r.stderr.startswith(prefix), what + ": stderr starts with %r: %r" % (prefix, r.stderr))
        if message:
            c.eq(r.stderr, prefix + message + "; not starting\n", what + ": message")
    r = subprocess.run([ptsguard, "daemon", "--config", TEST_DIR + "/missing.conf"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    c.eq(r.returncode, 1, "missing --config file: exit status")
    c.true(TEST_DIR + "/missing.conf" in r.stderr, "missing --config file is named: %r" % r.stderr)
    r = subprocess.run([ptsguard, "daemon", "--bogus"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    c.eq((r.returncode, r.stderr), (1, "ptsguard: daemon: unknown option '--bogus' (see ptsguard daemon --help)\n"), "unknown option")
    c.done()


def case_default_config(ptsguard, opts):
    """The shipped data/ptsguard.conf: every key there, commented, with the built-in value."""
    import re

    c = Checker()
    path = opts.get("default_config")
    if not path:
        raise Failure("--opt default_config=PATH is required")

    def loaded(config_path):
        notify = NotifySocket(TEST_DIR + "/notify-%d" % time.monotonic_ns())
        env = dict(os.environ, NOTIFY_SOCKET=notify.path)
        p = register(subprocess.Popen([ptsguard, "daemon", "--config", config_path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        try:
            notify.wait("READY", "1", what="READY=1 with %s" % config_path)
        finally:
            p.send_signal(signal.SIGTERM)
            out = p.communicate(timeout=10)[0]
        c.eq(p.returncode, 0, "%s: exit status (output: %s)" % (config_path, out))
        line = out.splitlines()[0] if out else ""
        return line.split(": ", 2)[-1]

    with open(path) as f:
        text = f.read()
    keys = re.findall(r"^#([A-Za-z]+)=", text, re.M)
    c.eq(
        sorted(keys),
        sorted(["TTYGroup", "Mode", "Policy", "CreatePtmx", "Enabled", "User", "Checks", "Mountpoints", "MountEvents", "CoalesceMSec", "AuditCPUPercent", "HolderRescanSec", "StateFile", "PrometheusFile", "PrometheusHeartbeatSec", "Audit", "ScanSec"]),
        "every key is in the default configuration, commented out",
    )
    c.true(not re.search(r"^[A-Za-z]+=", text, re.M), "no key is set in the default configuration")
    as_shipped = loaded(path)
    uncommented = TEST_DIR + "/uncommented.conf"
    with open(uncommented, "w") as f:
        f.write(re.sub(r"^#([A-Za-z]+=)", r"\1", text, flags=re.M))
    c.eq(loaded(uncommented), as_shipped, "uncommenting every key changes nothing: the comments show the built-in values")
    c.done()


def overlay_writable(path):
    """Make directory path writable in this namespace only (an overlay over the nearest existing parent)."""
    parent = path
    while not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    work = TEST_DIR + "/overlay-" + parent.strip("/").replace("/", "_")
    os.makedirs(work + "/upper", exist_ok=True)
    os.makedirs(work + "/work", exist_ok=True)
    sys_mount("overlay", parent, "overlay", 0, "lowerdir=%s,upperdir=%s/upper,workdir=%s/work" % (parent, work, work))
    os.makedirs(path, exist_ok=True)


def case_config_dirs(ptsguard, opts):
    """Vendor file, /etc file, drop-ins: libeconf's merge order, and errors naming the drop-in."""
    c = Checker()
    vendor, admin = opts.get("vendor_dir"), opts.get("admin_dir")
    if not vendor or not admin:
        raise Failure("--opt vendor_dir=... --opt admin_dir=... are required")
    overlay_writable(vendor + "/ptsguard.conf.d")
    overlay_writable(admin + "/ptsguard.conf.d")

    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def start():
        notify = NotifySocket(TEST_DIR + "/notify-%d" % time.monotonic_ns())
        env = dict(os.environ, NOTIFY_SOCKET=notify.path)
        p = register(subprocess.Popen([ptsguard, "daemon"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        return p, notify

    write(vendor + "/ptsguard.conf", "[Devpts]\nMode=600\n[Daemon]\nCoalesceMSec=50\n")
    write(vendor + "/ptsguard.conf.d/10-vendor.conf", "[Daemon]\nCoalesceMSec=30\nAuditCPUPercent=40\n")
    write(vendor + "/ptsguard.conf.d/30-vendor.conf", "[Ignore]\nChecks=pty-capacity\n")
    write(admin + "/ptsguard.conf.d/20-admin.conf", "[Daemon]\nAuditCPUPercent=50\n")
    # Only the vendor file and drop-ins: Mode=600 from the vendor file.
    os.rename(admin + "/ptsguard.conf.d/20-admin.conf", admin + "/20-admin.conf.off")
    p, notify = start()
    notify.wait("READY", "1", what="READY=1 with the vendor configuration")
    p.send_signal(signal.SIGTERM)
    out = p.communicate(timeout=10)[0]
    c.eq(p.returncode, 0, "vendor only: exit status")
    want = "ptsguard: Loaded configuration from %s/ptsguard.conf, %s/ptsguard.conf.d/10-vendor.conf, %s/ptsguard.conf.d/30-vendor.conf: TTYGroup=tty Mode=600 Policy=off CreatePtmx=node Probe=yes ProbeUser=nobody MountEvents=auto CoalesceMSec=30 AuditCPUPercent=40 HolderRescanSec=30 StateFile=/run/ptsguard/report.json PrometheusFile=(none) PrometheusHeartbeatSec=60 Ignore=pty-capacity Namespaces.Audit=none ScanSec=5" % (vendor, vendor, vendor)
    c.eq(out.splitlines()[0] if out else "", want, "vendor file and vendor drop-ins")

    # /etc's file replaces the vendor file; /etc's drop-ins come after the vendor's.
    os.rename(admin + "/20-admin.conf.off", admin + "/ptsguard.conf.d/20-admin.conf")
    write(admin + "/ptsguard.conf", "[Repair]\nPolicy=safe\n")
    write(admin + "/ptsguard.conf.d/05-admin.conf", "[Daemon]\nCoalesceMSec=70\n")
    p, notify = start()
    notify.wait("READY", "1", what="READY=1 with vendor and admin configuration")
    p.send_signal(signal.SIGTERM)
    out = p.communicate(timeout=10)[0]
    c.eq(p.returncode, 0, "vendor and admin: exit status")
    order = ", ".join(
        [
            admin + "/ptsguard.conf",
            vendor + "/ptsguard.conf.d/10-vendor.conf",
            vendor + "/ptsguard.conf.d/30-vendor.conf",
            admin + "/ptsguard.conf.d/05-admin.conf",
            admin + "/ptsguard.conf.d/20-admin.conf",
        ]
    )
    want = "ptsguard: Loaded configuration from %s: TTYGroup=tty Mode=620|600 Policy=safe CreatePtmx=node Probe=yes ProbeUser=nobody MountEvents=auto CoalesceMSec=70 AuditCPUPercent=50 HolderRescanSec=30 StateFile=/run/ptsguard/report.json PrometheusFile=(none) PrometheusHeartbeatSec=60 Ignore=pty-capacity Namespaces.Audit=none ScanSec=5" % order
    c.eq(out.splitlines()[0] if out else "", want, "admin file replaces the vendor file; drop-ins vendor then admin")

    # An error in a drop-in names the drop-in.
    write(admin + "/ptsguard.conf.d/40-broken.conf", "[Daemon]\n\nCoalesceMSec=fast\n")
    r = subprocess.run([ptsguard, "daemon"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    c.eq(r.returncode, 1, "broken drop-in: exit status")
    c.eq(
        r.stderr,
        "ptsguard: %s/ptsguard.conf.d/40-broken.conf:3: CoalesceMSec=fast: expected milliseconds from 0 to 10000; not starting\n" % admin,
        "broken drop-in: message",
    )

    # An oversized drop-in is refused from its size, before libeconf parses it (which would take
    # minutes for these 2 MB of comments): the daemon does not start and names the drop-in.
    os.unlink(admin + "/ptsguard.conf.d/40-broken.conf")
    big = vendor + "/ptsguard.conf.d/50-big.conf"
    write(big, "[Daemon]\n" + "# padding\n" * ((2 << 20) // 10))
    r = subprocess.run([ptsguard, "daemon"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    c.eq(r.returncode, 1, "oversized drop-in: exit status")
    c.eq(
        r.stderr,
        "ptsguard: %s: the file is too large (%d bytes, at most 1048576); not starting\n" % (big, os.path.getsize(big)),
        "oversized drop-in: message",
    )
    # libeconf 0.5 reads a vendor drop-in even when /etc has one of the same name: so does the
    # size check.
    write(admin + "/ptsguard.conf.d/50-big.conf", "[Daemon]\nCoalesceMSec=40\n")
    r = subprocess.run([ptsguard, "audit"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    c.eq((r.returncode, r.stderr), (3, "ptsguard: audit: %s: the file is too large (%d bytes, at most 1048576)\n" % (big, os.path.getsize(big))), "shadowed oversized drop-in")
    os.unlink(big)
    c.done()


def case_catalog(ptsguard, opts):
    """The generated catalog compiles with journalctl and has one entry per check."""
    c = Checker()
    path = opts.get("catalog")
    if not path:
        raise Failure("--opt catalog=PATH is required")
    import tempfile

    cat = catalog(ptsguard)
    with tempfile.TemporaryDirectory() as root:
        d = os.path.join(root, "usr/lib/systemd/catalog")
        os.makedirs(d)
        with open(path) as f:
            text = f.read()
        with open(os.path.join(d, "ptsguard.catalog"), "w") as f:
            f.write(text)
        r = run(["journalctl", "--root", root, "--update-catalog"], check=False)
        c.eq((r.returncode, r.stderr), (0, ""), "journalctl --update-catalog")
        listed = run(["journalctl", "--root", root, "--list-catalog"]).stdout.splitlines()
        c.eq(len(listed), len(cat), "one catalog entry per check")
        for cid, info in sorted(cat.items()):
            dump = run(["journalctl", "--root", root, "--dump-catalog", info["message_id"]], check=False).stdout
            what = "catalog entry for %s" % cid
            c.true(("-- %s\n" % info["message_id"]) in dump, what + ": present")
            c.true(("Subject: %s\n" % info["summary"]) in dump, what + ": Subject")
            c.true("Defined-By: ptsguard\n" in dump, what + ": Defined-By")
            c.true("Documentation: man:ptsguard-checks(7)\n" in dump, what + ": Documentation")
            c.true(" ".join(info["remedy"].split()) in " ".join(dump.split()), what + ": remedy")
            c.true(" ".join(info["explanation"].split()) in " ".join(dump.split()), what + ": explanation")
    c.done()


def case_unit_verify(ptsguard, opts):
    """systemd-analyze verify on the built units (ExecStart pointed at this build)."""
    import tempfile

    c = Checker()
    units = opts.get("units")
    if not units:
        raise Failure("--opt units=DIR is required")
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name in ("ptsguard.service", "ptsguard-audit.service"):
            with open(os.path.join(units, name)) as f:
                text = f.read()
            exec_start = [l for l in text.splitlines() if l.startswith("ExecStart=")][0]
            binary = exec_start.split("=", 1)[1].split()[0]
            text = text.replace(binary, ptsguard)
            paths.append(os.path.join(d, name))
            with open(paths[-1], "w") as f:
                f.write(text)
        r = run(["systemd-analyze", "verify", "--man=no"] + paths, check=False)
        c.eq((r.returncode, r.stdout + r.stderr), (0, ""), "systemd-analyze verify")
        r = run(["systemd-analyze", "security", "--offline=yes", paths[0]], check=False)
        exposure = [l for l in r.stdout.splitlines() if "Overall exposure level" in l]
        log(exposure[0] if exposure else "systemd-analyze security: %s" % r.stderr.strip())
        c.true(exposure, "systemd-analyze security gives an overall exposure: %s" % (r.stdout + r.stderr)[-1000:])
        if exposure:
            # 4.6 before the device ACL, ProtectClock= and ~@resources, 4.2 with them; 4.3 while
            # the unit had CAP_KILL (for a verification child with a uid of its own), 4.2 again
            # since the child keeps the daemon's real uid; 3.9 as User=ptsguard with ambient
            # capabilities and RemoveIPC=. What is
            # left is what the daemon needs (CAP_SYS_ADMIN for remounts, CAP_SYS_PTRACE for the
            # holder scan, the setuid of the verification child, held as ambient capabilities),
            # the settings that would give it a mount namespace (see the unit), and
            # PrivateNetwork=, which would cut it off from udev's events.
            # 3.9 is the floor without a mount namespace, a network namespace of its own or a
            # right the daemon needs: every assessment left failing is one the unit's comment
            # names. (3.1 with ProtectKernelLogs=, -Modules=, -Tunables= and
            # ProtectControlGroups=, each a mount namespace; 3.4 with PrivateNetwork=.)
            level = float(re.search(r"level for \S+: ([0-9.]+)", exposure[0]).group(1))
            c.true(level <= MAX_UNIT_EXPOSURE, "exposure %.1f, at most %.1f" % (level, MAX_UNIT_EXPOSURE))
            acl = [l for l in r.stdout.splitlines() if l.split()[1:2] == ["DeviceAllow="]]
            c.true(acl and "no device ACL" not in acl[0], "a device ACL: %s" % acl)
            # No assessment that passes today may fail later unnoticed.
            r = run(["systemd-analyze", "security", "--offline=yes", "--json=short", paths[0]], check=False)
            passed = {e["json_field"].rstrip(")") for e in json.loads(r.stdout) if e.get("set") is True}
            c.eq(sorted(UNIT_SECURITY_PASSED - passed), [], "assessments of systemd-analyze security that passed before and fail now")
        # The per-boot audit: 4.0 with only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (its probe could
        # not run), 4.3 with CAP_SETUID and CAP_SETGID for it, 3.4 with the daemon's settings
        # that need no mount namespace (device ACL, ProtectClock=, ProtectHostname=, ...).
        r = run(["systemd-analyze", "security", "--offline=yes", paths[1]], check=False)
        exposure = [l for l in r.stdout.splitlines() if "Overall exposure level" in l]
        c.true(exposure, "systemd-analyze security rates ptsguard-audit.service: %s" % (r.stdout + r.stderr)[-1000:])
        if exposure:
            log(exposure[0])
            level = float(re.search(r"level for \S+: ([0-9.]+)", exposure[0]).group(1))
            c.true(level <= MAX_AUDIT_UNIT_EXPOSURE, "ptsguard-audit.service: exposure %.1f, at most %.1f" % (level, MAX_AUDIT_UNIT_EXPOSURE))
        with open(paths[0]) as f:
            settings = [l.strip() for l in f if "=" in l and not l.startswith("#")]
        for want in ("User=ptsguard", "Group=ptsguard", "RemoveIPC=yes", "DevicePolicy=closed", "DeviceAllow=/dev/char/5:2 rwm", "DeviceAllow=char-pts rw", "DeviceAllow=/dev/null rw", "ProtectClock=yes", "UMask=0077", "TimeoutStartSec=30s"):
            c.true(want in settings, "%s in ptsguard.service" % want)
        values = {l.split("=", 1)[0]: l.split("=", 1)[1] for l in settings}
        # The ambient set is the bounding set: each capability there is one some policy uses
        # (case capabilities), and the daemon drops from its effective set what its policy
        # does not need.
        c.eq(sorted(values.get("AmbientCapabilities", "").split()), sorted(values.get("CapabilityBoundingSet", "").split()), "AmbientCapabilities= is CapabilityBoundingSet=")
        c.true("CAP_DAC_OVERRIDE" not in values.get("CapabilityBoundingSet", ""), "no CAP_DAC_OVERRIDE")
        c.true("SupplementaryGroups" not in values, "no SupplementaryGroups=")
        namespaced = [l for l in settings if l.split("=")[0] in ("ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "PrivateNetwork")]
        c.eq(namespaced, [], "no setting that gives the daemon its own mount table (or cuts it off from udev)")
    c.done()


MAX_UNIT_EXPOSURE = 3.9
MAX_AUDIT_UNIT_EXPOSURE = 3.4

# What systemd-analyze security (252) finds protected in ptsguard.service: each must stay so.
UNIT_SECURITY_PASSED = set(
    """UserOrDynamicUser SupplementaryGroups RemoveIPC SystemCallFilter_swap SystemCallFilter_resources SystemCallFilter_reboot SystemCallFilter_raw_io
    SystemCallFilter_obsolete SystemCallFilter_module SystemCallFilter_debug SystemCallFilter_cpu_emulation
    SystemCallFilter_clock RestrictRealtime CapabilityBoundingSet_CAP_SYS_TIME NoNewPrivileges
    CapabilityBoundingSet_CAP_BPF SystemCallArchitectures CapabilityBoundingSet_CAP_SYS_RAWIO
    CapabilityBoundingSet_CAP_SYS_NICE_RESOURCE CapabilityBoundingSet_CAP_NET_ADMIN
    CapabilityBoundingSet_CAP_NET_BIND_SERVICE_BROADCAST_RAW CapabilityBoundingSet_CAP_AUDIT
    CapabilityBoundingSet_CAP_SYSLOG KeyringMode Delegate NotifyAccess ProtectClock CapabilityBoundingSet_CAP_SYS_PACCT
    CapabilityBoundingSet_CAP_WAKE_ALARM CapabilityBoundingSet_CAP_LINUX_IMMUTABLE CapabilityBoundingSet_CAP_IPC_LOCK
    CapabilityBoundingSet_CAP_SYS_MODULE CapabilityBoundingSet_CAP_SYS_TTY_CONFIG CapabilityBoundingSet_CAP_SYS_BOOT
    CapabilityBoundingSet_CAP_SYS_CHROOT CapabilityBoundingSet_CAP_BLOCK_SUSPEND MemoryDenyWriteExecute
    RestrictNamespaces_user RestrictNamespaces_pid RestrictNamespaces_net RestrictNamespaces_uts RestrictNamespaces_mnt
    CapabilityBoundingSet_CAP_LEASE RestrictNamespaces_cgroup RestrictNamespaces_ipc ProtectHostname LockPersonality
    RestrictAddressFamilies_AF_PACKET RestrictAddressFamilies_OTHER RestrictAddressFamilies_AF_INET_INET6
    CapabilityBoundingSet_CAP_MAC IPAddressDeny RestrictSUIDSGID UMask""".split()
)


def devpts_options_now():
    """The super options of the top devpts on /dev/pts, as a dict."""
    line = [l for l in open("/proc/self/mountinfo") if " /dev/pts " in l][-1]
    return dict((o.split("=", 1) + [""])[:2] for o in line.split(" - ")[1].split()[2].split(","))


def ptsguard_status(ptsguard, daemon):
    return subprocess.run([ptsguard, "status", "--config", daemon.config_path], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def case_status(ptsguard, opts):
    """ptsguard status shows the running daemon's state file: the daemon running (its pid), the
    findings with the exit status audit would give, the last transition journaled; once the
    daemon has stopped, exit status 3 and a message that none runs."""
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    r = ptsguard_status(ptsguard, daemon)
    c.eq(r.returncode, 0, "healthy: exit status 0 (stderr %r)" % r.stderr)
    c.true(r.stdout.startswith("ptsguard: OK: no findings"), "the verdict first: %r" % r.stdout[:200])
    c.true("daemon: running (pid %d)" % daemon.pid in r.stdout, "the daemon named running: %r" % r.stdout)
    c.true("last transition: none since the daemon started" in r.stdout, "no transition yet: %r" % r.stdout)
    remount_devpts("mode=644")
    wait_state("options lost", lambda r: finding_ids(r) == ["devpts-options-lost"])
    r = ptsguard_status(ptsguard, daemon)
    c.eq(r.returncode, 2, "critical: exit status 2 (stderr %r)" % r.stderr)
    c.true(re.search(r"^last transition: \S+Z devpts-options-lost detected \(critical\)$", r.stdout, re.M) is not None,
           "the last transition: %r" % r.stdout)
    c.true(re.search(r"^critical devpts-options-lost: .*\n    remedy: mount -o remount,gid=%d," % TTY_GID, r.stdout, re.M) is not None,
           "the finding with its remedy: %r" % r.stdout)
    c.true(re.search(r"^journal: \d+ queued, 0 dropped$", r.stdout, re.M) is not None, "the journal queue: %r" % r.stdout)
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    r = ptsguard_status(ptsguard, daemon)
    c.true(re.search(r"^last transition: \S+Z devpts-options-lost resolved \(critical\)$", r.stdout, re.M) is not None,
           "the resolution is the last transition: %r" % r.stdout)
    stop_daemon(c, daemon)
    r = ptsguard_status(ptsguard, daemon)
    c.eq(r.returncode, 3, "no daemon: exit status 3 (stdout %r)" % r.stdout)
    c.true("no ptsguard daemon runs" in r.stderr, "it says so: %r" % r.stderr)
    journal.stop()
    c.done()


def case_repair_safe(ptsguard, opts):
    """Policy=safe: a lost-options remount is detected, repaired (journal: detected, then
    repaired, never resolved), and the state file shows the repaired host; a finding that is
    not repairable is only detected."""
    cat = catalog(ptsguard)
    journal = Journald()
    daemon = Daemon(ptsguard, config_text=default_config().replace("Policy=off", "Policy=safe"))
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])

    remount_devpts("mode=644")
    report = wait_state("repaired: no findings", lambda r: finding_ids(r) == [])
    wait_for("detected and repaired entries", lambda: len(transitions(journal, daemon.pid)) >= 2)
    time.sleep(SETTLE)
    seq = [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in transitions(journal, daemon.pid)]
    c.eq(seq, [("devpts-options-lost", "detected"), ("devpts-options-lost", "repaired")], "journal sequence")
    entries = transitions(journal, daemon.pid)
    if len(entries) == 2:
        c.eq(entries[1]["MESSAGE_ID"], cat["devpts-options-lost"]["message_id"], "repaired entry MESSAGE_ID")
        c.eq(entries[1]["PRIORITY"], "5", "repaired entry PRIORITY")
        c.true("verified" in entries[1].get("PTSGUARD_DETAIL", ""), "the entry says how it was verified: %r" % entries[1].get("PTSGUARD_DETAIL"))
    got = devpts_options_now()
    c.eq((got.get("gid"), got.get("mode")), (str(TTY_GID), "620"), "the host's /dev/pts was remounted: %s" % got)
    c.eq(report["instances"][0]["options"]["gid"], TTY_GID, "the state file shows the repaired instance")

    # A finding the policy may not repair is journaled as detected and nothing else.
    n = len(transitions(journal, daemon.pid))
    sys_mount("tmpfs", "/dev/pts", "tmpfs", 0, "mode=755")
    wait_state("pts-covered", lambda r: finding_ids(r) == ["pts-covered"])
    time.sleep(0.5)
    new = [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in transitions(journal, daemon.pid)[n:]]
    c.eq(new, [("pts-covered", "detected")], "a non-repairable finding is only detected")
    sys_umount("/dev/pts")
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    stop_daemon(c, daemon)
    journal.stop()
    c.done()


def case_repair_last_healthy(ptsguard, opts):
    """A host the daemon saw healthy at gid=5,mode=600 (systemd 258's default): a remount to
    mode=644 is repaired back to 600, not to the traditional 620 (it used to be, without an
    initramfs record). The record is in the state file: a daemon started later in the boot, and
    ptsguard repair by hand, restore 600 from it as well."""
    c = Checker()
    journal = Journald()
    remount_devpts("gid=%d,mode=600" % TTY_GID)
    dev = "%d:%d" % (os.major(os.stat("/dev/pts").st_dev), os.minor(os.stat("/dev/pts").st_dev))
    config = default_config().replace("Policy=off", "Policy=safe")
    daemon = Daemon(ptsguard, config_text=config)
    daemon.wait_ready()
    report = wait_state("healthy at 600", lambda r: finding_ids(r) == [])
    c.eq(report.get("last_healthy"), {"device": dev, "mode": "0600"}, "the state file records the instance healthy at 600")

    remount_devpts("mode=644")
    wait_for("repaired", lambda: [e for e in transitions(journal, daemon.pid) if e["PTSGUARD_STATE"] == "repaired"])
    got = devpts_options_now()
    c.eq((got.get("gid"), got.get("mode")), (str(TTY_GID), "600"), "the daemon restored mode 600: %s" % got)
    stop_daemon(c, daemon)

    # The next daemon of this boot, started on a broken host, has only the state file to go by.
    remount_devpts("mode=644")
    daemon = Daemon(ptsguard, config_text=config, notify=NotifySocket(TEST_DIR + "/notify-last-healthy-2"))
    daemon.wait_ready()
    wait_state("repaired by the next daemon", lambda r: finding_ids(r) == [])
    got = devpts_options_now()
    c.eq((got.get("gid"), got.get("mode")), (str(TTY_GID), "600"), "a restarted daemon restored 600 from the state file: %s" % got)
    stop_daemon(c, daemon)

    # By hand: the remedy an audit prints and what repair does read the same record.
    remount_devpts("mode=644")
    audit = run([ptsguard, "audit", "--json", "--config", daemon.config_path], check=False)
    remedies = [f.get("remedy") for f in json.loads(audit.stdout).get("findings", []) if f["id"] == "devpts-options-lost"]
    c.eq(remedies, ["mount -o remount,gid=%d,mode=600 /dev/pts" % TTY_GID], "audit's remedy restores 600")
    run([ptsguard, "repair", "--config", daemon.config_path], check=False)
    got = devpts_options_now()
    c.eq((got.get("gid"), got.get("mode")), (str(TTY_GID), "600"), "ptsguard repair restored 600: %s" % got)
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    journal.stop()
    c.done()


def case_repair_exposed(ptsguard, opts):
    """Policy=safe: a repair's own re-audit finds a repairable problem the first one hid (no
    /dev/ptmx, no serving instance, so no judging its slaves): that one is repaired too, in the
    same audit (it used to be journaled as detected and left alone until it changed again). A
    repair that cannot fix its finding is tried once per appearance, not on every wake-up."""
    import fcntl
    import struct
    cat = catalog(ptsguard)
    journal = Journald()
    daemon = Daemon(ptsguard, config_text=default_config().replace("Policy=off", "Policy=safe"))
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])

    def open_pty(uid):
        m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
        fcntl.ioctl(m, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock
        s = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY)  # TIOCGPTPEER
        os.fchown(s, uid, TTY_GID)
        return m, s

    def seq(entries):
        return [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in entries]

    # A user's pty (uid 1000), healthy for now.
    master, slave = open_pty(1000)
    # Both broken while the daemon cannot look: /dev/ptmx gone hides the slave's mode.
    with daemon.stopped_between_audits():
        os.fchmod(slave, 0o666)
        os.unlink("/dev/ptmx")
    # ptmx-replaced (the daemon's own, /dev/ptmx against its baseline) comes and goes with it.
    want = [("ptmx-missing", "detected"), ("ptmx-missing", "repaired"),
            ("pty-slave-perms", "detected"), ("pty-slave-perms", "repaired")]

    def repairs():
        return [x for x in seq(transitions(journal, daemon.pid)) if x[0] != "ptmx-replaced"]

    try:
        wait_for("the exposed finding repaired", lambda: len(repairs()) >= 4)
    except Failure as e:
        c.fail("the finding the first repair exposed was not repaired (%s)" % e)
    report = wait_state("no findings", lambda r: True)
    time.sleep(SETTLE)
    entries = transitions(journal, daemon.pid)
    c.eq(repairs(), want, "journal sequence")
    c.eq(finding_ids(report), [], "the state file after the repairs")
    for e in entries:
        c.eq(e.get("MESSAGE_ID"), cat[e["PTSGUARD_CHECK"]]["message_id"], "%s %s: MESSAGE_ID" % (e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]))
    st = os.fstat(slave)
    c.eq((stat.S_IMODE(st.st_mode), st.st_gid), (0o620, TTY_GID), "the user's slave was repaired")
    c.true(os.path.exists("/dev/ptmx"), "/dev/ptmx was made again")
    c.eq(report and report["summary"], summary_of([]), "state file summary")
    if c.failures:
        c.done()  # what follows needs a healthy start

    # A slave of root's is never changed: its repair fails, once for this appearance, not on
    # every wake-up (each remount below wakes the daemon, and its own audits see it still there).
    n = len(entries)
    rmaster, rslave = open_pty(0)
    os.fchmod(rslave, 0o666)
    wait_state("the root-owned slave seen", lambda r: "pty-slave-perms" in finding_ids(r))
    for _ in range(3):
        remount_devpts("gid=%d,mode=620" % TTY_GID)
        time.sleep(0.3)
    time.sleep(SETTLE)
    c.eq(seq(transitions(journal, daemon.pid)[n:]), [("pty-slave-perms", "detected"), ("pty-slave-perms", "repair-failed")],
         "a repair that cannot succeed is tried once")
    # Gone and back: a new appearance, tried once more.
    os.fchmod(rslave, 0o620)
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    os.fchmod(rslave, 0o666)
    wait_for("tried again", lambda: len(transitions(journal, daemon.pid)) >= n + 5)
    time.sleep(SETTLE)
    c.eq(seq(transitions(journal, daemon.pid)[n + 2:]),
         [("pty-slave-perms", "resolved"), ("pty-slave-perms", "detected"), ("pty-slave-perms", "repair-failed")],
         "a new appearance is tried again, once")
    for fd in (slave, master, rslave, rmaster):
        os.close(fd)
    stop_daemon(c, daemon)
    journal.stop()
    c.done()


def case_repair_new_appearance(ptsguard, opts):
    """Policy=safe: a repairable finding that changes while its key stays (pty-slave-perms of
    /dev/pts, whose try failed on a slave of root's, first seen in the re-audit after the
    repair of ptmx-missing) is a new problem: a user's slave that then gets mode 666 is repaired
    at once, without any further event (it used to be left alone while the tried finding
    stayed). The root's slave is still tried once only: wake-ups do not try it again."""
    import fcntl
    import struct
    journal = Journald()
    daemon = Daemon(ptsguard, config_text=default_config().replace("Policy=off", "Policy=safe"))
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])

    def open_pty(uid):
        m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
        fcntl.ioctl(m, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlock
        s = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY)  # TIOCGPTPEER
        os.fchown(s, uid, TTY_GID)
        return m, s

    def seq(entries):
        return [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in entries if e["PTSGUARD_CHECK"] != "ptmx-replaced"]

    rmaster, rslave = open_pty(0)
    umaster, uslave = open_pty(1000)
    # The root's slave broken while /dev/ptmx is gone: its finding first appears in the
    # re-audit after ptmx-missing is repaired, and its try fails (a slave of root's is never
    # changed).
    with daemon.stopped_between_audits():
        os.fchmod(rslave, 0o666)
        os.unlink("/dev/ptmx")
    want = [("ptmx-missing", "detected"), ("ptmx-missing", "repaired"),
            ("pty-slave-perms", "detected"), ("pty-slave-perms", "repair-failed")]
    try:
        wait_for("the root's slave tried", lambda: len(seq(transitions(journal, daemon.pid))) >= 4)
    except Failure as e:
        c.fail(str(e))
    time.sleep(SETTLE)
    c.eq(seq(transitions(journal, daemon.pid)), want, "journal: ptmx repaired, the root's slave tried once")
    n = len(seq(transitions(journal, daemon.pid)))

    # A second problem under the same finding's key: a user's slave with mode 666. Its one
    # inotify event is all the daemon gets.
    os.fchmod(uslave, 0o666)
    try:
        wait_for("the user's slave repaired", lambda: stat.S_IMODE(os.fstat(uslave).st_mode) == 0o620)
    except Failure:
        pass
    st = os.fstat(uslave)
    c.eq((stat.S_IMODE(st.st_mode), st.st_gid), (0o620, TTY_GID), "the user's slave was repaired without another event")
    time.sleep(SETTLE)
    tries = seq(transitions(journal, daemon.pid))[n:]
    # One try of the changed finding: an entry per slave, the user's repaired, the root's not.
    c.eq(sorted(tries), [("pty-slave-perms", "repair-failed"), ("pty-slave-perms", "repaired")],
         "one try of the changed finding")
    # What is left (the root's slave) is as it was when tried: wake-ups do not try it again.
    n = len(seq(transitions(journal, daemon.pid)))
    for _ in range(3):
        remount_devpts("gid=%d,mode=620" % TTY_GID)
        time.sleep(0.3)
    time.sleep(SETTLE)
    c.eq(seq(transitions(journal, daemon.pid))[n:], [], "the root's slave is not tried again on wake-ups")
    c.eq(stat.S_IMODE(os.fstat(rslave).st_mode), 0o666, "the root's slave was never changed")
    c.eq(finding_ids(read_state()), ["pty-slave-perms"], "the state file keeps the root's slave's finding")
    for fd in (uslave, umaster, rslave, rmaster):
        os.close(fd)
    stop_daemon(c, daemon)
    journal.stop()
    c.done()


# ---- incremental mount tracking (fanotify mount events) and its fallbacks ----


def comparable(findings):
    """Findings as a full audit would have them: ptmx-replaced is the daemon's own."""
    return [f for f in findings if f["id"] != "ptmx-replaced"]


def agree_with_audit(c, ptsguard, what):
    """The daemon's state file comes to hold exactly the findings of a full `ptsguard audit`."""
    want = comparable(audit_json(ptsguard)["findings"])
    try:
        wait_state(what, lambda r: comparable(r["findings"]) == want)
    except Failure:
        c.eq(comparable((read_state() or {"findings": []})["findings"]), want, what + ": the daemon's findings vs a full audit")
    return want


def seccomp_wrapper(opts, rules):
    python, helper = opts.get("system_python"), opts.get("seccomp_exec")
    if not python or not helper:
        raise Failure("--opt system_python=PATH and --opt seccomp_exec=PATH are required")
    r = subprocess.run([python, helper, "getpid:EPERM", "true"], capture_output=True, text=True)
    if r.returncode == 77:
        raise Skip(r.stderr.strip())
    return [python, helper, rules]


def case_tracking_fallback(ptsguard, opts):
    """Where fanotify mount events or statmount() are denied (old kernel, seccomp filter),
    MountEvents=auto falls back to mountinfo and finds the same; MountEvents=fanotify refuses
    to start."""
    c = Checker()
    denials = [
        ("fanotify_init:EPERM", "Incremental mount tracking is not available here (Operation not permitted)"),
        ("fanotify_init:EINVAL", "Incremental mount tracking is not available here (Invalid argument)"),  # before 6.15
        ("457:ENOSYS,458:ENOSYS", "Incremental mount tracking is not available here (Function not implemented)"),  # statmount
    ]
    for rules, message in denials:
        daemon = Daemon(ptsguard, wrapper=seccomp_wrapper(opts, rules))
        daemon.wait_ready()
        agree_with_audit(c, ptsguard, "%s: start" % rules)
        c.true(message in daemon.stderr_text(), "%s: says why: %r in %s" % (rules, message, daemon.stderr_text()))
        c.true("Tracking mounts incrementally" not in daemon.stderr_text(), "%s: no incremental tracking" % rules)
        sys_mount("devpts", "/dev/pts", "devpts", 0, "mode=600")
        agree_with_audit(c, ptsguard, "%s: an overmount without gid=" % rules)
        c.true("devpts-overmount" in finding_ids(read_state()), "%s: the overmount is found" % rules)
        remount_devpts("gid=%d,mode=620" % TTY_GID)
        agree_with_audit(c, ptsguard, "%s: the overmount remounted" % rules)
        sys_umount("/dev/pts")
        agree_with_audit(c, ptsguard, "%s: the overmount gone" % rules)
        c.eq(finding_ids(read_state()), [], "%s: healthy again" % rules)
        stop_daemon(c, daemon)
        daemon.notify.close()

    daemon = Daemon(ptsguard, config_text=default_config().replace("MountEvents=auto", "MountEvents=fanotify"), wrapper=seccomp_wrapper(opts, "fanotify_init:EPERM"))
    try:
        rc = daemon.proc.wait(WAIT)
    except subprocess.TimeoutExpired:
        rc = None
    c.eq(rc, 1, "MountEvents=fanotify without fanotify: exit status")
    c.true("MountEvents=fanotify: cannot listen to fanotify mount events: Operation not permitted" in daemon.stderr_text(), "MountEvents=fanotify says why: %s" % daemon.stderr_text())
    c.done()


def tracking_stats_after_stop(c, journal, daemon):
    stop_daemon(c, daemon)
    summary = wait_for("the daemon's tracking summary", lambda: tracking_summary(journal, daemon))
    log("daemon: %s" % summary["message"])
    return summary


def case_tracking_overflow(ptsguard, opts):
    """More mount events than the fanotify queue holds while the daemon is stopped: the overflow
    makes it read the whole table, and it finds the overmount made among them."""
    c = Checker()
    journal = Journald()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    agree_with_audit(c, ptsguard, "start")
    with open("/proc/sys/fs/fanotify/max_queued_events") as f:
        queue = int(f.read())
    with daemon.stopped_between_audits():
        storm(queue // 2 + 1000, queue // 4, lambda: sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID))
    agree_with_audit(c, ptsguard, "after the overflow")
    c.eq(finding_ids(read_state()), ["devpts-overmount"], "the overmount made during the overflow")
    summary = tracking_stats_after_stop(c, journal, daemon)
    c.true(summary["full_reads"] >= 2, "the overflow made the daemon read the whole table (full reads: %d)" % summary["full_reads"])
    journal.stop()
    c.done()


def case_tracking_hidden(ptsguard, opts):
    """A devpts mounted where no path leads (into a /dev that a tmpfs covers, through a file
    descriptor) cannot be placed from its event alone: the daemon reads the whole table."""
    c = Checker()
    journal = Journald()
    os.mkdir("/dev/hidden")
    old_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    agree_with_audit(c, ptsguard, "start")
    sys_mount("tmpfs", "/dev", "tmpfs", 0, "mode=755")
    os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    agree_with_audit(c, ptsguard, "a tmpfs covers /dev")
    full_reads_before = 1
    sys_mount("devpts", "/proc/self/fd/%d/hidden" % old_dev, "devpts", 0, "mode=600")
    c.true(any(l.split()[4] == "/dev/hidden" for l in open("/proc/self/mountinfo")), "devpts is mounted on the covered /dev/hidden")
    agree_with_audit(c, ptsguard, "a devpts mounted into the covered /dev")
    sys_umount("/dev")
    agree_with_audit(c, ptsguard, "the tmpfs gone: the devpts at /dev/hidden is visible")
    summary = tracking_stats_after_stop(c, journal, daemon)
    c.true(summary["full_reads"] > full_reads_before, "the hidden mount made the daemon read the whole table (full reads: %d)" % summary["full_reads"])
    os.close(old_dev)
    journal.stop()
    c.done()


def case_holders_rescan(ptsguard, opts):
    """Holders of a covered instance: a scan reads every fd on the host, so the daemon reuses it
    for HolderRescanSec= while the same instances are covered, then scans again on its own."""
    c = Checker()
    rescan = 3
    daemon = Daemon(ptsguard, config_text=default_config() + "HolderRescanSec=%d\n" % rescan)
    daemon.wait_ready()
    wait_state("healthy", lambda r: finding_ids(r) == [])
    master, slave = os.openpty()  # on the instance at /dev/pts, held by this process
    sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)
    report = wait_state("the held instance covered", lambda r: "devpts-orphan-in-use" in finding_ids(r))
    c.true(report["holders_scan"]["performed"], "holders were scanned: %s" % report.get("holders_scan"))
    os.close(master)
    os.close(slave)
    t_closed = time.monotonic()
    # An audit within the rescan interval reuses the scan: the finding stays.
    remount_devpts("gid=%d,mode=600" % TTY_GID)
    report = wait_state("an audit after the remount", lambda r: any(i["options"]["mode"] == "0600" for i in r["instances"] if not i["mounts"][0]["covered"]))
    if time.monotonic() - t_closed < rescan - 0.5:
        c.true("devpts-orphan-in-use" in finding_ids(report), "within HolderRescanSec= the last scan is reused: %s" % finding_ids(report))
    # Then the timer audits and scans again: nothing holds the covered instance any more.
    report = wait_state("the finding resolved by the next scan", lambda r: "devpts-orphan-in-use" not in finding_ids(r), timeout=rescan + WAIT)
    took = time.monotonic() - t_closed
    c.true(rescan - 0.5 <= took, "resolved by the rescan, %.1fs after the last holder went (HolderRescanSec=%d)" % (took, rescan))
    log("devpts-orphan-in-use resolved %.1fs after the last holder closed its pty (HolderRescanSec=%d)" % (took, rescan))
    sys_umount("/dev/pts")
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    stop_daemon(c, daemon)
    c.done()


def case_holders_after_report(ptsguard, opts):
    """An instance covered where none was: the audit that sees the overmount reports it (state file,
    journal) before the search for holders runs, and the next audits run the search and report
    what it found. Both are journaled once, the overmount first (in one audit the critical
    devpts-orphan-in-use would come first). When other instances are covered later (one more,
    then one fewer), a new search starts, a slice per audit: what the last one found about the
    instance still covered stands in every report until the new one completes, and so it does
    after a reload, which starts a search again.

    Processes holding many fds make each search take several slices, and the real holder, started
    after them, is the last process a search reaches."""
    c = Checker()
    journal = Journald()
    # An audit whose probe runs while a devpts is mounted or unmounted on /dev/pts may see its
    # pty allocated on one instance and its slave looked up on the next: a pty-allocation-fails
    # that the next audit resolves. Not what this case is about: only its two checks count.
    ours = ("devpts-orphan-in-use", "devpts-overmount")

    def seq_now():
        return [(e["PTSGUARD_CHECK"], e["PTSGUARD_STATE"]) for e in transitions(journal, daemon.pid)
                if e["PTSGUARD_CHECK"] in ours]

    def n_covered(r):
        return sum(1 for i in r["instances"] if i["mounts"][0]["covered"])

    def holders_of(r):
        return [h["pid"] for f in r["findings"] if f["id"] == "devpts-orphan-in-use" for h in f["evidence"]["holders"]]

    def follow_search(what, covered, after_inode=None):
        """Every state file written (after the one with inode after_inode) until one with
        `covered` instances covered says its search is complete: each must name the holder;
        returns how many said partial."""
        partial, last_inode = 0, after_inode
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            inode = state_inode()
            report = read_state() if inode != last_inode else None
            if report is not None:
                last_inode = inode
                if n_covered(report) == covered:
                    c.eq(holders_of(report), [holder], "%s: the holder in every report, %s" % (what, report["holders_scan"]))
                    if report["holders_scan"].get("complete"):
                        return partial
                    partial += 1
            time.sleep(0.005)
        raise Failure("%s: no complete search within 120 s" % what)

    group = spawn_fd_holders(int(opts.get("procs", 20)), int(opts.get("fds", 5000)))
    holder = None
    try:
        # On the instance at /dev/pts; before the daemon starts, so that no audit for the new
        # pty races with the overmount.
        ready_r, ready_w = os.pipe()
        holder = os.fork()
        if holder == 0:
            try:
                os.close(ready_r)
                m, sl = os.openpty()
                os.write(ready_w, b"x")
                while True:
                    signal.pause()
            finally:
                os._exit(0)
        os.close(ready_w)
        c.eq(os.read(ready_r, 1), b"x", "the holder started")
        os.close(ready_r)
        c.true(holder > max(pids_in_group(group)), "the holder's pid is above every fd holder's")
        daemon = Daemon(ptsguard, config_text=default_config() + "AuditCPUPercent=100\n")
        daemon.wait_ready()
        wait_state("healthy", lambda r: finding_ids(r) == [])
        sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)
        report = wait_state("the held instance covered", lambda r: "devpts-orphan-in-use" in finding_ids(r))
        c.eq(finding_ids(report), ["devpts-orphan-in-use", "devpts-overmount"], "both findings")
        c.true(report["holders_scan"].get("complete"), "the search completed: %s" % report["holders_scan"])
        c.eq(holders_of(report), [holder], "the holder found")
        wait_for("two journal entries", lambda: len(seq_now()) >= 2)
        time.sleep(SETTLE)
        seq = seq_now()
        c.eq(seq, [("devpts-overmount", "detected"), ("devpts-orphan-in-use", "detected")],
             "the overmount journaled by the audit before the search, the holder by the next")

        # One more devpts on top: two instances covered, a new search, slice by slice.
        sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)
        partial = follow_search("three devpts stacked", 2)
        log("three devpts stacked: %d partial reports before the search completed" % partial)
        c.true(partial >= 1, "the new search took more than one audit (%d partial reports)" % partial)
        # One unmount at a time, each search followed.
        sys_umount("/dev/pts")
        partial = follow_search("back to two stacked", 1)
        log("back to two stacked: %d partial reports before the search completed" % partial)
        # A reload searches again from the start; the last complete search stands meanwhile
        # (its reports say complete, as when it expires), so every report names the holder.
        before = state_inode()
        daemon.signal(signal.SIGHUP)
        follow_search("after a reload", 1, after_inode=before)
        time.sleep(SETTLE)
        c.eq(seq_now()[2:], [], "nothing journaled: the holder never left a report while the searches ran")
        sys_umount("/dev/pts")
        wait_state("healthy again", lambda r: finding_ids(r) == [])
        wait_for("four journal entries", lambda: len(seq_now()) >= 4)
        time.sleep(SETTLE)
        seq = seq_now()
        c.eq(sorted(seq[2:]), [("devpts-orphan-in-use", "resolved"), ("devpts-overmount", "resolved")],
             "both resolved once")
        stop_daemon(c, daemon)
    finally:
        os.killpg(group, signal.SIGKILL)
        os.waitpid(group, 0)
        if holder:
            os.kill(holder, signal.SIGKILL)
            os.waitpid(holder, 0)
    journal.stop()
    c.done()


def shared_library_path(soname):
    """Where the dynamic linker finds soname (ldconfig's cache), its symlinks resolved."""
    for line in run(["ldconfig", "-p"]).stdout.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.split(" ")[0] == soname and os.path.exists(path):
            return os.path.realpath(path)
    raise Failure("ldconfig -p lists no %s" % soname)


def case_without_libsystemd(ptsguard, opts):
    """libsystemd and libudev are loaded by the daemon (and by a command that journals), not
    linked: with neither on the host, `ptsguard audit` runs as ever, and the daemon says which
    library it misses and exits with status 1."""
    c = Checker()
    needed = run(["readelf", "-d", ptsguard]).stdout
    for soname in ("libsystemd.so.0", "libudev.so.1"):
        c.true("[%s]" % soname not in needed, "ptsguard does not need %s at start" % soname)
    before = audit_json(ptsguard)
    # Both hidden in this case's mount namespace: an empty file bound over each.
    empty = TEST_DIR + "/empty.so"
    open(empty, "w").close()
    for soname in ("libsystemd.so.0", "libudev.so.1"):
        sys_mount(empty, shared_library_path(soname), None, 4096)  # MS_BIND
    r = run([ptsguard, "audit", "--json"], check=False)
    c.eq(r.returncode, 0, "audit without libsystemd exits 0 on this healthy namespace: %s" % r.stderr)
    c.eq(finding_ids(audit_json(ptsguard)), finding_ids(before), "the same findings as with it")
    r = run([ptsguard, "daemon", "--config", TEST_DIR + "/none.conf"], check=False, timeout=30)
    c.eq(r.returncode, 1, "the daemon without libsystemd exits 1")
    c.true("Cannot run the daemon: cannot load libsystemd.so.0" in r.stderr,
           "the daemon names the library it misses: %r" % r.stderr)
    c.done()


def spawn_fd_holders(n_procs, n_fds):
    """n_procs processes holding n_fds open fds each (of /dev/null), in a process group of their
    own; returns its id once all are there."""
    import resource
    ready_r, ready_w = os.pipe()
    leader = os.fork()
    if leader == 0:
        try:
            os.close(ready_r)
            os.setpgid(0, 0)
            resource.setrlimit(resource.RLIMIT_NOFILE, (n_fds + 64, n_fds + 64))
            null = os.open("/dev/null", os.O_RDONLY)
            for _ in range(n_fds - 1):
                os.dup(null)
            for _ in range(n_procs - 1):
                if os.fork() == 0:
                    os.write(ready_w, b"x")
                    while True:
                        signal.pause()
            os.write(ready_w, b"x")
            while True:
                signal.pause()
        finally:
            os._exit(0)
    os.close(ready_w)
    got = 0
    while got < n_procs:
        chunk = os.read(ready_r, 4096)
        if not chunk:
            break
        got += len(chunk)
    os.close(ready_r)
    if got < n_procs:
        os.killpg(leader, signal.SIGKILL)
        raise Failure("only %d of %d fd holders started" % (got, n_procs))
    return leader


def pids_in_group(pgid):
    """The pids of a process group's members still there."""
    out = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.getpgid(int(name)) == pgid:
                out.append(int(name))
        except ProcessLookupError:
            pass
    return out


def case_holders_sliced(ptsguard, opts):
    """A covered devpts instance on a host (here the case's pid namespace) with many processes
    holding many open fds, its one real holder last in the process table. The daemon searches
    for holders a slice per audit and goes on at the next audit where the last stopped: WATCHDOG=1
    keeps coming within the watchdog's interval throughout (the whole search used to run in one
    dispatch, seconds long, and systemd would kill the daemon); the state file says the search is
    partial, how far it went, and that it went further at each audit (resumed, not restarted);
    in the end it is complete and names the holder. `ptsguard audit` finds it too."""
    import resource
    c = Checker()
    n_procs, n_fds = int(opts.get("procs", 100)), int(opts.get("fds", 10000))
    watchdog_usec = 1500000
    config = default_config() + "AuditCPUPercent=100\nHolderRescanSec=3600\n"
    daemon = Daemon(ptsguard, config_text=config, watchdog_usec=watchdog_usec)
    daemon.wait_ready()
    wait_state("healthy", lambda r: finding_ids(r) == [])
    group = spawn_fd_holders(n_procs, n_fds)
    holder = None
    try:
        # The real holder, started last: the highest pid, the end of the table.
        ready_r, ready_w = os.pipe()
        holder = os.fork()
        if holder == 0:
            try:
                os.close(ready_r)
                m, sl = os.openpty()
                os.write(ready_w, b"x")
                while True:
                    signal.pause()
            finally:
                os._exit(0)
        os.close(ready_w)
        c.eq(os.read(ready_r, 1), b"x", "the holder started")
        os.close(ready_r)
        # Above every fd holder's (the daemon's own short-lived probe children may come later).
        c.true(holder > max(pids_in_group(group)), "the holder's pid is above every fd holder's")
        t_cover = time.monotonic()
        sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)

        partial = []  # (processes_scanned, fds_scanned) of each partial report, in order
        final = None
        deadline = time.monotonic() + 300
        last_inode = None
        while time.monotonic() < deadline and daemon.alive():
            inode = state_inode()
            report = read_state() if inode != last_inode else None
            if report and report["holders_scan"]["performed"]:
                last_inode = inode
                scan = report["holders_scan"]
                if scan.get("complete", True) is False:
                    partial.append((scan["processes_scanned"], scan["fds_scanned"]))
                    for f in report["findings"]:
                        if f["id"] == "devpts-orphan-in-use":
                            c.eq(f["evidence"].get("holders_scan_complete"), False, "a finding of a partial search says so")
                elif "devpts-orphan-in-use" in finding_ids(report):
                    final = report
                    break
            time.sleep(0.02)
        t_done = time.monotonic()
        pings = [t for t, m in daemon.notify.all() if m.get("WATCHDOG") == "1" and t_cover <= t <= t_done]
        gaps = [b - a for a, b in zip([t_cover] + pings, pings + [t_done])]
        log("search: %d partial reports seen, %.1fs to complete, %d WATCHDOG=1, longest gap %.2fs (interval %.1fs)"
            % (len(partial), t_done - t_cover, len(pings), max(gaps), watchdog_usec / 1e6))
        c.true(daemon.alive(), "the daemon is alive: %s" % daemon.state())
        c.true(max(gaps) < watchdog_usec / 1e6,
               "WATCHDOG=1 within every %.1fs interval while the search went on (longest gap %.2fs)" % (watchdog_usec / 1e6, max(gaps)))
        c.true(len(partial) >= 2, "the state file said partial at two audits at least: %s" % partial[:20])
        c.true(all(a[0] <= b[0] and a[1] < b[1] for a, b in zip(partial, partial[1:])),
               "each audit went on where the last stopped (processes and fds searched, rising): %s" % partial[:40])
        c.true(final is not None, "the search completed and found the holder")
        if final:
            scan = final["holders_scan"]
            c.eq(scan["processes_left"], 0, "nothing left once complete: %s" % scan)
            c.true(scan["fds_scanned"] >= n_procs * n_fds, "every fd searched: %s" % scan)
            orphan = [f for f in final["findings"] if f["id"] == "devpts-orphan-in-use"][0]
            c.eq([h["pid"] for h in orphan["evidence"]["holders"]], [holder], "the holder found: %s" % orphan["evidence"])
            c.eq(orphan["evidence"].get("holders_scan_complete"), True, "the finding says its search was complete")
        # The one-shot audit is bounded too, and generous: here it searches everything.
        audit = audit_json(ptsguard)
        scan = audit["holders_scan"]
        if scan["complete"]:
            c.eq([h["pid"] for f in audit["findings"] if f["id"] == "devpts-orphan-in-use" for h in f["evidence"]["holders"]],
                 [holder], "ptsguard audit finds the holder")
        else:
            c.true(scan["processes_left"] > 0, "ptsguard audit, cut short, says what it left: %s" % scan)
        sys_umount("/dev/pts")
        wait_state("healthy again", lambda r: finding_ids(r) == [])
    finally:
        os.killpg(group, signal.SIGKILL)
        os.waitpid(group, 0)
        if holder:
            os.kill(holder, signal.SIGKILL)
            os.waitpid(holder, 0)
    stop_daemon(c, daemon)
    c.done()


def case_tracking_sibling_cover(ptsguard, opts):
    """A devpts hidden by a sibling (a tmpfs mounted inside the same parent mount on an ancestor
    directory of its mountpoint, not on the devpts itself) while a process holds one of its ptys:
    the daemon follows the tmpfs, through its events and again after a reload, when it finds
    its mounts from a brief of every mount."""
    c = Checker()
    journal = Journald()
    # Every audit looks for holders, as the command line does: a reused scan could hold a child
    # of this test caught between fork and exec with the pty still open.
    daemon = Daemon(ptsguard, config_text=default_config() + "HolderRescanSec=0\n")
    daemon.wait_ready()
    agree_with_audit(c, ptsguard, "start")
    pts = TEST_DIR + "/chroot/dev/pts"
    os.makedirs(pts)
    sys_mount("devpts", pts, "devpts", 0, "newinstance,gid=%d,mode=620,ptmxmode=666" % TTY_GID)
    held = os.open(pts + "/ptmx", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    agree_with_audit(c, ptsguard, "a chroot's devpts, one pty held")
    sys_mount("tmpfs", TEST_DIR + "/chroot", "tmpfs", 0, "mode=755")
    want = agree_with_audit(c, ptsguard, "a tmpfs hides the chroot's devpts from the side")
    c.true("devpts-orphan-in-use" in [f["id"] for f in want], "the hidden instance in use is found: %s" % [f["id"] for f in want])
    readies = daemon.notify.count("READY", "1")
    daemon.signal(signal.SIGHUP)
    daemon.notify.wait("READY", "1", after=readies, what="READY=1 after the reload")
    agree_with_audit(c, ptsguard, "after a reload (a full read)")
    time.sleep(SETTLE)
    agree_with_audit(c, ptsguard, "a moment after the reload")
    os.close(held)
    summary = tracking_stats_after_stop(c, journal, daemon)
    c.true(summary["full_reads"] >= 2, "the reload read the whole table (full reads: %d)" % summary["full_reads"])
    journal.stop()
    c.done()


def case_pt_chown_installed(ptsguard, opts):
    """A setuid pt_chown put in place while the daemon runs (a package installing it, an admin's
    chmod u+s) is no mount, udev or /dev event: the daemon watches the helper directories."""
    c = Checker()
    sys_mount("tmpfs", "/usr/libexec", "tmpfs", 0, "mode=755")
    helper = "/usr/libexec/pt_chown"
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    wait_state("healthy", lambda r: finding_ids(r) == [])
    with open(helper, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(helper, 0o755)
    agree_with_audit(c, ptsguard, "a pt_chown without the setuid bit")
    os.chmod(helper, 0o4755)
    report = wait_state("the helper made setuid", lambda r: "pt-chown-setuid" in finding_ids(r))
    c.true(report is not None, "the daemon reports the pt_chown made setuid after it started")
    agree_with_audit(c, ptsguard, "a setuid pt_chown")
    os.unlink(helper)
    wait_state("the helper removed", lambda r: "pt-chown-setuid" not in finding_ids(r))
    stop_daemon(c, daemon)
    sys_umount("/usr/libexec")


def leftover_temp_files(directory):
    """Temporary files of an atomic replace (NAME.XXXXXX) still in directory."""
    return sorted(n for n in os.listdir(directory) if re.search(r"\.[A-Za-z0-9]{6}$", n))


def no_temp_left(c, directory, what, names=None):
    """No temporary file outlives its write. The daemon may be writing one right now (any audit,
    ours included, makes a pty it wakes for), so a name seen must be gone within 5 s: a leaked
    file keeps its name, and a later write takes a new one."""
    names = names or (lambda: leftover_temp_files(directory))
    seen = names()
    deadline = time.monotonic() + 5
    while seen and time.monotonic() < deadline:
        time.sleep(0.05)
        seen = [n for n in seen if n in names()]
    c.eq(seen, [], what)


def fill_filesystem(path):
    """Fill the filesystem holding path (a small tmpfs) with one file; returns its name."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def case_outputs_retry(ptsguard, opts):
    """/run full while gid= is lost: the state file and the textfile cannot be written. Once
    space is freed they catch up by themselves (retried with backoff, no other event), to
    what a fresh audit finds, and no temporary file is left behind."""
    journal = Journald()
    state_dir = os.path.dirname(STATE_FILE)
    os.makedirs(state_dir, exist_ok=True)
    # The service user's, as systemd makes RuntimeDirectory=.
    sys_mount("tmpfs", state_dir, "tmpfs", 0, "mode=755,size=64k,uid=%d,gid=%d" % (SERVICE["uid"], SERVICE["gid"]))
    prom = state_dir + "/metrics.prom"
    daemon = Daemon(ptsguard, config_text=default_config().replace(PROM_FILE, prom))
    daemon.wait_ready()
    c = Checker()
    wait_state("first audit", lambda r: finding_ids(r) == [])

    filler = fill_filesystem(state_dir)
    remount_devpts("mode=620")
    wait_for("the loss of gid= journaled", lambda: any(e["PTSGUARD_CHECK"] == "devpts-options-lost" for e in transitions(journal, daemon.pid)))
    c.eq(finding_ids(read_state()), [], "while /run is full the old state file stays whole")
    no_temp_left(c, state_dir, "no temporary file left while /run is full")

    os.unlink(filler)
    wait_state("caught up after space was freed", lambda r: finding_ids(r) == ["devpts-options-lost"])
    wait_for("the textfile caught up", lambda: 'check="devpts-options-lost"' in open(prom).read())
    agree_with_audit(c, ptsguard, "the state file matches a fresh audit")
    no_temp_left(c, state_dir, "no temporary file left")
    c.true(daemon.alive(), "the daemon is still running")
    stop_daemon(c, daemon)
    journal.stop()


def case_output_symlink_swap(ptsguard, opts):
    """The textfile's directory sits in a directory uid 1000 owns. That user swaps it for a
    symlink to a root-only directory, then for a directory of their own: the daemon must write
    into neither (it refuses and says why), and writes again once the directory is its own."""
    c = Checker()
    owned, victim = TEST_DIR + "/owned", TEST_DIR + "/victim"
    os.mkdir(owned)
    os.chown(owned, 1000, 1000)
    os.mkdir(victim, 0o700)
    prom_dir = owned + "/prom"
    prom = prom_dir + "/ptsguard.prom"

    def collector_dir():
        # root's and writable for the daemon's group, as ptsguard.conf(5) tells an admin to
        # set up a collector directory
        os.mkdir(prom_dir)
        os.chown(prom_dir, 0, SERVICE["gid"])
        os.chmod(prom_dir, 0o775)

    collector_dir()
    user = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
    config = re.sub(r"(?m)^PrometheusFile=.*$", "PrometheusFile=" + prom, default_config())
    daemon = Daemon(ptsguard, config_text=config)
    daemon.wait_ready()
    wait_state("healthy", lambda r: finding_ids(r) == [])
    wait_for("the textfile", lambda: os.path.exists(prom))

    def change(options, what, predicate):
        # A change of findings makes the daemon rewrite the textfile at once.
        remount_devpts(options)
        wait_state(what, predicate)
        time.sleep(0.3)

    # The symlink: the write must not land in the victim directory.
    run(user + ["mv", prom_dir, owned + "/prom.old"])
    run(user + ["ln", "-s", victim, prom_dir])
    change("mode=620", "gid= lost", lambda r: "devpts-options-lost" in finding_ids(r))
    c.eq(os.listdir(victim), [], "nothing written through the user's symlink into %s" % victim)
    # A directory of the user's own: refused too (they could swap what it holds).
    run(user + ["rm", prom_dir])
    run(user + ["mkdir", prom_dir])
    change("gid=%d,mode=620" % TTY_GID, "healthy again", lambda r: finding_ids(r) == [])
    c.eq(os.listdir(prom_dir), [], "nothing written into the user's own directory")
    with open(daemon.stderr_path) as f:
        log_text = f.read()
    # (A failure is logged once while it lasts: the second refusal continues the first.)
    c.true("Failed to write %s: a symbolic link is on the way (refused)" % prom in log_text,
           "the refusal is logged:\n%s" % log_text[-2000:])
    # Root's again: written again. (With Policy=off the daemon has no CAP_DAC_OVERRIDE, so it
    # cannot make the directory inside the user's.)
    run(user + ["rmdir", prom_dir])
    collector_dir()
    change("mode=620", "gid= lost again", lambda r: "devpts-options-lost" in finding_ids(r))
    wait_for("the textfile written again", lambda: os.path.exists(prom))
    c.eq(os.listdir(victim), [], "the victim directory at the end")
    # The CLI's --output goes the same way.
    run(user + ["ln", "-s", victim, owned + "/out"])
    r = run([ptsguard, "snapshot", "--output", owned + "/out/snapshot.json"], check=False)
    c.eq((r.returncode, r.stderr), (3, "ptsguard: snapshot: cannot write %s/out/snapshot.json: a symbolic link is on the way (refused)\n" % owned), "snapshot --output through a symlink")
    run(user + ["mkdir", owned + "/mine"])
    r = run([ptsguard, "snapshot", "--output", owned + "/mine/snapshot.json"], check=False)
    c.eq((r.returncode, r.stderr), (3, "ptsguard: snapshot: cannot write %s/mine/snapshot.json: its directory belongs to uid 1000, not root (refused)\n" % owned), "snapshot --output into a user's directory")
    c.eq((os.listdir(victim), os.listdir(owned + "/mine")), ([], []), "nothing written by snapshot --output")
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    stop_daemon(c, daemon)
    c.done()


def received_entries(sock):
    """Every datagram waiting on a (non-blocking) socket, as bytes."""
    out = []
    while True:
        try:
            out.append(sock.recv(1 << 20))
        except BlockingIOError:
            return out


def case_journal_hung(ptsguard, opts):
    """A journald that stops reading (a bound socket nobody reads) must not stop the daemon:
    entries wait in a bounded queue, the state file keeps up and counts them, and once the
    socket is read again the waiting entries arrive, in order."""
    import ctypes
    import socket

    c = Checker()
    # Our own network namespace, so that the journal socket made here takes one datagram before
    # its sender must wait (net.unix.max_dgram_qlen is per namespace, read at socket creation).
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
        raise Failure("unshare(CLONE_NEWNET): %s" % os.strerror(ctypes.get_errno()))
    with open("/proc/sys/net/unix/max_dgram_qlen", "w") as f:
        f.write("1\n")
    hung = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    hung.bind("/run/systemd/journal/socket")
    hung.setblocking(False)

    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    wait_state("healthy", lambda r: finding_ids(r) == [])
    for i in range(4):
        remount_devpts("mode=620")
        wait_state("gid= lost, round %d" % i, lambda r: finding_ids(r) == ["devpts-options-lost"])
        remount_devpts("gid=%d,mode=620" % TTY_GID)
        report = wait_state("healthy again, round %d" % i, lambda r: finding_ids(r) == [])
    journal = (report or {}).get("journal") or {}
    c.true(journal.get("queued", 0) >= 4, "entries wait for the hung journal: %s" % journal)
    c.eq(journal.get("dropped"), 0, "nothing dropped while the queue has room")
    c.true(daemon.proc.poll() is None, "the daemon still runs")

    # journald is back: read until the queue is empty, then one more audit reports it so.
    got = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        got += received_entries(hung)
        if sum(b"PTSGUARD_CHECK=devpts-options-lost" in e for e in got) >= 8:
            break
        time.sleep(0.02)
    states = [re.search(rb"PTSGUARD_STATE=(\S+)", e).group(1).decode() for e in got if b"PTSGUARD_CHECK=devpts-options-lost" in e]
    c.eq(states, ["detected", "resolved"] * 4, "the waiting transitions arrive, in order")
    remount_devpts("mode=620")
    report = wait_state("an audit after journald came back", lambda r: finding_ids(r) == ["devpts-options-lost"])
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    report = wait_state("healthy", lambda r: finding_ids(r) == [])
    c.eq((report or {}).get("journal", {}).get("queued"), 0, "nothing waits once journald reads again")
    agree_with_audit(c, ptsguard, "journald back: the state file matches a fresh audit")
    no_temp_left(c, os.path.dirname(STATE_FILE), "journald back: no temporary file left")
    stop_daemon(c, daemon)
    hung.close()


CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 0, 1, 2, 3
CAP_KILL, CAP_SETGID, CAP_SETUID, CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_MKNOD = 5, 6, 7, 19, 21, 27


def cap_eff(pid):
    """The effective capabilities of pid, as a set of numbers."""
    with open("/proc/%d/status" % pid) as f:
        value = int(next(line for line in f if line.startswith("CapEff:")).split()[1], 16)
    return {n for n in range(64) if value >> n & 1}


def case_capabilities(ptsguard, opts):
    """After its configuration, the daemon keeps only what its policy needs (CapEff of
    /proc/PID/status); the holder scan still sees another user's pty; a reload that lowers the
    policy drops more, and one that raises it again takes back what repair needs."""
    c = Checker()
    no_probe = {CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH}
    # The allocation probe's child becomes nobody (CAP_SETUID, CAP_SETGID); it keeps the
    # daemon's real uid, so the daemon kills it past its deadline without CAP_KILL.
    audit_only = no_probe | {CAP_SETUID, CAP_SETGID}
    repair = audit_only | {CAP_SYS_ADMIN, CAP_CHOWN, CAP_FOWNER, CAP_MKNOD}
    safe_config = default_config().replace("Policy=off", "Policy=safe")

    daemon = Daemon(ptsguard, config_text=default_config() + "\n[Probe]\nEnabled=no\n", notify=NotifySocket(TEST_DIR + "/notify-noprobe"))
    daemon.wait_ready()
    c.eq(cap_eff(daemon.pid), no_probe, "CapEff with Policy=off and [Probe] Enabled=no")
    report = wait_state("the first audit", lambda r: True)
    c.eq((report.get("probe") or {}).get("reason"), "disabled", "the state file says the probe is disabled")
    stop_daemon(c, daemon)

    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    c.eq(cap_eff(daemon.pid), audit_only, "CapEff with Policy=off")
    # With what is left, each audit's probe still becomes nobody and gets a working pty.
    report = wait_state("the first audit of this daemon", lambda r: (r.get("probe") or {}).get("reason") != "disabled")
    probe = report.get("probe") or {}
    c.eq((probe.get("performed"), probe.get("uid"), probe.get("failed_step")), (True, 65534, None),
         "the daemon's allocation probe, capabilities dropped: %s" % probe)
    # What is left is enough: uid 1000 holds a pty on an instance that then gets covered.
    holder = register(subprocess.Popen(
        ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "/usr/bin/python3", "-c",
         "import os, sys\nm, s = os.openpty()\nprint('ready', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    c.eq(holder.stdout.readline().strip(), "ready", "the holder started")
    sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)
    report = wait_state("uid 1000's pty found on the covered instance", lambda r: "devpts-orphan-in-use" in finding_ids(r))
    c.eq(report.get("holders_scan", {}).get("processes_skipped"), 0, "no process skipped by the holder scan: %s" % report.get("holders_scan"))
    holder.stdin.close()
    holder.wait(timeout=10)
    sys_umount("/dev/pts")
    wait_state("healthy", lambda r: finding_ids(r) == [])
    stop_daemon(c, daemon)

    daemon = Daemon(ptsguard, config_text=safe_config, notify=NotifySocket(TEST_DIR + "/notify-safe"))
    daemon.wait_ready()
    c.eq(cap_eff(daemon.pid), repair, "CapEff with Policy=safe")
    for text, want, what in ((default_config(), audit_only, "after a reload to Policy=off"),
                             (safe_config, repair, "after a reload back to Policy=safe")):
        readies = daemon.notify.count("READY", "1")
        daemon.write_config(text)
        daemon.signal(signal.SIGHUP)
        daemon.notify.wait("READY", "1", after=readies, what="READY=1 " + what)
        c.eq(cap_eff(daemon.pid), want, "CapEff " + what)
    with open(daemon.stderr_path) as f:
        log_text = f.read()
    c.true("not permitted" not in log_text, "nothing missing after the reload to Policy=safe:\n%s" % log_text[-1500:])
    stop_daemon(c, daemon)
    c.done()


RECORD = "/run/ptsguard/initramfs.json"


def status_ids(pid):
    """(Uid, Gid, Groups) lines of /proc/PID/status, as lists of numbers."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "Groups"):
                out[key] = [int(v) for v in value.split()]
    return out["Uid"], out["Gid"], out["Groups"]


# setpriv's capability names (the unit's, lower case without cap_) to their numbers.
CAP_NUMBERS = {"chown": CAP_CHOWN, "dac_override": CAP_DAC_OVERRIDE, "dac_read_search": CAP_DAC_READ_SEARCH,
               "fowner": CAP_FOWNER, "kill": CAP_KILL, "setgid": CAP_SETGID, "setuid": CAP_SETUID,
               "sys_ptrace": CAP_SYS_PTRACE, "sys_admin": CAP_SYS_ADMIN, "mknod": CAP_MKNOD}


def status_caps(pid):
    """The CapPrm, CapEff, CapBnd, CapAmb and NoNewPrivs lines of /proc/PID/status."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.startswith("Cap"):
                v = int(value, 16)
                out[key] = {n for n in range(64) if v >> n & 1}
            elif key == "NoNewPrivs":
                out[key] = int(value)
    return out


class SyslogReader:
    """A socket of ours at /dev/log (the case's own /dev, a tmpfs), as a syslog daemon listens:
    the lines the daemon sends there, as received."""

    def __init__(self, path="/dev/log"):
        if os.path.lexists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.setblocking(False)
        self.lines = []

    def read(self):
        while True:
            try:
                self.lines.append(self.sock.recv(65536).decode("utf-8", "replace"))
            except BlockingIOError:
                return self.lines

    def wait(self, what, predicate):
        return wait_for("syslog: " + what, lambda: next((l for l in self.read() if predicate(l)), None))


def case_no_systemd(ptsguard, opts):
    """The daemon as an init script starts it: as root, with no journal and no service manager,
    `--user` makes it the unit's User= with the unit's capability sets and no new privileges
    (/proc/PID/status); each transition reaches syslog (LOG_DAEMON, the journal's MESSAGE= words,
    a fixed tag) read back from a socket bound at the case's own /dev/log, and standard error;
    the state file is written as that user."""
    c = Checker()
    uid, gid = SERVICE["uid"], SERVICE["gid"]
    if os.path.exists("/run/systemd/journal/socket"):
        raise Failure("the case's /run has a journal socket")
    unknown = [n for n in SERVICE["caps"] + SERVICE["bounding"] if n not in CAP_NUMBERS]
    if unknown:
        raise Failure("capabilities of the unit this case does not know: %s" % unknown)
    unit_caps = {CAP_NUMBERS[n] for n in SERVICE["caps"]}
    unit_bounding = {CAP_NUMBERS[n] for n in SERVICE["bounding"]}
    cat = catalog(ptsguard)
    syslog = SyslogReader()

    daemon = Daemon(ptsguard, as_root=True, args=["--user", SERVICE["name"]], systemd=False)
    wait_state("the first audit", lambda r: finding_ids(r) == [])
    c.eq(status_ids(daemon.pid), ([uid] * 4, [gid] * 4, []), "the daemon's uids, gids and groups")
    caps = status_caps(daemon.pid)
    c.eq(caps.get("CapBnd"), unit_bounding, "CapBnd is the unit's CapabilityBoundingSet=")
    c.eq(caps.get("CapPrm"), unit_caps, "CapPrm is the unit's AmbientCapabilities=")
    c.eq(caps.get("CapEff"), {CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID}, "CapEff with Policy=off, as under the unit")
    c.eq((caps.get("CapInh"), caps.get("CapAmb")), (set(), set()), "nothing inheritable or ambient")
    c.eq(caps.get("NoNewPrivs"), 1, "NoNewPrivs")
    st = os.stat(STATE_FILE)
    c.eq((st.st_uid, st.st_mode & 0o777), (uid, 0o644), "the state file is the user's, mode 0644")

    remount_devpts("mode=620")
    report = wait_state("gid= lost", lambda r: finding_ids(r) == ["devpts-options-lost"])
    finding = report["findings"][0]
    tag = "[ptsguard check=devpts-options-lost state=detected severity=critical message_id=%s]" % cat["devpts-options-lost"]["message_id"]
    line = syslog.wait("the detected line", lambda l: "check=devpts-options-lost state=detected" in l)
    # <PRI> is facility * 8 + priority: LOG_DAEMON (3), LOG_CRIT (2); the tag ptsguard[PID].
    m = re.match(r"<(\d+)>(.*?)ptsguard\[(\d+)\]: (.*)$", line)
    c.true(m is not None, "a syslog line with the tag ptsguard[PID]: %r" % line)
    if m:
        c.eq((int(m.group(1)), int(m.group(3))), (3 * 8 + 2, daemon.pid), "LOG_DAEMON|LOG_CRIT, the daemon's pid")
        c.eq(m.group(4), "devpts-options-lost: %s %s" % (finding["summary"], tag), "the journal's MESSAGE= words, then the tag")
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    wait_state("healthy again", lambda r: finding_ids(r) == [])
    line = syslog.wait("the resolved line", lambda l: "check=devpts-options-lost state=resolved" in l)
    c.true(line.startswith("<%d>" % (3 * 8 + 5)), "resolved at LOG_NOTICE: %r" % line)
    c.true(any("Loaded configuration" in l for l in syslog.read()), "the daemon's own messages reach syslog too")
    c.true("[detected] devpts-options-lost (critical)" in daemon.stderr_text(), "standard error has the transition too")

    rc, _ = daemon.stop()
    c.eq(rc, 0, "SIGTERM: exit status")

    # Who may not: an unknown user, and a user other than root asking for another one.
    r = run([ptsguard, "daemon", "--config", daemon.config_path, "--user", "no-such-user-ptsguard"], check=False, timeout=20)
    c.eq(r.returncode, 1, "--user with an unknown user exits 1: %s" % r.stderr)
    c.true("no such user" in r.stderr, "and says so: %r" % r.stderr)
    c.done()


def init_script(ptsguard):
    """debian/ptsguard.init with this build's binary and the case's configuration; its path."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "debian", "ptsguard.init")
    with open(source) as f:
        text = f.read()
    for old, new in (("DAEMON=/usr/bin/ptsguard\n", "DAEMON=%s\n" % ptsguard), ("DAEMON_OPTS=\n", "DAEMON_OPTS='--config %s/ptsguard.conf'\n" % TEST_DIR)):
        if old not in text:
            raise Failure("debian/ptsguard.init has no line %r" % old)
        text = text.replace(old, new)
    script = TEST_DIR + "/ptsguard.init"
    with open(script, "w") as f:
        f.write(text)
    os.chmod(script, 0o755)
    with open(TEST_DIR + "/ptsguard.conf", "w") as f:
        f.write(default_config())
    return script


def case_init_script(ptsguard, opts):
    """debian/ptsguard.init, run as sysvinit runs it (no /run/systemd/system): start makes
    /run/ptsguard the user's and the daemon runs as that user from a root-owned pid file, status
    says so, reload reaches it (its "Reloaded" line in syslog), stop ends it and removes the pid
    file."""
    c = Checker()
    script = init_script(ptsguard)
    os.chown("/run/ptsguard", 0, 0)
    os.rmdir("/run/ptsguard")
    syslog = SyslogReader()
    pid = None
    try:
        r = run([script, "start"], check=False, timeout=30)
        c.eq(r.returncode, 0, "start: exit status (%s%s)" % (r.stdout, r.stderr))
        pid = int(wait_for("the pid file", lambda: open("/run/ptsguard.pid").read().strip() if os.path.exists("/run/ptsguard.pid") else None))
        st = os.stat("/run/ptsguard.pid")
        c.eq(st.st_uid, 0, "the pid file is root's")
        st = os.stat("/run/ptsguard")
        c.eq((st.st_uid, st.st_gid, st.st_mode & 0o777), (SERVICE["uid"], SERVICE["gid"], 0o755), "/run/ptsguard made for the user")
        wait_state("the first audit", lambda r: finding_ids(r) == [])
        c.eq(status_ids(pid)[0], [SERVICE["uid"]] * 4, "the daemon runs as the user")
        c.eq(status_caps(pid).get("NoNewPrivs"), 1, "with no new privileges")
        r = run([script, "status"], check=False, timeout=30)
        c.eq(r.returncode, 0, "status while running: %s%s" % (r.stdout, r.stderr))
        r = run([script, "reload"], check=False, timeout=30)
        c.eq(r.returncode, 0, "reload: %s%s" % (r.stdout, r.stderr))
        syslog.wait("the reload", lambda l: "Reloaded configuration" in l and "ptsguard[%d]" % pid in l)
        r = run([script, "stop"], check=False, timeout=30)
        c.eq(r.returncode, 0, "stop: %s%s" % (r.stdout, r.stderr))
        c.true(not os.path.exists("/proc/%d" % pid) or "zombie" in open("/proc/%d/status" % pid).read(), "the daemon is gone after stop")
        c.true(not os.path.exists("/run/ptsguard.pid"), "the pid file is removed")
        r = run([script, "status"], check=False, timeout=30)
        c.eq(r.returncode, 3, "status once stopped: not running (3)")
    finally:
        if pid and os.path.exists("/proc/%d" % pid):
            os.kill(pid, signal.SIGKILL)
    c.done()


def case_init_script_pid_reused(ptsguard, opts):
    """debian/ptsguard.init when the daemon died and its pid now belongs to a user's process
    that runs the same (world-executable) binary: status says not running, stop and reload send
    it nothing, start starts the real daemon (as the service user, its pid in the pid file) and
    stop then ends the daemon alone."""
    c = Checker()
    script = init_script(ptsguard)
    # uid 1000 runs the binary and stays (an offline audit waiting for its snapshot on stdin);
    # SIGTERM, SIGHUP or SIGKILL would end it.
    user = register(subprocess.Popen(
        ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", ptsguard, "audit", "--snapshot", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_for("the user's process runs the binary", lambda: os.path.realpath("/proc/%d/exe" % user.pid) == os.path.realpath(ptsguard) and status_ids(user.pid)[0][0] == 1000)

    def pid_file_names_user():
        with open("/run/ptsguard.pid", "w") as f:
            f.write("%d\n" % user.pid)

    def user_alive(what):
        c.eq(user.poll(), None, "the user's process is alive %s" % what)

    daemon = None
    try:
        pid_file_names_user()
        r = run([script, "status"], check=False, timeout=30)
        c.true(r.returncode in (1, 3), "status with the user's pid in the pid file: not running (1 or 3), got %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        r = run([script, "reload"], check=False, timeout=30)
        user_alive("after reload")
        r = run([script, "stop"], check=False, timeout=30)
        c.eq(r.returncode, 0, "stop: %s%s" % (r.stdout, r.stderr))
        user_alive("after stop")

        pid_file_names_user()
        r = run([script, "start"], check=False, timeout=30)
        c.eq(r.returncode, 0, "start: exit status (%s%s)" % (r.stdout, r.stderr))

        def daemon_pid():
            try:
                pid = int(open("/run/ptsguard.pid").read().strip())
            except (OSError, ValueError):
                return None
            return pid if pid != user.pid else None

        try:
            daemon = wait_for("a pid file naming another process than the user's", daemon_pid, timeout=10)
        except Failure:
            c.true(False, "start started no daemon: the pid file still names the user's process")
        if daemon:
            wait_state("the first audit of the daemon start started", lambda r: finding_ids(r) == [])
            c.eq(status_ids(daemon)[0], [SERVICE["uid"]] * 4, "the daemon runs as the service user")
            r = run([script, "status"], check=False, timeout=30)
            c.eq(r.returncode, 0, "status with the daemon running: %s%s" % (r.stdout, r.stderr))
            r = run([script, "stop"], check=False, timeout=30)
            c.eq(r.returncode, 0, "stop: %s%s" % (r.stdout, r.stderr))
            wait_for("the daemon gone after stop", lambda: not os.path.exists("/proc/%d" % daemon) or "zombie" in open("/proc/%d/status" % daemon).read())
        user_alive("at the end")
    finally:
        if daemon and os.path.exists("/proc/%d" % daemon):
            os.kill(daemon, signal.SIGKILL)
        user.stdin.close()
        user.wait(timeout=10)
    c.done()


def openrc_run_here():
    """openrc-run for the case: the host's, or else Debian 12's openrc, librc1 and libeinfo1
    fetched with apt-get download (from the mirror the host's apt uses), unpacked and laid over /usr in the case's own mount
    namespace (the packages' /lib, /sbin and /bin are /usr's on a merged /usr). Installing
    openrc on the host is not needed, and would register every rc script with it. Skips when
    neither can be had."""
    import glob
    import shutil

    if shutil.which("openrc-run"):
        return
    if not all(os.path.islink(d) for d in ("/lib", "/sbin", "/bin")):
        raise Skip("no openrc-run, and / is not a merged /usr to lay one over")
    debs = TEST_DIR + "/openrc-debs"
    os.makedirs(debs)
    os.chmod(debs, 0o777)  # apt's sandbox user writes the files
    # The case's network namespace has only loopback: fetch through the one of the process
    # that started the case (its parent, which entered no namespace).
    r = run(["nsenter", "--net=/proc/%d/ns/net" % os.getppid(), "apt-get", "download", "openrc", "librc1", "libeinfo1"], check=False, cwd=debs, timeout=120)
    found = glob.glob(debs + "/*.deb")
    if r.returncode != 0 or len(found) != 3:
        raise Skip("no openrc-run, and apt-get download openrc failed: %s" % r.stderr.strip()[-500:])
    tree, usr = TEST_DIR + "/openrc-tree", TEST_DIR + "/openrc-usr"
    for deb in found:
        run(["dpkg-deb", "-x", deb, tree])
    for sub, dest in (("usr", usr), ("lib", usr + "/lib"), ("sbin", usr + "/sbin"), ("bin", usr + "/bin")):
        if os.path.isdir(os.path.join(tree, sub)):
            shutil.copytree(os.path.join(tree, sub), dest, symlinks=True, dirs_exist_ok=True)
    sys_mount("overlay", "/usr", "overlay", 0, "lowerdir=%s:/usr" % usr)
    if not shutil.which("openrc-run"):
        raise Failure("openrc-run not found after laying openrc over /usr")


def case_openrc_script_pid_reused(ptsguard, opts):
    """contrib/openrc/ptsguard under openrc-run (Debian 12's, with dpkg's start-stop-daemon):
    it starts the daemon as the service user; once the daemon died and a user's process that
    runs the same binary holds its pid, status says crashed (not started), stop and reload send
    that process nothing, start starts the daemon again, reload reaches it (its "Reloaded" line
    in syslog), and stop ends the daemon alone."""
    c = Checker()
    openrc_run_here()
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib", "openrc", "ptsguard")
    with open(source) as f:
        text = f.read()
    for old, new in (('command="/usr/bin/ptsguard"\n', 'command="%s"\n' % ptsguard),
                     (': "${ptsguard_opts:=}"\n', ': "${ptsguard_opts:=--config %s/ptsguard.conf}"\n' % TEST_DIR)):
        if old not in text:
            raise Failure("contrib/openrc/ptsguard has no line %r" % old)
        text = text.replace(old, new)
    initd = TEST_DIR + "/init.d"
    os.makedirs(initd)
    script = initd + "/ptsguard"
    with open(script, "w") as f:
        f.write(text)
    os.chmod(script, 0o755)
    with open(TEST_DIR + "/ptsguard.conf", "w") as f:
        f.write(default_config())
    sys_mount(initd, "/etc/init.d", None, 4096)  # MS_BIND: openrc-run finds services there
    # /run/openrc as OpenRC's boot leaves it (the state directories and the runlevel).
    for d in ("started", "starting", "stopping", "inactive", "wasinactive", "failed", "hotplugged", "daemons", "options", "exclusive", "scheduled", "tmp"):
        os.makedirs("/run/openrc/" + d, exist_ok=True)
    with open("/run/openrc/softlevel", "w") as f:
        f.write("default\n")
    pidfile = "/run/ptsguard.pid"
    syslog = SyslogReader()

    def rc(cmd):
        r = run([script, cmd], check=False, timeout=60)
        log("%s: exit %d: %s" % (cmd, r.returncode, (r.stdout + r.stderr).strip()))
        return r

    def daemon_pid(not_pid=None):
        try:
            pid = int(open(pidfile).read().strip())
        except (OSError, ValueError):
            return None
        if pid == not_pid or not os.path.exists("/proc/%d" % pid):
            return None
        return pid if status_ids(pid)[0][0] == SERVICE["uid"] else None

    user = daemon = None
    try:
        r = rc("start")
        c.eq(r.returncode, 0, "start")
        daemon = wait_for("the daemon as the service user at the pid file's pid", daemon_pid, timeout=10)
        wait_state("the first audit", lambda r: finding_ids(r) == [])
        c.eq(rc("status").returncode, 0, "status with the daemon running")

        # The daemon dies; a user's process running the same binary gets its pid.
        os.kill(daemon, signal.SIGKILL)
        wait_for("the daemon gone", lambda: not os.path.exists("/proc/%d" % daemon) or "zombie" in open("/proc/%d/status" % daemon).read())
        user = register(subprocess.Popen(
            ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", ptsguard, "audit", "--snapshot", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for("the user's process runs the binary", lambda: os.path.realpath("/proc/%d/exe" % user.pid) == os.path.realpath(ptsguard) and status_ids(user.pid)[0][0] == 1000)
        with open(pidfile, "w") as f:
            f.write("%d\n" % user.pid)

        r = rc("status")
        c.true(r.returncode != 0 and "started" not in (r.stdout + r.stderr), "status with the user's process at the pid: not started (exit %d)" % r.returncode)
        rc("reload")
        c.eq(user.poll(), None, "the user's process is alive after reload")
        rc("stop")
        c.eq(user.poll(), None, "the user's process is alive after stop")
        with open(pidfile, "w") as f:
            f.write("%d\n" % user.pid)
        r = rc("start")
        c.eq(r.returncode, 0, "start with the user's process at the pid file's pid")
        try:
            daemon = wait_for("a daemon started again", lambda: daemon_pid(not_pid=user.pid), timeout=10)
        except Failure:
            daemon = None
            c.true(False, "start started no daemon")
        if daemon:
            c.eq(rc("status").returncode, 0, "status with the new daemon running")
            c.eq(rc("reload").returncode, 0, "reload with the new daemon running")
            syslog.wait("the daemon's reload", lambda l: "Reloaded configuration" in l and "ptsguard[%d]" % daemon in l)
            r = rc("stop")
            c.eq(r.returncode, 0, "stop")
            wait_for("the daemon gone after stop", lambda: not os.path.exists("/proc/%d" % daemon) or "zombie" in open("/proc/%d/status" % daemon).read())
        c.eq(user.poll(), None, "the user's process is alive at the end")
    finally:
        for pid in (daemon,):
            if pid and os.path.exists("/proc/%d" % pid):
                os.kill(pid, signal.SIGKILL)
        if user:
            user.stdin.close()
            user.wait(timeout=10)
    c.done()


def audit_unit_caps(opts):
    """CapabilityBoundingSet= of the built ptsguard-audit.service (setpriv's names), and whether
    it sets NoNewPrivileges=."""
    units = opts.get("units")
    if not units:
        raise Failure("--opt units=DIR is required")
    caps, nnp = [], False
    with open(os.path.join(units, "ptsguard-audit.service")) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep and key == "CapabilityBoundingSet":
                caps += [c.lower().replace("cap_", "") for c in value.split()]
            elif sep and key == "NoNewPrivileges":
                nnp = value == "yes"
    if not caps:
        raise Failure("ptsguard-audit.service has no CapabilityBoundingSet=")
    return caps, nnp


def audit_under_bounding_set(c, ptsguard, caps, nnp, what):
    """`audit --json` as root under that bounding set (as the unit starts it): its report."""
    argv = ["setpriv", "--bounding-set=-all," + ",".join("+" + n for n in caps), "--inh-caps=-all"]
    argv += ["--no-new-privs"] if nnp else []
    with open(TEST_DIR + "/ptsguard.conf", "w") as f:
        f.write(default_config())
    r = run(argv + [ptsguard, "audit", "--json", "--config", TEST_DIR + "/ptsguard.conf"], check=False, timeout=30)
    c.eq(r.returncode, 0, "audit %s: exit status (%s)" % (what, r.stderr[-1000:]))
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise Failure("audit %s: not JSON: %r %r" % (what, r.stdout[-500:], r.stderr[-500:]))


def case_audit_unit_probe(ptsguard, opts):
    """ptsguard-audit.service, the audit udev starts once per boot, runs as root under its
    CapabilityBoundingSet= and NoNewPrivileges= (read from the built unit): the allocation probe
    is performed there, as nobody, and allocates a working pty."""
    c = Checker()
    caps, nnp = audit_unit_caps(opts)
    report = audit_under_bounding_set(c, ptsguard, caps, nnp, "under the unit's bounding set %s" % caps)
    probe = report.get("probe") or {}
    c.eq((probe.get("performed"), probe.get("reason"), probe.get("uid"), probe.get("failed_step")), (True, None, 65534, None),
         "the probe under ptsguard-audit.service's bounding set: %s" % probe)
    c.eq(finding_ids(report), [], "nothing found on the case's healthy /dev")
    c.done()


def case_audit_probe_no_setuid(ptsguard, opts):
    """Root whose bounding set lacks CAP_SETUID (or CAP_SETGID) cannot run the probe as nobody:
    the report's reason and the text name the missing capability, not "not root"."""
    c = Checker()
    caps, nnp = audit_unit_caps(opts)
    for missing, reason in (("setuid", "no-cap-setuid"), ("setgid", "no-cap-setgid")):
        fewer = [n for n in caps if n != missing] or ["sys_ptrace"]
        report = audit_under_bounding_set(c, ptsguard, fewer, nnp, "without CAP_%s" % missing.upper())
        probe = report.get("probe") or {}
        c.eq((probe.get("performed"), probe.get("reason")), (False, reason), "the probe without CAP_%s: %s" % (missing.upper(), probe))
        argv = ["setpriv", "--bounding-set=-all," + ",".join("+" + n for n in fewer), "--inh-caps=-all"]
        r = run(argv + [ptsguard, "audit", "--no-color", "--config", TEST_DIR + "/ptsguard.conf"], check=False, timeout=30)
        line = [l for l in r.stdout.splitlines() if "allocation probe" in l]
        c.true(line and ("CAP_%s" % missing.upper()) in line[0] and "not root" not in line[0],
               "the text names CAP_%s: %s" % (missing.upper(), line or r.stdout[-800:]))
    c.done()


def case_service_user(ptsguard, opts):
    """The daemon as the unit runs it (User=ptsguard, the unit's ambient capabilities, no
    CAP_DAC_OVERRIDE) with Policy=safe: it reads the initramfs record root wrote in its
    directory (and the same record once systemd gave it to the user), its probe becomes nobody
    and gets a pty, it writes the state file and the textfile, and it repairs: a user's slave
    made without gid= gets group tty and mode 0620, a removed /dev/ptmx comes back as root's
    0666 char 5:2 (in a /dev only root may write), a lost gid= is remounted. A textfile
    directory it may not write is named in the error with what to do."""
    c = Checker()
    uid, gid = SERVICE["uid"], SERVICE["gid"]
    newroot = TEST_DIR + "/newroot"
    os.makedirs(newroot + "/etc")
    with open(newroot + "/etc/fstab", "w") as f:
        f.write("UUID=0a1b / ext4 defaults 0 1\n")
    # The order of a boot: the initramfs makes /run/ptsguard and the record as root (root's
    # initramfs-record refuses a directory another user owns), then the unit's start gives the
    # directory to User=. A systemd that leaves what is in it to root leaves a root-owned record.
    os.chown("/run/ptsguard", 0, 0)
    run([ptsguard, "initramfs-record", "--newroot", newroot, "--phase", "pre-pivot"])
    os.chown("/run/ptsguard", uid, gid)
    c.eq(os.stat(RECORD).st_uid, 0, "the record is root's, as the initramfs writes it")

    # A user's pty made while devpts had no gid=; devpts fixed by hand, the slave left wrong.
    remount_devpts("mode=600")
    holder = register(subprocess.Popen(
        ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "/usr/bin/python3", "-c",
         "import os, sys\nm, s = os.openpty()\nprint(os.ttyname(s), flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    slave = holder.stdout.readline().strip()
    st = os.stat(slave)
    c.eq((st.st_uid, st.st_gid, st.st_mode & 0o777), (1000, 1000, 0o600), "the slave %s before" % slave)
    remount_devpts("gid=%d,mode=620" % TTY_GID)

    daemon = Daemon(ptsguard, config_text=default_config().replace("Policy=off", "Policy=safe"))
    daemon.wait_ready()
    c.eq(status_ids(daemon.pid), ([uid] * 4, [gid] * 4, []), "the daemon's uids, gids and groups")
    report = wait_state("the slave repaired", lambda r: finding_ids(r) == [])
    st = os.stat(slave)
    c.eq((st.st_uid, st.st_gid, st.st_mode & 0o777), (1000, TTY_GID, 0o620), "the slave %s after" % slave)
    c.eq((report.get("boot") or {}).get("initramfs_record"), True, "the root-owned record was read: %s" % report.get("boot"))
    probe = report.get("probe") or {}
    c.eq((probe.get("performed"), probe.get("uid"), probe.get("failed_step")), (True, 65534, None), "the probe as nobody: %s" % probe)
    for path in (STATE_FILE, PROM_FILE):
        wait_for(path, lambda: os.path.exists(path))
        st = os.stat(path)
        c.eq((st.st_uid, st.st_mode & 0o777), (uid, 0o644), "%s is the user's, mode 0644" % path)

    os.unlink("/dev/ptmx")
    # The repair's own audit done (the state file of before the removal says [] too).
    wait_for("ptmx-missing repaired", lambda: "[repaired] ptmx-missing" in daemon.stderr_text())
    wait_state("ptmx-missing repaired", lambda r: finding_ids(r) == [] and os.path.exists("/dev/ptmx"))
    st = os.lstat("/dev/ptmx")
    c.eq((stat.S_ISCHR(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev), st.st_uid, st.st_gid, st.st_mode & 0o7777),
         (True, 5, 2, 0, 0, 0o666), "/dev/ptmx made again: char 5:2, root:root, 0666")
    c.eq((os.stat("/dev").st_uid, os.stat("/dev").st_mode & 0o777), (0, 0o755), "/dev is still root's, 0755")

    remount_devpts("mode=620")
    try:
        wait_state("gid= restored", lambda r: finding_ids(r) == [] and devpts_options_now().get("gid") == str(TTY_GID))
    except Failure:
        raise Failure("gid= not restored: %s\n%s\n%s" % ([l for l in open("/proc/self/mountinfo") if " /dev/pts " in l], json.dumps(read_state())[:3000], daemon.stderr_text()[-3000:]))

    # The record as systemd leaves it once it gave /run/ptsguard to User=: read the same.
    os.chown(RECORD, uid, gid)
    remount_devpts("gid=%d,mode=620,ptmxmode=000" % TTY_GID)  # an audit
    time.sleep(SETTLE)
    remount_devpts("gid=%d,mode=620" % TTY_GID)
    report = wait_state("an audit after the chown", lambda r: (r.get("boot") or {}).get("initramfs_record") is not None)
    c.eq((report.get("boot") or {}).get("initramfs_record"), True, "the record owned by the user was read")
    holder.stdin.close()
    holder.wait(timeout=10)
    stop_daemon(c, daemon)

    # A textfile directory root owns and the user's group may not write: the error says so.
    closed = TEST_DIR + "/closed"
    os.mkdir(closed, 0o755)
    config = re.sub(r"(?m)^PrometheusFile=.*$", "PrometheusFile=%s/ptsguard.prom" % closed, default_config())
    daemon = Daemon(ptsguard, config_text=config, notify=NotifySocket(TEST_DIR + "/notify-closed"))
    daemon.wait_ready()
    want = "Failed to write %s/ptsguard.prom: uid %d may not write in %s: give that directory to uid %d, or let its group write there (root-owned, group %d, mode 0775); see ptsguard.conf(5)" % (closed, uid, closed, uid, gid)
    wait_for("the textfile error", lambda: want in daemon.stderr_text())
    c.eq(os.listdir(closed), [], "nothing written in %s" % closed)
    stop_daemon(c, daemon)
    c.done()


def audits_so_far(daemon):
    """How many audits a stopped daemon ran, from its last words ("Stopping after N audits")."""
    m = re.search(r"Stopping after (\d+) audits", daemon.stderr_text())
    return int(m.group(1)) if m else None


def case_probe_quiet(ptsguard, opts):
    """Each audit's allocation probe makes and removes a /dev/pts/N, and the daemon watches
    /dev/pts: those events are the daemon's own, so an idle daemon stays idle (were they taken
    for a change, every audit would wake the next, for ever). A user's new pty still wakes it."""
    c = Checker()
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    report = wait_state("the first audit", lambda r: True)
    c.eq(((report.get("probe") or {}).get("performed"), (report.get("probe") or {}).get("failed_step")),
         (True, None), "the daemon's probe got a working pty: %s" % report.get("probe"))
    time.sleep(3)
    stop_daemon(c, daemon)
    n = idle = audits_so_far(daemon)
    c.true(n is not None and n <= 2, "an idle daemon audited %s times in 3 s: its probe's pty woke it" % n)

    # A pty of a user (uid 1000), with a mode the check dislikes, is seen at once.
    daemon = Daemon(ptsguard, notify=NotifySocket(TEST_DIR + "/notify-quiet-2"))
    daemon.wait_ready()
    wait_state("the first audit", lambda r: finding_ids(r) == [])
    holder = register(subprocess.Popen(
        ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "/usr/bin/python3", "-c",
         "import os, sys\nm, s = os.openpty()\nos.fchmod(s, 0o666)\nprint('ready', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    c.eq(holder.stdout.readline().strip(), "ready", "the user's pty is open")
    wait_state("the user's pty of mode 0666 seen", lambda r: "pty-slave-perms" in finding_ids(r))
    holder.stdin.close()
    holder.wait(timeout=10)
    stop_daemon(c, daemon)

    # A devpts stacked on /dev/pts: the daemon watches the new top directory and lets the old
    # watch go. That watch's IN_IGNORED is its own doing, not news (it used to wake one more
    # audit, whose probe could hold a pty of the stack just as the admin unmounted it: EBUSY).
    daemon = Daemon(ptsguard, notify=NotifySocket(TEST_DIR + "/notify-quiet-3"))
    daemon.wait_ready()
    wait_state("the first audit", lambda r: finding_ids(r) == [])
    sys_mount("devpts", "/dev/pts", "devpts", 0, "gid=%d,mode=620" % TTY_GID)
    wait_state("the stack seen", lambda r: finding_ids(r) == ["devpts-overmount"])
    time.sleep(3)
    stop_daemon(c, daemon)
    # Two audits more than the idle daemon's: the one that reports the stack and the one right
    # after that searches for the holders of the instance it covers (put off by the first, see
    # holders-after-report). Whatever else wakes a daemon here (another test's probe in this
    # /dev/pts did, before the Audit=all cases had a pid namespace of their own) wakes both.
    n = audits_so_far(daemon)
    c.true(n is not None and idle is not None and n <= idle + 2,
           "a devpts stacked once cost %s audits, more than two on top of the idle daemon's %s" % (n, idle))
    sys_umount("/dev/pts")
    c.done()


def case_serving_elsewhere(ptsguard, opts):
    """/dev/ptmx leads to a devpts instance mounted elsewhere than /dev/pts (a symlink into it,
    as a build root or a container manager makes): the daemon watches that instance's directory
    too, so a user's pty there is seen when it comes and when it goes (it used to stay in the
    report after the pty was gone, until something else woke the daemon)."""
    c = Checker()
    other = "/dev/other-pts"
    os.makedirs(other)
    run(["mount", "-t", "devpts", "-o", "newinstance,gid=5,mode=620,ptmxmode=666", "devpts", other])
    os.unlink("/dev/ptmx")
    os.symlink(other + "/ptmx", "/dev/ptmx")
    daemon = Daemon(ptsguard)
    daemon.wait_ready()
    wait_state("the first audit", lambda r: "ptmx-foreign-instance" in finding_ids(r))
    # A user's pty on that instance, made writable by everyone (as `mesg y` on a badly set up
    # host would): allocated through /dev/ptmx, its slave reached with TIOCGPTPEER.
    holder = register(subprocess.Popen(
        ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "/usr/bin/python3", "-c",
         "import fcntl, os, struct, sys\n"
         "m = os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)\n"
         "fcntl.ioctl(m, 0x40045431, struct.pack('i', 0))  # TIOCSPTLCK: unlock\n"
         "s = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY)  # TIOCGPTPEER\n"
         "os.fchmod(s, 0o666)\n"
         "print('ready', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    c.eq(holder.stdout.readline().strip(), "ready", "the user's pty is open")
    wait_state("the user's pty of mode 0666 seen", lambda r: "pty-slave-perms" in finding_ids(r))
    holder.stdin.close()
    holder.wait(timeout=10)
    try:
        wait_state("the finding gone with the pty", lambda r: "pty-slave-perms" not in finding_ids(r), timeout=10)
    except Failure as e:
        c.fail("the daemon saw the pty go away on %s: %s" % (other, e))
    stop_daemon(c, daemon)
    c.done()


def locked_container_script(ready):
    """sh for a container's namespace as a runtime leaves it, its devpts locked (ptmxmode=000:
    ptmx-locked): a tmpfs /dev, /dev/tty, a devpts of its own, /dev/ptmx -> pts/ptmx; then it touches
    ready and sleeps. Has no single quote: it may go inside sh -c '...'."""
    return ("mount -t tmpfs tmpfs /dev && mkdir /dev/pts && mknod -m 666 /dev/tty c 5 0 && "
            "mount -t devpts -o newinstance,gid=5,mode=620,ptmxmode=000 devpts /dev/pts && "
            "ln -s pts/ptmx /dev/ptmx && touch %s && exec sleep 600" % ready)


def case_namespaces(ptsguard, opts):
    """[Namespaces] Audit=all: a namespace appearing broken, fixed, broken again, gone; its
    journal entries carry PTSGUARD_MNTNS= and PTSGUARD_CONTAINER=."""
    c = Checker()
    journal = Journald()
    # An id of this run's own: the daemon follows every namespace on the machine, and nsfs
    # gives a gone namespace's inode to the next one at once, so PTSGUARD_MNTNS= alone may match
    # another's entries (other tests' containers, with a fixed id of their own, were taken for
    # this one). No other namespace is in this container.
    cid = os.urandom(32).hex()
    cgroot = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                cgroot = left.split()[4]
    if not cgroot:
        raise Skip("no cgroup v2 hierarchy is mounted")
    base = os.path.join(cgroot, "ptsguard-daemon-test-%d" % os.getpid())
    scope = os.path.join(base, "docker-%s.scope" % cid)
    os.makedirs(scope)
    ready = TEST_DIR + "/ns-ready"
    # Into the container's cgroup before its namespace is made: its first audit names it,
    # however late the setup runs.
    setup = (
        "echo $$ > %s/cgroup.procs && exec unshare --mount --propagation private sh -c '%s'"
        % (scope, locked_container_script(ready))
    )
    sleeper = None
    try:
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n")
        daemon.wait_ready()
        sleeper = register(subprocess.Popen(["sh", "-c", setup], stdin=subprocess.DEVNULL))
        wait_for("the sleeper's namespace", lambda: os.path.exists(ready))
        ino = str(os.stat("/proc/%d/ns/mnt" % sleeper.pid).st_ino)
        label = "docker/" + cid[:12]

        def entries(**m):
            return journal.entries(PTSGUARD_MNTNS=ino, PTSGUARD_CONTAINER=label, **m)

        def wait_entries(what, n, **m):
            wait_for(what, lambda: len(entries(**m)) >= n)
            return entries(**m)

        found = wait_entries("ptmx-locked detected in the namespace", 1, PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected")
        e = found[0]
        c.eq(e.get("PTSGUARD_CONTAINER"), label, "PTSGUARD_CONTAINER")
        c.eq(e.get("PRIORITY"), "2", "critical priority")
        c.true(e.get("MESSAGE", "").startswith("[%s, mount namespace %s] ptmx-locked: " % (label, ino)), "message names the container: %r" % e.get("MESSAGE"))
        c.true(e.get("MESSAGE_ID"), "a MESSAGE_ID for journalctl -x")
        # The allocation probe ran in the namespace (under its root) and failed as predicted.
        try:
            evidence = json.loads(e.get("PTSGUARD_EVIDENCE", ""))
        except ValueError:
            evidence = {}
        c.eq(evidence.get("confirmed_by_probe"), True, "ptmx-locked confirmed by the probe in the namespace: %s" % e.get("PTSGUARD_EVIDENCE"))
        c.eq([x.get("PTSGUARD_CHECK") for x in entries() if x.get("PTSGUARD_STATE") == "detected" and x.get("PRIORITY") != "6"], ["ptmx-locked"], "nothing else detected above info")

        run(["nsenter", "-t", str(sleeper.pid), "-m", "mount", "-o", "remount,ptmxmode=666", "/dev/pts"])
        wait_entries("ptmx-locked resolved after the remount", 1, PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="resolved")
        run(["nsenter", "-t", str(sleeper.pid), "-m", "mount", "-o", "remount,ptmxmode=000", "/dev/pts"])
        wait_entries("detected again", 2, PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected")

        # /dev/ptmx itself, not a mount: removed inside the namespace
        run(["nsenter", "-t", str(sleeper.pid), "-m", "rm", "/dev/ptmx"])
        wait_entries("ptmx-missing after /dev/ptmx is removed in the namespace", 1, PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="detected")

        sleeper.kill()
        sleeper.wait()
        prefix = "Mount namespace %s of %s is gone, with its " % (ino, label)

        def gone_entries():
            return [x for x in entries() if x.get("MESSAGE", "").startswith(prefix)]

        wait_for("the namespace is forgotten", lambda: gone_entries())
        gone = gone_entries()
        c.eq(len(gone), 1, "one entry for its going")
        c.eq(gone[0].get("PTSGUARD_CONTAINER"), label, "the gone entry names the container")
        time.sleep(1.5)
        c.eq(len(entries(PTSGUARD_STATE="resolved", PTSGUARD_CHECK="ptmx-missing")), 0, "a namespace gone resolves nothing")
        c.eq(
            len(entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected")),
            2,
            "one entry per transition, none per poll; the namespace's entries: %s"
            % [(x.get("PTSGUARD_CHECK"), x.get("PTSGUARD_STATE"), x.get("MESSAGE", "")[:120]) for x in entries()],
        )
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
        c.true("Mount namespaces: " in daemon.stderr_text() or journal.entries(), "stop statistics")
    finally:
        if sleeper and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        for d in (scope, base):
            try:
                os.rmdir(d)
            except OSError:
                pass
    c.done()

def case_namespaces_chroot(ptsguard, opts):
    """[Namespaces] Audit=all: a chroot in the daemon's own mount namespace (an sbuild or
    pbuilder root: the machine's /usr bound read-only, a hand-made /dev without /dev/ptmx) is
    followed apart and judged on its own root: ptmx-missing detected, resolved when the
    daemon's /dev is bound over its /dev, detected again when that bind goes, and its going
    said; every entry carries PTSGUARD_MNTNS= (the daemon's own namespace) and PTSGUARD_ROOT=
    (the chroot's path), and the message names the root. A chroot sharing the daemon's /dev
    stays quiet."""
    c = Checker()
    journal = Journald()
    ino = str(os.stat("/proc/self/ns/mnt").st_ino)
    trees = {}
    for name in ("sid", "bound"):
        tree = os.path.join(TEST_DIR, "chroots", name)
        os.makedirs(tree)
        sys_mount("tmpfs", tree, "tmpfs", 0, "mode=755")
        for d in ("usr", "dev", "etc"):
            os.mkdir(os.path.join(tree, d))
        sys_mount("/usr", os.path.join(tree, "usr"), None, 4096)  # MS_BIND
        for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            if os.path.islink("/" + link):
                os.symlink(os.readlink("/" + link), os.path.join(tree, link))
        trees[name] = tree
    for node, dev in (("null", (1, 3)), ("tty", (5, 0))):
        os.mknod(os.path.join(trees["sid"], "dev", node), 0o666 | stat.S_IFCHR, os.makedev(*dev))
        os.chmod(os.path.join(trees["sid"], "dev", node), 0o666)
    run(["mount", "--rbind", "/dev", os.path.join(trees["bound"], "dev")])
    procs = []
    try:
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n")
        daemon.wait_ready()
        for name in ("sid", "bound"):
            p = register(subprocess.Popen(["chroot", trees[name], "sleep", "600"], stdin=subprocess.DEVNULL))
            procs.append(p)
            wait_for("the chroot's sleep in %s" % trees[name], lambda: os.readlink("/proc/%d/root" % p.pid) == trees[name] or p.poll() is not None)
        tree = trees["sid"]

        def entries(**m):
            return journal.entries(PTSGUARD_MNTNS=ino, PTSGUARD_ROOT=tree, **m)

        def wait_entries(what, n, **m):
            wait_for(what, lambda: len(entries(**m)) >= n)
            return entries(**m)

        found = wait_entries("ptmx-missing detected in the chroot", 1, PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="detected")
        e = found[0]
        c.eq(e.get("PRIORITY"), "2", "critical priority")
        c.true(e.get("MESSAGE", "").startswith("[mount namespace %s, root %s] ptmx-missing: " % (ino, tree)), "the message names the chroot's root: %r" % e.get("MESSAGE"))
        try:
            evidence = json.loads(e.get("PTSGUARD_EVIDENCE", ""))
        except ValueError:
            evidence = {}
        c.eq(evidence.get("confirmed_by_probe"), True, "ptmx-missing confirmed by the probe under the chroot's root: %s" % e.get("PTSGUARD_EVIDENCE"))
        c.eq([x.get("PTSGUARD_CHECK") for x in entries() if x.get("PTSGUARD_STATE") == "detected" and x.get("PRIORITY") != "6"], ["ptmx-missing"], "nothing else detected above info")

        run(["mount", "--rbind", "/dev", os.path.join(tree, "dev")])
        wait_entries("ptmx-missing resolved once the daemon's /dev is bound there", 1, PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="resolved")
        run(["umount", "-R", "-l", os.path.join(tree, "dev")])
        wait_entries("detected again once the bind is gone", 2, PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="detected")
        bound = [x for x in journal.entries(PTSGUARD_MNTNS=ino) if x.get("PTSGUARD_ROOT") == trees["bound"] and x.get("PTSGUARD_STATE") == "detected" and x.get("PRIORITY") != "6"]
        c.eq(bound, [], "the chroot bound to the daemon's /dev: nothing above info")

        procs[0].kill()
        procs[0].wait()
        prefix = "Mount namespace %s, root %s is gone, with its " % (ino, tree)
        wait_for("the chroot is forgotten", lambda: [x for x in entries() if x.get("MESSAGE", "").startswith(prefix)])
        c.eq(len([x for x in entries() if x.get("MESSAGE", "").startswith(prefix)]), 1, "one entry for its going")
        c.eq(len(entries(PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="resolved")), 1, "its going resolves nothing")
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    c.done()


# A machine scope as nspawn names it, systemd-escaped: unescaped, its name holds a newline, a
# terminal title sequence and a forged line of ptsguard's.
HOSTILE_SCOPE = r"machine-x\x0a\x1b]0;pwned\x07ptsguard: [resolved] ptmx-locked (critical).scope"
HOSTILE_LABEL = "nspawn/x\n\x1b]0;pwned\x07ptsguard: [resolved] ptmx-locked (critical)"
HOSTILE_ESCAPED = r"nspawn/x\x0a\x1b]0;pwned\x07ptsguard: [resolved] ptmx-locked (critical)"


def journal_bytes(v):
    """A field of `journalctl -o json`: a string, or an array of bytes where it is not text."""
    return bytes(v) if isinstance(v, list) else (v or "").encode()


def case_namespaces_control_bytes(ptsguard, opts):
    """[Namespaces] Audit=all, a namespace with a finding in a cgroup whose unescaped name holds a
    newline, an ESC ] title sequence and a forged "ptsguard: [resolved]" line: on standard error
    (no journald) and in MESSAGE= the label is escaped; PTSGUARD_CONTAINER= keeps its bytes."""
    c = Checker()
    cgroot = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                cgroot = left.split()[4]
    if not cgroot:
        raise Skip("no cgroup v2 hierarchy is mounted")
    base = os.path.join(cgroot, "ptsguard-daemon-test-%d" % os.getpid())
    scope = os.path.join(base, HOSTILE_SCOPE)
    os.makedirs(scope)
    config = default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n"
    sleepers = []

    def sleeper(n):
        ready = TEST_DIR + "/ns-ready-%d" % n
        setup = "echo $$ > '%s/cgroup.procs' && exec unshare --mount --propagation private sh -c '%s'" % (scope, locked_container_script(ready))
        p = register(subprocess.Popen(["sh", "-c", setup], stdin=subprocess.DEVNULL))
        sleepers.append(p)
        wait_for("the sleeper's namespace", lambda: os.path.exists(ready))
        return p, str(os.stat("/proc/%d/ns/mnt" % p.pid).st_ino)

    def clean(what, text):
        c.true("\x1b" not in text and "\x07" not in text, "%s: no raw ESC or BEL: %r" % (what, text))
        c.true(not any(line.startswith("ptsguard: [resolved]") or line.startswith("\x1b") for line in text.splitlines()), "%s: no forged line: %r" % (what, text))

    try:
        # 1. No journald: transitions and the daemon's lines go to standard error.
        daemon = Daemon(ptsguard, config)
        daemon.wait_ready()
        p, ino = sleeper(1)
        # a transition's line: the brackets of the context escaped too, its only tags ptsguard's
        detected = "ptsguard: [%s, mount namespace %s] [detected] ptmx-locked (critical): " % (HOSTILE_ESCAPED.replace("[", r"\x5b").replace("]", r"\x5d"), ino)
        wait_for("ptmx-locked detected on standard error", lambda: "] [detected] ptmx-locked (critical)" in daemon.stderr_text())
        p.kill()
        p.wait()
        gone = "ptsguard: Mount namespace %s of %s is gone, with its " % (ino, HOSTILE_ESCAPED)
        wait_for("the namespace's going on standard error", lambda: "is gone, with its" in daemon.stderr_text())
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
        text = daemon.stderr_text()
        clean("standard error", text)
        c.true(any(line.startswith(detected) for line in text.splitlines()), "the label escaped on one line: %r in %r" % (detected, text))
        c.true(any(line.startswith(gone) for line in text.splitlines()), "the going, escaped: %r in %r" % (gone, text))

        # 2. journald: MESSAGE= escaped, PTSGUARD_CONTAINER= exact.
        journal = Journald()
        daemon = Daemon(ptsguard, config, notify=NotifySocket(TEST_DIR + "/notify-control-bytes-2"))
        daemon.wait_ready()
        p, ino = sleeper(2)

        def entries(**m):
            return [e for e in journal.entries(PTSGUARD_MNTNS=ino, **m) if journal_bytes(e.get("PTSGUARD_CONTAINER")) == HOSTILE_LABEL.encode()]

        wait_for("ptmx-locked detected in the journal", lambda: entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected"))
        e = entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected")[0]
        message = e.get("MESSAGE")
        c.true(isinstance(message, str), "MESSAGE is text: %r" % message)
        message = journal_bytes(message).decode("utf-8", "replace")
        clean("MESSAGE", message)
        c.true(message.startswith("[%s, mount namespace %s] ptmx-locked: " % (HOSTILE_ESCAPED.replace("[", r"\x5b").replace("]", r"\x5d"), ino)), "MESSAGE names the container escaped, its brackets too: %r" % message)
        p.kill()
        p.wait()
        wait_for("the going in the journal", lambda: [x for x in entries() if "is gone" in journal_bytes(x.get("MESSAGE")).decode("utf-8", "replace")])
        g = [x for x in entries() if "is gone" in journal_bytes(x.get("MESSAGE")).decode("utf-8", "replace")][0]
        c.true(journal_bytes(g.get("MESSAGE")).decode().startswith("Mount namespace %s of %s is gone" % (ino, HOSTILE_ESCAPED)), "the going, escaped: %r" % g.get("MESSAGE"))
        clean("MESSAGE of the going", journal_bytes(g.get("MESSAGE")).decode("utf-8", "replace"))
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
        clean("standard error with journald", daemon.stderr_text())
        journal.stop()
    finally:
        for p in sleepers:
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in (scope, base):
            try:
                os.rmdir(d)
            except OSError:
                pass
    c.done()


def case_namespaces_limit(ptsguard, opts):
    """Audit=all under a limit of 300 open files: namespaces made by an unprivileged user (each
    followed would hold two descriptors) are followed only as far as the limit leaves room for
    the host's own audits, which go on; the rest are said once not to be followed, and none is
    called gone, nor fails to be audited for want of descriptors. A namespace made by root (a
    runtime's container) takes the place of one of theirs: the flood cannot hide it."""
    c = Checker()
    journal = Journald()
    n_sleepers = 40
    followed_max = (300 - 256) // 2  # daemon/nsfollow.c: FDS_RESERVED, FDS_PER_NAMESPACE
    sleepers = []
    daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n", wrapper=("prlimit", "--nofile=300:300", "--"))
    daemon.wait_ready()
    wait_state("first audit", lambda r: finding_ids(r) == [])
    try:
        for _ in range(n_sleepers):
            sleepers.append(register(subprocess.Popen(
                ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "unshare", "--user", "--map-root-user", "--mount", "sleep", "600"],
                stdin=subprocess.DEVNULL)))
        wait_for("the sleepers in namespaces of their own",
                 lambda: all(os.stat("/proc/%d/ns/mnt" % p.pid).st_ino != os.stat("/proc/self/ns/mnt").st_ino for p in sleepers), timeout=30)

        def said(prefix):
            return [e for e in journal.entries(_PID=str(daemon.pid)) if e.get("MESSAGE", "").startswith(prefix)]

        wait_for("the daemon says it does not follow them all", lambda: said("Not following "), timeout=15)
        # The host's audits go on: a remount that loses the options is seen at once.
        remount_devpts("gid=%d,mode=644" % TTY_GID)
        wait_state("the host's devpts-options-lost", lambda r: finding_ids(r) == ["devpts-options-lost"])
        remount_devpts("gid=%d,mode=620" % TTY_GID)
        wait_state("healthy again", lambda r: finding_ids(r) == [])
        # root's container, its devpts locked (ptmxmode=000), made while the slots are full
        ready = TEST_DIR + "/limit-ready"
        sleepers.append(register(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", locked_container_script(ready)],
                                                  stdin=subprocess.DEVNULL)))
        wait_for("root's namespace", lambda: os.path.exists(ready))
        ino = str(os.stat("/proc/%d/ns/mnt" % sleepers[-1].pid).st_ino)
        wait_for("ptmx-locked in root's namespace, past the flood",
                 lambda: journal.entries(PTSGUARD_MNTNS=ino, PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected"))
        time.sleep(2.5)  # two more walks, every namespace still there
        c.eq(len(said("Not following ")), 1, "the limit is said once while it lasts")
        c.eq(said("Cannot audit mount namespace"), [], "no audit failed for want of descriptors")
        c.eq([e["MESSAGE"] for e in said("Mount namespace ") if " is gone" in e["MESSAGE"]], [], "no namespace still there is called gone")
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
        text = "\n".join(e["MESSAGE"] for e in said("Mount namespaces"))
        followed = re.search(r"Mount namespaces: (\d+) followed", text)
        unfollowed = re.search(r"not followed at the last walk \(over the most it follows\): (\d+)", text)
        c.true(followed and unfollowed, "the stop statistics count both:\n%s" % text[-600:])
        if followed and unfollowed:
            c.eq(int(followed.group(1)), followed_max, "followed: what 300 descriptors leave room for")
            c.eq(int(followed.group(1)) + int(unfollowed.group(1)), n_sleepers + 1, "each namespace followed or counted as not")
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
        journal.stop()
    c.done()


def kernel_names_mount_namespaces():
    """NS_GET_MNTNS_ID (Linux 6.10) and listmount(2) of another namespace (6.11): the daemon
    tells a namespace gone without a walk of /proc."""
    import fcntl
    try:
        with open("/proc/self/ns/mnt") as f:
            fcntl.ioctl(f.fileno(), 0x8008b705, bytes(8))  # _IOR(0xb7, 5, __u64)
    except OSError:
        return False
    return tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2]) >= (6, 11)


def case_namespaces_exits(ptsguard, opts):
    """A followed namespace's process exits: the daemon follows it through another of its
    processes (a change made through that one is still seen), and when the last one exits it
    forgets the namespace at once; with a kernel that names namespaces, neither takes a walk of
    /proc (ScanSec=3600: the one walk is the first)."""
    c = Checker()
    journal = Journald()
    ready = TEST_DIR + "/ns-exits-ready"
    # Two processes in the namespace: the shell (exec'd into sleep, the lowest pid: the one
    # followed) and a sleep beside it.
    # before /dev, where sh finds its /dev/null
    setup = "{ sleep 600 & echo $! > %s.pid; } && %s" % (ready, locked_container_script(ready))
    first = register(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", setup],
                                      stdin=subprocess.DEVNULL))
    other = None
    try:
        wait_for("the namespace", lambda: os.path.exists(ready))
        other = int(open(ready + ".pid").read())
        ino = str(os.stat("/proc/%d/ns/mnt" % first.pid).st_ino)
        c.eq(str(os.stat("/proc/%d/ns/mnt" % other).st_ino), ino, "both processes in the namespace")
        # The daemon follows the lower pid. The shell has it, unless pids wrapped around between
        # the two (pid_max is 32768 on the test machines, and the suite starts tens of thousands).
        followed, remaining = sorted((first.pid, other))
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=3600\n")
        daemon.wait_ready()

        def entries(**m):
            return journal.entries(PTSGUARD_MNTNS=ino, **m)

        def end(pid):
            if pid == first.pid:
                first.kill()
                first.wait()
            else:
                os.kill(pid, signal.SIGKILL)

        wait_for("ptmx-locked detected", lambda: entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected"))
        end(followed)
        time.sleep(1)
        c.eq([x.get("MESSAGE") for x in entries() if " is gone" in x.get("MESSAGE", "")], [],
             "the namespace is not gone while a process of it lives")
        # Followed through the other process now: a change made there is seen.
        run(["nsenter", "-t", str(remaining), "-m", "mount", "-o", "remount,ptmxmode=666", "/dev/pts"])
        try:
            wait_for("ptmx-locked resolved", lambda: entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="resolved"))
        except Failure as e:
            c.fail("the namespace was not followed through its other process: %s" % e)
        run(["nsenter", "-t", str(remaining), "-m", "rm", "/dev/ptmx"])
        wait_for("ptmx-missing detected", lambda: entries(PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="detected"))
        end(remaining)
        try:
            wait_for("the namespace forgotten", lambda: [x for x in entries() if " is gone, with its 1 finding" in x.get("MESSAGE", "")], timeout=10)
        except Failure as e:
            c.fail("the namespace was not forgotten after its last process: %s" % e)
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
        stats = [x.get("MESSAGE", "") for x in journal.entries() if x.get("MESSAGE", "").startswith("Mount namespaces: ")]
        stats = stats or [line for line in daemon.stderr_text().splitlines() if "Mount namespaces: " in line]
        c.true(stats, "stop statistics")
        # The daemon held the namespace's mount table when its last process was killed: the
        # namespace's teardown ran in the daemon's close(2), and the statistics count its CPU.
        c.true(stats and re.search(r", [0-9]+\.[0-9] CPU-ms letting go of those whose process exited$", stats[-1]),
               "the CPU of letting go of namespaces is counted: %r" % stats)
        if kernel_names_mount_namespaces():
            # Each walk owed to an exit says which namespace it is for (other namespaces of the
            # machine, other tests' sleepers, may need one). Ours needs none.
            walked = [x.get("MESSAGE") for x in entries(PRIORITY="7") if "walking /proc" in x.get("MESSAGE", "")]
            c.eq(walked, [], "no walk of /proc for this namespace")
    finally:
        for pid in (first.pid, other):
            try:
                if pid:
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        first.wait()
    c.done()


def case_namespaces_joined(ptsguard, opts):
    """A followed namespace's process exits while one that joined it since the last walk lives
    on: the namespace is not gone (the daemon asks the kernel, which answers only a caller with
    CAP_SYS_ADMIN: without it, a live namespace was forgotten and found again by the next walk,
    its findings journaled as detected a second time)."""
    c = Checker()
    journal = Journald()
    ready = TEST_DIR + "/ns-joined-ready"
    setup = locked_container_script(ready)
    first = register(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", setup],
                                      stdin=subprocess.DEVNULL))
    joined = None
    try:
        wait_for("the namespace", lambda: os.path.exists(ready))
        ino = str(os.stat("/proc/%d/ns/mnt" % first.pid).st_ino)
        # One walk only (the first): the process that joins later is not known to the daemon.
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=3600\n")
        daemon.wait_ready()

        def entries(**m):
            return journal.entries(PTSGUARD_MNTNS=ino, **m)

        wait_for("ptmx-locked detected", lambda: entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected"))
        joined = register(subprocess.Popen(["nsenter", "-t", str(first.pid), "-m", "sleep", "600"], stdin=subprocess.DEVNULL))
        wait_for("the joined process in the namespace",
                 lambda: os.stat("/proc/%d/ns/mnt" % joined.pid).st_ino == int(ino))
        first.kill()
        first.wait()
        # The daemon asks the kernel, finds the namespace alive, and walks /proc (one coalescing
        # window later) to follow it through the joined process: a change is seen.
        time.sleep(1)
        c.eq([x.get("MESSAGE") for x in entries() if " is gone" in x.get("MESSAGE", "")], [],
             "the namespace is not gone while a process of it lives")
        run(["nsenter", "-t", str(joined.pid), "-m", "mount", "-o", "remount,ptmxmode=666", "/dev/pts"])
        try:
            wait_for("ptmx-locked resolved", lambda: entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="resolved"))
        except Failure as e:
            c.fail("the namespace was not followed through the joined process: %s" % e)
        c.eq(len(entries(PTSGUARD_CHECK="ptmx-locked", PTSGUARD_STATE="detected")), 1, "ptmx-locked detected once")
        # A finding to be gone with (a namespace without any goes without an entry).
        run(["nsenter", "-t", str(joined.pid), "-m", "rm", "/dev/ptmx"])
        wait_for("ptmx-missing detected", lambda: entries(PTSGUARD_CHECK="ptmx-missing", PTSGUARD_STATE="detected"))
        joined.kill()
        joined.wait()
        try:
            wait_for("the namespace forgotten", lambda: [x for x in entries() if " is gone" in x.get("MESSAGE", "")], timeout=10)
        except Failure as e:
            c.fail("the namespace was not forgotten after its last process: %s" % e)
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
    finally:
        for p in (first, joined):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    c.done()


SYSLOG_TAG = re.compile(r"\[ptsguard ([^\]]*)\]")
# A chroot's directory named by whoever made it: a complete tag of ptsguard's, and bytes that are
# not UTF-8.
FORGED_CHROOT = b"forged [ptsguard check=ptmx-missing state=resolved severity=critical message_id=0] \xff\xfe"


def case_syslog_forged_tag(ptsguard, opts):
    """Without a journal, a chroot named with a forged "[ptsguard check=... state=resolved ...]"
    tag: a syslog consumer that takes each line's first tag reads the real one (ptmx-missing
    detected), and the message that the chroot is gone carries no tag at all; on standard error
    the transition's "[STATE] CHECK" after its context is the real one."""
    c = Checker()
    if os.path.exists("/run/systemd/journal/socket"):
        raise Failure("the case's /run has a journal socket")
    name = FORGED_CHROOT.decode("utf-8", "surrogateescape")
    tree = os.path.join(TEST_DIR, "chroots", name)
    os.makedirs(tree)
    sys_mount("tmpfs", tree, "tmpfs", 0, "mode=755")
    for d in ("usr", "dev", "etc"):
        os.mkdir(os.path.join(tree, d))
    sys_mount("/usr", os.path.join(tree, "usr"), None, 4096)  # MS_BIND
    for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink("/" + link):
            os.symlink(os.readlink("/" + link), os.path.join(tree, link))
    for node, dev in (("null", (1, 3)), ("tty", (5, 0))):
        os.mknod(os.path.join(tree, "dev", node), 0o666 | stat.S_IFCHR, os.makedev(*dev))
        os.chmod(os.path.join(tree, "dev", node), 0o666)
    syslog = SyslogReader()
    p = None
    try:
        daemon = Daemon(ptsguard, default_config() + "\n[Namespaces]\nAudit=all\nScanSec=1\n", as_root=True, args=["--user", SERVICE["name"]], systemd=False)
        wait_state("the first audit", lambda r: True)
        p = register(subprocess.Popen(["chroot", tree, "sleep", "600"], stdin=subprocess.DEVNULL))
        wait_for("the chroot's sleep", lambda: os.readlink("/proc/%d/root" % p.pid) == tree or p.poll() is not None)

        line = syslog.wait("the chroot's ptmx-missing", lambda l: "ptsguard check=ptmx-missing state=detected" in l)
        tags = SYSLOG_TAG.findall(line)
        c.eq(tags[:1], ["check=ptmx-missing state=detected severity=critical message_id=%s" % catalog(ptsguard)["ptmx-missing"]["message_id"]], "the first tag of the line is the real one: %r" % line)
        c.eq(len(tags), 1, "the only tag: %r" % line)
        c.true("root %s" % os.path.join(TEST_DIR, "chroots", "forged \\x5bptsguard") in line, "the root named, its brackets escaped: %r" % line)
        m = re.search(r"^ptsguard: (?:\[[^\]]*\] )?\[([a-z-]+)\] (\S+) \(", daemon.stderr_text(), re.M)
        c.eq(m.groups() if m else None, ("detected", "ptmx-missing"), "standard error: the first transition's tag")

        p.kill()
        p.wait()
        line = syslog.wait("the chroot gone", lambda l: "is gone, with its" in l)
        c.eq(SYSLOG_TAG.findall(line), [], "the message that the chroot is gone has no tag: %r" % line)
        forged = [l for l in syslog.read() if any("message_id=0" in t for t in SYSLOG_TAG.findall(l))]
        c.eq(forged, [], "no line with the forged tag")
        c.eq([l for l in daemon.stderr_text().splitlines() if "[ptsguard" in l], [], "standard error: no line with a tag")
        rc, _ = daemon.stop()
        c.eq(rc, 0, "daemon exit status")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
    c.done()


CASES = {
    "probe-quiet": (case_probe_quiet, True),
    "serving-elsewhere": (case_serving_elsewhere, True),
    "capabilities": (case_capabilities, True),
    "service-user": (case_service_user, True),
    "no-systemd": (case_no_systemd, True),
    "init-script": (case_init_script, True),
    "init-script-pid-reused": (case_init_script_pid_reused, True),
    "audit-unit-probe": (case_audit_unit_probe, True),
    "openrc-script-pid-reused": (case_openrc_script_pid_reused, True),
    "audit-probe-no-setuid": (case_audit_probe_no_setuid, True),
    "output-symlink-swap": (case_output_symlink_swap, True),
    "transitions": (case_transitions, True),
    "repair-safe": (case_repair_safe, True),
    "repair-exposed": (case_repair_exposed, True),
    "repair-new-appearance": (case_repair_new_appearance, True),
    "repair-last-healthy": (case_repair_last_healthy, True),
    "lifecycle": (case_lifecycle, True),
    "status": (case_status, True),
    "ptmx-baseline": (case_ptmx_baseline, True),
    "udev": (case_udev, True),
    "storm": (case_storm, True),
    "storm-10k-mounts": (case_storm_10k_mounts, True),
    "config-errors": (case_config_errors, True),
    "config-dirs": (case_config_dirs, True),
    "default-config": (case_default_config, True),
    "catalog": (case_catalog, False),
    "unit-verify": (case_unit_verify, False),
    "tracking-fallback": (case_tracking_fallback, True),
    "tracking-overflow": (case_tracking_overflow, True),
    "tracking-hidden": (case_tracking_hidden, True),
    "holders-rescan": (case_holders_rescan, True),
    "holders-after-report": (case_holders_after_report, True, True),
    "holders-sliced": (case_holders_sliced, True, True),
    "without-libsystemd": (case_without_libsystemd, True),
    "pt-chown-installed": (case_pt_chown_installed, True),
    "tracking-sibling-cover": (case_tracking_sibling_cover, True),
    "outputs-retry": (case_outputs_retry, True),
    "namespaces": (case_namespaces, True, True),
    "namespaces-exits": (case_namespaces_exits, True, True),
    "namespaces-joined": (case_namespaces_joined, True, True),
    "namespaces-limit": (case_namespaces_limit, True, True),
    "namespaces-control-bytes": (case_namespaces_control_bytes, True, True),
    "namespaces-chroot": (case_namespaces_chroot, True, True),
    "syslog-forged-tag": (case_syslog_forged_tag, True, True),
}

if __name__ == "__main__":
    sys.exit(main(CASES, sys.argv[1:]))
