/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check functions behind the catalog table; only catalog.c and checks.c see them. */
#pragma once

#include "checks/checks.h"

#define CHECK(name)                                                                                \
	int check_##name(const struct check_context *ctx, const struct check_info *info,           \
			 struct findings *out)

CHECK(ptmx_missing);
CHECK(ptmx_not_device);
CHECK(ptmx_mode);
CHECK(ptmx_no_devpts);
CHECK(ptmx_locked);
CHECK(pts_covered);
CHECK(devpts_options_lost);
CHECK(devpts_gid_mismatch);
CHECK(devpts_overmount);
CHECK(devpts_orphan_in_use);
CHECK(devpts_shared_instance);
CHECK(devpts_foreign_defaults);
CHECK(pty_slave_perms);
CHECK(pt_chown_setuid);
CHECK(pty_capacity);
CHECK(fstab_devpts_options);
CHECK(kernel_single_instance);
