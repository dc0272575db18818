/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "snapshot/idmap.h"
#include "util/string-util.h"

static int pt_chown_setuid(const struct check_context *ctx, const struct check_info *info,
			   struct findings *out)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_free_ char *paths = NULL;
	json_object *helpers = NULL, *ev;
	enum severity sev;
	struct finding *f;

	FOREACH_ARRAY (h, s->helpers, s->n_helpers) {
		/* In a user namespace that does not map the host's root, a root-owned helper shows
		 * the overflow id: it is setuid root all the same wherever the image runs with its
		 * root mapped (and here, where it is not, it cannot help: see the single-id rule).
		 */
		bool unmapped = s->uid_map && h->uid == IDMAP_OVERFLOW_ID;
		json_object *o;
		char *np;

		if (!(h->mode & 04000) || (h->uid != 0 && !unmapped))
			continue;
		if (!helpers)
			helpers = json_object_new_array();
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(h->path));
		json_object_object_add(o, "mode", json_new_mode(h->mode));
		json_object_object_add(o, "uid", json_object_new_int64(h->uid));
		if (unmapped)
			json_object_object_add(o, "owner_unmapped", json_object_new_boolean(true));
		json_object_array_add(helpers, o);
		if (asprintf(&np, "%s%s%s", paths ?: "", paths ? " " : "", h->path) < 0) {
			json_object_put(helpers);
			return -ENOMEM;
		}
		free(paths);
		paths = np;
	}
	if (!helpers)
		return 0;
	sev = s->user_namespaces_max > 0 ? SEVERITY_CRITICAL : SEVERITY_WARNING;
	ev = json_object_new_object();
	json_object_object_add(ev, "helpers", helpers);
	json_object_object_add(ev, "user_namespaces_max",
			       json_object_new_int64(s->user_namespaces_max));
	f = findings_add(out, info, sev, ev);
	if (!f ||
	    set_printf(&f->summary, "setuid-root pt_chown installed: %s%s", paths,
		       sev == SEVERITY_CRITICAL
			   ? " (user namespaces are enabled: CVE-2013-2207 is exploitable)"
			   : "") < 0 ||
	    set_printf(&f->remedy, "chmod u-s %s", paths) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_pt_chown_setuid = {
	.id = "pt-chown-setuid",
	.severity = SEVERITY_CRITICAL,
	.message_id = "eb78ac0787ca4b6f999be06a95eb3c85",
	.summary = "a setuid-root pt_chown helper is installed",
	.explanation = "glibc's grantpt helper pt_chown is installed setuid root. It trusts "
		       "ptsname(); with several devpts instances (any user can mount one inside a "
		       "user namespace) it can be tricked into chowning another user's pty "
		       "(CVE-2013-2207). Critical when user namespaces are enabled, else a "
		       "warning. Since Linux 2.6.29 devpts does its job; the helper is not needed.",
	.remedy = "chmod u-s /usr/lib/pt_chown (or remove the package that ships it)",
	.severity_note = "warning when user namespaces are off",
	.run = pt_chown_setuid,
};
