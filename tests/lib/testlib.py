# SPDX-License-Identifier: GPL-2.0-or-later
"""What the test harnesses share: logging, the checker that collects every
mismatch of a case, the re-exec into a private mount namespace, the check
catalog as the program states it (`ptsguard checks --format json`), and the
validation of every report and snapshot against the JSON Schemas in
docs/schema.

Standard library only, except that validating needs python3-jsonschema
(imported when first used).
"""

import argparse
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys

EXIT_SKIP = 77


class Skip(Exception):
    """The case cannot run here (not root, a tool missing); exit 77."""


def log(msg):
    print(msg, flush=True)


def pretty(obj):
    return json.dumps(obj, indent=2, sort_keys=True)


class Checker:
    """Assertions that collect every mismatch of a case before it fails."""

    def __init__(self):
        self.failures = []

    def fail(self, what):
        self.failures.append(what)

    def eq(self, actual, expected, what):
        if actual != expected:
            self.failures.append(
                "%s:\n    expected: %s\n    actual:   %s"
                % (what, json.dumps(expected, sort_keys=True), json.dumps(actual, sort_keys=True))
            )
            return False
        return True

    def true(self, cond, what):
        if not cond:
            self.failures.append(what)
        return bool(cond)


def case_registry():
    """A case file's CASES (name -> function, in file order) and its @case(name) decorator."""
    cases = {}

    def case(name):
        def register(func):
            cases[name] = func
            return func

        return register

    return cases, case


def case_args(cases, script, doc, options=(), required=(), single=False, argv=None):
    """The command line every case file shares: its own options ((flag, add_argument keywords)),
    --list, --check-registered (meson.build passes the names it registers) and the cases to run.
    Returns (args, names) to run: one name when single, else one or more ("all" for every case).
    --list and --check-registered exit here; a missing required option or an unknown case is a
    usage error (exit 2)."""
    name = os.path.basename(script)
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, kw in options:
        ap.add_argument(flag, **kw)
    ap.add_argument("--list", action="store_true", help="print the case names")
    ap.add_argument("--check-registered", action="store_true", help="compare the cases given with the file's")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(cases))
        sys.exit(0)
    if args.check_registered:
        missing, unknown = sorted(set(cases) - set(args.cases)), sorted(set(args.cases) - set(cases))
        if missing or unknown:
            log("meson.build and %s disagree:" % name)
            log("  not registered in meson.build: %s" % (missing or "-"))
            log("  registered but not in %s: %s" % (name, unknown or "-"))
            sys.exit(1)
        log("all %d cases of %s registered" % (len(cases), name))
        sys.exit(0)
    absent = [flag for flag in required if getattr(args, flag[2:].replace("-", "_")) is None]
    if absent or not args.cases or (single and len(args.cases) != 1):
        ap.error("%s required" % ", ".join(list(required) + ["one case" if single else "at least one case"]))
    names = list(cases) if args.cases == ["all"] and not single else args.cases
    unknown = [c for c in names if c not in cases]
    if unknown:
        ap.error("unknown case(s): %s (see --list)" % ", ".join(unknown))
    return args, names


def dracut_basedir(base, module, system="/usr/lib/dracut"):
    """A private $dracutbasedir at base: the system's dracut with ptsguard's module (the
    directory module) joined to its modules. dracut reads modules only from
    $dracutbasedir/modules.d, so everything of the system's is linked in beside it."""
    os.makedirs(os.path.join(base, "modules.d"))
    for name in os.listdir(system):
        if name != "modules.d":
            os.symlink(os.path.join(system, name), os.path.join(base, name))
    for name in os.listdir(os.path.join(system, "modules.d")):
        os.symlink(os.path.join(system, "modules.d", name), os.path.join(base, "modules.d", name))
    os.symlink(module, os.path.join(base, "modules.d", "95ptsguard"))
    return base


def mount_ns_id():
    return os.readlink("/proc/self/ns/mnt")


def enter_private_namespace(argv, marker, tools, needs, error, own_pids=False, own_net=False):
    """Re-exec argv (a python script and its arguments) under
    `unshare --mount --propagation private` unless already inside the namespace
    made for it, which the environment variable marker tells. own_pids: in a pid
    namespace of its own too, with its own /proc (what walks /proc sees only it).
    own_net: in a network namespace of its own too (its loopback down until
    brought up), where no other test's udevd is heard.

    Returns only inside the new namespace. Raises Skip when that cannot work
    here (not root: needs says what for; one of tools missing), and error
    when the marker is set but the namespace is still its parent's: nothing
    may be unmounted then."""
    parent_ns = os.environ.get(marker)
    if parent_ns is not None:
        if parent_ns == mount_ns_id():
            raise error("%s is set but this is still mount namespace %s; refusing to touch /dev" % (marker, parent_ns))
        return
    if os.geteuid() != 0:
        raise Skip("needs root (%s); running as uid %d" % (needs, os.geteuid()))
    for tool in ("unshare",) + tuple(tools):
        if shutil.which(tool) is None and not os.access(tool, os.X_OK):
            raise Skip("%s is not installed" % tool)
    r = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if r.returncode != 0:
        raise Skip("cannot create a mount namespace here: %s" % r.stdout.strip())
    env = dict(os.environ)
    env[marker] = mount_ns_id()
    sys.stdout.flush()
    sys.stderr.flush()
    pids = ["--pid", "--fork", "--mount-proc"] if own_pids else []
    net = ["--net"] if own_net else []
    os.execvpe("unshare", ["unshare", "--mount"] + pids + net + ["--propagation", "private", "--", sys.executable] + argv, env)


# --------------------------------------------------------------------------
# The check catalog, from the program itself

SEVERITIES = ("info", "warning", "critical")
_catalogs = {}


# --------------------------------------------------------------------------
# The daemon as ptsguard.service runs it

UNIT_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "units", "ptsguard.service.in")


def unit_settings(path=UNIT_TEMPLATE):
    """The [Service] settings of ptsguard.service that decide who the daemon is."""
    out = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep and key in ("User", "Group", "AmbientCapabilities", "CapabilityBoundingSet", "NoNewPrivileges"):
                out[key] = value
    return out


def service_user(scratch, bind):
    """The unit's User= and what the unit gives it: the machine's user of that name, or one
    added (a free uid below 1000, as systemd-sysusers picks) to copies of /etc/passwd and
    /etc/group written into scratch and bound over the originals with bind(src, dst), which
    must be a private mount namespace's; with bind None, only the free uid (the daemon never
    looks its own name up; a case's own /etc files stay as it made them). A dict: name, uid,
    gid, caps and bounding (setpriv's names), nnp."""
    import grp
    import pwd

    unit = unit_settings()
    name = unit["User"]
    try:
        pw = pwd.getpwnam(name)
        uid, gid = pw.pw_uid, pw.pw_gid
    except KeyError:
        used_uids = {p.pw_uid for p in pwd.getpwall()}
        used_gids = {g.gr_gid for g in grp.getgrall()}
        uid = next(u for u in range(999, 100, -1) if u not in used_uids and u not in used_gids)
        gid = uid
        entries = (("/etc/passwd", "%s:x:%d:%d:pseudo-terminal guard:/nonexistent:/usr/sbin/nologin\n" % (name, uid, gid)),
                   ("/etc/group", "%s:x:%d:\n" % (unit["Group"], gid)))
        for path, line in entries if bind else ():
            copy = os.path.join(scratch, os.path.basename(path))
            with open(path) as f:
                text = f.read()
            with open(copy, "w") as f:
                f.write(text + ("" if text.endswith("\n") else "\n") + line)
            os.chmod(copy, 0o644)
            bind(copy, path)

    def names(value):
        return [c.lower().replace("cap_", "") for c in value.split()]

    return dict(name=name, uid=uid, gid=gid, caps=names(unit["AmbientCapabilities"]),
                bounding=names(unit["CapabilityBoundingSet"]), nnp=unit.get("NoNewPrivileges") == "yes")


def as_service(service):
    """The argv prefix (setpriv) that runs a command as the unit runs the daemon: its user and
    group, no supplementary groups, the unit's ambient capabilities and bounding set."""
    caps = ",".join("+" + c for c in service["caps"])
    bounding = ",".join("+" + c for c in service["bounding"])
    argv = ["setpriv", "--reuid=%d" % service["uid"], "--regid=%d" % service["gid"], "--clear-groups",
            "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps, "--bounding-set=-all," + bounding]
    return argv + (["--no-new-privs"] if service["nnp"] else [])


def catalog(ptsguard, error=RuntimeError):
    """id -> catalog entry (severity, message_id, summary, repairable, daemon_only, ...),
    read once per process from `ptsguard checks --format json`.

    Raises error unless the catalog is sound: non-empty, unique ids and message ids, a
    known severity, a 32-hex-digit message id and a summary for every entry."""
    ptsguard = os.path.abspath(ptsguard)
    if ptsguard in _catalogs:
        return _catalogs[ptsguard]
    argv = [ptsguard, "checks", "--format", "json"]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    what = " ".join(argv)
    if r.returncode != 0:
        raise error("%s: exit status %d\nstderr: %s" % (what, r.returncode, r.stderr))
    try:
        entries = json.loads(r.stdout)
    except ValueError as e:
        raise error("%s: not JSON (%s)\nstdout: %s" % (what, e, r.stdout))
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise error("%s: expected a non-empty list of check objects\nstdout: %s" % (what, r.stdout))
    problems = []
    cat = {}
    message_ids = {}
    for e in entries:
        cid = e.get("id")
        if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cid):
            problems.append("bad id %r" % (cid,))
            continue
        if cid in cat:
            problems.append("%s: listed twice" % cid)
        cat[cid] = e
        if e.get("severity") not in SEVERITIES:
            problems.append("%s: severity %r" % (cid, e.get("severity")))
        mid = e.get("message_id")
        if not isinstance(mid, str) or not re.fullmatch(r"[0-9a-f]{32}", mid):
            problems.append("%s: message_id %r is not 32 hex digits" % (cid, mid))
        elif mid in message_ids:
            problems.append("%s: message_id %s is also %s's" % (cid, mid, message_ids[mid]))
        else:
            message_ids[mid] = cid
        if not isinstance(e.get("summary"), str) or not e["summary"].strip():
            problems.append("%s: no summary" % cid)
        for key in ("repairable", "daemon_only"):
            if not isinstance(e.get(key), bool):
                problems.append("%s: %s is %r, expected true or false" % (cid, key, e.get(key)))
    if problems:
        raise error("%s: the catalog is not sound:\n  %s" % (what, "\n  ".join(problems)))
    _catalogs[ptsguard] = cat
    return cat


def one_shot_ids(cat):
    """The ids a single audit can report: all but the daemon's transitions."""
    return sorted(cid for cid, e in cat.items() if not e["daemon_only"])


# --------------------------------------------------------------------------
# JSON Schemas of the report and the snapshot (docs/schema)

SCHEMA_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schema"))
REPORT_SCHEMA = os.path.join(SCHEMA_DIR, "report-1.schema.json")
SNAPSHOT_SCHEMA = os.path.join(SCHEMA_DIR, "snapshot-1.schema.json")
_validators = {}


HUNG_FUSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers", "hung-fuse")


class HungFuse:
    """tests/helpers/hung-fuse at mountpoint, in the caller's mount namespace: a FUSE daemon
    that stops answering on demand (hang(), release())."""

    def __init__(self, mountpoint, hung=False, error=RuntimeError):
        self.error = error
        os.makedirs(mountpoint, exist_ok=True)
        if not os.path.exists("/dev/fuse"):  # the harnesses' /dev have ptmx and null only
            os.mknod("/dev/fuse", 0o666 | stat.S_IFCHR, os.makedev(10, 229))
        self.proc = subprocess.Popen([sys.executable, HUNG_FUSE, mountpoint] + (["--hung"] if hung else []), stdout=subprocess.PIPE, text=True)
        self.expect("ready")
        if not hung:
            os.close(os.open(mountpoint + "/file", os.O_RDONLY))  # the one FLUSH: see hung-fuse

    def expect(self, word):
        line = self.proc.stdout.readline().strip()
        if line != word:
            raise self.error("hung-fuse said %r, not %r" % (line, word))

    def hang(self):
        self.proc.send_signal(signal.SIGUSR1)
        self.expect("hung")

    def release(self):
        self.proc.send_signal(signal.SIGUSR2)
        self.expect("back")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class SchemaError(Exception):
    """A document does not match its schema; the message names the schema file and
    the JSON pointer of each violation."""


def _validator(path):
    if path not in _validators:
        try:
            import jsonschema
        except ImportError:
            raise SchemaError("cannot validate against %s: python3-jsonschema is not installed" % path)
        with open(path) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validators[path] = cls(schema)
    return _validators[path]


def json_pointer(parts):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts) if parts else "(the root)"


def schema_problems(doc, schema_path, limit=10):
    """Every way doc violates the schema at schema_path, one line each; [] when valid."""
    import jsonschema.exceptions

    out = []
    errors = sorted(_validator(schema_path).iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors[:limit]:
        detail = e
        if e.context:
            # anyOf [X, null]: the branch that explains is X's, not "is not of type 'null'".
            telling = [c for c in e.context if c.validator != "type"]
            detail = jsonschema.exceptions.best_match(telling or e.context)
        out.append(
            "%s at %s: %s (schema keywords %s)"
            % (
                os.path.relpath(schema_path, os.path.join(SCHEMA_DIR, "..", "..")),
                json_pointer(list(detail.absolute_path)),
                detail.message if len(detail.message) < 300 else detail.message[:300] + "...",
                json_pointer(list(detail.absolute_schema_path)).replace("(the root)", "/"),
            )
        )
    if len(errors) > limit:
        out.append("... and %d more" % (len(errors) - limit))
    return out


def report_problems(doc):
    return schema_problems(doc, REPORT_SCHEMA)


def snapshot_problems(doc):
    return schema_problems(doc, SNAPSHOT_SCHEMA)


def validate_report(doc, what="report", error=SchemaError):
    """Raise error (a SchemaError by default) unless doc is a valid ptsguard.report/1."""
    problems = report_problems(doc)
    if problems:
        raise error("%s does not match its schema:\n  %s" % (what, "\n  ".join(problems)))
    return doc


def validate_snapshot(doc, what="snapshot", error=SchemaError):
    """Raise error (a SchemaError by default) unless doc is a valid ptsguard.snapshot/1."""
    problems = snapshot_problems(doc)
    if problems:
        raise error("%s does not match its schema:\n  %s" % (what, "\n  ".join(problems)))
    return doc
