/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "probe/namespace.h"
#include "probe/tty-members.h"
#include "util/alloc.h"
#include "util/limits.h"
#include "util/macro.h"
#include "util/parse.h"

static int add_member(struct snapshot *s, const char *name, size_t len, bool uid_known, uid_t uid)
{
	struct tty_member *m;

	if (len == 0)
		return 0;
	if (GROW(s->tty_members, s->allocated_tty_members, s->n_tty_members + 1) < 0)
		return -ENOMEM;
	m = &s->tty_members[s->n_tty_members];
	*m = (struct tty_member){ .uid_known = uid_known, .uid = uid };
	m->name = strndup(name, len);
	if (!m->name)
		return -ENOMEM;
	s->n_tty_members++;
	return 0;
}

/* The uid of user name through NSS. */
static bool user_uid(const char *name, uid_t *ret)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return false;
	*ret = res->pw_uid;
	return true;
}

static int members_nss(struct snapshot *s)
{
	struct group grp, *res = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t size = GROUP_BUFFER_SIZE_INIT;
	int r;

	for (;;) {
		free(buf);
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		r = getgrgid_r(s->tty_gid, &grp, buf, size, &res);
		if (r != ERANGE || size >= GROUP_BUFFER_SIZE_MAX)
			break;
		size *= 2;
	}
	if (r != 0)
		return 0; /* unknown: the database could not be read */
	s->tty_members_known = true;
	for (char **m = res ? res->gr_mem : NULL; m && *m; m++) {
		uid_t uid = 0;
		bool known = user_uid(*m, &uid);

		r = add_member(s, *m, strlen(*m), known, uid);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "name:password:gid:member,member" lines; the first whose gid is the tty gid. */
static int members_text(const char *text, struct snapshot *s)
{
	s->tty_members_known = true;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *f[4] = { line };
		size_t k = 1;
		unsigned gid;
		char num[16];

		for (const char *p = line; p < line + n && k < 4; p++)
			if (*p == ':')
				f[k++] = p + 1;
		if (k == 4 && (size_t)(f[3] - 1 - f[2]) < sizeof(num)) {
			memcpy(num, f[2], (size_t)(f[3] - 1 - f[2]));
			num[f[3] - 1 - f[2]] = 0;
			if (parse_uint(num, &gid) == 0 && gid == s->tty_gid) {
				for (const char *m = f[3], *end = line + n; m < end;) {
					const char *comma = memchr(m, ',', (size_t)(end - m));
					size_t len =
					    comma ? (size_t)(comma - m) : (size_t)(end - m);
					int r = add_member(s, m, len, false, 0);

					if (r < 0)
						return r;
					m += len + 1;
				}
				return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

int probe_tty_members(const struct ns_file *group, struct snapshot *s)
{
	if (!group)
		return members_nss(s);
	if (group->error < 0 || !group->text)
		return 0;
	return members_text(group->text, s);
}
