/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probe/namespace.h"
#include "probe/ptmx-route.h"
#include "probe/slave-copies.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/path.h"

int probe_slave_copies(const struct namespace_target *ns, struct snapshot *s,
		       const struct analysis *a)
{
	_cleanup_close_ int fd = -EBADF;
	struct dir_reader d;
	const char *name;
	int r;

	fd = ns_open(ns, "/dev", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0)
		return 0;
	d = (struct dir_reader){ .fd = fd };
	while ((r = dir_reader_next(&d, &name)) > 0) {
		_cleanup_free_ char *p = NULL;
		struct stat st;

		if (d.type != DT_CHR && d.type != DT_UNKNOWN)
			continue;
		p = path_join("/dev", name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		/* The entries of /dev resolved in its directory, kept open by the probe's scope. */
		if (ns_lstat(ns, p, &st, NULL) < 0 || !S_ISCHR(st.st_mode) ||
		    major(st.st_rdev) < PTY_SLAVE_MAJOR_FIRST ||
		    major(st.st_rdev) > PTY_SLAVE_MAJOR_LAST ||
		    analysis_find_instance(a, st.st_dev))
			continue;
		r = probe_add_node(ns, s, p);
		if (r < 0)
			break;
	}
	dir_reader_done(&d);
	return r == -ENOMEM ? r : 0;
}
