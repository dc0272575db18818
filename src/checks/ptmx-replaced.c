/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"

const struct check_info check_ptmx_replaced = {
	.id = "ptmx-replaced",
	.severity = SEVERITY_WARNING,
	.message_id = "a9b5a84bff1340ffa085b24201afb144",
	.summary = "/dev/ptmx changed kind or target",
	.explanation = "The daemon saw /dev/ptmx change between a character node, a symlink, a "
		       "bind mount or nothing, or change its target. udev replacing a pts/ptmx "
		       "symlink with a device node, or a container runtime replacing the host's "
		       "node with a symlink (runc#80), silently moves every new pty to another "
		       "devpts instance. The evidence holds the state before and after and the "
		       "udev event seen with the change.",
	.remedy = "restore the intended /dev/ptmx (for a host: mknod -m 0666 /dev/ptmx c 5 "
		  "2) and find what replaced it in the journal around the time shown",
	.transition = true,
};
