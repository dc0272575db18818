/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/namespace-audit.h"
#include "util/clock.h"

/* Told without a listing: a process of our own namespace below another root. */
static bool chroot_of_ours(const struct namespace_target *t)
{
	return t->mntns_ours && !t->root_is_ours;
}

int namespace_audit_open(struct namespace_audit *a, pid_t pid, uint64_t mntns,
			 const struct namespace_root *root, int pidfd)
{
	int r;

	*a = (struct namespace_audit){ 0 };
	r = namespace_target_open(pid, &a->target);
	if (r == -ENOENT)
		r = -ESRCH;
	if (r >= 0 && mntns && a->target->mntns != mntns)
		r = -ESRCH;
	/* Chrooted elsewhere since the walk (or its pid reused): not the item listed. */
	if (r >= 0 && root &&
	    (a->target->root_dev != root->dev || a->target->root_ino != root->ino))
		r = -ESRCH;
	if (r >= 0)
		a->chroot = root ? root->chroot : chroot_of_ours(a->target);
	if (r >= 0 && pidfd >= 0 &&
	    poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 0) != 0)
		r = -ESRCH;
	if (r < 0)
		a->target = namespace_target_free(a->target);
	return r;
}

void namespace_audit_borrow(struct namespace_audit *a, struct namespace_target *t)
{
	*a = (struct namespace_audit){ .target = t, .borrowed = true, .chroot = chroot_of_ours(t) };
}

void namespace_audit_attribute(struct namespace_audit *a)
{
	if (a->attributed || !a->target)
		return;
	a->attributed = true;
	if (a->target->cgroup)
		(void)container_probe(a->target->cgroup, MACHINES_DIR, &a->container);
}

int namespace_audit_run(struct namespace_audit *a, struct audit_target *target,
			const struct config *c)
{
	int r;

	target->probe.ns = a->target;
	a->started = now_usec(CLOCK_MONOTONIC);
	r = pipeline_run(target, c, &a->result, &a->err);
	/* Whatever failed, a process that exited meanwhile took its namespace's files with it (an
	 * empty mountinfo, a root gone): gone, not an error. */
	if (r < 0 && r != -ENOMEM && namespace_target_check(a->target) < 0)
		r = -ESRCH;
	return r;
}

const char *namespace_audit_why(const struct namespace_audit *a, int r, char *buf, size_t size)
{
	if (r == -EINVAL && a->err.line > 0)
		snprintf(buf, size, "line %u of its mountinfo: %s", a->err.line, a->err.message);
	else if (a->err.message[0])
		snprintf(buf, size, "%s", a->err.message);
	else
		snprintf(buf, size, "%s", strerror(-r));
	return buf;
}

struct report_namespace namespace_audit_report(struct namespace_audit *a, unsigned pids_total)
{
	struct namespace_handle h;

	namespace_handle_of(a->target, &h);
	namespace_handle_format(&h, a->handle, sizeof(a->handle));
	return (struct report_namespace){
		.mntns = a->target->mntns,
		.pid = a->target->pid,
		.pids_total = pids_total,
		/* Unknown (unreadable): named by its process alone. */
		.root = a->chroot ? (a->target->root_path ?: "?") : NULL,
		.own = a->target->own,
		.target = a->handle,
		.container_manager = a->container.manager,
		.container_id = a->container.id,
		.container_name = a->container.name,
		.container_pod_uid = a->container.pod_uid,
		.report = {
			.snap = a->result.snap,
			.a = a->result.a,
			.findings = &a->result.findings,
			.source = "live",
			.generated_at = now_usec(CLOCK_REALTIME),
			.duration = (double)(now_usec(CLOCK_MONOTONIC) - a->started) / 1e6,
		},
	};
}

void namespace_audit_done(struct namespace_audit *a)
{
	audit_result_done(&a->result);
	container_done(&a->container);
	if (!a->borrowed)
		namespace_target_free(a->target);
	*a = (struct namespace_audit){ 0 };
}
