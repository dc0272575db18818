# SPDX-License-Identifier: GPL-2.0-or-later
"""What the real-kernel test harnesses share (tests/scenario/harness.py,
tests/daemon/harness.py): logging, the checker that collects every mismatch
of a case, and the re-exec into a private mount namespace.

Standard library only.
"""

import json
import os
import shutil
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


def mount_ns_id():
    return os.readlink("/proc/self/ns/mnt")


def enter_private_namespace(argv, marker, tools, needs, error):
    """Re-exec argv (a python script and its arguments) under
    `unshare --mount --propagation private` unless already inside the namespace
    made for it, which the environment variable marker tells.

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
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", "--", sys.executable] + argv, env)
