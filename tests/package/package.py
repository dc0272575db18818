# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian package as an operator meets it.

1. `dpkg-buildpackage -us -uc -b` in a copy of the source tree; the .deb,
   and lintian's verdict on it, are cached under the boot test's cache
   directory, keyed by a hash of every source file (a change anywhere
   rebuilds). lintian must print nothing: no error, no warning.
2. The boot test's cached bookworm tree (tests/boot/boot.py, same helper and
   cache), plus initramfs-tools and a kernel so that update-initramfs has an
   initrd to rebuild: that layer is cached as a tar of its own.
3. The tree boots under systemd-nspawn; inside, `apt-get install
   ./ptsguard_*.deb`: ptsguard.service enabled, active and ready (Type=notify),
   the conffile registered, the dracut module and udev rule in place, the
   initramfs rebuilt by the trigger with the hook in it (lsinitramfs), a broken
   /dev/pts journaled with the catalog's text (journalctl -x).
4. `apt-get purge ptsguard`: every file outside the package manager's own
   records is as it was before the install, the initrd has no ptsguard, the
   catalog no longer knows its ids.

Exit 0 pass, 1 fail, 77 skip. Standard library only.
"""

import argparse
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "boot"))

import boot  # noqa: E402
from boot import Failure, Skip, log, run  # noqa: E402

LAYER_PACKAGES = ["initramfs-tools", "linux-image-amd64", "zstd"]
LAYER_FORMAT = 2
BUDGET = 600
# Paths the package manager, the journal and the running system change by themselves: what
# the package added is judged in the rest of the tree.
UNTRACKED = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/var/log", "/var/cache", "/var/lib/apt", "/var/lib/dpkg", "/root")
SKIP_DIRS = {"build", "obj-x86_64-linux-gnu", ".git", "__pycache__"}
# Harnesses that boot or build the package but are not read by its build (dh_auto_test runs the
# cli suite only): a change to them must not rebuild the .deb. Their meson.build files are read.
NOT_BUILD_INPUTS = ("tests/boot/", "tests/package/", "tests/vm/", "tests/bench/")


def source_files(root):
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build") and not (rel == "debian" and x in ("ptsguard", ".debhelper", "tmp")))
        for f in sorted(files):
            p = os.path.join(rel, f)
            if rel == "debian" and (f.endswith(".substvars") or f in ("files", "debhelper-build-stamp")):
                continue
            out.append(os.path.normpath(p))
    return out


def source_key(root):
    h = hashlib.sha256()
    for p in source_files(root):
        if p.startswith(NOT_BUILD_INPUTS) and os.path.basename(p) != "meson.build":
            continue
        h.update(p.encode() + b"\0")
        full = os.path.join(root, p)
        if os.path.islink(full):
            h.update(os.readlink(full).encode())
        else:
            with open(full, "rb") as f:
                h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()[:16]


def ensure_deb(cache_dir, source_root):
    """(path of the .deb, lintian's output), built once per source key."""
    key = source_key(source_root)
    out = os.path.join(cache_dir, "deb-" + key)
    with open(os.path.join(cache_dir, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        debs = glob.glob(os.path.join(out, "ptsguard_*.deb"))
        if debs and os.path.exists(os.path.join(out, "lintian.txt")):
            log("cached package: %s" % debs[0])
        else:
            shutil.rmtree(out, ignore_errors=True)
            src = os.path.join(out, "src")
            os.makedirs(src)
            for p in source_files(source_root):
                os.makedirs(os.path.dirname(os.path.join(src, p)), exist_ok=True)
                shutil.copy2(os.path.join(source_root, p), os.path.join(src, p), follow_symlinks=False)
            t = time.monotonic()
            r = run(["dpkg-buildpackage", "-us", "-uc", "-b"], check=False, cwd=src, timeout=1200)
            if r.returncode != 0:
                raise Failure("dpkg-buildpackage failed (exit %d):\n%s" % (r.returncode, (r.stdout + r.stderr)[-4000:]))
            log("dpkg-buildpackage took %.0fs" % (time.monotonic() - t))
            changes = glob.glob(os.path.join(out, "*.changes"))
            # Tags go to standard output; standard error only has lintian's own notes (root).
            r = run(["lintian", "--tag-display-limit", "0"] + changes, check=False, timeout=600)
            log("lintian exit %d%s" % (r.returncode, (": " + r.stderr.strip()) if r.stderr.strip() else ""))
            with open(os.path.join(out, "lintian.txt"), "w") as f:
                f.write(r.stdout)
            shutil.rmtree(src, ignore_errors=True)
            for old in glob.glob(os.path.join(cache_dir, "deb-*")):
                if old != out:
                    shutil.rmtree(old, ignore_errors=True)
            debs = glob.glob(os.path.join(out, "ptsguard_*.deb"))
        with open(os.path.join(out, "lintian.txt")) as f:
            return debs[0], f.read()


def ensure_layer(cache_dir, base_tar):
    """The boot tree plus initramfs-tools and a kernel, as a tar next to it."""

    def prepare(root):
        # An initrd without kernel modules: enough to show the hook, and built in seconds
        # rather than minutes (MODULES=most copies hundreds of them, three times per run).
        os.makedirs(os.path.join(root, "etc/initramfs-tools/conf.d"), exist_ok=True)
        with open(os.path.join(root, "etc/initramfs-tools/conf.d/ptsguard-test.conf"), "w") as f:
            f.write("MODULES=list\nCOMPRESS=gzip\n")

    return apt_layer(cache_dir, base_tar, "package-layer", LAYER_PACKAGES, LAYER_FORMAT, prepare)


def apt_layer(cache_dir, base_tar, name, packages, fmt, prepare=None):
    """base_tar with packages installed from the mirror by apt-get in a chroot, as a tar
    NAME-KEY.tar beside it (KEY: the base, the packages, fmt; an older NAME-*.tar is removed).
    prepare(root) runs before apt-get. No service starts in the chroot:
    policy-rc.d forbids it while apt-get runs."""
    key = hashlib.sha256(json.dumps([os.path.basename(base_tar), packages, fmt]).encode()).hexdigest()[:16]
    tar = os.path.join(cache_dir, "%s-%s.tar" % (name, key))
    with open(os.path.join(cache_dir, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(tar):
            return tar
        work = tempfile.mkdtemp(prefix="layer-", dir=cache_dir)
        try:
            root = os.path.join(work, "root")
            os.makedirs(root)
            run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", root, "-xf", base_tar])
            shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
            policy = os.path.join(root, "usr/sbin/policy-rc.d")
            with open(policy, "w") as f:
                f.write("#!/bin/sh\nexit 101\n")
            os.chmod(policy, 0o755)
            if prepare:
                prepare(root)
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            t = time.monotonic()
            for argv in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends"] + list(packages), ["apt-get", "clean"]):
                r = run(["chroot", root] + argv, check=False, env=env, timeout=900)
                if r.returncode != 0:
                    raise Failure("%s in the tree failed:\n%s" % (" ".join(argv), (r.stdout + r.stderr)[-3000:]))
            log("installed %s into the tree in %.0fs" % (" ".join(packages), time.monotonic() - t))
            os.unlink(policy)
            run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", root, "-cf", tar + ".tmp", "."])
            os.rename(tar + ".tmp", tar)
            for old in glob.glob(os.path.join(cache_dir, name + "-*.tar")):
                if old != tar and re.fullmatch(re.escape(name) + r"-[0-9a-f]{16}\.tar", os.path.basename(old)):
                    os.unlink(old)
            return tar
        finally:
            boot.umount_below(work)
            shutil.rmtree(work, ignore_errors=True)


def file_list(ct):
    prune = " -o ".join("-path %s" % p for p in UNTRACKED)
    r = ct.sh(["sh", "-c", "find / -xdev \\( %s \\) -prune -o -print | sort" % prune], check=True, timeout=60)
    return set(r.stdout.splitlines())


def initrd_listing(ct):
    r = ct.sh(["sh", "-c", "lsinitramfs /boot/initrd.img-*"], check=True, timeout=120)
    return r.stdout


def hooked(listing):
    """Whether the initrd holds the binary and the init-bottom script the hook adds."""
    names = set(l.strip() for l in listing.splitlines())
    return ["usr/bin/ptsguard" in names, "scripts/init-bottom/ptsguard" in names]


def test_inside(c, ct, deb_name):
    ct.wait_for("systemd in the container to finish booting", lambda: ct.sh(["systemctl", "is-system-running", "--wait"], timeout=120).stdout.strip() not in ("", "offline", "unknown"), timeout=120)
    before = file_list(ct)
    c.ok("/boot" in before and any(p.startswith("/boot/initrd.img-") for p in before), "the tree has an initrd before the install", "")
    initrd_before = initrd_listing(ct)

    r = ct.sh(["apt-get", "install", "-y", "--no-install-recommends", "/root/" + deb_name], timeout=300)
    c.ok(r.returncode == 0, "apt-get install ./%s succeeds" % deb_name, r.stdout[-3000:] + r.stderr)
    c.ok("update-initramfs" in r.stdout, "the install triggers update-initramfs", r.stdout[-2000:])

    p = ct.wait_for("ptsguard.service to be active", lambda: (lambda p: p if p["ActiveState"] == "active" else None)(ct.show("ptsguard.service", "ActiveState", "SubState", "UnitFileState", "Type", "StatusText")), timeout=30)
    c.ok(p["UnitFileState"] == "enabled", "ptsguard.service is enabled", str(p))
    c.ok(p["Type"] == "notify" and p["SubState"] == "running" and p["StatusText"] != "", "ptsguard.service is running and ready (Type=notify, STATUS=%s)" % p["StatusText"], str(p))
    # The service's user, made by the postinst from the package's sysusers.d file.
    pw = ct.sh(["getent", "passwd", "ptsguard"]).stdout.strip().split(":")
    c.ok(len(pw) >= 7 and 0 < int(pw[2]) < 1000 and pw[5] == "/nonexistent", "the install made the system user ptsguard", str(pw))
    pid = ct.show("ptsguard.service", "MainPID")["MainPID"]
    status = ct.sh(["grep", "-E", "^(Uid|Gid|Groups):", "/proc/%s/status" % pid]).stdout
    ids = {l.split(":")[0]: l.split(":", 1)[1].split() for l in status.splitlines()}
    c.ok(len(pw) >= 4 and ids.get("Uid") == [pw[2]] * 4 and ids.get("Gid") == [pw[3]] * 4 and set(ids.get("Groups", ["?"])) <= {pw[3]}, "ptsguard.service runs as ptsguard, in no group but its own (systemd's initgroups() lists the primary one)", status)
    owner = ct.sh(["stat", "-c", "%U:%G", "/run/ptsguard", "/run/ptsguard/report.json"]).stdout.split()
    c.ok(owner == ["ptsguard:ptsguard"] * 2, "/run/ptsguard and its report are the user's", str(owner))
    conffiles = ct.sh(["dpkg-query", "-W", "-f", "${Conffiles}", "ptsguard"], check=True).stdout
    c.ok("/etc/ptsguard/ptsguard.conf" in conffiles, "/etc/ptsguard/ptsguard.conf is a conffile", conffiles)
    for path in ("/usr/lib/sysusers.d/ptsguard.conf", "/usr/lib/dracut/modules.d/95ptsguard/module-setup.sh", "/lib/udev/rules.d/70-ptsguard.rules", "/usr/share/bash-completion/completions/ptsguard"):
        c.ok(ct.sh(["test", "-f", path]).returncode == 0, "%s is installed" % path)
    # The LSB script for hosts without systemd, beside the unit: registered, and the unit wins.
    c.ok(ct.sh(["test", "-x", "/etc/init.d/ptsguard"]).returncode == 0, "/etc/init.d/ptsguard is installed, executable")
    r = ct.sh(["sh", "-c", "ls /etc/rc2.d/S*ptsguard /etc/rc0.d/K*ptsguard"])
    c.ok(r.returncode == 0, "update-rc.d registered the script for runlevels 2 and 0", r.stdout + r.stderr)
    c.ok(ct.show("ptsguard.service", "FragmentPath")["FragmentPath"].endswith("/ptsguard.service") and "init.d" not in ct.show("ptsguard.service", "SourcePath").get("SourcePath", ""),
         "systemd runs the native unit, not the script")
    listing = initrd_listing(ct)
    c.ok(hooked(listing) == [True, True], "lsinitramfs: the initrd holds ptsguard and its init-bottom script", listing[-1500:])
    c.ok(hooked(initrd_before) == [False, False], "the initrd had no ptsguard before the install")

    # A finding explained by the catalog the package installed.
    checks = {x["id"]: x for x in json.loads(ct.sh(["ptsguard", "checks", "--format", "json"], check=True).stdout)}
    lost = checks["devpts-options-lost"]
    ct.sh(["mount", "-o", "remount,mode=644", "/dev/pts"], check=True)
    try:
        ct.wait_for("the devpts-options-lost entry", lambda: ct.journal("MESSAGE_ID=" + lost["message_id"]), timeout=20)
        boot.check_catalog_text(c, ct, lost)
    except Failure as e:
        c.ok(False, "a mode=644 /dev/pts is journaled as devpts-options-lost", str(e))
    ct.sh(["mount", "-o", "remount,mode=620", "/dev/pts"], check=True)
    time.sleep(1)

    r = ct.sh(["apt-get", "purge", "-y", "ptsguard"], timeout=300)
    c.ok(r.returncode == 0, "apt-get purge ptsguard succeeds", r.stdout[-3000:] + r.stderr)
    c.ok("update-initramfs" in r.stdout, "the purge triggers update-initramfs", r.stdout[-2000:])
    after = file_list(ct)
    c.ok(after == before, "after the purge the file list is as before the install", "added: %s\nremoved: %s" % (sorted(after - before)[:50], sorted(before - after)[:50]))
    c.ok(ct.sh(["test", "-e", "/run/ptsguard"]).returncode != 0, "/run/ptsguard is gone")
    c.ok(hooked(initrd_listing(ct)) == [False, False], "the initrd has no ptsguard after the purge")
    cat = ct.sh(["journalctl", "--list-catalog", lost["message_id"]]).stdout
    c.ok(lost["message_id"] not in cat, "the journal catalog no longer knows %s" % lost["message_id"], cat)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--build-root", required=True)
    args = ap.parse_args(argv)
    try:
        if os.geteuid() != 0:
            raise Skip("needs root (debootstrap, systemd-nspawn, nsenter)")
        for tool in ("dpkg-buildpackage", "dh", "lintian", "debootstrap", "systemd-nspawn", "nsenter", "chroot", "tar"):
            if shutil.which(tool) is None:
                raise Skip("%s is not installed" % tool)
    except Skip as e:
        log("SKIP: %s" % e)
        return boot.EXIT_SKIP

    def on_term(signum, frame):
        raise boot.Timeout("terminated by signal %d" % signum)

    signal.signal(signal.SIGTERM, on_term)
    # Two cores shared with other builds: debootstrap (once per cache) gets more time than alone.
    boot.DEBOOTSTRAP_TIMEOUT = max(boot.DEBOOTSTRAP_TIMEOUT, 900)
    cache_dir = boot.cache_dir(args.build_root)
    c = boot.Checker()
    ct = scratch = None
    try:
        deb, lint = ensure_deb(cache_dir, os.path.abspath(args.source_root))
        c.ok(lint.strip() == "", "lintian on the package: no error, no warning", lint)
        tar = ensure_layer(cache_dir, boot.ensure_rootfs(cache_dir))
        scratch = tempfile.mkdtemp(prefix="package-", dir=cache_dir)
        tree = os.path.join(scratch, "tree")
        os.makedirs(tree)
        run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", tree, "-xf", tar])
        shutil.copy(deb, os.path.join(tree, "root"))
        ct = boot.Container(tree, os.path.join(scratch, "console.log"), boot.Deadline(BUDGET))
        ct.start()
        try:
            test_inside(c, ct, os.path.basename(deb))
        finally:
            rc = ct.poweroff()
        c.ok(rc == 0, "the container powered off cleanly", "exit %s" % rc)
    except Failure as e:
        c.ok(False, "the package test ran to its end", str(e))
        if ct is not None:
            log("\n---- console (tail) ----\n%s" % ct.console_log())
    finally:
        if ct is not None:
            ct.cleanup()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if c.failures:
        log("FAIL: %d assertion(s) failed" % len(c.failures))
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
