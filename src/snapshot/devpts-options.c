/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/devpts-options.h"
#include "snapshot/mountinfo.h"
#include "util/macro.h"
#include "util/parse.h"

void devpts_options_parse(const char *opts, struct devpts_options *ret)
{
	_cleanup_free_ char *gid = NULL, *uid = NULL, *mode = NULL, *ptmxmode = NULL, *max = NULL;
	unsigned v;

	*ret = (struct devpts_options){ .mode = 0600, .ptmxmode = 0000 };
	if (option_get(opts, "gid", &gid) && parse_uint(gid, &v) == 0) {
		ret->has_gid = true;
		ret->gid = v;
	}
	if (option_get(opts, "uid", &uid) && parse_uint(uid, &v) == 0) {
		ret->has_uid = true;
		ret->uid = v;
	}
	if (option_get(opts, "mode", &mode))
		(void)parse_mode(mode, &ret->mode);
	if (option_get(opts, "ptmxmode", &ptmxmode))
		(void)parse_mode(ptmxmode, &ret->ptmxmode);
	if (option_get(opts, "max", &max) && parse_uint(max, &v) == 0) {
		ret->has_max = true;
		ret->max = v;
	}
}

bool devpts_options_same(const struct devpts_options *x, const struct devpts_options *y)
{
	return x->has_gid == y->has_gid && (!x->has_gid || x->gid == y->gid) &&
	       x->has_uid == y->has_uid && (!x->has_uid || x->uid == y->uid) &&
	       (x->mode & 0777) == (y->mode & 0777) &&
	       (x->ptmxmode & 0777) == (y->ptmxmode & 0777) && x->has_max == y->has_max &&
	       (!x->has_max || x->max == y->max);
}

char *devpts_options_format(const struct devpts_options *o)
{
	char buf[160] = "", *p = buf;
	size_t left = sizeof(buf);

#define APPEND(...)                                                                                \
	do {                                                                                       \
		int _n = snprintf(p, left, "%s", p == buf ? "" : ",");                             \
		p += _n, left -= (size_t)_n;                                                       \
		_n = snprintf(p, left, __VA_ARGS__);                                               \
		p += _n, left -= (size_t)_n;                                                       \
	} while (0)
	if (o->has_uid)
		APPEND("uid=%u", (unsigned)o->uid);
	if (o->has_gid)
		APPEND("gid=%u", (unsigned)o->gid);
	APPEND("mode=%03o", (unsigned)(o->mode & 0777));
	if (o->ptmxmode & 0777)
		APPEND("ptmxmode=%03o", (unsigned)(o->ptmxmode & 0777));
	if (o->has_max)
		APPEND("max=%u", o->max);
#undef APPEND
	return strdup(buf);
}

size_t devpts_modes_healthy(const struct check_policy *policy, mode_t ret[static 2])
{
	if (policy && policy->pin_mode) {
		ret[0] = policy->mode & 0777;
		return 1;
	}
	ret[0] = 0620; /* glibc, dracut, initramfs-tools, runc, LXC, systemd before 258 */
	ret[1] = 0600; /* systemd 258: write(1) and wall(1) need mesg y */
	return 2;
}

bool devpts_mode_healthy(const struct check_policy *policy, mode_t mode)
{
	mode_t healthy[2];
	size_t n = devpts_modes_healthy(policy, healthy);

	for (size_t i = 0; i < n; i++)
		if ((mode & 0777) == healthy[i])
			return true;
	return false;
}

bool devpts_options_healthy(const struct check_policy *policy, const struct devpts_options *o,
			    gid_t tty_gid)
{
	return o->has_gid && o->gid == tty_gid && devpts_mode_healthy(policy, o->mode);
}

mode_t devpts_mode_wanted(const struct check_policy *policy, const struct devpts_options *now,
			  mode_t last_healthy)
{
	bool now_healthy = devpts_mode_healthy(policy, now->mode);

	if (policy && policy->pin_mode)
		return policy->mode & 0777;
	if (now_healthy && now->has_gid)
		return now->mode & 0777;
	if (last_healthy && devpts_mode_healthy(policy, last_healthy))
		return last_healthy & 0777;
	if (now_healthy)
		return now->mode & 0777;
	return DEVPTS_MODE_DEFAULT;
}

struct devpts_options devpts_options_target(const struct devpts_options *now,
					    const struct devpts_fix *fix)
{
	struct devpts_options t = *now;

	if (fix->owner) {
		t.has_gid = true;
		t.gid = fix->tty_gid;
		t.mode = devpts_mode_wanted(fix->policy, now, fix->last_healthy);
	}
	if (fix->ptmx)
		t.ptmxmode = 0666;
	return t;
}

void devpts_seen_healthy_note(struct devpts_seen_healthy *seen, const struct check_policy *policy,
			      dev_t dev, const struct devpts_options *o, gid_t tty_gid)
{
	if (devpts_options_healthy(policy, o, tty_gid))
		*seen = (struct devpts_seen_healthy){ .known = true,
						      .dev = dev,
						      .mode = o->mode & 0777 };
}

char *devpts_remount_command(const struct devpts_options *now, const struct devpts_fix *fix,
			     const char *mountpoint)
{
	struct devpts_options t = devpts_options_target(now, fix);
	_cleanup_free_ char *opts = devpts_options_format(&t);
	char *cmd;

	if (!opts || asprintf(&cmd, "mount -o remount,%s %s", opts, mountpoint) < 0)
		return NULL;
	return cmd;
}

char *devpts_fresh_options(const struct check_policy *policy, gid_t tty_gid, bool newinstance,
			   bool ptmx)
{
	/* A fresh instance has no mode of its own to keep: the rule's choice for "nothing known".
	 */
	struct devpts_options none = { .mode = 07777 };
	char *opts;

	if (asprintf(&opts, "%sgid=%u,mode=%03o%s", newinstance ? "newinstance," : "",
		     (unsigned)tty_gid, (unsigned)devpts_mode_wanted(policy, &none, 0),
		     ptmx ? ",ptmxmode=0666" : "") < 0)
		return NULL;
	return opts;
}
