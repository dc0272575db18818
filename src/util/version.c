/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The release and the git description, filled in by meson's vcs_tag() into
 * version-vcs.h: its fallback, used outside a git checkout, is the release
 * itself, which is how a build without git is told apart.
 */
#include <string.h>

#include "config.h"
#include "util/version.h"
#include "version-vcs.h"

const char *version_release(void)
{
	return PACKAGE_VERSION;
}

const char *version_git(void)
{
	if (PTSGUARD_VCS_TAG[0] == '\0' || strcmp(PTSGUARD_VCS_TAG, PACKAGE_VERSION) == 0)
		return NULL;
	return PTSGUARD_VCS_TAG;
}
