#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Names of any bytes through every output format, each read by a real parser.

test-escape-formats (escape-formats.c) writes, for many random names (invalid UTF-8, brackets,
quotes, backslashes, newlines, forged syslog tags), a report, its Prometheus exposition, the
syslog and standard error lines of its transitions and a snapshot, with the names where a
namespace puts them. Here each is read as its consumer reads it:

- the JSON report and snapshot: a strict UTF-8 decode, json.loads, the JSON Schemas of docs/; a
  name that is not valid UTF-8 is kept exactly in its *_hex field;
- the exposition: `promtool check metrics`, the host's own series all there, and the root and
  container labels decoded back to the name's exact bytes;
- a syslog line: a consumer takes the first "[ptsguard ...]" tag, which must be the real one,
  and the only one;
- a standard error line: its "[STATE] CHECK (" after the optional context is the real one.

Usage: escape-formats.py TEST-ESCAPE-FORMATS SNAPSHOT [COUNT]
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402

SEED = "0x6e616d6573"
SYSLOG_TAG = re.compile(rb"\[ptsguard ([^\]]*)\]")
STDERR_LINE = re.compile(rb"^ptsguard: (?:\[[^\]]*\] )?\[([a-z-]+)\] (\S+) \(")
HOST_SERIES = re.compile(r'^ptsguard_finding\{check="[a-z0-9-]+",severity="[a-z]+"\} [01]$', re.M)
LABEL = r'%s="((?:[^"\\\n]|\\.)*)"'


def same(c, actual, expected, what):
    """Checker.eq() for values of bytes, which it cannot print."""
    return c.true(actual == expected, "%s:\n    expected: %r\n    actual:   %r" % (what, expected, actual))


def exposition_value(text):
    """A label value of the exposition as Prometheus reads it."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def name_bytes(value):
    """The name in a label value: a doubled backslash is one, \\xNN the byte NN."""
    out, i, raw = bytearray(), 0, value.encode("utf-8")
    while i < len(raw):
        if raw[i : i + 2] == b"\\\\":
            out += b"\\"
            i += 2
        elif raw[i : i + 2] == b"\\x":
            out.append(int(raw[i + 2 : i + 4], 16))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


def exact(obj, key):
    """The exact bytes of obj[key]: its *_hex when there is one, else its UTF-8."""
    if key + "_hex" in obj:
        return bytes.fromhex(obj[key + "_hex"])
    return obj[key].encode("utf-8")


def check_json(c, i, name, raw):
    try:
        doc = json.loads(raw.decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, ValueError) as e:
        c.fail("%d: the report is not valid JSON in UTF-8 (%s) for the name %r" % (i, e, name))
        return
    try:
        testlib.validate_report(doc, "%d: the report" % i)
    except testlib.SchemaError as e:
        c.fail(str(e))
    valid = True
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        valid = False
    items = doc.get("namespaces", [])
    for item in (items[0], items[3]):
        same(c, exact(item, "root"), name, "%d: the chroot's root read back exactly (%r)" % (i, item))
        c.eq("root_hex" in item, not valid, "%d: root_hex only for a name that is not UTF-8" % i)
    mounts = [m for inst in doc["instances"] for m in inst["mounts"]]
    same(c, sorted(exact(m, "mountpoint") for m in mounts if m["mount_id"] in (900, 901)), [b"/srv/" + name] * 2, "%d: the mountpoints read back exactly" % i)


def check_snapshot(c, i, raw):
    try:
        doc = json.loads(raw.decode("utf-8", errors="strict"))
        testlib.validate_snapshot(doc, "%d: the snapshot" % i)
    except (UnicodeDecodeError, ValueError, testlib.SchemaError) as e:
        c.fail("%d: the snapshot: %s" % (i, e))


def check_prometheus(c, i, name, raw, host_series):
    p = subprocess.run(["promtool", "check", "metrics"], input=raw, capture_output=True)
    if not same(c, (p.returncode, p.stdout + p.stderr), (0, b""), "%d: promtool check metrics for the name %r" % (i, name)):
        return
    text = raw.decode("utf-8")
    c.eq(len(HOST_SERIES.findall(text)), host_series, "%d: the host's own ptsguard_finding series" % i)
    roots = re.findall(LABEL % "root", text)
    c.true(roots and all(name_bytes(exposition_value(r)) == name for r in roots), "%d: root labels %r are the name %r" % (i, roots[:1], name))
    containers = set(re.findall(LABEL % "container", text)) - {""}
    want = {b"docker/" + name, b"containerd/" + name}
    same(c, {name_bytes(exposition_value(v)) for v in containers}, want, "%d: container labels are the name" % i)


def check_lines(c, i, syslog, stderr):
    lines = syslog.splitlines()
    c.true(lines, "%d: no syslog line" % i)
    for line in lines:
        check, state, text = line.split(b" ", 2)
        tags = SYSLOG_TAG.findall(text)
        first = dict(kv.split(b"=", 1) for kv in tags[0].split(b" ") if b"=" in kv) if tags else {}
        same(c, (first.get(b"check"), first.get(b"state")), (check, state), "%d: the first tag of the syslog line is the real one: %r" % (i, text))
        c.eq(len(tags), 1, "%d: one tag in the syslog line %r" % (i, text))
    for line in stderr.splitlines():
        check, state, text = line.split(b" ", 2)
        m = STDERR_LINE.match(text)
        same(c, m.groups() if m else None, (state, check), "%d: the standard error line's tag is the real one: %r" % (i, text))


def main():
    driver, snapshot = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if not shutil.which("promtool"):
        testlib.log("SKIP: promtool (package prometheus) is not installed")
        return testlib.EXIT_SKIP
    c = testlib.Checker()
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([driver, snapshot, d, str(count), SEED], capture_output=True, text=True)
        c.eq(r.returncode, 0, "test-escape-formats: %s" % r.stderr)
        if not os.path.exists(os.path.join(d, "catalog-size")):
            testlib.log("FAIL: test-escape-formats wrote nothing: %s" % r.stderr)
            return 1

        def read(i, ext):
            with open(os.path.join(d, "%d.%s" % (i, ext)), "rb") as f:
                return f.read()

        with open(os.path.join(d, "catalog-size")) as f:
            host_series = int(f.read())
        for i in range(count):
            name = read(i, "name")
            check_json(c, i, name, read(i, "json"))
            check_snapshot(c, i, read(i, "snapshot"))
            check_prometheus(c, i, name, read(i, "prom"), host_series)
            check_lines(c, i, read(i, "syslog"), read(i, "stderr"))
            if len(c.failures) > 20:
                break
    for f in c.failures[:20]:
        testlib.log("FAIL: " + f)
    if len(c.failures) > 20:
        testlib.log("(and more)")
    if c.failures:
        return 1
    testlib.log("PASS: %d names" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
