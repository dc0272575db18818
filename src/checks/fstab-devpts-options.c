/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"

/* Split one fstab line into at most 4 fields in place; returns the count. */
static int fstab_fields(char *line, char *field[4])
{
	int n = 0;

	for (char *p = line; *p && n < 4;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			break;
		field[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = 0;
	}
	return n;
}

static int fstab_devpts_options(const struct check_context *ctx, const struct check_info *info,
				struct findings *out)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_free_ char *copy = NULL;
	unsigned line = 0;
	char *save = NULL;

	if (!s->fstab)
		return 0;
	copy = strdup(s->fstab);
	if (!copy)
		return -ENOMEM;
	for (char *p = copy; p; p = save) {
		_cleanup_free_ char *gid = NULL, *mode = NULL;
		char *field[4], *nl = strchr(p, '\n');
		const char *opts;
		unsigned gid_v;
		mode_t mode_v = 0600;
		bool gid_ok, mode_ok, has_mode;
		char modes[8];
		struct finding *f;
		json_object *ev;

		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		line++;
		if (fstab_fields(p, field) < 3 || !streq(field[2], "devpts"))
			continue;
		unescape_octal(field[1]);
		opts = field[3] ?: "defaults";
		gid_ok = option_get(opts, "gid", &gid) && parse_uint(gid, &gid_v) == 0 &&
			 gid_v == s->tty_gid;
		has_mode = option_get(opts, "mode", &mode);
		if (has_mode && parse_mode(mode, &mode_v) < 0)
			mode_v = 07777;
		mode_ok = devpts_mode_healthy(ctx->policy, mode_v);
		if (gid_ok && mode_ok)
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "file", json_object_new_string("/etc/fstab"));
		json_object_object_add(ev, "line", json_object_new_int64(line));
		json_object_object_add(ev, "mountpoint", json_object_new_string(field[1]));
		json_object_object_add(ev, "options", json_object_new_string(opts));
		f = findings_add(out, info, info->severity, ev);
		if (!f ||
		    set_printf(&f->summary,
			       "/etc/fstab line %u mounts devpts on %s with \"%s\": %s%s%s%s", line,
			       field[1], opts, gid_ok ? "" : "no gid=tty",
			       !gid_ok && !mode_ok ? ", " : "", mode_ok ? "" : "no mode=",
			       mode_ok ? "" : check_healthy_modes(ctx->policy, modes)) < 0 ||
		    set_printf(&f->remedy,
			       "edit /etc/fstab line %u to: devpts %s devpts gid=%u,mode=%03o 0 0",
			       line, field[1], (unsigned)s->tty_gid,
			       /* no mode= at all: name the traditional mode, not the default */
			       (unsigned)devpts_mode_wanted(ctx->policy, has_mode ? mode_v : 07777,
							    0)) < 0 ||
		    set_printf(&f->mountpoint, "%s", field[1]) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_fstab_devpts_options = {
	.id = "fstab-devpts-options",
	.severity = SEVERITY_WARNING,
	.message_id = "6251d54e166946aca8a6c1474a1c3a84",
	.summary = "/etc/fstab mounts devpts without gid=tty and a safe mode",
	.explanation = "/etc/fstab has a devpts entry whose options would not give gid=<tty gid> "
		       "and mode 620 or 600. A later mount -a, a remount or the next boot applies "
		       "them and the system's ptys lose their group or mode.",
	.remedy = "change the entry to: devpts /dev/pts devpts gid=5,mode=620 0 0",
	.run = fstab_devpts_options,
};
