/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The filters of a command (--min-severity, --check, --ignore) applied to its findings. */
#include "report/report.h"
#include "util/macro.h"

size_t check_catalog_index(const struct check_info *c)
{
	for (size_t k = 0; k < check_catalog_size; k++)
		if (check_catalog[k] == c)
			return k;
	return check_catalog_size;
}

struct filter_pass {
	const struct report_filter *filter;
	size_t *hidden;
	bool *hidden_checks;
};

static bool filter_keeps(const struct finding *i, void *userdata)
{
	struct filter_pass *p = userdata;
	size_t k = check_catalog_index(i->check);
	bool excluded = p->filter->excluded && k < check_catalog_size && p->filter->excluded[k];

	if (!excluded && i->severity >= p->filter->min_severity)
		return true;
	p->hidden[i->severity]++;
	if (p->hidden_checks && k < check_catalog_size)
		p->hidden_checks[k] = true;
	return false;
}

void report_filter_apply(const struct report_filter *filter, struct findings *f,
			 size_t hidden[static _SEVERITY_MAX], bool *hidden_checks)
{
	struct filter_pass p = { .filter = filter,
				 .hidden = hidden,
				 .hidden_checks = hidden_checks };

	findings_keep(f, filter_keeps, &p);
}
