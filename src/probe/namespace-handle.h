/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What pins a listed target for a later `repair --namespace`: its mount namespace (the inode
 * number listings print), its root directory (device and inode) and its process's start time
 * (clock ticks after boot). A pid alone names whatever process has that number when the command
 * runs: one reused by a process of the host, or a chroot's process gone back to its old root,
 * would be repaired in the listed one's place. All three together are the process listed, in the
 * place it was listed.
 *
 * The text form, printed by the listings (text and JSON) and given to repair --target:
 *
 *	mntns:MNTNS,root:DEV:INO,start:TICKS
 *
 * each number decimal (DEV as stat(2)'s st_dev, what `stat -c %d` prints). Pure but for
 * namespace_handle_of(), which reads nothing either (the target holds it all).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct namespace_target;

struct namespace_handle {
	uint64_t mntns;
	uint64_t root_dev, root_ino;
	uint64_t start_time;
};

/* Enough for the text of any handle, with its NUL. */
#define NAMESPACE_HANDLE_MAX 112

void namespace_handle_of(const struct namespace_target *t, struct namespace_handle *ret);
/* The text form into buf (NAMESPACE_HANDLE_MAX bytes). */
void namespace_handle_format(const struct namespace_handle *h, char *buf, size_t size);
/* The text form, strictly: the three keys in that order, decimal numbers, nothing else.
 * 0 or -EINVAL. */
int namespace_handle_parse(const char *s, struct namespace_handle *ret);
/* NULL when now is the handle want, else what differs first, for a person ("its start time
 * is 123, not 456"), written into buf. */
const char *namespace_handle_differs(const struct namespace_handle *want,
				     const struct namespace_handle *now, char *buf, size_t size);
