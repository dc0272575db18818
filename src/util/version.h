/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which ptsguard this is: the release from meson.build, and, for a binary
 * built from a git checkout, what `git describe` said at build time. Both are
 * constant strings; version_git() is NULL when the build had no git.
 */
#pragma once

const char *version_release(void);
const char *version_git(void);
