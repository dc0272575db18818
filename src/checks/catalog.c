/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one table of checks (STYLE.md 7). Ids, severities and MESSAGE_IDs are a
 * public contract (spec/checks.md): never rename or reuse one.
 */
#include <string.h>

#include "checks/checks.h"
#include "checks/checks-impl.h"
#include "util/util.h"

const struct check_info check_catalog[] = {
	{
	    .id = "ptmx-missing",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "23974b8a56d645cbbd550900396bcfe1",
	    .summary = "/dev/ptmx does not exist",
	    .explanation = "Pseudo-terminals are allocated by opening /dev/ptmx. Without it every "
			   "terminal emulator, ssh login, screen, tmux and container console fails "
			   "to allocate a pty.",
	    .remedy = "mknod -m 0666 /dev/ptmx c 5 2",
	    .repairable = true,
	    .run = check_ptmx_missing,
	},
	{
	    .id = "ptmx-not-device",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "95da0956023d4965864bb4f72467a5c6",
	    .summary = "/dev/ptmx is not the pty multiplexer device",
	    .explanation =
		"/dev/ptmx exists but is neither a character device 5:2 nor a symlink or "
		"bind mount that resolves to the ptmx node of a devpts instance: it is a "
		"regular file, a directory, a dangling symlink or a device with another "
		"major:minor. Opening it does not allocate a pty.",
	    .remedy = "mv /dev/ptmx /dev/ptmx.broken && mknod -m 0666 /dev/ptmx c 5 2",
	    .run = check_ptmx_not_device,
	},
	{
	    .id = "ptmx-mode",
	    .severity = SEVERITY_WARNING,
	    .message_id = "d46d05fc01204e46a1eeace102f8344e",
	    .summary = "/dev/ptmx is not mode 0666",
	    .explanation = "/dev/ptmx is a character node whose mode is not 0666. Users other than "
			   "root cannot open it, so they cannot allocate ptys (EACCES); access "
			   "control belongs to the slave nodes, not to the multiplexer.",
	    .remedy = "chmod 0666 /dev/ptmx",
	    .repairable = true,
	    .run = check_ptmx_mode,
	},
	{
	    .id = "ptmx-no-devpts",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "390770a5284b479f8621682585dc1a01",
	    .summary = "no devpts is mounted beside /dev/ptmx",
	    .explanation =
		"Since Linux 4.7 a /dev/ptmx character node finds its devpts instance by "
		"looking up \"pts\" in its own directory. Nothing devpts is mounted there "
		"(or the directory is missing), so every open of /dev/ptmx fails with "
		"ENODEV.",
	    .remedy = "mkdir -p /dev/pts && mount -t devpts -o gid=5,mode=620,ptmxmode=000 devpts "
		      "/dev/pts",
	    .run = check_ptmx_no_devpts,
	},
	{
	    .id = "ptmx-locked",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "c881dc2b22f8423ab00e40c26435d440",
	    .summary = "/dev/ptmx leads to a devpts ptmx node that other users cannot open",
	    .explanation =
		"/dev/ptmx is a symlink (usually to pts/ptmx) or a bind mount of the ptmx "
		"node inside a devpts instance, and that node's mode (the ptmxmode= mount "
		"option, 000 by default) does not let other users open it: every non-root "
		"pty allocation fails with EACCES. systemd's PrivateDevices= (systemd#7878), "
		"rkt and runc produced this layout.",
	    .remedy = "mount -o remount,ptmxmode=0666 /dev/pts",
	    .repairable = true,
	    .run = check_ptmx_locked,
	},
	{
	    .id = "ptmx-replaced",
	    .severity = SEVERITY_WARNING,
	    .message_id = "a9b5a84bff1340ffa085b24201afb144",
	    .summary = "/dev/ptmx changed kind or target",
	    .explanation =
		"The daemon saw /dev/ptmx change between a character node, a symlink, a "
		"bind mount or nothing, or change its target. udev replacing a pts/ptmx "
		"symlink with a device node, or a container runtime replacing the host's "
		"node with a symlink (runc#80), silently moves every new pty to another "
		"devpts instance. The evidence holds the state before and after and the "
		"udev event seen with the change.",
	    .remedy = "restore the intended /dev/ptmx (for a host: mknod -m 0666 /dev/ptmx c 5 "
		      "2) and find what replaced it in the journal around the time shown",
	    .transition = true,
	    .run = NULL,
	},
	{
	    .id = "pts-covered",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "03a239d72aa5488ba68cbd9d3c154e82",
	    .summary = "the devpts mount at /dev/pts is covered by another mount",
	    .explanation = "A mount that is not devpts sits on top of the devpts at /dev/pts, or a "
			   "mount over /dev hides it, so the lookup of \"pts\" beside /dev/ptmx no "
			   "longer reaches the devpts instance: every open of /dev/ptmx fails with "
			   "ENODEV, and existing ptys vanish from /dev/pts.",
	    .remedy = "umount the covering mount (see evidence), e.g. umount /dev/pts",
	    .run = check_pts_covered,
	},
	{
	    .id = "devpts-options-lost",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "5908099010dc42dc8d236a30d092440e",
	    .summary = "the serving devpts instance lacks gid=tty or a safe mode",
	    .explanation =
		"The devpts instance that serves /dev/ptmx has no gid= option, or a slave "
		"mode other than 620 or 600 (or the mode the configuration pins). New ptys "
		"get the creating process's group or a mode that lets other users read or "
		"write someone's terminal: write, wall and mesg break or open the terminal "
		"to the wrong people (mosh#700, firejail#351). Since glibc 2.33 nothing in "
		"user space corrects it: grantpt() only asks the kernel.",
	    .remedy = "mount -o remount,gid=5,mode=620 /dev/pts",
	    .repairable = true,
	    .run = check_devpts_options_lost,
	},
	{
	    .id = "devpts-gid-mismatch",
	    .severity = SEVERITY_WARNING,
	    .message_id = "804a620704274c23ae177a977b5157b9",
	    .summary = "the serving devpts instance's gid= is not the tty group",
	    .explanation =
		"The devpts instance that serves /dev/ptmx has gid=N, but N is not the gid "
		"of group tty. New ptys belong to that group: its members can write to "
		"every terminal that says mesg y, and write and wall, which run setgid "
		"tty, cannot.",
	    .remedy = "mount -o remount,gid=5 /dev/pts",
	    .repairable = true,
	    .run = check_devpts_gid_mismatch,
	},
	{
	    .id = "devpts-overmount",
	    .severity = SEVERITY_WARNING,
	    .message_id = "e21ed20fd98349989c744ade7035adb3",
	    .summary = "devpts mounts are stacked on one mountpoint",
	    .explanation =
		"Two or more devpts mounts sit on one mountpoint; only the top one is "
		"reachable. This is the CentOS 6 pattern (the initramfs devpts is moved to "
		"/dev/pts, then mount -a mounts another on top) and Slackware 14.1's. Since "
		"Linux 4.7 each is a separate instance: ptys opened before the second "
		"mount live on the covered one.",
	    .remedy = "remove the second devpts mount at boot (fstab or init script); once "
		      "nothing holds the covered instance: umount /dev/pts (unmounts the top "
		      "only if it is the duplicate)",
	    .run = check_devpts_overmount,
	},
	{
	    .id = "devpts-orphan-in-use",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "ca664e673da14c99b72763f52aff2069",
	    .summary = "a covered devpts instance still has ptys held open",
	    .explanation =
		"A devpts instance that no path reaches any more still has ptys held open "
		"by processes. ptsname() on such a master returns /dev/pts/N, which now "
		"names a different pty (or none) on the visible instance: anything that "
		"chowns or opens by that name (pt_chown, grantpt, session loggers, "
		"utmp writers) acts on someone else's terminal.",
	    .remedy = "restart the listed processes (their sessions) so they allocate ptys on "
		      "the visible instance, then remove the duplicate devpts mount",
	    .run = check_devpts_orphan_in_use,
	},
	{
	    .id = "devpts-shared-instance",
	    .severity = SEVERITY_WARNING,
	    .message_id = "f64a918913134f71aa8279ab128899f7",
	    .summary = "a devpts mount outside /dev/pts shares the system instance (kernel < 4.7)",
	    .explanation =
		"Before Linux 4.7 every devpts mount made without newinstance is the same "
		"filesystem. A devpts mounted in a chroot or build root this way (as "
		"xen-create-image does) shares the system /dev/pts: any mount or remount "
		"there with other options resets the options of the system's ptys.",
	    .remedy = "umount the mount and mount it again with -o "
		      "newinstance,ptmxmode=0666,gid=5,mode=620 (and link ptmx -> pts/ptmx "
		      "there); then mount -o remount,gid=5,mode=620 /dev/pts",
	    .run = check_devpts_shared_instance,
	},
	{
	    .id = "devpts-foreign-defaults",
	    .severity = SEVERITY_INFO,
	    .message_id = "49badb95fcc74b6892ebf22359bd6ba9",
	    .summary = "a separate devpts instance runs with default options",
	    .explanation =
		"A devpts instance other than the one serving /dev/ptmx (for example in a "
		"chroot or build root) was mounted without gid=: ptys allocated through it "
		"get the creating process's group instead of tty.",
	    .remedy = "mount -o remount,gid=5,mode=620 on that mountpoint",
	    .run = check_devpts_foreign_defaults,
	},
	{
	    .id = "pty-slave-perms",
	    .severity = SEVERITY_WARNING,
	    .message_id = "6699b8f1149e421a9342b68a69ee9124",
	    .summary = "pty slaves exist with the wrong group or mode",
	    .explanation =
		"Slave nodes on the serving instance have a group other than tty or a mode "
		"other than 620/600: they were created while the devpts options were wrong. "
		"Fixing the mount options does not change existing slaves.",
	    .remedy = "chgrp tty /dev/pts/N && chmod 620 /dev/pts/N (for each listed slave)",
	    .repairable = true,
	    .run = check_pty_slave_perms,
	},
	{
	    .id = "pt-chown-setuid",
	    .severity = SEVERITY_CRITICAL,
	    .message_id = "eb78ac0787ca4b6f999be06a95eb3c85",
	    .summary = "a setuid-root pt_chown helper is installed",
	    .explanation =
		"glibc's grantpt helper pt_chown is installed setuid root. It trusts "
		"ptsname(); with several devpts instances (any user can mount one inside a "
		"user namespace) it can be tricked into chowning another user's pty "
		"(CVE-2013-2207). Critical when user namespaces are enabled, else a "
		"warning. Since Linux 2.6.29 devpts does its job; the helper is not needed.",
	    .remedy = "chmod u-s /usr/lib/pt_chown (or remove the package that ships it)",
	    .run = check_pt_chown_setuid,
	},
	{
	    .id = "pty-capacity",
	    .severity = SEVERITY_WARNING,
	    .message_id = "d0d9f8563ea342f6ad3a4a5fef9a4e57",
	    .summary = "ptys in use are near the limit",
	    .explanation =
		"The ptys in use reach 90% of what can still be allocated: kernel.pty.nr "
		"against kernel.pty.max (less kernel.pty.reserve for instances mounted "
		"outside the initial mount namespace), or an instance's max= against its "
		"own count. The next allocations fail with ENOSPC.",
	    .remedy = "sysctl -w kernel.pty.max=<larger> (and persist it in /etc/sysctl.d/), or "
		      "remount the instance with a larger max=",
	    .run = check_pty_capacity,
	},
	{
	    .id = "fstab-devpts-options",
	    .severity = SEVERITY_WARNING,
	    .message_id = "6251d54e166946aca8a6c1474a1c3a84",
	    .summary = "/etc/fstab mounts devpts without gid=tty and a safe mode",
	    .explanation =
		"/etc/fstab has a devpts entry whose options would not give gid=<tty gid> "
		"and mode 620 or 600. A later mount -a, a remount or the next boot applies "
		"them and the system's ptys lose their group or mode.",
	    .remedy = "change the entry to: devpts /dev/pts devpts gid=5,mode=620 0 0",
	    .run = check_fstab_devpts_options,
	},
	{
	    .id = "kernel-single-instance",
	    .severity = SEVERITY_INFO,
	    .message_id = "9bf06320265c47a6a1948aec3cf52433",
	    .summary = "the kernel shares one devpts instance between mounts (< 4.7)",
	    .explanation =
		"This kernel is older than 4.7: every devpts mount made without newinstance "
		"joins the single system instance, so a mount in a chroot changes the "
		"system's ptys. Mount extra devpts instances with newinstance.",
	    .remedy =
		"mount extra devpts instances with -o newinstance,ptmxmode=0666,gid=5,mode=620",
	    .run = check_kernel_single_instance,
	},
};

const size_t check_catalog_size = ELEMENTSOF(check_catalog);

const struct check_info *check_find(const char *id)
{
	for (size_t i = 0; i < check_catalog_size; i++)
		if (streq(check_catalog[i].id, id))
			return &check_catalog[i];
	return NULL;
}
