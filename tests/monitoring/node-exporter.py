# SPDX-License-Identifier: GPL-2.0-or-later
"""The fleet view with real parts: `ptsguard daemon` writes its Prometheus
textfile, the real prometheus-node-exporter serves it with its textfile
collector on 127.0.0.1, and the ptsguard series are read back over HTTP
while devpts is broken and repaired underneath.

Runs in the daemon harness's private world (tests/daemon/harness.py): a
private mount namespace with its own /run and an imitation /dev, so breaking
devpts touches nothing of the host. Exit 0 pass, 1 fail, 77 skip.

Standard library only.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))

import harness  # noqa: E402
from harness import Failure, Skip, log  # noqa: E402

NODE_EXPORTER = "prometheus-node-exporter"
SERIES = re.compile(r"^(ptsguard_[a-z_]+)(\{[^}]*\})? (\S+)$")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    """The ptsguard series of one scrape: {'name{labels}': float}, plus the raw text."""
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    series = {}
    for line in text.splitlines():
        m = SERIES.match(line)
        if m:
            series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return series, text


def case_scrape(ptsguard, opts):
    exporter = shutil.which(NODE_EXPORTER)
    if exporter is None:
        raise Skip("%s is not installed" % NODE_EXPORTER)
    c = harness.Checker()
    textdir = os.path.dirname(harness.PROM_FILE)
    # With the test hooks, the daemon's audits fail while this file exists.
    fail_audit = harness.TEST_DIR + "/fail-audit"
    hooks = os.environ.get("PTSGUARD_TEST_HOOKS") == "1"
    os.environ["PTSGUARD_TEST_FAIL_AUDIT"] = fail_audit
    daemon = harness.Daemon(ptsguard, config_text=harness.default_config() + "PrometheusHeartbeatSec=1\n")
    daemon.wait_ready()
    harness.wait_for("the daemon's Prometheus file", lambda: os.path.exists(harness.PROM_FILE))

    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    log_path = harness.TEST_DIR + "/node-exporter.log"
    with open(log_path, "w") as out:
        harness.register(
            subprocess.Popen(
                [exporter, "--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory=" + textdir, "--web.listen-address=127.0.0.1:%d" % port],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )

    def scraped(pred):
        try:
            s, text = scrape(url)
        except OSError:
            return None
        return (s, text) if pred(s, text) else None

    try:
        series, text = harness.wait_for("node_exporter to answer on " + url, lambda: scraped(lambda s, t: True), timeout=15, interval=0.2)
    except Failure:
        with open(log_path) as f:
            raise Failure("node_exporter never answered on %s:\n%s" % (url, f.read()))
    c.true("node_textfile_scrape_error 0" in text, "node_exporter read the textfile without error:\n" + "\n".join(l for l in text.splitlines() if "textfile" in l))
    lost = 'ptsguard_finding{check="devpts-options-lost",severity="critical"}'
    c.eq(series.get(lost), 0.0, "healthy /dev/pts: %s 0 over HTTP" % lost)
    n_checks = len(harness.catalog(ptsguard))
    c.eq(len([k for k in series if k.startswith("ptsguard_finding{")]), n_checks, "one ptsguard_finding series per check of the catalog")
    stamp = series.get("ptsguard_last_audit_timestamp_seconds", 0)
    c.true(abs(time.time() - stamp) < 60, "ptsguard_last_audit_timestamp_seconds is now (%s)" % stamp)
    c.true("ptsguard_audit_duration_seconds" in series, "ptsguard_audit_duration_seconds is served")
    c.eq(series.get("ptsguard_audit_success"), 1.0, "ptsguard_audit_success 1 over HTTP")
    version = subprocess.run([ptsguard, "--version"], capture_output=True, text=True).stdout.split()[1]
    c.eq(series.get('ptsguard_build_info{version="%s"}' % version), 1.0, "ptsguard_build_info of this ptsguard over HTTP")

    # Between audits the heartbeat moves and the audit's own series stay what they were: a
    # stopped daemon's textfile can be told from a quiet host's. Another ptsguard on this
    # machine auditing every mount namespace (the containers suite's) probes this world's
    # /dev/pts too, and this daemon rightly audits that pty: what must be seen is a scrape
    # whose heartbeat is a second or more past its own audit, which only a rewrite without an
    # audit can serve.
    beat = series.get("ptsguard_daemon_heartbeat_timestamp_seconds")
    c.true(beat is not None and abs(time.time() - beat) < 60, "ptsguard_daemon_heartbeat_timestamp_seconds is now (%s)" % beat)
    if beat is not None:

        def beat_past_audit(s, t):
            heartbeat = s.get("ptsguard_daemon_heartbeat_timestamp_seconds", 0)
            return heartbeat >= beat + 1 and heartbeat >= s.get("ptsguard_last_audit_timestamp_seconds", heartbeat) + 1

        try:
            later, _ = harness.wait_for("a heartbeat a second past the last audit", lambda: scraped(beat_past_audit), timeout=15, interval=0.2)
            stamp = later.get("ptsguard_last_audit_timestamp_seconds", 0)
            c.eq(later.get(lost), 0.0, "the heartbeat's rewrite keeps the audit's series: %s 0" % lost)
        except Failure as e:
            c.fail("the heartbeat rewrites the textfile without an audit: %s" % e)

    # Break devpts: the finding must reach the scrape, and go away after the fix.
    harness.remount_devpts("gid=%d,mode=644" % harness.TTY_GID)
    try:
        series, _ = harness.wait_for("%s 1 over HTTP" % lost, lambda: scraped(lambda s, t: s.get(lost) == 1.0), timeout=15, interval=0.2)
        log("served while devpts is mode=644:\n  " + "\n  ".join("%s %g" % kv for kv in sorted(series.items()) if not kv[0].startswith("ptsguard_finding{") or kv[1]))
        c.true(series.get('ptsguard_findings{severity="critical"}', 0) >= 1, "ptsguard_findings{severity=\"critical\"} counts it")
        c.true(series.get("ptsguard_last_audit_timestamp_seconds", 0) > stamp, "the audit timestamp moved with the new audit")
    except Failure as e:
        c.fail("the finding reaches node_exporter: %s" % e)
    harness.remount_devpts("gid=%d,mode=620" % harness.TTY_GID)
    try:
        series, _ = harness.wait_for("%s 0 again" % lost, lambda: scraped(lambda s, t: s.get(lost) == 0.0), timeout=15, interval=0.2)
        c.eq(series.get('ptsguard_detections_total{severity="critical"}'), 1.0, "ptsguard_detections_total{severity=\"critical\"} 1 after one detection")
        c.true(not any(k.startswith("ptsguard_findings_total") for k in series), "no ptsguard_findings_total beside the gauge ptsguard_findings")
    except Failure as e:
        c.fail("the resolved finding reaches node_exporter: %s" % e)

    # An audit that cannot run: the textfile says so (not the last audit's series, kept current
    # by the heartbeat), until one runs again.
    if not hooks:
        log("not built with -Dtest-hooks=true: a failing audit is not tried")
    else:
        open(fail_audit, "w").close()
        harness.remount_devpts("gid=%d,mode=644" % harness.TTY_GID)
        try:
            series, _ = harness.wait_for("ptsguard_audit_success 0 over HTTP", lambda: scraped(lambda s, t: s.get("ptsguard_audit_success") == 0.0), timeout=15, interval=0.2)
            c.eq(series.get('ptsguard_audit_error{reason="probe"}'), 1.0, "ptsguard_audit_error says why")
            c.eq([k for k in series if k.startswith("ptsguard_finding")], [], "no finding series while audits fail")
            beat = series.get("ptsguard_daemon_heartbeat_timestamp_seconds", 0)
            harness.wait_for("a heartbeat while audits fail", lambda: scraped(lambda s, t: s.get("ptsguard_daemon_heartbeat_timestamp_seconds", 0) > beat and s.get("ptsguard_audit_success") == 0.0), timeout=15, interval=0.2)
        except Failure as e:
            c.fail("a failed audit reaches node_exporter: %s" % e)
        # Back to the mount table the last audit that ran saw: no change for the mount tracker
        # to wake an audit for; the daemon audits again by itself after a failure.
        os.unlink(fail_audit)
        harness.remount_devpts("gid=%d,mode=620" % harness.TTY_GID)
        try:
            harness.wait_for("ptsguard_audit_success 1 again", lambda: scraped(lambda s, t: s.get("ptsguard_audit_success") == 1.0 and s.get(lost) == 0.0), timeout=15, interval=0.2)
        except Failure as e:
            c.fail("the next audit that runs replaces the failure: %s" % e)
    rc, _ = daemon.stop()
    c.eq(rc, 0, "the daemon exits 0 on SIGTERM")
    c.done()


CASES = {"node-exporter-scrape": (case_scrape, True)}

if __name__ == "__main__":
    sys.exit(harness.main(CASES, sys.argv[1:]))
