# SPDX-License-Identifier: GPL-2.0-or-later
"""The vm suite: Debian's own kernel, a real initramfs and systemd, sysvinit or OpenRC, booted
under qemu.

    vm.py --source-root DIR --build-root DIR --pty-probe PATH GENERATOR SCENARIO
    vm.py --list                          (the scenarios, for meson)

What is booted, and where it is cached (below the boot test's cache directory,
`PTSGUARD_BOOT_CACHE` or BUILD/boot-cache, each piece rebuilt only when its
inputs change, under the cache's lock):

1. the boot test's debootstrapped bookworm tree (tests/boot/boot.py) and the
   project's .deb built by dpkg-buildpackage (tests/package/package.py);
2. vm-KEY/tree-INIT: the tree with the .deb installed by `dpkg -i` (the package's own
   maintainer scripts enable ptsguard.service and /etc/init.d/ptsguard, and compile
   the journal catalog), and this suite's result collector; KEY hashes the tree's tar,
   the .deb, the kernel and this file's guest files. A scenario's init (Init below) is
   systemd, or sysvinit or OpenRC from Debian 12's packages: their tree is made from a
   layer of the boot test's tree with those packages installed by apt-get
   (vm-layer-INIT-KEY.tar), and on OpenRC contrib/openrc's script replaces the
   package's LSB one;
3. vm-KEY/SCENARIO-HASH.raw: one ext4 image per scenario, made with
   `mkfs.ext4 -d` from a hard-linked copy of the tree plus the scenario's files;
4. vm-KEY/GENERATOR.img: one initramfs per generator, built on this machine by
   mkinitramfs or dracut for Debian's kernel (/boot/vmlinuz-V, /lib/modules/V)
   with the hook, script or module and the binary the .deb installed; dracut's
   without its systemd modules for a root without systemd.

Each boot runs `qemu-system-x86_64` (KVM when there is one, TCG otherwise) with
the image as `-drive ...,snapshot=on`, so every boot starts from the same
image. The console (ttyS0) goes to a log file; a unit of the image,
vmtest-results.service (without systemd: an rc script started last), waits for
the daemon to settle, writes what the booted
system did to the second serial port (ttyS1, a file here) and powers off: the
guest's mountinfo and /dev/ptmx, `ptsguard audit --json`, the daemon's report,
the initramfs record, a pty allocated by `nobody` (pty-probe), the journal
entries of the service as JSON and with `journalctl -x`, the kernel log lines
of the hook, unit timestamps (without systemd: the pid file's process, the
syslog file and dmesg instead). The assertions are made here, on that.

Beside its own check, a scenario may list assertions on the boot model
(`model_checks`: systemd-remount-fs in the prediction, origins on boot-born
findings, repair restoring the recorded mode); they count like the others.

Exit 0 pass, 1 fail, 77 skip (not root, qemu or a generator missing; never
with CI=true, where a missing tool is a failure). Standard library only.
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

HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("lib", "boot", "package"):
    sys.path.insert(0, os.path.join(HERE, "..", sub))

import boot  # noqa: E402
import package  # noqa: E402
import testlib  # noqa: E402
from boot import Failure, Skip, log, run  # noqa: E402

EXIT_SKIP = 77
VM_FORMAT = 1  # bump when the way the tree, the images or the initramfs are built changes
BOOT_TIMEOUT = 600  # one boot, power-off included, on a loaded 2-CPU machine under TCG
TTY_GID = 5
NOBODY = 65534
GENERATORS = ("initramfs-tools", "dracut")
PHASE = {"initramfs-tools": "init-bottom", "dracut": "pre-pivot"}
# The kernel modules the initramfs needs to find and mount the root: virtio-pci disk, ext4.
DRIVERS = ("virtio_pci", "virtio_blk", "ext4")
DRACUT_MODULES = "systemd systemd-initrd dracut-systemd base rootfs-block kernel-modules udev-rules ptsguard"
# For a root without systemd: dracut's own shell init (base) does what systemd does in the
# initramfs above, the hook runs as its pre-pivot hook all the same.
DRACUT_MODULES_NO_SYSTEMD = "base rootfs-block kernel-modules udev-rules ptsguard"
LIBEXEC = "/usr/local/libexec/vmtest"
FSTAB_ROOT = "/dev/vda / ext4 rw,errors=remount-ro 0 1\n"
FSTAB_DEVPTS_DEFAULTS = "devpts /dev/pts devpts defaults 0 0\n"

# --------------------------------------------------------------------------
# What goes into the guest

# What every guest's collector does first: wait until the daemon wrote no report for 3 s, then
# the sections every boot writes (the mount table, /dev/ptmx, an audit as JSON and as text).
RESULTS_SETTLED = r"""# Settled: the daemon wrote no report for 3 s (at most 60 s of waiting).
i=0
while [ "$i" -lt 120 ]; do
	now=$(date +%s)
	then=$(stat -c %Y /run/ptsguard/report.json 2> /dev/null || echo 0)
	[ $((now - then)) -ge 3 ] && break
	sleep 0.5
	i=$((i + 1))
done
section() { echo "==== $1"; }
{
	section cmdline; cat /proc/cmdline
	section mountinfo; cat /proc/self/mountinfo
	section ptmx; stat -c '%F|%a|%u|%g|%t:%T' /dev/ptmx; readlink /dev/ptmx
	section audit; ptsguard audit --json; echo "exit=$?" > /run/vmtest-audit-exit
	section audit-exit; cat /run/vmtest-audit-exit
	section audit-text; ptsguard audit --no-color
"""

RESULTS_SCRIPT = r"""#!/bin/sh
# vmtest-results: wait for ptsguard to settle, write what this boot did to ttyS1, power off.
out=/dev/ttyS1
# ttyS1 is a terminal: no colors, no pager.
export SYSTEMD_COLORS=0 SYSTEMD_PAGER= PAGER=cat
stty -F "$out" raw -echo 115200 2> /dev/null
""" + RESULTS_SETTLED + r"""	# A service systemd itself sandboxes (a mount namespace of its own with the host's root,
	# a private /dev with the host's /dev/pts bound in): what --all-namespaces meets on any
	# host. Audited once its process is the command, past systemd's setup.
	systemd-run --quiet --unit=vmtest-sandbox -p PrivateDevices=yes -p PrivateTmp=yes \
		-p ProtectSystem=strict sleep infinity
	i=0
	while [ "$i" -lt 100 ]; do
		spid=$(systemctl show -p MainPID --value vmtest-sandbox.service)
		[ "$spid" != 0 ] && [ "$(cat "/proc/$spid/comm" 2> /dev/null)" = sleep ] && break
		sleep 0.1
		i=$((i + 1))
	done
	section all-namespaces; ptsguard audit --all-namespaces --json; echo "exit=$?" > /run/vmtest-allns-exit
	section all-namespaces-exit; cat /run/vmtest-allns-exit
	section all-namespaces-text; ptsguard audit --all-namespaces --no-color
	section daemon-report; cat /run/ptsguard/report.json
	section record; cat /run/ptsguard/initramfs.json
	section service
	pid=$(systemctl show -p MainPID --value ptsguard.service)
	getent passwd ptsguard
	grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|CapAmb):' "/proc/$pid/status"
	echo "mntns=$(readlink "/proc/$pid/ns/mnt") init=$(readlink /proc/1/ns/mnt)"
	stat -c 'owner %U:%G %a %n' /run/ptsguard /run/ptsguard/*
	section probe; setpriv --reuid=nobody --regid=nogroup --clear-groups @LIBEXEC@/pty-probe
	section journal; journalctl -b -o json --no-pager _SYSTEMD_UNIT=ptsguard.service
	section journal-x; journalctl -b -x --no-pager _SYSTEMD_UNIT=ptsguard.service
	section kernel; journalctl -b -o json --no-pager _TRANSPORT=kernel SYSLOG_IDENTIFIER=ptsguard
	section units
	for u in ptsguard.service systemd-remount-fs.service local-fs.target sysinit.target \
		basic.target systemd-logind.service getty.target multi-user.target; do
		systemctl show -p Id,ActiveState,SubState,Result,NRestarts,StatusText \
			-p InactiveExitTimestampMonotonic,ActiveEnterTimestampMonotonic "$u"
		echo
	done
	section manager
	systemctl show -p KernelTimestampMonotonic,InitRDTimestampMonotonic,UserspaceTimestampMonotonic
	section checks; ptsguard checks --format json
	for f in /run/vmtest/*; do
		[ -f "$f" ] && section "file ${f##*/}" && cat "$f"
	done
	if grep -q vmtest.bench /proc/cmdline; then
		# The same audit of the same snapshot here and on the host: the emulation's slowdown.
		ptsguard snapshot --output /run/vmtest-snapshot.json
		section bench-snapshot; cat /run/vmtest-snapshot.json
		section bench
		start=$(date +%s%N)
		for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
			ptsguard audit --json --snapshot /run/vmtest-snapshot.json > /dev/null
		done
		echo "audits=20 ns=$(($(date +%s%N) - start))"
		# What sysinit.target waited for besides ptsguard: did ptsguard hold it back?
		section bench-sysinit-after
		for u in $(systemctl show -p After --value sysinit.target); do
			systemctl show -p Id,ActiveEnterTimestampMonotonic "$u"
			echo
		done
	fi
	section end
} > "$out" 2>&1
# Drain the UART before the power goes.
sleep 1
systemctl poweroff --no-block
""".replace("@LIBEXEC@", LIBEXEC)

RESULTS_UNIT = """[Unit]
Description=vmtest: write what this boot did to ttyS1, then power off
After=multi-user.target ptsguard.service %(after)s
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=%(libexec)s/results
TimeoutStartSec=300
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""

# The collector of a guest without systemd (sysvinit, or OpenRC run by sysvinit's init): the
# sections every guest writes, then the daemon as its init script started it (the pid file), the
# syslog file the daemon's lines went to, and the hook's kernel log lines from dmesg.
RC_RESULTS_SCRIPT = r"""#!/bin/sh
# vmtest-results: wait for ptsguard's state file and for it to settle, write what this boot did
# to ttyS1, power off.
out=/dev/ttyS1
stty -F "$out" raw -echo 115200 2> /dev/null
# The state file: the daemon's first audit is done (at most 60 s).
i=0
while [ ! -e /run/ptsguard/report.json ] && [ "$i" -lt 120 ]; do
	sleep 0.5
	i=$((i + 1))
done
""" + RESULTS_SETTLED + r"""	section all-namespaces; ptsguard audit --all-namespaces --json; echo "exit=$?" > /run/vmtest-allns-exit
	section all-namespaces-exit; cat /run/vmtest-allns-exit
	section daemon-report; cat /run/ptsguard/report.json
	section record; cat /run/ptsguard/initramfs.json
	section service
	pid=$(cat /run/ptsguard.pid)
	echo "pidfile=$pid exe=$(readlink "/proc/$pid/exe")"
	getent passwd ptsguard
	grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|CapAmb|NoNewPrivs):' "/proc/$pid/status"
	echo "mntns=$(readlink "/proc/$pid/ns/mnt") init=$(readlink /proc/1/ns/mnt)"
	stat -c 'owner %U:%G %a %n' /run/ptsguard /run/ptsguard/* /run/ptsguard.pid
	section init
	echo "pid1=$(readlink /proc/1/exe)"
	head -n 1 /etc/init.d/ptsguard
	if [ -x /sbin/openrc ]; then
		rc-service ptsguard status; echo "status-exit=$?"
		rc-status default
	else
		/etc/init.d/ptsguard status; echo "status-exit=$?"
		ls /etc/rc2.d
	fi
	section probe; setpriv --reuid=nobody --regid=nogroup --clear-groups @LIBEXEC@/pty-probe
	section syslog; cat /var/log/daemon.log
	section kmsg; dmesg -r | grep 'ptsguard:'
	section checks; ptsguard checks --format json
	for f in /run/vmtest/*; do
		[ -f "$f" ] && section "file ${f##*/}" && cat "$f"
	done
	section end
} > "$out" 2>&1
# Drain the UART before the power goes. At once (-f): init's runlevel 0 runs every stop
# script, 3 s under sysv-rc but up to a minute under OpenRC on a loaded machine, and proves
# nothing the results have not said.
sleep 2
poweroff -f
""".replace("@LIBEXEC@", LIBEXEC)


def lsb_script(name, doc, start, default_start="2 3 4 5", required="$local_fs", should=""):
    """An /etc/init.d script with an LSB header: sysv-rc orders it by insserv, Debian's OpenRC
    by the same header (Required-Start and Should-Start become its use)."""
    return """#!/bin/sh
### BEGIN INIT INFO
# Provides:          %s
# Required-Start:    %s
# Required-Stop:
# Should-Start:      %s
# Default-Start:     %s
# Default-Stop:
# Short-Description: %s
### END INIT INFO
case "$1" in
start)
%s
	;;
esac
exit 0
""" % (name, required, should, default_start, doc, start)


# Started last ($all; and after ptsguard, which a native OpenRC script does not order as $all).
RC_RESULTS_INIT = lsb_script("vmtest-results", "vmtest: write what this boot did to ttyS1, then power off",
                             "\t%s/results" % LIBEXEC, required="$all", should="ptsguard")

# (CentOS 6 on sysvinit or OpenRC) an rc script of the early boot, after mountall, mounts
# fstab's devpts line once more on top of the instance the initramfs moved to /dev/pts, as
# CentOS 6's rc.sysinit did; the daemon starts later and finds it.
CENTOS6_INIT = lsb_script("vmtest-centos6", "vmtest: mount fstab's devpts line on /dev/pts again (rc.sysinit)",
                          "\tmount /dev/pts", default_start="S", required="mountall")

# (Slackware) late in the boot, the daemon running, an rc script mounts a second devpts on
# /dev/pts that no fstab line names, as Slackware 14.1's rc.S did; it waits until the daemon has
# seen it (its state file names the stack), so the collector that follows reads a settled state.
SLACKWARE_INIT = lsb_script("vmtest-slackware", "vmtest: mount a second devpts on /dev/pts late in the boot (rc.S)", r"""	i=0
	while [ ! -e /run/ptsguard/report.json ] && [ "$i" -lt 120 ]; do
		sleep 0.5
		i=$((i + 1))
	done
	mount -t devpts -o gid=5,mode=620 devpts /dev/pts
	i=0
	while ! grep -q devpts-overmount /run/ptsguard/report.json && [ "$i" -lt 60 ]; do
		sleep 0.5
		i=$((i + 1))
	done""", required="$local_fs ptsguard")

# (d): udev replaces /dev/ptmx when the ptmx device gets a change event while the marker exists,
# as a container manager handing its containers the host's /dev with a pts/ptmx link would.
PTMX_RULE = """# vmtest: replace /dev/ptmx by a pts/ptmx link from a RUN of a change event.
ACTION=="change", SUBSYSTEM=="tty", KERNEL=="ptmx", TEST=="/run/vmtest/replace-ptmx", \\
  RUN+="/bin/sh -c 'ln -s pts/ptmx /dev/.ptmx-vmtest && mv -T /dev/.ptmx-vmtest /dev/ptmx'"
"""

PTMX_UNIT = """[Unit]
Description=vmtest: replace /dev/ptmx through udev while ptsguard runs
DefaultDependencies=no
After=ptsguard.service systemd-udevd.service systemd-udev-trigger.service
Requires=systemd-udevd.service
Before=vmtest-results.service

[Service]
Type=oneshot
ExecStart=%(libexec)s/replace-ptmx

[Install]
WantedBy=multi-user.target
"""

PTMX_SCRIPT = r"""#!/bin/sh
# Record the udev events of ptmx while the change event that replaces /dev/ptmx goes through.
mkdir -p /run/vmtest
udevadm monitor --udev --property --subsystem-match=tty > /run/vmtest/udev-monitor.log 2>&1 &
mon=$!
sleep 2
touch /run/vmtest/replace-ptmx
udevadm trigger --action=change --settle /sys/class/tty/ptmx
sleep 2
rm -f /run/vmtest/replace-ptmx
kill "$mon"
ls -l /dev/ptmx > /run/vmtest/ptmx-after.log
"""

# (b): the CentOS 6 double mount: after switch-root, the fstab line is mounted once more on top
# of the instance the initramfs moved to /dev/pts (what rc.sysinit's mount did).
OVERMOUNT_UNIT = """[Unit]
Description=vmtest: mount fstab's devpts line a second time on /dev/pts
DefaultDependencies=no
After=systemd-remount-fs.service
Before=ptsguard.service sysinit.target

[Service]
Type=oneshot
ExecStart=/bin/mount /dev/pts

[Install]
WantedBy=sysinit.target
"""

# (f): the package removed and installed again in the running system, udevd running: the
# maintainer scripts must make udev drop and then apply 70-ptsguard.rules without a reboot, and
# start the service again. CURRENT_TAGS are the tags of the device's last event (TAGS keeps every
# tag ever set); udev leaves the property out when there are none.
REINSTALL_UNIT = """[Unit]
Description=vmtest: remove and install the ptsguard package again while udevd runs
After=ptsguard.service systemd-udevd.service systemd-udev-trigger.service
Requires=systemd-udevd.service
Before=vmtest-results.service

[Service]
Type=oneshot
ExecStart=%(libexec)s/reinstall
TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
"""

REINSTALL_SCRIPT = r"""#!/bin/sh
mkdir -p /run/vmtest
tags() {
	udevadm trigger --action=change --settle /sys/class/tty/ptmx
	echo "$1: $(udevadm info -q property /sys/class/tty/ptmx | sed -n 's/^CURRENT_TAGS=//p')"
}
export DEBIAN_FRONTEND=noninteractive
{
	tags installed-at-boot
	dpkg --remove ptsguard; echo "removed: $?"
	tags after-remove
	echo "service-after-remove: $(systemctl is-active ptsguard.service)"
	dpkg -i /root/ptsguard.deb; echo "installed: $?"
	tags after-install
	echo "service-after-install: $(systemctl is-active ptsguard.service)"
} > /run/vmtest/reinstall.log 2>&1
"""

SAFE_DROPIN = "[Repair]\nPolicy=safe\n"
# (d) The replacement and its udev event must land in one audit window: the event reaches
# listeners after the RUN program has replaced /dev/ptmx and exited, slowly under TCG.
COALESCE_DROPIN = "[Daemon]\nCoalesceMSec=1000\n"
DROPIN_DIR = "/etc/ptsguard/ptsguard.conf.d/"


class Scenario:
    def __init__(self, name, doc, fstab="", files=None, units=(), check=None, model_checks=(), deb=False, init=None):
        self.name = name
        self.init = init or SYSTEMD
        self.deb = deb  # the .deb at /root/ptsguard.deb in the image
        self.doc = doc
        self.fstab = FSTAB_ROOT + fstab
        self.files = dict(files or {})  # path -> (mode, text)
        self.units = list(units)  # (unit, target) to enable; rc scripts: (script, None)
        self.check = check
        self.model_checks = list(model_checks)  # (what, fn(c, r, gen)): the boot model

    def all_files(self):
        files = {"/etc/fstab": (0o644, self.fstab)}
        files.update(self.init.collector_files(self))
        files.update(self.files)
        return files

    def enabled(self):
        return self.init.enabled(self)

    def key(self):
        return hashlib.sha256(json.dumps([sorted(self.all_files().items()), self.enabled(), self.deb, self.init.name]).encode()).hexdigest()[:12]

    def fstab_devpts_lines(self):
        return [i + 1 for i, l in enumerate(self.fstab.splitlines()) if l.split()[1:2] == ["/dev/pts"]]


# --------------------------------------------------------------------------
# The results of one boot


class Results:
    def __init__(self, text, console):
        self.text = text
        self.console = console
        self.sections = {}
        name = None
        for line in text.splitlines():
            if line.startswith("==== "):
                name = line[5:].strip()
                self.sections[name] = []
            elif name is not None:
                self.sections[name].append(line)
        self.complete = "end" in self.sections
        self.init = SYSTEMD

    def raw(self, name):
        return "\n".join(self.sections.get(name, []))

    def json(self, name):
        try:
            return json.loads(self.raw(name))
        except ValueError:
            return None

    def json_lines(self, name):
        out = []
        for line in self.sections.get(name, []):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def units(self, section="units"):
        """The `systemctl show` blocks of a section, by unit Id."""
        out = {}
        cur = {}
        for line in self.sections.get(section, []) + [""]:
            if not line.strip():
                if cur.get("Id"):
                    out[cur["Id"]] = cur
                cur = {}
                continue
            k, _, v = line.partition("=")
            cur[k] = v
        return out

    def file(self, name):
        return self.raw("file " + name)


def parse_mountinfo(text):
    mounts = []
    for line in text.splitlines():
        if " - " not in line:
            continue
        pre, post = line.split(" - ", 1)
        f = pre.split()
        p = post.split()
        mounts.append({
            "mount_id": int(f[0]),
            "parent_id": int(f[1]),
            "device": f[2],
            "mountpoint": f[4].encode().decode("unicode_escape"),
            "fstype": p[0],
            "super": p[2].split(",") if len(p) > 2 else [],
        })
    return mounts


def devpts_options(sup):
    """gid, mode, ptmxmode of a devpts mount as the kernel shows them (absent: the default)."""
    opts = dict(o.split("=", 1) for o in sup if "=" in o)
    return {
        "gid": int(opts["gid"]) if "gid" in opts else None,
        "mode": "%04o" % int(opts.get("mode", "600"), 8),
        "ptmxmode": "%04o" % int(opts.get("ptmxmode", "000"), 8),
    }


# --------------------------------------------------------------------------
# Assertions every scenario makes


def finding_ids(report):
    return sorted(f["id"] for f in (report or {}).get("findings", []))


def serious(report):
    return sorted(f["id"] for f in (report or {}).get("findings", []) if f["severity"] in ("warning", "critical"))


def check_common(c, r, gen, sc):
    c.true(r.complete, "the guest wrote its results to ttyS1 to the end")
    sc.init.check_service(c, r)
    cmdline = r.raw("cmdline")
    c.true("root=/dev/vda" in cmdline, "booted Debian's kernel with root=/dev/vda: %s" % cmdline.strip())

    # The report against the guest's own mountinfo.
    report = r.json("audit")
    c.true(report is not None, "ptsguard audit --json printed a report")
    if report is None:
        return
    problems = testlib.report_problems(report)
    c.true(not problems, "the report matches its schema: %s" % problems)
    mounts = parse_mountinfo(r.raw("mountinfo"))
    devpts = [m for m in mounts if m["fstype"] == "devpts"]
    reported = {}
    for inst in report.get("instances", []):
        for m in inst["mounts"]:
            reported[m["mount_id"]] = (inst, m)
    c.eq(sorted(reported), sorted(m["mount_id"] for m in devpts), "the report's devpts mounts are the guest's mountinfo's")
    ids = {m["mount_id"] for m in mounts}
    for m in devpts:
        if m["mount_id"] not in reported:
            continue
        inst, rm = reported[m["mount_id"]]
        c.eq(rm["mountpoint"], m["mountpoint"], "mount %d: mountpoint" % m["mount_id"])
        covered = [x["mount_id"] for x in mounts if x["parent_id"] == m["mount_id"] and x["mountpoint"] == m["mountpoint"]]
        c.eq(rm["covered"], bool(covered), "mount %d: covered as in mountinfo (covered by %s)" % (m["mount_id"], covered))
        opts = devpts_options(m["super"])
        got = {k: inst["options"][k] for k in ("gid", "mode", "ptmxmode")}
        c.eq(got, opts, "mount %d: the report's options are mountinfo's %s" % (m["mount_id"], ",".join(m["super"])))
        c.eq(inst["device"], m["device"], "mount %d: device" % m["mount_id"])
    c.true(all(m["parent_id"] in ids or m["mount_id"] == min(ids) for m in devpts), "every devpts mount hangs in the tree")

    # /dev/ptmx as the guest sees it.
    ptmx = r.sections.get("ptmx", [])
    kind = (ptmx[0].split("|")[0] if ptmx else "")
    c.eq(report["ptmx"]["kind"], {"character special file": "char", "symbolic link": "symlink"}.get(kind, kind), "/dev/ptmx kind as stat(1) says")
    if kind == "symbolic link":
        c.eq(report["ptmx"]["target"], ptmx[1] if len(ptmx) > 1 else None, "/dev/ptmx target as readlink(1) says")

    # What nobody got, against the serving instance's options and the report.
    probe = r.json("probe")
    c.true(probe is not None, "pty-probe as nobody printed its line: %r" % r.raw("probe"))
    serving = [m for m in devpts if m["mount_id"] == report["ptmx"].get("serving_mount_id")]
    if probe and probe.get("ok") and serving:
        o = devpts_options(serving[0]["super"])
        want = {"gid": o["gid"] if o["gid"] is not None else NOBODY, "mode": o["mode"], "uid": NOBODY}
        c.eq({k: probe[k] for k in want}, want, "nobody's slave has the serving instance's gid and mode (mount %d)" % serving[0]["mount_id"])
        c.eq(probe["dev"], serving[0]["device"], "nobody's slave lives on the serving instance")
    # ptsguard's default healthy modes are 620 and 600 (Mode=620|600), with gid=tty.
    healthy = bool(probe and probe.get("ok") and probe.get("gid") == TTY_GID and probe.get("mode") in ("0620", "0600"))
    exit_code = r.raw("audit-exit").strip()
    crit = [f["id"] for f in report["findings"] if f["severity"] == "critical"]
    if healthy:
        c.true(not crit, "nobody got a healthy pty (gid 5, 0620 or 0600): the report has no critical finding: %s" % crit)
    else:
        c.true(crit and exit_code == "exit=2", "nobody's pty is not healthy (%s): the report has a critical finding and exit 2: %s, %s" % (probe, crit, exit_code))

    # The initramfs record: written by this generator's hook, the instance the boot moved.
    rec = r.json("record")
    c.true(rec is not None, "the initramfs record /run/ptsguard/initramfs.json exists")
    if rec:
        c.eq(rec.get("schema"), "ptsguard.initramfs/1", "record schema")
        c.eq(rec.get("phase"), PHASE[gen], "record phase of %s" % gen)
        c.eq((rec.get("init") or {}).get("kind"), sc.init.name, "the record read the new root's init")
        insts = rec.get("instances", [])
        c.eq(len(insts), 1, "the record holds one devpts instance of the initramfs")
        if insts:
            o = insts[0]["options"].split(",")
            c.true({"gid=5", "mode=620"} <= set(o), "the initramfs mounted devpts gid=5,mode=620: %s" % insts[0]["options"])
            moved = [m for m in devpts if m["device"] == insts[0]["device"]]
            c.true(moved, "the initramfs's instance %s is still mounted in the booted system" % insts[0]["device"])
        c.eq([l.get("line") for l in rec.get("fstab_devpts", [])], sc.fstab_devpts_lines(), "the record's fstab devpts lines")
        c.eq(report["boot"]["initramfs_record"], True, "the report read the initramfs record")
    kern = kernel_lines(r)
    c.true(kern, "the hook logged to the kernel log (ptsguard: lines)")
    c.true(all(p > 3 for p, _ in kern), "no hook line at error level: %s" % kern)

    # The log: every warning/critical finding of the daemon's report was logged (journal or
    # syslog) as detected, with its catalog entry's message id.
    daemon = r.json("daemon-report")
    c.true(daemon is not None, "the daemon's report /run/ptsguard/report.json exists")
    check_service_user(c, r, daemon, rec)
    cat = {e["id"]: e for e in (r.json("checks") or [])}
    sc.init.check_logged(c, r, [f for f in (daemon or {}).get("findings", []) if f["severity"] != "info"], cat)
    return report


def check_service_user(c, r, daemon, rec):
    """The daemon runs as the unit's user ptsguard (made by the package's sysusers.d file) with
    no groups, in PID 1's mount namespace (User= and RemoveIPC= make none); /run/ptsguard and
    its report are that user's; it read the record root wrote in the initramfs and its probe
    became nobody."""
    lines = r.sections.get("service", [])
    pw = [l for l in lines if l.startswith("ptsguard:")]
    c.true(pw, "the package made the user ptsguard: %s" % lines)
    if not pw:
        return
    uid, gid = int(pw[0].split(":")[2]), int(pw[0].split(":")[3])
    status = {l.split(":")[0]: l.split(":", 1)[1].split() for l in lines if re.match(r"(Uid|Gid|Groups|Cap\w+):", l)}
    c.eq((status.get("Uid"), status.get("Gid")), ([str(uid)] * 4, [str(gid)] * 4), "the daemon runs as ptsguard (%d:%d)" % (uid, gid))
    # systemd's initgroups() lists the primary group among the supplementary ones.
    c.true(set(status.get("Groups", ["?"])) <= {str(gid)}, "in no group but its own: %s" % status.get("Groups"))
    c.true(0 < uid < 1000, "ptsguard is a system user: uid %d" % uid)
    ns = [l for l in lines if l.startswith("mntns=")]
    m = re.match(r"mntns=(\S+) init=(\S+)", ns[0]) if ns else None
    c.true(m and m.group(1) == m.group(2), "the daemon is in PID 1's mount namespace: %s" % ns)
    owners = {l.split()[-1]: l.split()[1] for l in lines if l.startswith("owner ")}
    for path in ("/run/ptsguard", "/run/ptsguard/report.json"):
        c.eq(owners.get(path), "ptsguard:ptsguard", "%s belongs to the service user" % path)
    log("service: %s; the record: %s" % (" ".join("%s=%s" % (k, " ".join(v)) for k, v in sorted(status.items())), owners.get("/run/ptsguard/initramfs.json")))
    if daemon:
        if rec is not None:
            c.eq((daemon.get("boot") or {}).get("initramfs_record"), True, "the daemon read the initramfs record (%s)" % owners.get("/run/ptsguard/initramfs.json"))
        probe = daemon.get("probe") or {}
        c.eq((probe.get("performed"), probe.get("uid")), (True, NOBODY), "the daemon's probe became nobody: %s" % probe)


def check_catalog(c, text, entry):
    if not entry:
        c.fail("the catalog has no entry")
        return
    c.true(("Subject: " + entry["summary"]) in text and boot.norm(entry["explanation"]) in text,
           "journalctl -x shows the catalog text of %s (Subject, explanation)" % entry["id"])


def transitions(r):
    """(check, state) of each transition the daemon logged, in order."""
    return r.init.transitions(r)


def kernel_lines(r):
    """(level, message) of the hook's kernel log lines."""
    return r.init.kernel_lines(r)


# --------------------------------------------------------------------------
# The guest's init: what boots the root after the initramfs, how the guest's files are enabled
# there, where the daemon's transitions and the hook's kernel lines are read


class Init:
    name = None
    packages = ()  # installed from the mirror into the boot test's tree (a cached layer)
    dracut_modules = DRACUT_MODULES
    results = None  # the collector's script

    def base_tar(self, cache):
        """The tar the guest's tree is made from."""
        if not self.packages:
            return cache.rootfs
        return package.apt_layer(cache.dir, cache.rootfs, "vm-layer-" + self.name, list(self.packages), VM_FORMAT)

    def initrd_name(self, gen):
        return gen if gen != "dracut" or self.dracut_modules == DRACUT_MODULES else gen + "-nosystemd"


class Systemd(Init):
    name = "systemd"
    results = RESULTS_SCRIPT

    def collector_files(self, sc):
        after = " ".join(u for u, _ in sc.units)
        return {"/etc/systemd/system/vmtest-results.service": (0o644, RESULTS_UNIT % {"after": after, "libexec": LIBEXEC})}

    def enabled(self, sc):
        return [("vmtest-results.service", "multi-user.target")] + sc.units

    def installed(self, cache, tree):
        """What the package did in the tree: it enabled the service."""
        if not os.path.islink(os.path.join(tree, "etc/systemd/system/sysinit.target.wants/ptsguard.service")):
            raise Failure("installing the .deb did not enable ptsguard.service")

    def enable(self, root, enabled):
        for unit, target in enabled:
            wants = os.path.join(root, "etc/systemd/system", target + ".wants")
            os.makedirs(wants, exist_ok=True)
            os.symlink("/etc/systemd/system/" + unit, os.path.join(wants, unit))

    def check_service(self, c, r):
        svc = r.units().get("ptsguard.service", {})
        c.eq((svc.get("ActiveState"), svc.get("SubState")), ("active", "running"), "ptsguard.service is active/running at the end of the boot")

    def transitions(self, r):
        return [(e.get("PTSGUARD_CHECK"), e.get("PTSGUARD_STATE")) for e in r.json_lines("journal") if e.get("PTSGUARD_CHECK")]

    def kernel_lines(self, r):
        return [(int(e.get("PRIORITY", 6)), e.get("MESSAGE", "")) for e in r.json_lines("kernel")]

    def check_logged(self, c, r, findings, cat):
        """Journaled with the catalog entry, and journalctl -x shows the catalog's text."""
        entries = r.json_lines("journal")
        text = boot.norm(r.raw("journal-x"))
        for f in findings:
            mine = [e for e in entries if e.get("PTSGUARD_CHECK") == f["id"]]
            c.true(any(e.get("PTSGUARD_STATE") in ("detected", "repaired") for e in mine), "%s is journaled as detected: %s" % (f["id"], [e.get("PTSGUARD_STATE") for e in mine]))
            c.true(all(e.get("MESSAGE_ID") == cat.get(f["id"], {}).get("message_id") for e in mine), "%s entries carry the catalog's MESSAGE_ID" % f["id"])
            check_catalog(c, text, cat.get(f["id"]))


# A transition as the daemon sends it to syslog (ptsguard(8), JOURNAL): the words, then the tag.
SYSLOG_TRANSITION = re.compile(r"\sptsguard\[(\d+)\]: .*\[ptsguard check=(\S+) state=(\S+) severity=(\S+) message_id=(\w+)\]\s*$")


class Rc(Init):
    """sysvinit's init running Debian's rc scripts, by sysv-rc or by OpenRC. The package's own
    init script starts the daemon (sysv-rc), or contrib/openrc's installed as its comment says
    (OpenRC); a syslog daemon writes the daemon's lines to /var/log/daemon.log."""
    dracut_modules = DRACUT_MODULES_NO_SYSTEMD
    results = RC_RESULTS_SCRIPT

    def __init__(self, name, packages):
        self.name = name
        self.packages = tuple(packages)

    def collector_files(self, sc):
        return {"/etc/init.d/vmtest-results": (0o755, RC_RESULTS_INIT)}

    def enabled(self, sc):
        return ["vmtest-results"] + [u for u, _ in sc.units]

    def installed(self, cache, tree):
        if self.name == "openrc":
            # contrib/openrc/ptsguard's install step, in place of the package's LSB script.
            shutil.copy(os.path.join(cache.source_root, "contrib/openrc/ptsguard"), os.path.join(tree, "etc/init.d/ptsguard"))
            os.chmod(os.path.join(tree, "etc/init.d/ptsguard"), 0o755)
            run(["chroot", tree, "rc-update", "add", "ptsguard", "default"])
            if not os.path.islink(os.path.join(tree, "etc/runlevels/default/ptsguard")):
                raise Failure("rc-update add ptsguard default did not add it to the default runlevel")
        elif not glob.glob(os.path.join(tree, "etc/rc2.d/S[0-9][0-9]ptsguard")):
            raise Failure("installing the .deb did not enable /etc/init.d/ptsguard in runlevel 2")

    def enable(self, root, enabled):
        """update-rc.d in a chroot: insserv orders sysv-rc's links by the LSB headers, or it calls
        rc-update for OpenRC. The image's /etc is a copy, never the tree's hard links."""
        for name in enabled:
            run(["chroot", root, "update-rc.d", name, "defaults"], env=dict(os.environ, PATH=boot.PATH))

    @staticmethod
    def pid_file(r):
        """(pid, exe) of the process the daemon's pid file names, or (None, None)."""
        m = re.search(r"^pidfile=(\d+) exe=(\S*)", r.raw("service"), re.M)
        return m.groups() if m else (None, None)

    def check_service(self, c, r):
        init = r.raw("init")
        c.true("status-exit=0" in init, "the init system says ptsguard is running: %s" % init)
        c.true("pid1=/usr/sbin/init" in init or "pid1=/sbin/init" in init, "PID 1 is sysvinit's init: %s" % init.splitlines()[:1])
        first = [l for l in init.splitlines() if l.startswith("#!")]
        want = "#!/sbin/openrc-run" if self.name == "openrc" else "#!/bin/sh"
        c.eq(first[:1], [want], "/etc/init.d/ptsguard is the %s script" % ("contrib/openrc" if self.name == "openrc" else "package's LSB"))
        c.eq(self.pid_file(r)[1], "/usr/bin/ptsguard", "the pid file names a running /usr/bin/ptsguard: %s" % r.raw("service").splitlines()[:1])

    def syslog(self, r):
        """(pid, check, state, severity, message_id) of the daemon's syslog transition lines."""
        return [m.groups() for m in map(SYSLOG_TRANSITION.search, r.sections.get("syslog", [])) if m]

    def transitions(self, r):
        return [(check, state) for _, check, state, _, _ in self.syslog(r)]

    def kernel_lines(self, r):
        out = []
        for line in r.sections.get("kmsg", []):
            m = re.match(r"<(\d+)>(?:\[[^]]*\]\s*)?(.*)$", line)
            if m:
                out.append((int(m.group(1)) & 7, re.sub(r"^ptsguard: ", "", m.group(2))))
        return out

    def check_logged(self, c, r, findings, cat):
        """Sent to syslog by the daemon the pid file names, with the catalog's message id."""
        lines = self.syslog(r)
        pid = self.pid_file(r)[0]
        for f in findings:
            mine = [l for l in lines if l[1] == f["id"]]
            c.true(any(l[2] in ("detected", "repaired") for l in mine), "%s is in the guest's syslog as detected: %s" % (f["id"], mine))
            c.true(all(l[0] == pid for l in mine), "%s was logged by the daemon of the pid file (%s): %s" % (f["id"], pid, mine))
            c.true(all(l[4] == cat.get(f["id"], {}).get("message_id") for l in mine), "%s lines carry the catalog's message_id" % f["id"])
            c.true(all(l[3] == f["severity"] for l in mine if l[2] == "detected"), "%s lines carry the severity %s" % (f["id"], f["severity"]))


SYSTEMD = Systemd()
# Debian 12's sysvinit-core takes PID 1 from systemd-sysv; inetutils-syslogd is a syslog daemon
# with an init script (bookworm's rsyslog has none). Debian's openrc runs under sysvinit's init.
SYSVINIT = Rc("sysvinit", ["sysvinit-core", "inetutils-syslogd"])
OPENRC = Rc("openrc", ["openrc", "sysvinit-core", "inetutils-syslogd"])
INITS = (SYSTEMD, SYSVINIT, OPENRC)


# --------------------------------------------------------------------------
# The scenarios


def check_quiet(c, r, gen):
    """A healthy boot: nothing to report, nothing logged, every namespace healthy."""
    report = r.json("audit") or {}
    c.eq(serious(report), [], "healthy: no warning or critical finding")
    c.eq(r.raw("audit-exit").strip(), "exit=0", "healthy: ptsguard audit exits 0")
    c.eq(r.json("probe"), dict(r.json("probe") or {}, ok=True, gid=TTY_GID, mode="0620", by_name="same"), "healthy: nobody gets a pty of group tty, mode 0620")
    c.eq([t for t in transitions(r) if t[1] == "detected"], [], "healthy: the daemon logged no finding (%s)" % r.init.name)
    c.eq(((r.json("record") or {}).get("prediction") or {}).get("double_mount"), False, "healthy: the record predicts no double mount")
    allns = r.json("all-namespaces") or {}
    entries = allns.get("namespaces") or []
    c.eq(r.raw("all-namespaces-exit").strip(), "exit=0", "healthy: audit --all-namespaces exits 0 (%d namespaces)" % len(entries))
    c.eq([(n.get("container"), serious(n.get("report") or {})) for n in entries if serious(n.get("report") or {})], [], "healthy: no namespace has a warning or critical finding")
    return entries


def check_healthy(c, r, gen):
    entries = check_quiet(c, r, gen)
    c.eq((r.units().get("ptsguard.service") or {}).get("StatusText"), "No findings", "healthy: STATUS=No findings")
    # Every namespace of a healthy systemd host, the services' sandboxes among them.
    print("audit --all-namespaces text:\n%s" % r.raw("all-namespaces-text"))
    sandbox = [n for n in entries if (n.get("container") or {}).get("name") == "vmtest-sandbox.service"]
    if c.eq(len(sandbox), 1, "the sandboxed service is listed once, by its unit: %s" % [n.get("container") for n in entries]):
        c.eq((sandbox[0].get("container") or {}).get("manager"), "systemd", "the sandboxed service's manager")
        found = [(f["severity"], (f.get("evidence") or {}).get("root_is_host")) for f in (sandbox[0].get("report") or {}).get("findings", []) if f["id"] == "devpts-host-instance"]
        c.eq(found, [("info", True)], "PrivateDevices= binds the host's /dev/pts: devpts-host-instance, info, the host's root")


def bm_no_warning_prediction(c, r, gen):
    c.eq([m for p, m in kernel_lines(r) if p <= 4], [], "no hook line at warning level or above")


def check_stacked(c, r, gen):
    mounts = [m for m in parse_mountinfo(r.raw("mountinfo")) if m["fstype"] == "devpts" and m["mountpoint"] == "/dev/pts"]
    c.eq(len(mounts), 2, "two devpts stacked on /dev/pts (the initramfs's and a second one)")
    report = r.json("audit") or {}
    c.true("devpts-overmount" in finding_ids(report), "the audit reports devpts-overmount: %s" % finding_ids(report))
    c.true(("devpts-overmount", "detected") in transitions(r), "the daemon logged devpts-overmount (%s): %s" % (r.init.name, transitions(r)))
    return mounts


def check_double_mount(c, r, gen):
    check_stacked(c, r, gen)
    rec = r.json("record") or {}
    c.eq([l.get("line") for l in rec.get("fstab_devpts", [])], [2], "the record names fstab line 2")


def origin_named(c, r, ids, words):
    report = r.json("audit") or {}
    for f in report.get("findings", []):
        if f["id"] in ids:
            o = (f.get("evidence") or {}).get("origin")
            c.true(isinstance(o, dict), "%s carries an origin in its evidence: %s" % (f["id"], o))
            blob = json.dumps(o)
            for w in words:
                c.true(w in blob, "%s's origin names %r: %s" % (f["id"], w, blob))


def overmount_origin(c, r, changed_by, fstab_line):
    """devpts-overmount's origin: a second mount on the instance the record names, the bottom of
    the stack, which the evidence marks as the initramfs's."""
    devs = [i.get("device") for i in (r.json("record") or {}).get("instances", [])]
    found = [f for f in (r.json("audit") or {}).get("findings", []) if f["id"] == "devpts-overmount"]
    for f in found:
        ev = f.get("evidence") or {}
        o = ev.get("origin") or {}
        c.eq((o.get("change"), o.get("changed_by"), o.get("fstab_line")), ("second-mount", changed_by, fstab_line), "devpts-overmount's origin: %s" % o)
        c.true(o.get("initramfs_device") in devs, "the origin names the record's instance %s: %s" % (devs, o.get("initramfs_device")))
        c.eq([m.get("origin") for m in ev.get("stack") or []][:1], ["initramfs"], "the bottom of the stack is the initramfs's instance")
    return found


def prediction_checked(c, r, effect, came_true):
    """The record's prediction (made in the initramfs from the new root's files) and the audit's
    verdict on it after the boot."""
    pr = (r.json("record") or {}).get("prediction") or {}
    c.eq((pr.get("effect"), pr.get("double_mount")), (effect, False), "the record predicts %s for a %s root: %s" % (effect, r.init.name, pr.get("reason")))
    boot_ = (r.json("audit") or {}).get("boot") or {}
    c.eq(boot_.get("prediction_came_true"), came_true, "the audit says the prediction came true: %s" % came_true)
    return pr


def bm_rc_healthy_predicted(c, r, gen):
    # mount -a skips the carried instance; Debian's checkroot.sh remounts it (mountdevsubfs.sh
    # reload) with /etc/default/devpts's gid=5,mode=600 and then the line's gid=5,mode=620.
    pr = prediction_checked(c, r, "remount", True)
    c.eq((pr.get("fstab_line"), pr.get("options_after"), pr.get("healthy_after")), (2, "gid=5,mode=620", True),
         "the prediction: fstab line 2, gid=5,mode=620, healthy after the boot")
    c.eq(((r.json("record") or {}).get("init") or {}).get("rc_devpts_remount"), "gid=5,mode=600",
         "the record read Debian's rc scripts' remount options")


def bm_centos6_origin(c, r, gen):
    # The rc scripts' remount (gid=5,mode=600, "defaults" adds nothing) was foreseen; then an rc
    # script mounted fstab's line again on top: what the prediction did not foresee.
    pr = prediction_checked(c, r, "remount", False)
    c.eq(pr.get("options_after"), "gid=5,mode=600", "the prediction: the rc scripts' gid=5,mode=600")
    overmount_origin(c, r, "a second mount at fstab line 2", 2)


def check_centos6(c, r, gen):
    mounts = check_stacked(c, r, gen)
    top = [m for m in mounts if m["mount_id"] == max(x["mount_id"] for x in mounts)]
    if top:
        o = devpts_options(top[0]["super"])
        c.eq((o["gid"], o["mode"]), (None, "0600"), "the second mount has fstab's defaults: no gid=, mode 600")
    rec = r.json("record") or {}
    c.eq([l.get("line") for l in rec.get("fstab_devpts", [])], [2], "the record names fstab line 2")


def bm_slackware_origin(c, r, gen):
    # No fstab line: the record foresaw the rc scripts' remount alone (gid=5,mode=600); the boot
    # then covered that very instance, so the prediction did not come true as a whole.
    pr = prediction_checked(c, r, "remount", False)
    c.eq((pr.get("mountpoint"), pr.get("fstab_line"), pr.get("options_after")), ("/dev/pts", None, "gid=5,mode=600"),
         "the record predicts the rc scripts' remount of /dev/pts: %s" % pr.get("reason"))
    covered = [m for m in parse_mountinfo(r.raw("mountinfo")) if m["fstype"] == "devpts" and m["device"] == pr.get("device")]
    c.true(covered and all(any(x["parent_id"] == m["mount_id"] and x["mountpoint"] == m["mountpoint"] for x in parse_mountinfo(r.raw("mountinfo"))) for m in covered),
           "what happened: the predicted instance %s is covered on /dev/pts" % pr.get("device"))
    overmount_origin(c, r, "a second mount that no fstab line names", None)


def check_slackware(c, r, gen):
    mounts = check_stacked(c, r, gen)
    # Below, Debian's rc scripts remounted the initramfs's instance with /etc/default/devpts
    # (checkroot.sh: mountdevsubfs.sh reload, TTYMODE=600); on top, the rc script's options.
    opts = [(devpts_options(m["super"])["gid"], devpts_options(m["super"])["mode"]) for m in sorted(mounts, key=lambda m: m["mount_id"])]
    c.eq([o[0] for o in opts], [TTY_GID] * 2, "both instances have gid=5: %s" % opts)
    c.eq(opts[-1:], [(TTY_GID, "0620")], "the second mount has the rc script's gid=5,mode=620")
    # Found while the daemon ran: its first report had no stack, the syslog line came later.
    seq = transitions(r)
    c.eq(seq.count(("devpts-overmount", "detected")), 1, "devpts-overmount was detected once, live: %s" % seq)


def check_remount_fs(c, r, gen):
    mounts = [m for m in parse_mountinfo(r.raw("mountinfo")) if m["fstype"] == "devpts"]
    c.eq(len(mounts), 1, "one devpts on /dev/pts: systemd mounts no second one for an fstab line")
    if mounts:
        o = devpts_options(mounts[0]["super"])
        c.eq((o["gid"], o["mode"]), (None, "0600"), "systemd-remount-fs applied fstab's defaults: no gid=, mode 600")
    rf = r.units().get("systemd-remount-fs.service", {})
    c.eq(rf.get("Result"), "success", "systemd-remount-fs.service ran")
    report = r.json("audit") or {}
    c.true("devpts-options-lost" in finding_ids(report), "the audit reports devpts-options-lost: %s" % finding_ids(report))
    c.true(("devpts-options-lost", "detected") in transitions(r), "the daemon journaled devpts-options-lost: %s" % transitions(r))
    pr = (r.json("record") or {}).get("prediction") or {}
    c.eq(pr.get("fstab_line"), 2, "the record's prediction names fstab line 2")


def bm_remount_fs_predicted(c, r, gen):
    pr = (r.json("record") or {}).get("prediction") or {}
    c.true("remount" in json.dumps(pr), "the record's prediction knows systemd-remount-fs applies fstab's options: %s" % pr)
    origin_named(c, r, ("devpts-options-lost",), ("systemd-remount-fs", "620"))


def check_ptmx_replaced(c, r, gen):
    ptmx = r.sections.get("ptmx", [])
    c.eq(ptmx[1:2], ["pts/ptmx"], "/dev/ptmx is a link to pts/ptmx after the boot")
    mon = r.file("udev-monitor.log")
    events = [dict(l.split("=", 1) for l in b.splitlines() if "=" in l) for b in mon.split("\n\n")]
    changes = [e for e in events if e.get("DEVNAME") == "/dev/ptmx" and e.get("ACTION") == "change"]
    c.eq(len(changes), 1, "udevadm monitor saw one change event of ptmx")
    entries = [e for e in r.json_lines("journal") if e.get("PTSGUARD_CHECK") == "ptmx-replaced" and e.get("PTSGUARD_STATE") == "detected"]
    c.eq(len(entries), 1, "the daemon journaled ptmx-replaced detected once")
    if changes and entries:
        c.eq(entries[0].get("PTSGUARD_UDEV_SEQNUM"), changes[0].get("SEQNUM"), "ptmx-replaced names the udev event's seqnum")
        c.eq(entries[0].get("PTSGUARD_UDEV_ACTION"), "change", "ptmx-replaced names the udev action")
    daemon = r.json("daemon-report") or {}
    f = [x for x in daemon.get("findings", []) if x["id"] == "ptmx-replaced"]
    c.true(f, "the daemon's report holds ptmx-replaced: %s" % finding_ids(daemon))
    if f and changes:
        c.eq(f[0]["evidence"].get("udev_event"), {"action": "change", "seqnum": int(changes[0]["SEQNUM"])}, "ptmx-replaced evidence: the udev event")
        c.eq(f[0]["evidence"]["after"].get("target"), "pts/ptmx", "ptmx-replaced evidence: the new link")
    # The initramfs mounted devpts with ptmxmode=000: through the link nobody cannot open it.
    probe = r.json("probe") or {}
    c.eq((probe.get("ok"), probe.get("step"), probe.get("error")), (False, "open", "EACCES"), "nobody cannot open /dev/ptmx -> pts/ptmx (ptmxmode 000)")
    c.true("ptmx-locked" in finding_ids(r.json("audit")), "the audit reports ptmx-locked: %s" % finding_ids(r.json("audit")))


def check_repair(c, r, gen):
    mounts = [m for m in parse_mountinfo(r.raw("mountinfo")) if m["fstype"] == "devpts"]
    c.eq(len(mounts), 1, "one devpts on /dev/pts")
    o = devpts_options(mounts[0]["super"]) if mounts else {}
    c.eq(o.get("gid"), TTY_GID, "Policy=safe repaired /dev/pts during the boot: gid=5 again")
    seq = transitions(r)
    c.true(("devpts-options-lost", "detected") in seq and ("devpts-options-lost", "repaired") in seq, "journal: devpts-options-lost detected, then repaired: %s" % seq)
    c.eq([t for t in seq if t[1] == "repair-failed"], [], "no repair-failed entry")
    # The fstab line stays (repair does not edit files): fstab-devpts-options remains, a warning.
    c.eq(serious(r.json("audit")), ["fstab-devpts-options"], "after the repair only the fstab line is reported")
    c.eq(r.raw("audit-exit").strip(), "exit=1", "after the repair ptsguard audit exits 1 (a warning)")
    probe = r.json("probe") or {}
    c.eq((probe.get("ok"), probe.get("gid")), (True, TTY_GID), "nobody's pty is of group tty after the repair")


def bm_repair_restores_mode(c, r, gen):
    mounts = [m for m in parse_mountinfo(r.raw("mountinfo")) if m["fstype"] == "devpts"]
    o = devpts_options(mounts[0]["super"]) if mounts else {}
    c.eq(o.get("mode"), "0620", "repair restored the recorded mode 620, not the remount's 600")
    c.eq((r.json("probe") or {}).get("mode"), "0620", "nobody's pty is 0620 after the repair")


def check_reinstall(c, r, gen):
    got = {}
    for line in r.file("reinstall.log").splitlines():
        m = re.match(r"^(installed-at-boot|removed|after-remove|service-after-remove|installed|after-install|service-after-install): ?(.*)$", line)
        if m:
            got[m.group(1)] = m.group(2).strip()
    log("reinstall: %s" % got)

    def tags(k):
        return set(t for t in got.get(k, "").split(":") if t)

    c.true("ptsguard" in tags("installed-at-boot"), "the rule tags ptmx's events after the boot: %s" % got.get("installed-at-boot"))
    c.eq(got.get("removed"), "0", "dpkg --remove ptsguard succeeded")
    c.true(got.get("after-remove") is not None and "ptsguard" not in tags("after-remove"), "after dpkg --remove, udev no longer applies the rule: %s" % got.get("after-remove"))
    c.true(got.get("service-after-remove") in ("inactive", "unknown"), "the service is stopped after the removal: %s" % got.get("service-after-remove"))
    c.eq(got.get("installed"), "0", "dpkg -i of the .deb succeeded in the running system")
    c.true("ptsguard" in tags("after-install"), "after dpkg -i, udev applies the rule at once (no reboot): %s" % got.get("after-install"))
    c.eq(got.get("service-after-install"), "active", "the package started ptsguard.service again")


SCENARIOS = [
    Scenario("healthy", "Debian's default: no devpts line in fstab", check=check_healthy,
             model_checks=[("no warning-level prediction", bm_no_warning_prediction)]),
    Scenario("double-mount", "the CentOS 6 double mount: fstab's devpts mounted again on top after switch-root",
             fstab=FSTAB_DEVPTS_DEFAULTS,
             files={"/etc/systemd/system/vmtest-overmount.service": (0o644, OVERMOUNT_UNIT)},
             units=[("vmtest-overmount.service", "sysinit.target")], check=check_double_mount,
             model_checks=[("origin: a second mount at fstab line 2", lambda c, r, g: origin_named(c, r, ("devpts-overmount",), ("line", "2")))]),
    Scenario("remount-fs", "fstab 'devpts /dev/pts devpts defaults' remounted by systemd-remount-fs",
             fstab=FSTAB_DEVPTS_DEFAULTS, check=check_remount_fs,
             model_checks=[("prediction and origin name systemd-remount-fs", bm_remount_fs_predicted)]),
    Scenario("ptmx-replaced", "udev replaces /dev/ptmx by a pts/ptmx link while the daemon runs",
             files={
                 "/etc/udev/rules.d/99-vmtest-ptmx.rules": (0o644, PTMX_RULE),
                 "/etc/systemd/system/vmtest-replace-ptmx.service": (0o644, PTMX_UNIT % {"libexec": LIBEXEC}),
                 LIBEXEC + "/replace-ptmx": (0o755, PTMX_SCRIPT),
                 DROPIN_DIR + "50-vmtest.conf": (0o644, COALESCE_DROPIN),
             },
             units=[("vmtest-replace-ptmx.service", "multi-user.target")], check=check_ptmx_replaced),
    Scenario("repair-safe", "Policy=safe repairs the fstab defaults remount during the boot",
             fstab=FSTAB_DEVPTS_DEFAULTS,
             files={DROPIN_DIR + "50-vmtest.conf": (0o644, SAFE_DROPIN)}, check=check_repair,
             model_checks=[("repair restores mode 620", bm_repair_restores_mode)]),
    Scenario("reinstall", "the package removed and installed again in the booted system, udevd running",
             files={
                 "/etc/systemd/system/vmtest-reinstall.service": (0o644, REINSTALL_UNIT % {"libexec": LIBEXEC}),
                 LIBEXEC + "/reinstall": (0o755, REINSTALL_SCRIPT),
             },
             units=[("vmtest-reinstall.service", "multi-user.target")], check=check_reinstall, deb=True),
]

# Without systemd: Debian 12's sysvinit-core (rc scripts by sysv-rc) and openrc (the same scripts
# run by OpenRC). Healthy, with Slackware's fstab line (kept: the prediction must come true);
# CentOS 6 (fstab's defaults mounted again early, before the daemon); Slackware (a second devpts
# late, while the daemon runs).
FSTAB_DEVPTS_HEALTHY = "devpts /dev/pts devpts gid=5,mode=620 0 0\n"
for _init in (SYSVINIT, OPENRC):
    SCENARIOS += [
        Scenario(_init.name + "-healthy", "%s: fstab's devpts line gid=5,mode=620, kept by the rc scripts" % _init.name,
                 init=_init, fstab=FSTAB_DEVPTS_HEALTHY, check=check_quiet,
                 model_checks=[("no warning-level prediction", bm_no_warning_prediction),
                               ("the kept prediction came true", bm_rc_healthy_predicted)]),
        Scenario(_init.name + "-centos6", "%s: an rc script mounts fstab's devpts line (defaults) again after mountall" % _init.name,
                 init=_init, fstab=FSTAB_DEVPTS_DEFAULTS,
                 files={"/etc/init.d/vmtest-centos6": (0o755, CENTOS6_INIT)},
                 units=[("vmtest-centos6", None)], check=check_centos6,
                 model_checks=[("origin and prediction of the second mount", bm_centos6_origin)]),
        Scenario(_init.name + "-slackware", "%s: an rc script mounts a second devpts late, the daemon running" % _init.name,
                 init=_init, files={"/etc/init.d/vmtest-slackware": (0o755, SLACKWARE_INIT)},
                 units=[("vmtest-slackware", None)], check=check_slackware,
                 model_checks=[("origin and prediction of the second mount", bm_slackware_origin)]),
    ]
BY_NAME = {s.name: s for s in SCENARIOS}


# --------------------------------------------------------------------------
# The cache


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def kernel():
    """(version, vmlinuz) of Debian's newest kernel with its modules."""
    for v in sorted(os.listdir("/lib/modules") if os.path.isdir("/lib/modules") else [], reverse=True):
        vmlinuz = "/boot/vmlinuz-" + v
        if os.path.exists(vmlinuz) and os.path.exists("/boot/config-" + v):
            return v, vmlinuz
    raise Skip("no kernel with /boot/vmlinuz-V and /lib/modules/V (install linux-image-amd64)")


class Cache:
    def __init__(self, cache_dir, source_root, pty_probe):
        self.dir = cache_dir
        self.source_root = source_root
        self.pty_probe = pty_probe

    def lock(self, name="lock"):
        """The cache's lock, or one artifact's: two boots build different artifacts at once."""
        f = open(os.path.join(self.dir, name), "w")
        fcntl.flock(f, fcntl.LOCK_EX)
        return f

    def prepare(self, init):
        """The tree of init's guest (vm-KEY/tree-INIT), built when missing."""
        t = time.monotonic()
        self.init = init
        self.rootfs = boot.ensure_rootfs(self.dir)
        self.deb, _lint = package.ensure_deb(self.dir, self.source_root)
        self.kver, self.vmlinuz = kernel()
        with open(os.path.join(self.source_root, "contrib/openrc/ptsguard")) as f:
            openrc_script = f.read()
        guest = json.dumps([[(i.name, i.packages, i.results) for i in INITS], openrc_script, sha(self.pty_probe)])
        self.key = hashlib.sha256(json.dumps([VM_FORMAT, os.path.basename(self.rootfs), sha(self.deb), self.kver, sha(self.vmlinuz), guest]).encode()).hexdigest()[:16]
        self.vmdir = os.path.join(self.dir, "vm-" + self.key)
        # The initramfs images do not depend on the guest's files: keyed on their own inputs.
        ikey = hashlib.sha256(json.dumps([VM_FORMAT, sha(self.deb), self.kver, DRIVERS, DRACUT_MODULES, DRACUT_MODULES_NO_SYSTEMD]).encode()).hexdigest()[:16]
        self.initrd_dir = os.path.join(self.dir, "initrd-" + ikey)
        with self.lock():
            for old in glob.glob(os.path.join(self.dir, "vm-*")) + glob.glob(os.path.join(self.dir, "initrd-*")):
                if old not in (self.vmdir, self.initrd_dir) and re.fullmatch(r"(vm|initrd)-[0-9a-f]{16}", os.path.basename(old)):
                    log("removing an outdated cache: %s" % old)
                    shutil.rmtree(old, ignore_errors=True)
            os.makedirs(self.vmdir, exist_ok=True)
            os.makedirs(self.initrd_dir, exist_ok=True)
        self.tree = os.path.join(self.vmdir, "tree-" + init.name)
        done = os.path.join(self.vmdir, "tree-%s.done" % init.name)
        if not os.path.exists(done):
            # The layer first (apt-get, under the cache's lock), then the tree under its own.
            base = init.base_tar(self)
            with self.lock("vm-tree-%s.lock" % init.name):
                if not os.path.exists(done):
                    self.build_tree(base)
                    open(done, "w").close()
        log("cache ready in %.1fs: %s" % (time.monotonic() - t, self.tree))

    def build_tree(self, base):
        t = time.monotonic()
        shutil.rmtree(self.tree, ignore_errors=True)
        os.makedirs(self.tree)
        run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls", "-C", self.tree, "-xf", base])
        shutil.copy(self.deb, os.path.join(self.tree, "root"))
        name = "/root/" + os.path.basename(self.deb)
        # No service starts in the chroot (invoke-rc.d asks policy-rc.d; systemctl sees the chroot).
        policy = os.path.join(self.tree, "usr/sbin/policy-rc.d")
        write_file(policy, 0o755, "#!/bin/sh\nexit 101\n")
        r = run(["chroot", self.tree, "dpkg", "-i", name], check=False, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=300)
        if r.returncode != 0:
            raise Failure("dpkg -i %s in the tree failed:\n%s%s" % (name, r.stdout[-3000:], r.stderr[-3000:]))
        os.unlink(policy)
        os.unlink(self.tree + name)
        self.init.installed(self, self.tree)
        with open(os.path.join(self.tree, "etc/hostname"), "w") as f:
            f.write("ptsguard-vm\n")
        shadow = os.path.join(self.tree, "etc/shadow")
        with open(shadow) as f:
            lines = f.read().splitlines()
        with open(shadow, "w") as f:
            f.write("\n".join(re.sub(r"^root:[^:]*:", "root::", l) for l in lines) + "\n")
        os.makedirs(self.tree + LIBEXEC, exist_ok=True)
        shutil.copy(self.pty_probe, self.tree + LIBEXEC + "/pty-probe")
        write_file(self.tree + LIBEXEC + "/results", 0o755, self.init.results)
        log("%s tree with the .deb installed in %.1fs" % (self.init.name, time.monotonic() - t))

    def image(self, sc):
        path = os.path.join(self.vmdir, "%s-%s.raw" % (sc.name, sc.key()))
        with self.lock("vm-image-%s.lock" % sc.name):
            if os.path.exists(path):
                return path
            t = time.monotonic()
            for old in glob.glob(os.path.join(self.vmdir, sc.name + "-*.raw")):
                os.unlink(old)
            work = tempfile.mkdtemp(prefix="image-", dir=self.vmdir)
            try:
                root = os.path.join(work, "root")
                run(["cp", "-al", self.tree, root])
                # /etc a copy of its own: what enables the guest's files may write there.
                shutil.rmtree(os.path.join(root, "etc"))
                run(["cp", "-a", os.path.join(self.tree, "etc"), os.path.join(root, "etc")])
                for p, (mode, text) in sc.all_files().items():
                    full = root + p
                    os.makedirs(os.path.dirname(full), exist_ok=True)
                    if os.path.lexists(full):
                        os.unlink(full)  # a hard link into the tree: never write through it
                    write_file(full, mode, text)
                if sc.deb:
                    shutil.copy(self.deb, os.path.join(root, "root/ptsguard.deb"))
                sc.init.enable(root, sc.enabled())
                run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", root, path + ".tmp", "1G"], timeout=300)
                os.rename(path + ".tmp", path)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            log("image %s made in %.1fs" % (os.path.basename(path), time.monotonic() - t))
            return path

    def initramfs(self, gen):
        name = self.init.initrd_name(gen)
        path = os.path.join(self.initrd_dir, name + ".img")
        with self.lock("vm-initrd-%s.lock" % name):
            if os.path.exists(path):
                return path
            t = time.monotonic()
            work = tempfile.mkdtemp(prefix="initramfs-", dir=self.initrd_dir)
            try:
                (build_initramfs_tools if gen == "initramfs-tools" else build_dracut)(self, work, path + ".tmp")
                os.rename(path + ".tmp", path)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            log("%s initramfs built in %.1fs" % (gen, time.monotonic() - t))
            return path


def write_file(path, mode, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def build_initramfs_tools(cache, work, out):
    """mkinitramfs with a private configuration directory holding the hook and init-bottom script
    the .deb installed; the binary is the .deb's."""
    conf = os.path.join(work, "conf")
    for d in ("hooks", "scripts/init-bottom", "conf.d"):
        os.makedirs(os.path.join(conf, d))
    with open(os.path.join(conf, "initramfs.conf"), "w") as f:
        f.write("MODULES=list\nBUSYBOX=auto\nKEYMAP=n\nCOMPRESS=gzip\nDEVICE=\nNFSROOT=auto\nRUNSIZE=10%\nFSTYPE=auto\n")
    with open(os.path.join(conf, "modules"), "w") as f:
        f.write("\n".join(DRIVERS) + "\n")
    shutil.copy2(cache.tree + "/usr/share/initramfs-tools/hooks/ptsguard", os.path.join(conf, "hooks"))
    shutil.copy2(cache.tree + "/usr/share/initramfs-tools/scripts/init-bottom/ptsguard", os.path.join(conf, "scripts/init-bottom"))
    env = dict(os.environ, TMPDIR=work, PTSGUARD_INITRAMFS_BINARY=cache.tree + "/usr/bin/ptsguard")
    run(["mkinitramfs", "-d", conf, "-o", out, cache.kver], env=env, timeout=900)
    listing = run(["lsinitramfs", out]).stdout.split()
    for want in ("usr/bin/ptsguard", "scripts/init-bottom/ptsguard"):
        if want not in listing:
            raise Failure("mkinitramfs left %s out of the initramfs" % want)


def build_dracut(cache, work, out):
    """dracut with the .deb's 95ptsguard module joined to the system's modules (a private
    dracutbasedir), systemd in the initramfs or (for a root without it) dracut's own init, only
    the drivers the root needs."""
    base = testlib.dracut_basedir(os.path.join(work, "base"), cache.tree + "/usr/lib/dracut/modules.d/95ptsguard")
    confdir = os.path.join(work, "conf.d")
    os.makedirs(confdir)
    env = dict(os.environ, dracutbasedir=base, TMPDIR=work, PTSGUARD_INITRAMFS_BINARY=cache.tree + "/usr/bin/ptsguard")
    r = run(["dracut", "--kver", cache.kver, "--modules", cache.init.dracut_modules, "--drivers", " ".join(DRIVERS),
             "--no-hostonly", "--no-early-microcode", "--gzip", "--conf", "/dev/null", "--confdir", confdir,
             "--tmpdir", work, "--force", out], env=env, timeout=900)
    if "Including module: ptsguard" not in r.stdout + r.stderr:
        raise Failure("dracut did not include the ptsguard module:\n" + r.stderr[-3000:])


# --------------------------------------------------------------------------
# Booting


def qemu_accel():
    """TCG unless PTSGUARD_VM_ACCEL names another accelerator (kvm): a /dev/kvm that opens is no
    proof that KVM runs a guest (on these machines it opens and the guest never starts)."""
    return os.environ.get("PTSGUARD_VM_ACCEL") or "tcg"


def qemu_argv(vmlinuz, initrd, image, console, results, append=""):
    return [
        "qemu-system-x86_64", "-accel", qemu_accel(), "-m", "1024", "-smp", "1",
        "-display", "none", "-monitor", "none", "-no-reboot", "-nic", "none",
        "-kernel", vmlinuz, "-initrd", initrd,
        "-append", ("console=ttyS0 root=/dev/vda rw panic=-1 " + append).strip(),
        "-drive", "file=%s,format=raw,if=virtio,snapshot=on" % image,
        "-serial", "file:" + console, "-serial", "file:" + results,
    ]


def boot_vm(argv, console, results, timeout=BOOT_TIMEOUT):
    """Run qemu until the guest powers off; (Results, seconds)."""
    t = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Failure("the guest did not power off within %ds" % timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    took = time.monotonic() - t
    if p.returncode != 0:
        raise Failure("qemu exited %d: %s" % (p.returncode, out.strip()[-2000:]))
    with open(console, errors="replace") as f:
        cons = boot.ANSI.sub("", f.read())
    with open(results, errors="replace") as f:
        res = f.read()
    return Results(res, cons), took


def tail(text, n=60):
    return "\n".join([l for l in text.splitlines() if l.strip()][-n:])


# --------------------------------------------------------------------------


def requirements():
    if os.geteuid() != 0:
        raise Skip("needs root (debootstrap, chroot, mkfs.ext4 -d of a root's files)")
    for tool in ("qemu-system-x86_64", "mkfs.ext4", "debootstrap", "dpkg-buildpackage", "lintian", "chroot", "tar", "mkinitramfs", "lsinitramfs", "dracut"):
        if shutil.which(tool) is None:
            raise Skip("%s is not installed (tests/install-deps installs it)" % tool)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root")
    ap.add_argument("--build-root")
    ap.add_argument("--pty-probe")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the console log and results (also PTSGUARD_VM_KEEP=1)")
    ap.add_argument("generator", nargs="?")
    ap.add_argument("scenario", nargs="?")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(s.name for s in SCENARIOS))
        return 0
    if args.generator not in GENERATORS or args.scenario not in BY_NAME:
        ap.error("GENERATOR is one of %s, SCENARIO one of %s" % (GENERATORS, sorted(BY_NAME)))
    sc = BY_NAME[args.scenario]
    try:
        requirements()
        kernel()
    except Skip as e:
        if os.environ.get("CI") == "true":
            log("FAIL: %s (CI=true: nothing may skip)" % e)
            return 1
        log("SKIP: %s" % e)
        return EXIT_SKIP

    def on_term(signum, frame):
        raise boot.Timeout("terminated by signal %d (meson's timeout?)" % signum)

    signal.signal(signal.SIGTERM, on_term)
    boot.DEBOOTSTRAP_TIMEOUT = max(boot.DEBOOTSTRAP_TIMEOUT, 900)
    cache_dir = boot.cache_dir(args.build_root)
    keep = args.keep or os.environ.get("PTSGUARD_VM_KEEP") == "1"
    c = testlib.Checker()
    runs = os.path.join(cache_dir, "vm-runs")
    os.makedirs(runs, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="%s-%s-" % (args.generator, sc.name), dir=runs)
    console = os.path.join(scratch, "console.log")
    results = os.path.join(scratch, "results.txt")
    r = None
    try:
        cache = Cache(cache_dir, os.path.abspath(args.source_root), os.path.abspath(args.pty_probe))
        cache.prepare(sc.init)
        image = cache.image(sc)
        initrd = cache.initramfs(args.generator)
        log("booting %s with %s (%s, %s): %s" % (sc.name, args.generator, sc.init.name, cache.kver, sc.doc))
        log("console log: %s" % console)
        r, took = boot_vm(qemu_argv(cache.vmlinuz, initrd, image, console, results), console, results)
        r.init = sc.init
        log("boot to power-off: %.1fs" % took)
        check_common(c, r, args.generator, sc)
        sc.check(c, r, args.generator)
        for what, fn in sc.model_checks:
            fn(c, r, args.generator)
    except Failure as e:
        c.fail(str(e))
    finally:
        if r is not None:
            log("\n---- what the guest reported ----")
            log("findings (audit): %s" % [(f["id"], f["severity"]) for f in (r.json("audit") or {}).get("findings", [])])
            log("findings (daemon): %s" % [(f["id"], f["severity"]) for f in (r.json("daemon-report") or {}).get("findings", [])])
            log("transitions logged (%s): %s" % (sc.init.name, transitions(r)))
            log("kernel log of the hook: %s" % kernel_lines(r))
            log("devpts in mountinfo:\n  %s" % "\n  ".join(l for l in r.raw("mountinfo").splitlines() if " - devpts " in l))
            log("pty-probe as nobody: %s" % r.raw("probe").strip())
            log("record prediction: %s" % json.dumps((r.json("record") or {}).get("prediction")))
            log("audit text:\n%s" % r.raw("audit-text"))
    if c.failures:
        if r is not None or os.path.exists(console):
            try:
                with open(console, errors="replace") as f:
                    log("\n---- console (tail) ----\n%s" % tail(boot.ANSI.sub("", f.read())))
            except OSError:
                pass
        log("FAIL: %d assertion(s) failed:\n%s" % (len(c.failures), "\n".join("- " + f for f in c.failures)))
        log("kept: %s" % scratch)
        return 1
    if keep:
        log("kept: %s" % scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
