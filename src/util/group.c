/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>

#include "util/group.h"
#include "util/limits.h"
#include "util/parse.h"
#include "util/string-util.h"

int group_lookup(const char *name, gid_t *ret)
{
	struct group grp, *res = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t size = GROUP_BUFFER_SIZE_INIT;
	unsigned gid;
	int r;

	if (parse_uint(name, &gid) == 0) {
		*ret = (gid_t)gid;
		return 0;
	}
	/* A group with many members does not fit a fixed buffer: grow it while the database says
	 * ERANGE. */
	for (;;) {
		free(buf);
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		r = getgrnam_r(name, &grp, buf, size, &res);
		if (r != ERANGE || size >= GROUP_BUFFER_SIZE_MAX)
			break;
		size *= 2;
	}
	/* glibc says "not found" in several ways (getgrnam_r(3)): an initramfs has no /etc/group
	 * at all (ENOENT). Anything else, a buffer still too small among them, is a failure. */
	if (r == 0 && !res)
		return -ESRCH;
	if (r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
		return -ESRCH;
	if (r != 0)
		return -r;
	*ret = res->gr_gid;
	return 0;
}

/* "nobody" as last looked up: every audit as root probes as that user unless told otherwise
 * (the daemon's, at each change of the mount table or container), and NSS reads nsswitch.conf
 * and the passwd file, or asks a directory service, each time. */
static struct {
	bool known;
	uid_t uid;
	gid_t gid;
} nobody;

void user_lookup_forget(void)
{
	nobody.known = false;
}

static int user_lookup_nss(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);
	unsigned v;

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	if (parse_uint(name, &v) == 0) {
		*uid = v;
		*gid = v;
		return 0;
	}
	if (streq(name, PROBE_USER_DEFAULT)) { /* no NSS entry: the conventional overflow id */
		*uid = NOBODY_ID_FALLBACK;
		*gid = NOBODY_ID_FALLBACK;
		return 0;
	}
	return -ESRCH;
}

int user_lookup(const char *name, uid_t *uid, gid_t *gid)
{
	bool is_nobody = streq(name, PROBE_USER_DEFAULT);
	int r;

	if (is_nobody && nobody.known) {
		*uid = nobody.uid;
		*gid = nobody.gid;
		return 0;
	}
	r = user_lookup_nss(name, uid, gid);
	if (r >= 0 && is_nobody) {
		nobody.uid = *uid;
		nobody.gid = *gid;
		nobody.known = true;
	}
	return r;
}
