/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The catalog: every check module in catalog order, and the run of them all. Ids, severities and
 * MESSAGE_IDs are a public contract (docs/checks.md): never rename or reuse one. A new check is
 * one module with its row, and one line in the list of src/meson.build, which gives this order.
 */
#include "checks/check.h"
#include "util/string-util.h"

#define CHECK_ROW(name) &check_##name,
const struct check_info *const check_catalog[] = { CHECK_LIST(CHECK_ROW) };
#undef CHECK_ROW

const size_t check_catalog_size = ELEMENTSOF(check_catalog);

const struct check_info *check_find(const char *id)
{
	for (size_t i = 0; i < check_catalog_size; i++)
		if (streq(check_catalog[i]->id, id))
			return check_catalog[i];
	return NULL;
}

int checks_run(const struct analysis *a, const struct check_policy *policy, struct findings *out)
{
	static const struct check_policy default_policy = { 0 };
	struct check_context ctx = {
		.a = a,
		.snap = a->snap,
		.policy = policy ?: &default_policy,
	};

	/* Those that judge the others' findings (the allocation probe's) come last. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < check_catalog_size; i++) {
			const struct check_info *c = check_catalog[i];
			int r;

			if (!c->run || c->transition || c->after_others != (pass == 1))
				continue;
			r = c->run(&ctx, c, out);
			if (r < 0)
				return r;
		}
	findings_seal(out);
	findings_sort(out);
	return 0;
}

const char *probe_prediction_describe(const struct probe_prediction *p, char *buf, size_t size)
{
	size_t n = 0, k = 0, steps = (size_t)__builtin_popcount(p->steps);

	buf[0] = 0;
	for (int s = 0; s < _ALLOC_STEP_MAX && n < size; s++)
		if (p->steps & ALLOC_STEP_BIT(s))
			n += (size_t)snprintf(buf + n, size - n, "%s%s",
					      k++ == 0	   ? ""
					      : k == steps ? " or "
							   : ", ",
					      alloc_step_to_string(s));
	for (size_t i = 0; p->steps && i < ELEMENTSOF(p->errnos) && n < size; i++) {
		if (!p->errnos[i])
			break;
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i == 0 ? " with " : " or ",
				      errno_name(p->errnos[i]));
	}
	if (p->steps && !p->errnos[0] && n < size)
		snprintf(buf + n, size - n, " (any errno)");
	return buf;
}

json_object *probe_prediction_to_json(const struct probe_prediction *p)
{
	json_object *o, *steps, *errnos;

	if (!p->steps)
		return NULL;
	o = json_object_new_object();
	steps = json_object_new_array();
	errnos = json_object_new_array();
	for (int s = 0; s < _ALLOC_STEP_MAX; s++)
		if (p->steps & ALLOC_STEP_BIT(s))
			json_object_array_add(steps,
					      json_object_new_string(alloc_step_to_string(s)));
	for (size_t i = 0; i < ELEMENTSOF(p->errnos) && p->errnos[i]; i++)
		json_object_array_add(errnos, json_object_new_string(errno_name(p->errnos[i])));
	json_object_object_add(o, "steps", steps);
	json_object_object_add(o, "errnos", errnos);
	return o;
}
