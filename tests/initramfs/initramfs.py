#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The initramfs hooks, tested on real images, one function per case.

    initramfs.py --ptsguard PATH --bindir DIR --dracut-module DIR --initramfs-tools DIR
                 --workdir DIR CASE
    initramfs.py --list
    initramfs.py --check-registered CASE...   (meson's list must match ours)

The image cases build a real initramfs with dracut (the 95ptsguard module of the
build tree, through a private dracutbasedir) or with mkinitramfs (a private
configuration directory holding our hook and init-bottom script), list it with
lsinitrd / lsinitramfs, unpack it, and run the hook the way the generator's init
does, chrooted into the image's own root in a private mount namespace: a tmpfs
/dev with the initramfs's devpts on /dev/pts, a tmpfs /run, and the new root (a
tmpfs holding etc/fstab) on /sysroot or /root. The record the hook leaves in
/run/ptsguard/initramfs.json and its kernel log lines (PTSGUARD_KMSG) are then
checked. The record cases run `ptsguard initramfs-record` itself, without an image.

Everything lives in a temporary directory under --workdir (the build tree) and
is removed afterwards; nothing on the host is changed. Exit 0 pass, 1 fail, 77
skip (not root, no mount namespaces, or a generator missing).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402
from testlib import Skip, case_registry, log  # noqa: E402

EXIT_SKIP = 77
TTY_GID = 5
RECORD = "run/ptsguard/initramfs.json"
KMSG = "/kmsg.log"  # inside the image root; PTSGUARD_KMSG points the hooks there

# The new root's fstab: devpts on line 3 with no gid=, the CentOS 6 recipe.
FSTAB_BROKEN = (
    "# /etc/fstab of the new root\n"
    "proc /proc proc defaults 0 0\n"
    "devpts /dev/pts devpts defaults 0 0\n"
)
FSTAB_BROKEN_LINE = 3
# The same line with the options of the initramfs: a healthy boot.
FSTAB_HEALTHY = FSTAB_BROKEN.replace("defaults", "gid=5,mode=620")

# What the new root holds besides etc/fstab, made by `fake_root KIND DIR` (shell): nothing of it
# runs, the hook reads the files. "debian12-systemd" is laid out as Debian 12 is (merged /usr,
# /sbin/init -> /lib/systemd/systemd, libsystemd-shared-252.so in the multiarch directory, the
# remount-fs unit pulled in by the fstab generator); "sysvinit" has an init and /etc/inittab;
# "debian-sysvinit" adds Debian's initscripts as far as they matter (checkroot.sh, and
# mountdevsubfs.sh with its defaults, which /etc/default/devpts overrides, as Debian 12 ships it).
FAKE_ROOT = r"""
fake_root() {
	D=$2
	case "$1" in
	none) ;;
	debian12-systemd|debian12-systemd-masked)
		mkdir -p "$D/usr/sbin" "$D/usr/lib/systemd/system" "$D/usr/lib/x86_64-linux-gnu/systemd" \
			"$D/etc/systemd/system"
		ln -s usr/sbin "$D/sbin"
		ln -s usr/lib "$D/lib"
		: > "$D/usr/lib/systemd/systemd"
		ln -s /lib/systemd/systemd "$D/usr/sbin/init"
		: > "$D/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so"
		: > "$D/usr/lib/systemd/system/systemd-remount-fs.service"
		if [ "$1" = debian12-systemd-masked ]; then
			ln -s /dev/null "$D/etc/systemd/system/systemd-remount-fs.service"
		fi ;;
	sysvinit|debian-sysvinit)
		mkdir -p "$D/sbin"
		: > "$D/sbin/init"
		: > "$D/etc/inittab"
		if [ "$1" = debian-sysvinit ]; then
			mkdir -p "$D/etc/init.d" "$D/etc/default"
			: > "$D/etc/init.d/checkroot.sh"
			printf '#! /bin/sh\nPATH=/sbin:/bin\nTTYGRP=5\nTTYMODE=620\n[ -f /etc/default/devpts ] && . /etc/default/devpts\n' \
				> "$D/etc/init.d/mountdevsubfs.sh"
			printf '# GID of the tty group\nTTYGRP=5\n\n# Set to 620 to have mesg y be the default\nTTYMODE=600\n' \
				> "$D/etc/default/devpts"
		fi ;;
	*) echo "fake_root: unknown kind $1" >&2; exit 1 ;;
	esac
}
"""

CASES, case = case_registry()


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def check_eq(actual, expected, what):
    if actual != expected:
        raise Failure("%s: expected %r, got %r" % (what, expected, actual))


def run(argv, env=None, timeout=120, ok=True, **kw):
    started = time.monotonic()
    r = subprocess.run(argv, env=env, timeout=timeout, capture_output=True, text=True, errors="replace", **kw)
    log("$ %s  (exit %d, %.1fs)" % (" ".join(argv), r.returncode, time.monotonic() - started))
    if ok and r.returncode != 0:
        raise Failure("%s failed with %d:\n%s%s" % (argv[0], r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r


def require_tool(name):
    if not shutil.which(name):
        raise Skip("%s is not installed" % name)


def sanitizer_env():
    """The sanitizer settings meson gives the test, passed on into the image."""
    return {k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}


class Context:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.binary = os.path.join(args.bindir, "ptsguard").lstrip("/")  # path inside images

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def kernel_version(self, need_config):
        """A Debian kernel with modules and config (mkinitramfs needs both); dracut builds with
        --no-kernel and takes any version."""
        try:
            versions = sorted(os.listdir("/lib/modules"), reverse=True)
        except FileNotFoundError:
            versions = []
        for v in versions:
            if os.path.exists("/boot/config-" + v):
                return v
        if need_config:
            raise Skip("no kernel with /lib/modules/V and /boot/config-V (install linux-image-amd64)")
        return os.uname().release

    def libraries(self):
        """The shared libraries the binary loads (ldd), which must be in every image."""
        r = run(["ldd", self.args.ptsguard])
        libs = []
        for line in r.stdout.splitlines():
            fields = line.split()
            path = fields[2] if "=>" in fields and len(fields) > 2 else fields[0]
            if path.startswith("/"):
                libs.append(os.path.basename(path))
        check(libs, "ldd found no libraries of %s" % self.args.ptsguard)
        return libs

    # --- building and unpacking images -------------------------------------------------

    def build_dracut(self):
        require_tool("dracut")
        require_tool("lsinitrd")
        base = testlib.dracut_basedir(self.path("dracut-base"), self.args.dracut_module)
        os.makedirs(self.path("dracut-conf.d"))
        image = self.path("dracut.img")
        env = dict(os.environ, dracutbasedir=base, TMPDIR=self.work, PTSGUARD_INITRAMFS_BINARY=self.args.ptsguard)
        r = run(
            ["dracut", "--no-kernel", "--modules", "base ptsguard", "--no-hostonly", "--no-early-microcode",
             "--no-compress", "--conf", "/dev/null", "--confdir", self.path("dracut-conf.d"),
             "--tmpdir", self.work, "--force", image, self.kernel_version(need_config=False)],
            env=env)
        check("Including module: ptsguard" in r.stderr + r.stdout,
              "dracut did not include the ptsguard module:\n" + r.stderr[-3000:])
        return image

    def build_initramfs_tools(self):
        require_tool("mkinitramfs")
        require_tool("lsinitramfs")
        require_tool("unmkinitramfs")
        version = self.kernel_version(need_config=True)
        conf = self.path("initramfs-tools")
        for d in ("hooks", "scripts/init-bottom", "conf.d"):
            os.makedirs(os.path.join(conf, d))
        with open(os.path.join(conf, "initramfs.conf"), "w") as f:
            # Small and quick: no kernel modules beyond what the hooks insist on, gzip.
            f.write("MODULES=list\nBUSYBOX=auto\nKEYMAP=n\nCOMPRESS=gzip\nDEVICE=\nNFSROOT=auto\n"
                    "RUNSIZE=10%\nFSTYPE=auto\n")
        open(os.path.join(conf, "modules"), "w").close()
        src = self.args.initramfs_tools
        shutil.copy2(os.path.join(src, "hooks", "ptsguard"), os.path.join(conf, "hooks", "ptsguard"))
        shutil.copy2(os.path.join(src, "scripts", "init-bottom", "ptsguard"),
                     os.path.join(conf, "scripts", "init-bottom", "ptsguard"))
        image = self.path("initramfs-tools.img")
        env = dict(os.environ, TMPDIR=self.work, PTSGUARD_INITRAMFS_BINARY=self.args.ptsguard)
        run(["mkinitramfs", "-d", conf, "-o", image, version], env=env)
        return image

    def unpack_dracut(self, image):
        root = self.path("root")
        os.makedirs(root)
        run(["lsinitrd", "--unpack", image], cwd=root)
        return root

    def unpack_initramfs_tools(self, image):
        out = self.path("unpacked")
        run(["unmkinitramfs", image, out])
        # With an early (microcode) archive the main one is in main/.
        root = os.path.join(out, "main") if os.path.isdir(os.path.join(out, "main")) else out
        return root

    # --- running a hook in the image ---------------------------------------------------

    def run_in_image(self, root, newroot, command, fstab=FSTAB_BROKEN, env=None, run_readonly=False,
                     move_dev=False, root_kind="none"):
        """Run command with the image's /bin/sh, chrooted into root, in a private mount namespace
        set up like the initramfs at the switch. Returns (exit status, stdout, stderr, record or
        None, kmsg lines, the devpts mount {id, device, mountpoint} from the host's view)."""
        out = tempfile.mkdtemp(prefix="run-", dir=self.work)
        if fstab is not None:
            with open(os.path.join(out, "fstab"), "w") as f:
                f.write(fstab)
        kmsg = os.path.join(root, KMSG.lstrip("/"))
        if os.path.exists(kmsg):
            os.unlink(kmsg)
        setup = FAKE_ROOT + r"""
set -eu
R=$1 OUT=$2 NR=$3
shift 3
# The image root becomes a mount of its own, as the initramfs's rootfs is.
mount --bind "$R" "$R"
mkdir -p "$R/proc" "$R/dev" "$R/run" "$R$NR"
mount -t proc -o nosuid,noexec,nodev proc "$R/proc"
# /dev as the initramfs has it (a devtmpfs there; a tmpfs here, so the host's stays untouched)
mount -t tmpfs -o mode=0755,nosuid,noexec dev "$R/dev"
mknod -m 666 "$R/dev/null" c 1 3
mknod -m 666 "$R/dev/ptmx" c 5 2
mknod -m 666 "$R/dev/tty" c 5 0
mkdir -m 755 "$R/dev/pts"
mount -t devpts -o gid=5,mode=620,noexec,nosuid devpts "$R/dev/pts"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$R/run"
mount -t tmpfs -o mode=0755 newroot "$R$NR"
mkdir -p "$R$NR/etc" "$R$NR/dev" "$R$NR/run" "$R$NR/proc" "$R$NR/sys"
if [ -e "$OUT/fstab" ]; then cp "$OUT/fstab" "$R$NR/etc/fstab"; fi
fake_root "$ROOT_KIND" "$R$NR"
if [ "$MOVE_DEV" = 1 ]; then
	# What initramfs-tools' udev init-bottom script does, when it runs first.
	mount --move "$R/dev" "$R$NR/dev"
	rm -rf "$R/dev"
	ln -s "$NR/dev" "$R/dev"
fi
if [ "$RUN_RO" = 1 ]; then mount -o remount,ro "$R/run"; fi
cat /proc/self/mountinfo > "$OUT/mountinfo"
set +e
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" chroot "$R" /bin/sh -c "$COMMAND" \
	> "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
cp "$R/run/ptsguard/initramfs.json" "$OUT/record.json" 2> /dev/null
exit 0
"""
        variables = dict(sanitizer_env(), PTSGUARD_KMSG=KMSG)
        variables.update(env or {})
        argv = ["unshare", "--mount", "--propagation", "private", "bash", "-c", setup, "setup",
                root, out, newroot] + ["%s=%s" % kv for kv in variables.items()]
        started = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, COMMAND=command, MOVE_DEV="1" if move_dev else "0",
                                    RUN_RO="1" if run_readonly else "0", ROOT_KIND=root_kind))
        elapsed = time.monotonic() - started
        if r.returncode != 0 or not os.path.exists(os.path.join(out, "rc")):
            raise Failure("setting up the image root failed (%d):\n%s" % (r.returncode, r.stderr))

        def read(name):
            try:
                with open(os.path.join(out, name)) as f:
                    return f.read()
            except FileNotFoundError:
                return None

        status = int(read("rc"))
        stdout, stderr = read("stdout"), read("stderr")
        record = read("record.json")
        try:
            with open(kmsg) as f:
                kmsg_lines = f.read().splitlines()
        except FileNotFoundError:
            kmsg_lines = []
        log("ran %r in the image: exit %d in %.2fs" % (command, status, elapsed))
        for line in kmsg_lines:
            log("  kmsg: " + line)
        if stdout:
            log("  stdout: " + stdout.rstrip().replace("\n", "\n  stdout: "))
        if stderr:
            log("  stderr: " + stderr.rstrip().replace("\n", "\n  stderr: "))
        devpts = devpts_mount(read("mountinfo"), root)
        if record is not None:
            try:
                record = json.loads(record)
            except ValueError as e:
                raise Failure("the record is not JSON: %s\n%s" % (e, record))
        return status, stdout, stderr, record, kmsg_lines, devpts, elapsed


def unescape(s):
    for esc, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        s = s.replace(esc, ch)
    return s


def devpts_mount(mountinfo, root):
    """The devpts mounted in the image (under root), from the host's mountinfo."""
    for line in (mountinfo or "").splitlines():
        left, _, right = line.partition(" - ")
        f = left.split()
        if right.split()[0] == "devpts" and unescape(f[4]).startswith(root.rstrip("/") + "/"):
            return {"mount_id": int(f[0]), "device": f[2], "mountpoint": unescape(f[4])[len(root.rstrip("/")):]}
    raise Failure("no devpts under %s in the namespace's mountinfo" % root)


def image_listing(argv):
    """Paths in an image, as lsinitrd / lsinitramfs list them (no leading slash)."""
    r = run(argv)
    paths = set()
    for line in r.stdout.splitlines():
        fields = line.split()
        if not fields:
            continue
        if "->" in fields:
            fields = fields[: fields.index("->")]
        path = fields[-1]
        paths.add(path[2:] if path.startswith("./") else path.lstrip("/"))
    return r.stdout, paths


def check_contents(ctx, paths, hook):
    check(ctx.binary in paths, "the image lacks the binary %s" % ctx.binary)
    check(hook in paths, "the image lacks the hook %s" % hook)
    names = {os.path.basename(p) for p in paths}
    missing = [lib for lib in ctx.libraries() if lib not in names]
    check(not missing, "the image lacks libraries of ptsguard: %s" % ", ".join(missing))
    log("the image holds %s, %s and the libraries %s" % (ctx.binary, hook, ", ".join(sorted(ctx.libraries()))))


def check_record(ctx, result, phase, newroot, dev_move, after_mountpoint):
    """The record of a hook run against FSTAB_BROKEN: the instance, the fstab finding, the
    prediction, the snapshot."""
    status, _, _, record, kmsg, devpts, elapsed = result
    check_eq(status, 0, "exit status of the hook")
    check(record is not None, "the hook wrote no /%s" % RECORD)
    check(elapsed < 20, "the hook took %.1fs" % elapsed)
    check_eq(record.get("schema"), "ptsguard.initramfs/1", "schema")
    check(isinstance(record.get("generated_at"), str) and record["generated_at"].endswith("Z"),
          "generated_at: %r" % record.get("generated_at"))
    check_eq(record.get("phase"), phase, "phase")
    check_eq(record.get("newroot"), newroot, "newroot")
    check_eq(record.get("dev_moved"), True, "dev_moved")
    check_eq(record.get("dev_move"), dev_move, "dev_move")

    instances = [i for i in record.get("instances", []) if i.get("device") == devpts["device"]]
    check(len(instances) == 1, "no instance %s in %r" % (devpts["device"], record.get("instances")))
    inst = instances[0]
    check("gid=5" in inst["options"].split(",") and "mode=620" in inst["options"].split(","),
          "options of the instance: %r" % inst["options"])
    check_eq(inst["mounts"], [{"mount_id": devpts["mount_id"], "mountpoint": devpts["mountpoint"],
                               "after_switch_root": after_mountpoint, "covered": False}], "mounts of the instance")

    check_eq(record.get("fstab"), {"path": newroot + "/etc/fstab", "present": True, "error": None}, "fstab")
    check_eq(record.get("fstab_devpts"), [{"line": FSTAB_BROKEN_LINE, "mountpoint": "/dev/pts",
                                          "options": "defaults", "noauto": False}], "fstab_devpts")
    pred = record.get("prediction", {})
    check_eq({k: pred.get(k) for k in ("double_mount", "device", "mount_id", "mountpoint", "fstab_line",
                                        "options_differ")},
             {"double_mount": True, "device": devpts["device"], "mount_id": devpts["mount_id"],
              "mountpoint": "/dev/pts", "fstab_line": FSTAB_BROKEN_LINE, "options_differ": True}, "prediction")
    check("CentOS 6" in pred.get("reason", ""), "reason of the prediction: %r" % pred.get("reason"))
    # The new root holds no init: what it does is not known, the worst case is foreseen.
    check_eq(record.get("init", {}).get("kind"), "unknown", "init of the new root")
    check_eq({k: pred.get(k) for k in ("effect", "options_after", "healthy_after")},
             {"effect": "double-mount", "options_after": "mode=600", "healthy_after": False}, "effect")

    found = [f for f in record.get("findings", []) if f.get("id") == "fstab-devpts-options"]
    check(len(found) == 1, "no fstab-devpts-options finding in %r" % [f.get("id") for f in record.get("findings", [])])
    check_eq({k: found[0]["evidence"].get(k) for k in ("line", "mountpoint", "options")},
             {"line": FSTAB_BROKEN_LINE, "mountpoint": "/dev/pts", "options": "defaults"}, "evidence")
    check(record.get("summary", {}).get("warning", 0) >= 1, "summary: %r" % record.get("summary"))

    snap = record.get("snapshot", {})
    check_eq(snap.get("schema"), "ptsguard.snapshot/1", "schema of the embedded snapshot")
    testlib.validate_snapshot(snap, "the snapshot embedded in the initramfs record", Failure)
    check_eq(snap.get("fstab"), FSTAB_BROKEN, "the snapshot carries the new root's fstab")
    # The snapshot audits elsewhere to the same finding: what the booted system can re-check.
    r = run([ctx.args.ptsguard, "audit", "--json", "--snapshot", "-"], input=json.dumps(snap), ok=False)
    check(r.returncode in (0, 1, 2), "audit of the embedded snapshot failed: %s" % r.stderr)
    report = testlib.validate_report(json.loads(r.stdout), "audit of the embedded snapshot", Failure)
    ids = [f["id"] for f in report["findings"]]
    check("fstab-devpts-options" in ids, "audit of the embedded snapshot: %r" % ids)

    check(all(line.startswith("<") for line in kmsg), "kernel log lines without a level: %r" % kmsg)
    check(not any(line.startswith("<3>") for line in kmsg), "errors in the kernel log: %r" % kmsg)
    check(any(line.startswith("<4>ptsguard: prediction: ") for line in kmsg), "no prediction in the kernel log")
    check(any(line.startswith("<4>ptsguard: fstab-devpts-options: ") for line in kmsg),
          "no fstab-devpts-options in the kernel log")
    log("record ok: instance %s (mount %d) lands on %s, fstab line %d, double mount predicted"
        % (devpts["device"], devpts["mount_id"], after_mountpoint, FSTAB_BROKEN_LINE))


def check_failures(ctx, root, newroot, command, stdout):
    """However the binary fails, the hook exits 0 (or comes back to the shell sourcing it: stdout
    is what that shell prints after it) and says why in the kernel log."""
    binary = os.path.join(root, ctx.binary)

    def run_hook(what, **kw):
        status, out, err, record, kmsg, _, _ = ctx.run_in_image(root, newroot, command, **kw)
        check_eq(status, 0, "exit status " + what)
        check_eq(out, stdout, "stdout " + what)
        return err, record, kmsg

    _, record, kmsg = run_hook("with /run read-only", run_readonly=True)
    check(record is None, "a record was written to a read-only /run")
    check(any(line.startswith("<3>ptsguard: initramfs-record failed (exit 3)") for line in kmsg),
          "no failure line in the kernel log: %r" % kmsg)
    check(any(line.startswith("<3>ptsguard: ") and "Read-only file system" in line for line in kmsg),
          "the kernel log does not say why: %r" % kmsg)

    saved = binary + ".saved"
    os.rename(binary, saved)
    shutil.copy2(shutil.which("false"), binary)
    _, _, kmsg = run_hook("with the binary replaced by false")
    check_eq(kmsg, ["<3>ptsguard: initramfs-record failed (exit 1): no initramfs record"], "kernel log")

    err, _, kmsg = run_hook("with a failing binary and no kernel log", env={"PTSGUARD_KMSG": "/nonexistent/kmsg"})
    check_eq(err, "", "stderr with a failing binary and no kernel log")

    os.unlink(binary)
    _, _, kmsg = run_hook("with the binary missing")
    check_eq(kmsg, ["<3>ptsguard: /%s is missing: no initramfs record" % ctx.binary], "kernel log")
    os.rename(saved, binary)


# ---------------------------------------------------------------------------
# dracut

DRACUT_HOOK = "usr/lib/dracut/hooks/pre-pivot/90-ptsguard-pre-pivot.sh"
# As dracut's pre-pivot service does it: dracut-lib's source_hook sources the hooks in dracut's
# own shell. The hook must come back to it.
DRACUT_SOURCE = 'export NEWROOT=/sysroot; . /lib/dracut-lib.sh; source_hook pre-pivot; echo "hooks done"'
# The hook alone, sourced by a shell with errexit on: nothing failing in it may end that shell.
DRACUT_SOURCE_ERREXIT = 'set -e; export NEWROOT=/sysroot; . /%s; echo "hook done"' % DRACUT_HOOK


@case("dracut-image")
def dracut_image(ctx):
    image = ctx.build_dracut()
    text, paths = image_listing(["lsinitrd", image])
    check_contents(ctx, paths, DRACUT_HOOK)
    modules = text.split("dracut modules:", 1)[-1].split("=====", 1)[0].split()
    check("ptsguard" in modules, "lsinitrd does not list the ptsguard module: %r" % modules)


@case("dracut-hook")
def dracut_hook(ctx):
    root = ctx.unpack_dracut(ctx.build_dracut())
    result = ctx.run_in_image(root, "/sysroot", DRACUT_SOURCE)
    check_eq(result[1], "hooks done\n", "stdout of the shell that sourced the hooks")
    check_record(ctx, result, "pre-pivot", "/sysroot", "pending", "/dev/pts")


@case("dracut-hook-failure")
def dracut_hook_failure(ctx):
    root = ctx.unpack_dracut(ctx.build_dracut())
    check_failures(ctx, root, "/sysroot", DRACUT_SOURCE_ERREXIT, "hook done\n")


# ---------------------------------------------------------------------------
# initramfs-tools

ITOOLS_SCRIPT = "scripts/init-bottom/ptsguard"
# As init does it: run_scripts runs each script of the ORDER file mkinitramfs wrote (udev's
# too: without a udevd here it stops before moving /dev).
ITOOLS_RUN = "export rootmnt=/root; . /scripts/functions; run_scripts /scripts/init-bottom; echo done"
ITOOLS_DIRECT = "rootmnt=/root /" + ITOOLS_SCRIPT


@case("initramfs-tools-image")
def initramfs_tools_image(ctx):
    image = ctx.build_initramfs_tools()
    _, paths = image_listing(["lsinitramfs", image])
    check_contents(ctx, paths, ITOOLS_SCRIPT)
    root = ctx.unpack_initramfs_tools(image)
    with open(os.path.join(root, "scripts", "init-bottom", "ORDER")) as f:
        order = f.read()
    check("/%s \"$@\"" % ITOOLS_SCRIPT in order.splitlines(), "init-bottom/ORDER does not run ptsguard:\n" + order)
    log("init-bottom order: " + " ".join(l.split()[0] for l in order.splitlines() if l.startswith("/scripts/")))
    # The prereqs protocol, answered in the image's own shell.
    r = run(["chroot", root, "/bin/sh", "/" + ITOOLS_SCRIPT, "prereqs"])
    check_eq(r.stdout.strip(), "", "prereqs of the init-bottom script")


@case("initramfs-tools-hook")
def initramfs_tools_hook(ctx):
    root = ctx.unpack_initramfs_tools(ctx.build_initramfs_tools())
    result = ctx.run_in_image(root, "/root", ITOOLS_RUN)
    check(result[1].endswith("done\n"), "init-bottom did not come back: %r" % result[1])
    check_record(ctx, result, "init-bottom", "/root", "pending", "/dev/pts")


@case("initramfs-tools-dev-moved")
def initramfs_tools_dev_moved(ctx):
    # udev's init-bottom script ran first and moved /dev into the root already.
    root = ctx.unpack_initramfs_tools(ctx.build_initramfs_tools())
    result = ctx.run_in_image(root, "/root", ITOOLS_DIRECT, move_dev=True)
    check_eq(result[5]["mountpoint"], "/root/dev/pts", "where the devpts is after the move")
    check_record(ctx, result, "init-bottom", "/root", "done", "/dev/pts")


def check_systemd_record(result, fstab_options, healthy):
    """The record and the kernel log of a hook run against a Debian 12 root (systemd 252) whose
    fstab has devpts on line 3 with fstab_options: systemd-remount-fs will remount the carried
    instance with them, no second instance."""
    status, _, _, record, kmsg, devpts, _ = result
    check_eq(status, 0, "exit status of the hook")
    check(record is not None, "the hook wrote no /%s" % RECORD)
    check_eq(record.get("init"), {"kind": "systemd", "path": "/usr/lib/systemd/systemd", "systemd_version": 252,
                                  "remount_fs": True, "remount_fs_off": None,
                                  "rc_devpts_remount": None}, "init of the new root")
    pred = record["prediction"]
    after = "gid=5,mode=620" if healthy else "mode=600"
    check_eq({k: pred.get(k) for k in ("double_mount", "effect", "device", "mountpoint", "fstab_line",
                                        "options_after", "healthy_after")},
             {"double_mount": False, "effect": "remount", "device": devpts["device"], "mountpoint": "/dev/pts",
              "fstab_line": FSTAB_BROKEN_LINE, "options_after": after, "healthy_after": healthy}, "prediction")
    check("systemd-remount-fs" in pred["reason"] and "CentOS 6" not in pred["reason"],
          "reason of the prediction: %r" % pred["reason"])
    check_eq(record["fstab_devpts"][0]["options"], fstab_options, "the fstab line")
    check(all(line.startswith("<") for line in kmsg), "kernel log lines without a level: %r" % kmsg)
    prediction = [line for line in kmsg if line[3:].startswith("ptsguard: prediction: ")]
    check_eq(len(prediction), 1, "prediction lines in the kernel log: %r" % kmsg)
    if healthy:
        # A prediction that cannot break anything is a note: nothing at warning or above.
        check(prediction[0].startswith("<6>"), "the prediction is not a note: %r" % prediction[0])
        check(not any(line[:3] in ("<0>", "<1>", "<2>", "<3>", "<4>") for line in kmsg),
              "a healthy systemd boot logs at warning or above: %r" % kmsg)
    else:
        check(prediction[0].startswith("<4>") and "no gid=" in prediction[0],
              "the loss is not a warning: %r" % prediction[0])
        check(any(line.startswith("<4>ptsguard: fstab-devpts-options: ") for line in kmsg),
              "no fstab-devpts-options in the kernel log: %r" % kmsg)
    log("record ok: systemd 252, remount-fs applies fstab line %d (%s): %s"
        % (FSTAB_BROKEN_LINE, fstab_options, prediction[0]))


def systemd_hook_runs(ctx, root, newroot, command):
    """One image, two Debian 12 roots: fstab "defaults" (a loss that will come true, a warning)
    and the initramfs's own options (a note only)."""
    for fstab, options, healthy in ((FSTAB_BROKEN, "defaults", False), (FSTAB_HEALTHY, "gid=5,mode=620", True)):
        result = ctx.run_in_image(root, newroot, command, fstab=fstab, root_kind="debian12-systemd")
        check_systemd_record(result, options, healthy)


@case("dracut-hook-systemd")
def dracut_hook_systemd(ctx):
    systemd_hook_runs(ctx, ctx.unpack_dracut(ctx.build_dracut()), "/sysroot", DRACUT_SOURCE)


@case("initramfs-tools-hook-systemd")
def initramfs_tools_hook_systemd(ctx):
    systemd_hook_runs(ctx, ctx.unpack_initramfs_tools(ctx.build_initramfs_tools()), "/root", ITOOLS_RUN)


@case("initramfs-tools-hook-failure")
def initramfs_tools_hook_failure(ctx):
    root = ctx.unpack_initramfs_tools(ctx.build_initramfs_tools())
    check_failures(ctx, root, "/root", ITOOLS_DIRECT, "")


# ---------------------------------------------------------------------------
# `ptsguard initramfs-record` itself, in a private mount namespace without an image

RECORD_SETUP = FAKE_ROOT + r"""
set -eu
W=$1 FSTAB=$2 KIND=$3
mount -t tmpfs -o mode=0755 dev /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/ptmx c 5 2
mknod -m 666 /dev/tty c 5 0
mkdir /dev/pts
mount -t devpts -o gid=5,mode=620,noexec,nosuid devpts /dev/pts
mkdir -p "$W/newroot"
mount -t tmpfs newroot "$W/newroot"
mkdir -p "$W/newroot/etc/fstab.d" "$W/newroot/dev"
case "$FSTAB" in
none) ;;
symlink:*)
	# An absolute symlink means the new root's file, not the initramfs's.
	printf '%s\n' "${FSTAB#symlink:}" > "$W/newroot/etc/fstab.d/real"
	ln -s /etc/fstab.d/real "$W/newroot/etc/fstab" ;;
*) printf '%s\n' "$FSTAB" > "$W/newroot/etc/fstab" ;;
esac
fake_root "$KIND" "$W/newroot"
shift 3
"$@" --newroot "$W/newroot" --output "$W/record.json"
"""


def record_run(ctx, fstab, root_kind="none", cmdline=""):
    with open(ctx.path("cmdline"), "w") as f:
        f.write(cmdline + "\n")
    r = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", RECORD_SETUP, "setup", ctx.work, fstab,
             root_kind, ctx.args.ptsguard, "initramfs-record", "--phase", "test", "--cmdline", ctx.path("cmdline")],
            ok=False)
    check_eq(r.returncode, 0, "exit status of initramfs-record (stderr: %s)" % r.stderr)
    with open(ctx.path("record.json")) as f:
        record = json.load(f)
    check_eq(record["schema"], "ptsguard.initramfs/1", "schema")
    testlib.validate_snapshot(record.get("snapshot"), "the snapshot in the record", Failure)
    check_eq(record["dev_move"], "pending", "dev_move")
    # The test's devpts moves with the test's /dev; the host's, covered by that /dev, stay.
    moving = [m for i in record["instances"] for m in i["mounts"] if m["after_switch_root"]]
    check(len(moving) == 1 and moving[0]["after_switch_root"] == "/dev/pts" and not moving[0]["covered"],
          "instances: %r" % record["instances"])
    return r, record


def finding_ids(record):
    return [f["id"] for f in record["findings"]]


@case("record-no-fstab")
def record_no_fstab(ctx):
    _, record = record_run(ctx, "none")
    check_eq(record["fstab"]["present"], False, "fstab present")
    check_eq(record["fstab"]["error"], None, "fstab error (a missing fstab is none)")
    check_eq(record["fstab_devpts"], [], "fstab_devpts")
    check_eq(record["prediction"]["double_mount"], False, "double_mount")
    check("mounts no devpts" in record["prediction"]["reason"], "reason: %r" % record["prediction"]["reason"])
    check("fstab-devpts-options" not in finding_ids(record), "findings: %r" % finding_ids(record))


@case("record-fstab-healthy")
def record_fstab_healthy(ctx):
    r, record = record_run(ctx, "devpts /dev/pts devpts gid=5,mode=620 0 0")
    check("fstab-devpts-options" not in finding_ids(record), "findings: %r" % finding_ids(record))
    # Stacked or skipped, the options are the same: the prediction still names the recipe.
    check_eq(record["prediction"]["double_mount"], True, "double_mount")
    check_eq(record["prediction"]["options_differ"], False, "options_differ")
    # No init in the new root: a second instance may come, a warning.
    check(r.stdout.startswith("<4>prediction: "), "the note for the kernel log: %r" % r.stdout)


@case("record-fstab-noauto")
def record_fstab_noauto(ctx):
    _, record = record_run(ctx, "devpts /dev/pts devpts noauto,gid=5,mode=620 0 0")
    check_eq(record["fstab_devpts"], [{"line": 1, "mountpoint": "/dev/pts", "options": "noauto,gid=5,mode=620",
                                      "noauto": True}], "fstab_devpts")
    check_eq(record["prediction"]["double_mount"], False, "double_mount")


@case("record-fstab-symlink")
def record_fstab_symlink(ctx):
    _, record = record_run(ctx, "symlink:devpts /dev/pts/ devpts mode=600 0 0")
    check_eq(record["fstab"]["present"], True, "fstab present (read through the new root's symlink)")
    check_eq(record["fstab_devpts"][0]["mountpoint"], "/dev/pts", "mountpoint, trailing slash dropped")
    check("fstab-devpts-options" in finding_ids(record), "findings: %r" % finding_ids(record))
    check_eq(record["prediction"]["double_mount"], True, "double_mount")


@case("record-newroot-missing")
def record_newroot_missing(ctx):
    # A wrong $NEWROOT still gives a record; the error is in it and on stderr.
    output = ctx.path("record.json")
    r = run([ctx.args.ptsguard, "initramfs-record", "--newroot", "/nonexistent", "--output", output])
    check("new root /nonexistent: No such file or directory" in r.stderr, "stderr: %r" % r.stderr)
    with open(output) as f:
        record = json.load(f)
    check_eq(record["fstab"], {"path": "/nonexistent/etc/fstab", "present": False,
                               "error": "No such file or directory"}, "fstab")
    check_eq(record["dev_move"], "none", "dev_move")
    testlib.validate_snapshot(record.get("snapshot"), "the snapshot in the record", Failure)


@case("record-usage")
def record_usage(ctx):
    for argv, message in (
        ([], "--newroot needs the absolute path"),
        (["--newroot", "relative"], "--newroot needs the absolute path"),
        (["--newroot", "/", "--phase", ""], "--phase needs a name"),
        (["--bogus"], "unknown option '--bogus'"),
        (["--newroot"], "option '--newroot' needs a value"),
        (["--newroot", "/", "extra"], "unexpected argument 'extra'"),
    ):
        r = run([ctx.args.ptsguard, "initramfs-record"] + argv, ok=False)
        check_eq(r.returncode, 3, "exit status of initramfs-record %s" % " ".join(argv))
        check(message in r.stderr, "initramfs-record %s: stderr %r lacks %r" % (" ".join(argv), r.stderr, message))
    r = run([ctx.args.ptsguard, "initramfs-record", "--help"])
    check("--newroot DIR" in r.stdout, "help: %r" % r.stdout)


def check_kept(r, record, why):
    pred = record["prediction"]
    check_eq({k: pred[k] for k in ("double_mount", "effect", "options_after", "healthy_after")},
             {"double_mount": False, "effect": "kept", "options_after": "gid=5,mode=620", "healthy_after": True},
             "prediction")
    check(why in pred["reason"], "reason %r lacks %r" % (pred["reason"], why))
    check(r.stdout.startswith("<6>prediction: "), "the prediction is not a note: %r" % r.stdout)
    # The fstab line is still wrong: a remount or the next mount -a applies it.
    check("<4>fstab-devpts-options: " in r.stdout, "stdout: %r" % r.stdout)


@case("record-systemd-masked")
def record_systemd_masked(ctx):
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "debian12-systemd-masked")
    check_eq(record["init"]["remount_fs"], False, "remount_fs")
    check_kept(r, record, "masked in /etc/systemd/system")


@case("record-systemd-mask-cmdline")
def record_systemd_mask_cmdline(ctx):
    # The words after "--" are init's arguments, not parameters: that init= does not count.
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "debian12-systemd",
                           "root=/dev/vda systemd.mask=systemd-remount-fs.service -- init=/bin/sh")
    check_eq(record["init"]["kind"], "systemd", "init")
    check_kept(r, record, "systemd.mask=")
    # fstab=no: nothing pulls the unit in (Debian 12 has no static want).
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "debian12-systemd", "ro fstab=no")
    check_kept(r, record, "fstab=no")
    # init= elsewhere: not systemd.
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "debian12-systemd", "init=/bin/sh")
    check_eq(record["init"]["kind"], "unknown", "init with init=/bin/sh, which is not there")


@case("record-sysvinit")
def record_sysvinit(ctx):
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "sysvinit")
    check_eq(record["init"], {"kind": "sysvinit", "path": "/sbin/init", "systemd_version": None,
                              "remount_fs": None, "remount_fs_off": None, "rc_devpts_remount": None}, "init")
    check_kept(r, record, "mount -a skips")


@case("record-sysvinit-debian")
def record_sysvinit_debian(ctx):
    # checkroot.sh runs "mountdevsubfs.sh reload": a remount with /etc/default/devpts's
    # gid=5,mode=600, then the line's "defaults", which changes nothing of it.
    r, record = record_run(ctx, "devpts /dev/pts devpts defaults 0 0", "debian-sysvinit")
    check_eq(record["init"]["rc_devpts_remount"], "gid=5,mode=600", "init.rc_devpts_remount")
    pred = record["prediction"]
    check_eq({k: pred[k] for k in ("double_mount", "effect", "options_after", "healthy_after", "fstab_line")},
             {"double_mount": False, "effect": "remount", "options_after": "gid=5,mode=600", "healthy_after": True,
              "fstab_line": 1}, "prediction")
    check("mountdevsubfs.sh reload" in pred["reason"], "reason: %r" % pred["reason"])
    check(r.stdout.startswith("<6>prediction: "), "the prediction is not a note: %r" % r.stdout)
    # The line's options win over the script's: a healthy line gives mode 620.
    _, record = record_run(ctx, "devpts /dev/pts devpts gid=5,mode=620 0 0", "debian-sysvinit")
    check_eq(record["prediction"]["options_after"], "gid=5,mode=620", "options_after with a healthy line")
    # No line: the script's options alone.
    _, record = record_run(ctx, "none", "debian-sysvinit")
    check_eq((record["prediction"]["effect"], record["prediction"]["options_after"], record["prediction"]["fstab_line"]),
             ("remount", "gid=5,mode=600", None), "effect, options_after, fstab_line without a line")


NO_ROOT_NEEDED = {"record-usage", "record-newroot-missing"}


def main():
    required = ("--ptsguard", "--bindir", "--dracut-module", "--initramfs-tools")
    options = [(flag, {}) for flag in required] + [("--workdir", dict(default="."))]
    args, (name,) = testlib.case_args(CASES, __file__, __doc__, options, required, single=True)
    if name not in NO_ROOT_NEEDED and os.geteuid() != 0:
        print("SKIP: %s needs root (mount namespaces, chroot, image generators)" % name)
        return EXIT_SKIP
    os.makedirs(args.workdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="initramfs-%s-" % name, dir=os.path.abspath(args.workdir))
    try:
        CASES[name](Context(args, work))
    except Skip as e:
        print("SKIP: %s: %s" % (name, e))
        return EXIT_SKIP
    except Failure as e:
        print("FAIL: %s: %s" % (name, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: %s" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
