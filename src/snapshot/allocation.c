/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "snapshot/allocation.h"
#include "util/json-util.h"
#include "util/macro.h"
#include "util/string-table.h"
#include "util/string-util.h"

static const char *const alloc_step_table[_ALLOC_STEP_MAX] = {
	[ALLOC_STEP_OPEN_PTMX] = "open_ptmx",	[ALLOC_STEP_GRANTPT] = "grantpt",
	[ALLOC_STEP_UNLOCKPT] = "unlockpt",	[ALLOC_STEP_PTSNAME] = "ptsname",
	[ALLOC_STEP_OPEN_SLAVE] = "open_slave", [ALLOC_STEP_PEER] = "peer",
	[ALLOC_STEP_COMPARE] = "compare",
};
DEFINE_STRING_TABLE_LOOKUP(alloc_step, enum alloc_step);

static const char *const alloc_status_table[_ALLOC_STATUS_MAX] = {
	[ALLOC_PERFORMED] = NULL,
	[ALLOC_NOT_ROOT] = "not-root",
	[ALLOC_DISABLED] = "disabled",
	[ALLOC_NOT_RECORDED] = "not-in-snapshot",
	[ALLOC_INTERFERED] = "interfered",
	[ALLOC_SETUP_FAILED] = "setup-failed",
	[ALLOC_NOT_PTMX] = "not-ptmx",
	[ALLOC_SKIPPED] = "skipped",
	[ALLOC_NO_CAP_SETUID] = "no-cap-setuid",
	[ALLOC_NO_CAP_SETGID] = "no-cap-setgid",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(alloc_status, enum alloc_status);

/* A child was started (or was to be): its ids are known. */
static bool alloc_status_has_ids(enum alloc_status s)
{
	return s == ALLOC_PERFORMED || s == ALLOC_INTERFERED || s == ALLOC_SETUP_FAILED ||
	       s == ALLOC_NOT_PTMX;
}

static bool setup_step_known(const char *s)
{
	return streq(s, "start") || streq(s, "cgroup") || streq(s, "namespace") ||
	       streq(s, "root") || streq(s, "privileges");
}

bool alloc_probe_failed(const struct alloc_probe *p, enum alloc_step *step)
{
	if (p->status != ALLOC_PERFORMED || (!p->error && !p->mismatch) || p->n_steps == 0)
		return false;
	*step = (enum alloc_step)(p->n_steps - 1);
	return true;
}

bool alloc_probe_succeeded(const struct alloc_probe *p)
{
	return p->status == ALLOC_PERFORMED && !p->error && !p->mismatch &&
	       p->n_steps == _ALLOC_STEP_MAX;
}

const char *errno_name(int e)
{
	return e > 0 ? strerrorname_np(e) : NULL;
}

int errno_from_name(const char *name)
{
	for (int e = 1; e < 4096; e++) {
		const char *n = strerrorname_np(e);

		if (n && streq(n, name))
			return e;
	}
	return -EINVAL;
}

const char *alloc_probe_describe(const struct alloc_probe *p, char *buf, size_t size)
{
	static const char *const why[_ALLOC_STATUS_MAX] = {
		[ALLOC_NOT_ROOT] = "not root",
		[ALLOC_DISABLED] = "disabled (--no-probe, or [Probe] Enabled=no)",
		[ALLOC_NOT_RECORDED] = "the snapshot has no probe result",
		[ALLOC_INTERFERED] = "the probe child was stopped or killed by another process",
		[ALLOC_NOT_PTMX] = "/dev/ptmx is not the pty multiplexer (c 5:2): not opened",
		[ALLOC_SKIPPED] = "this run's probes had used their time",
		[ALLOC_NO_CAP_SETUID] = "no CAP_SETUID to run it as another user",
		[ALLOC_NO_CAP_SETGID] = "no CAP_SETGID to run it as another user",
	};
	enum alloc_step failed;

	if (p->status == ALLOC_SETUP_FAILED)
		snprintf(buf, size, "not performed: uid %u gid %u: %s failed with %s",
			 (unsigned)p->uid, (unsigned)p->gid, p->setup_step,
			 errno_name(p->error) ?: "an unknown error");
	else if (p->status != ALLOC_PERFORMED)
		snprintf(buf, size, "not performed: %s", why[p->status] ?: "?");
	else if (alloc_probe_failed(p, &failed) && p->mismatch)
		snprintf(
		    buf, size,
		    "uid %u gid %u: the slave opened by its name %s is another pty than the one "
		    "allocated",
		    (unsigned)p->uid, (unsigned)p->gid, p->ptsname);
	else if (alloc_probe_failed(p, &failed))
		snprintf(buf, size,
			 "uid %u gid %u failed to allocate a pty: %s%s%s%s failed with %s",
			 (unsigned)p->uid, (unsigned)p->gid, alloc_step_table[failed],
			 p->ptsname[0] ? " (" : "", p->ptsname, p->ptsname[0] ? ")" : "",
			 errno_name(p->error) ?: "an unknown error");
	else
		snprintf(buf, size, "uid %u gid %u got a working pty (%s%s)", (unsigned)p->uid,
			 (unsigned)p->gid, p->ptsname,
			 p->peer_error ? ", checked by its path: no TIOCGPTPEER here" : "");
	return buf;
}

json_object *errno_to_json(int e)
{
	json_object *o;

	if (!e)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "name", json_new_string_or_null(errno_name(e)));
	json_object_object_add(o, "number", json_object_new_int64(e));
	return o;
}

json_object *alloc_probe_to_json(const struct alloc_probe *p)
{
	json_object *o = json_object_new_object(), *steps = json_object_new_array();
	bool ids = alloc_status_has_ids(p->status);
	enum alloc_step failed;
	bool has_failed = alloc_probe_failed(p, &failed);

	json_object_object_add(o, "performed",
			       json_object_new_boolean(p->status == ALLOC_PERFORMED));
	json_object_object_add(o, "reason",
			       json_new_string_or_null(alloc_status_to_string(p->status)));
	json_object_object_add(o, "uid", ids ? json_object_new_int64(p->uid) : NULL);
	json_object_object_add(o, "gid", ids ? json_object_new_int64(p->gid) : NULL);
	for (unsigned i = 0; p->status == ALLOC_PERFORMED && i < p->n_steps; i++) {
		json_object *s = json_object_new_object();

		json_object_object_add(s, "step", json_object_new_string(alloc_step_table[i]));
		json_object_object_add(
		    s, "ok", json_object_new_boolean(!(has_failed && i == (unsigned)failed)));
		json_object_array_add(steps, s);
	}
	json_object_object_add(o, "steps", steps);
	json_object_object_add(
	    o, "failed_step", has_failed ? json_object_new_string(alloc_step_table[failed]) : NULL);
	json_object_object_add(o, "errno", errno_to_json(p->error));
	json_object_object_add(o, "ptsname",
			       p->ptsname[0] ? json_object_new_string(p->ptsname) : NULL);
	json_object_object_add(o, "slave_via",
			       p->status == ALLOC_PERFORMED && p->n_steps > ALLOC_STEP_PEER
				   ? json_object_new_string(p->peer_error ? "path" : "peer")
				   : NULL);
	json_object_object_add(o, "peer_errno", errno_to_json(p->peer_error));
	if (p->status == ALLOC_SETUP_FAILED)
		json_object_object_add(o, "setup_step", json_object_new_string(p->setup_step));
	return o;
}

static int load_errno_key(json_object *o, const char *where, const char *key, int need, int *ret,
			  struct load_error *err)
{
	json_object *e;
	const char *name;
	char w[64];
	long number;
	int r;

	r = json_get(o, where, key, json_type_object, need, &e, err);
	if (r < 0 || !e)
		return r;
	snprintf(w, sizeof(w), "%s.%s", where, key);
	if ((r = json_get_string(e, w, "name", JSON_REQUIRED, &name, err)) < 0 ||
	    (r = json_get_long(e, w, "number", 1, 4095, JSON_REQUIRED, &number, err)) < 0)
		return r;
	if (errno_from_name(name) != (int)number)
		return load_fail(err, "key '%s': name \"%s\" is not errno %ld", w, name, number);
	*ret = (int)number;
	return 0;
}

static int load_errno(json_object *o, const char *where, int *ret, struct load_error *err)
{
	return load_errno_key(o, where, "errno", JSON_NULLABLE, ret, err);
}

/* "slave_via" and "peer_errno" (optional: older snapshots have neither), and a probe of an older
 * ptsguard on a kernel without TIOCGPTPEER, whose peer step failed ENOTTY or EINVAL after the
 * slave opened by its name (as a pty slave): that is the slave reached by its path, no failure. */
static int load_slave_via(json_object *o, const char *where, struct alloc_probe *p,
			  struct load_error *err)
{
	const char *via = NULL;
	int r, peer_error = 0;
	bool old_unsupported;

	if ((r = json_get_string(o, where, "slave_via", JSON_OPTIONAL, &via, err)) < 0 ||
	    (r = load_errno_key(o, where, "peer_errno", JSON_OPTIONAL, &peer_error, err)) < 0)
		return r;
	old_unsupported = !via && !peer_error && p->n_steps == ALLOC_STEP_PEER + 1 &&
			  !p->mismatch && (p->error == ENOTTY || p->error == EINVAL);
	if (old_unsupported) {
		p->peer_error = p->error;
		p->error = 0;
		p->n_steps = _ALLOC_STEP_MAX;
		return 0;
	}
	if (via && (p->n_steps <= ALLOC_STEP_PEER || (!streq(via, "path") && !streq(via, "peer"))))
		return load_fail(err,
				 "key '%s.slave_via': \"peer\" or \"path\", once the peer step was "
				 "taken",
				 where);
	if ((via && streq(via, "path")) != (peer_error != 0) ||
	    (peer_error && peer_error != ENOTTY && peer_error != EINVAL))
		return load_fail(err,
				 "key '%s.peer_errno': ENOTTY or EINVAL exactly when slave_via is "
				 "\"path\"",
				 where);
	if (peer_error && p->n_steps == ALLOC_STEP_PEER + 1 && p->error)
		return load_fail(
		    err, "key '%s.failed_step': peer cannot fail with slave_via \"path\"", where);
	p->peer_error = peer_error;
	return 0;
}

int alloc_probe_from_json(json_object *o, const char *where, struct alloc_probe *ret,
			  struct load_error *err)
{
	struct alloc_probe p = { .index = -1 };
	const char *reason, *failed_step, *ptsname, *setup_step;
	json_object *steps;
	bool performed = false;
	long uid = 0, gid = 0;
	int r, failed = -1;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_bool(o, where, "performed", JSON_REQUIRED, &performed, err)) < 0 ||
	    (r = json_get_string(o, where, "reason", JSON_NULLABLE, &reason, err)) < 0 ||
	    (r = json_get(o, where, "steps", json_type_array, JSON_REQUIRED, &steps, err)) < 0 ||
	    (r = json_get_string(o, where, "failed_step", JSON_NULLABLE, &failed_step, err)) < 0 ||
	    (r = json_get_string(o, where, "ptsname", JSON_NULLABLE, &ptsname, err)) < 0 ||
	    (r = json_get_string(o, where, "setup_step", JSON_OPTIONAL, &setup_step, err)) < 0 ||
	    (r = load_errno(o, where, &p.error, err)) < 0)
		return r;

	if (performed != !reason)
		return load_fail(err, "key '%s.reason': %s", where,
				 performed ? "must be null when performed is true"
					   : "must say why when performed is false");
	if (reason) {
		p.status = _ALLOC_STATUS_MAX;
		for (int i = 1; i < _ALLOC_STATUS_MAX; i++)
			if (i != ALLOC_NOT_RECORDED && streq(reason, alloc_status_table[i]))
				p.status = i;
		if (p.status == _ALLOC_STATUS_MAX)
			return load_fail(
			    err,
			    "key '%s.reason': \"%s\" is not one of not-root, disabled, "
			    "interfered, setup-failed, not-ptmx, skipped, no-cap-setuid, "
			    "no-cap-setgid",
			    where, reason);
	}
	/* The ids are known once a child was started. */
	{
		int need = alloc_status_has_ids(p.status) ? JSON_REQUIRED : JSON_NULLABLE;

		if ((r = json_get_long(o, where, "uid", 0, UINT32_MAX - 1, need, &uid, err)) < 0 ||
		    (r = json_get_long(o, where, "gid", 0, UINT32_MAX - 1, need, &gid, err)) < 0)
			return r;
		if (need != JSON_REQUIRED &&
		    (json_object_object_get(o, "uid") || json_object_object_get(o, "gid")))
			return load_fail(err,
					 "key '%s': uid and gid must be null when reason is %s",
					 where, reason);
	}
	p.uid = (uid_t)uid;
	p.gid = (gid_t)gid;

	if (p.status == ALLOC_SETUP_FAILED) {
		if (!setup_step || !setup_step_known(setup_step))
			return load_fail(err,
					 "key '%s.setup_step': expected start, cgroup, namespace, "
					 "root or privileges when reason is setup-failed",
					 where);
		if (!p.error)
			return load_fail(
			    err, "key '%s.errno': required when reason is setup-failed", where);
		snprintf(p.setup_step, sizeof(p.setup_step), "%s", setup_step);
	} else if (setup_step)
		return load_fail(err, "key '%s.setup_step': only when reason is setup-failed",
				 where);

	if (p.status != ALLOC_PERFORMED) {
		if (json_object_array_length(steps) > 0 || failed_step || ptsname ||
		    (p.error && p.status != ALLOC_SETUP_FAILED))
			return load_fail(err,
					 "key '%s': steps, failed_step, errno and ptsname are for "
					 "a performed probe",
					 where);
		*ret = p;
		return 0;
	}

	/* The steps a program takes, in order, each passed but possibly the last. */
	p.n_steps = (unsigned)json_object_array_length(steps);
	if (p.n_steps == 0 || p.n_steps > _ALLOC_STEP_MAX)
		return load_fail(err, "key '%s.steps': expected 1 to %d steps", where,
				 _ALLOC_STEP_MAX);
	for (unsigned i = 0; i < p.n_steps; i++) {
		json_object *s = json_object_array_get_idx(steps, i);
		char w[64];
		const char *name;
		bool ok;

		snprintf(w, sizeof(w), "%s.steps[%u]", where, i);
		if (!json_object_is_type(s, json_type_object))
			return load_fail(err, "key '%s': expected an object", w);
		if ((r = json_get_string(s, w, "step", JSON_REQUIRED, &name, err)) < 0 ||
		    (r = json_get_bool(s, w, "ok", JSON_REQUIRED, &ok, err)) < 0)
			return r;
		if (alloc_step_from_string(name) != (int)i)
			return load_fail(err, "key '%s.step': expected \"%s\" here, not \"%s\"", w,
					 alloc_step_table[i], name);
		if (!ok && i + 1 != p.n_steps)
			return load_fail(err, "key '%s.ok': only the last step may fail", w);
		if (!ok)
			failed = (int)i;
	}
	if (failed < 0 && p.n_steps != _ALLOC_STEP_MAX)
		return load_fail(err, "key '%s.steps': the last step taken must have failed",
				 where);
	if ((failed < 0) != !failed_step ||
	    (failed_step && alloc_step_from_string(failed_step) != failed))
		return load_fail(err, "key '%s.failed_step': must name the step that failed",
				 where);
	if (failed == ALLOC_STEP_COMPARE) {
		if (p.error)
			return load_fail(err, "key '%s.errno': compare fails without an errno",
					 where);
		p.mismatch = true;
	} else if (failed >= 0 && !p.error)
		return load_fail(err, "key '%s.errno': required for the failed step %s", where,
				 failed_step);
	else if (failed < 0 && p.error)
		return load_fail(err, "key '%s.errno': must be null when no step failed", where);
	if (ptsname && (ptsname[0] != '/' || strlen(ptsname) >= sizeof(p.ptsname)))
		return load_fail(err, "key '%s.ptsname': expected an absolute path under %zu bytes",
				 where, sizeof(p.ptsname));
	if (ptsname)
		snprintf(p.ptsname, sizeof(p.ptsname), "%s", ptsname);
	if (!ptsname != (p.n_steps <= ALLOC_STEP_PTSNAME ||
			 (p.n_steps == ALLOC_STEP_PTSNAME + 1 && failed == ALLOC_STEP_PTSNAME)))
		return load_fail(err, "key '%s.ptsname': set exactly when the ptsname step passed",
				 where);
	r = load_slave_via(o, where, &p, err);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}
