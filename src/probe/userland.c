/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe/namespace.h"
#include "probe/userland.h"
#include "util/macro.h"

/* Where distributions keep libc.so.6: RHEL and SUSE in lib64, Debian by triplet, the rest in
 * lib; /usr first, the merged layout's real place. */
static const char *const libc_paths[] = {
	"/usr/lib64/libc.so.6",
	"/lib64/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/aarch64-linux-gnu/libc.so.6",
	"/lib/aarch64-linux-gnu/libc.so.6",
	"/usr/lib/i386-linux-gnu/libc.so.6",
	"/lib/i386-linux-gnu/libc.so.6",
	"/usr/lib/libc.so.6",
	"/lib/libc.so.6",
};

/* The N of a target "libc-2.N.so" (a path's last component), or 0. */
static unsigned glibc_minor_of(const char *target)
{
	const char *base = strrchr(target, '/');
	unsigned major, minor;
	int n = 0;

	base = base ? base + 1 : target;
	if (sscanf(base, "libc-%u.%u.so%n", &major, &minor, &n) == 2 && n > 0 && !base[n] &&
	    major == 2)
		return minor;
	return 0;
}

int probe_userland(const struct namespace_target *ns, struct snapshot *s)
{
	for (size_t i = 0; i < ELEMENTSOF(libc_paths); i++) {
		const char *const *p = &libc_paths[i];
		_cleanup_free_ char *target = NULL;
		struct stat st;

		if (ns_lstat(ns, *p, &st, &target) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if (!target)
				continue;
			s->userland.glibc_minor = glibc_minor_of(target);
			if (asprintf(&s->userland.libc, "%s -> %s", *p, target) < 0) {
				s->userland.libc = NULL;
				return -ENOMEM;
			}
			return 0;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		s->userland.libc = strdup(*p);
		return s->userland.libc ? 0 : -ENOMEM;
	}
	return 0;
}
