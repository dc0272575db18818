/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

/*
 * A namespace audit only (the snapshot names the namespace and the host's serving instance): a
 * container given the host's /dev or /dev/pts by bind allocates on the host's own instance.
 * Device numbers of devpts instances are the kernel's, the same seen from every namespace, so
 * the namespace's serving instance is the host's exactly when the devices are equal.
 *
 * A namespace that also has the host's root directory as its own, in the host's user namespace,
 * is no container: a systemd service's sandbox (PrivateTmp=, ProtectSystem=, PrivateDevices=,
 * which binds the host's /dev/pts into its private /dev on purpose) or a plain unshare -m. It
 * sees the host's whole tree, terminals included, as the host does: a fact (info), not a leak.
 * A bubblewrap sandbox is in a user namespace of its own and stays a warning.
 */
static bool host_view(const struct snapshot *s)
{
	return s->ns->root_is_host && snapshot_in_host_userns(s);
}

static int devpts_host_instance(const struct check_context *ctx, const struct check_info *info,
				struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot_namespace *ns = a->snap->ns;
	const struct mount_entry *e = analysis_serving_mount(a);
	_cleanup_free_ char *opts = NULL;
	json_object *ev, *host;
	struct finding *f;
	char dev[24];

	if (!a->serving || !snapshot_is_host_instance(a->snap, a->serving->dev))
		return 0;
	ev = check_evidence_at(e, check_serving_mountpoint(a), a->serving->dev);
	json_object_object_add(ev, "root", e ? json_object_new_string(e->root) : NULL);
	json_object_object_add(ev, "mntns", json_object_new_int64((int64_t)ns->mntns));
	json_object_object_add(ev, "root_is_host", json_object_new_boolean(host_view(a->snap)));
	host = json_object_new_object();
	json_object_object_add(host, "mntns", json_object_new_int64((int64_t)ns->host.mntns));
	json_object_object_add(host, "mount_id", json_object_new_int64(ns->host.mount_id));
	json_object_object_add(host, "mountpoint", json_new_string_or_null(ns->host.mountpoint));
	json_object_object_add(ev, "host_mount", host);
	if (host_view(a->snap)) {
		f = findings_add(out, info, SEVERITY_INFO, ev);
		if (!f || finding_add_mount(f, check_serving_mount_id(a), a->serving->dev) < 0 ||
		    set_printf(
			&f->summary,
			"this namespace allocates its ptys on the host's own devpts instance "
			"%s at %s, and has the host's root and user namespace: a sandboxed "
			"service or a plain unshare -m, which sees the host's terminals as "
			"the host does",
			format_devnum(a->serving->dev, dev), check_serving_mountpoint(a)) < 0 ||
		    set_printf(&f->remedy,
			       "nothing to do for a service's sandbox (PrivateDevices= binds the "
			       "host's /dev/pts on purpose); a container meant to be apart from "
			       "the host needs a root and a devpts instance of its own") < 0)
			return -ENOMEM;
		f->manual = true; /* no command in it: the text report points to none */
	} else {
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, check_serving_mount_id(a), a->serving->dev) < 0 ||
		    set_printf(
			&f->summary,
			"this namespace allocates its ptys on the host's own devpts instance "
			"%s (bound at %s from the host's %s): it sees the host's terminals "
			"and its ptys appear on the host",
			format_devnum(a->serving->dev, dev), check_serving_mountpoint(a),
			ns->host.mountpoint ?: "?") < 0 ||
		    !(opts = devpts_fresh_options(ctx->policy, ctx->snap->tty_gid, true, true)) ||
		    set_printf(
			&f->remedy,
			"give the namespace its own devpts instance: mount -t devpts -o %s "
			"devpts /dev/pts and ln -sf pts/ptmx /dev/ptmx inside it "
			"(docker/podman: drop -v /dev:/dev or -v /dev/pts; bubblewrap: --dev "
			"/dev instead of --dev-bind /dev /dev)",
			opts) < 0)
			return -ENOMEM;
	}
	if (set_printf(&f->mountpoint, "%s", check_serving_mountpoint(a)) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_devpts_host_instance = {
	.id = "devpts-host-instance",
	.severity = SEVERITY_WARNING,
	.severity_note =
	    "info for a namespace in the host's user namespace whose root is the "
	    "host's own, as in a systemd service's sandbox or under a plain unshare -m: "
	    "it sees the host's terminals anyway",
	.message_id = "e4f0e67e0dce46708d327b10d263c04b",
	.summary =
	    "a mount namespace other than the host's is served by the host's devpts instance",
	.explanation =
	    "Namespace audits only. The devpts instance that serves /dev/ptmx in this mount "
	    "namespace is the host's own: the container or sandbox was given the host's /dev or "
	    "/dev/pts by a bind mount (docker or podman -v /dev:/dev, bubblewrap --dev-bind /dev "
	    "/dev). Its processes see every terminal of the host under /dev/pts, and as root or "
	    "as members of group tty can open them; the ptys it allocates appear on the host, "
	    "count against the host's limits, and outlive its view of them. A namespace that "
	    "also has the host's root directory and user namespace (a systemd service's sandbox, "
	    "a plain unshare -m) sees the host's whole tree anyway: there the finding is info.",
	.remedy = "give the namespace its own devpts instance: mount -t devpts -o "
		  "newinstance,gid=5,mode=620,ptmxmode=0666 devpts /dev/pts and ln -sf pts/ptmx "
		  "/dev/ptmx inside it (docker/podman: drop -v /dev:/dev or -v /dev/pts; "
		  "bubblewrap: --dev /dev instead of --dev-bind /dev /dev)",
	.run = devpts_host_instance,
};
