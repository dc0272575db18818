/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/redact.h"
#include "util/macro.h"
#include "util/string-util.h"

/* Distinct names seen so far, for one kind of placeholder: a name's placeholder is prefix-N,
 * N its place among them. */
struct names {
	const char *prefix;
	char **seen;
	size_t n;
};

static void names_done(struct names *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->seen[i]);
	free(m->seen);
}

/* Replace *name (malloc'ed, may be NULL) by its placeholder. */
static int redact_name(struct names *m, char **name)
{
	size_t i;
	char **grown, *p;

	if (!*name)
		return 0;
	for (i = 0; i < m->n; i++)
		if (streq(m->seen[i], *name))
			break;
	if (i == m->n) {
		grown = realloc(m->seen, sizeof(char *) * (m->n + 1));
		if (!grown)
			return -ENOMEM;
		m->seen = grown;
		m->seen[m->n] = strdup(*name);
		if (!m->seen[m->n])
			return -ENOMEM;
		m->n++;
	}
	if (asprintf(&p, "%s-%zu", m->prefix, i + 1) < 0)
		return -ENOMEM;
	free(*name);
	*name = p;
	return 0;
}

/* The n-th whitespace-separated field of a line (0-based): its start and length. */
static bool field(const char *line, size_t len, size_t n, size_t *start, size_t *flen)
{
	size_t i = 0;

	for (size_t k = 0;; k++) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i >= len)
			return false;
		*start = i;
		while (i < len && line[i] != ' ' && line[i] != '\t')
			i++;
		*flen = i - *start;
		if (k == n)
			return true;
	}
}

/* Rewrite text line by line: in a line whose type (field type_at, or the field after " - " for
 * mountinfo, type_at SIZE_MAX) network() says is a network file system, the source field becomes
 * its placeholder and, in mountinfo, the super options "redacted". */
static int redact_table(char **text, size_t *size, bool mountinfo, struct names *servers,
			bool (*network)(const char *fstype))
{
	char *out = NULL;
	size_t out_size = 0;
	FILE *f;
	int r = 0;

	if (!*text)
		return 0;
	f = open_memstream(&out, &out_size);
	if (!f)
		return -ENOMEM;
	for (const char *line = *text; *line && r >= 0;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), ts, tl, ss, sl, os = 0,
		       ol = 0;
		const char *base = line;
		size_t base_len = len;
		bool redact = false;

		if (mountinfo) {
			const char *dash = memmem(line, len, " - ", 3);

			if (dash) {
				base = dash + 3;
				base_len = len - (size_t)(base - line);
			}
			redact = dash && field(base, base_len, 0, &ts, &tl) &&
				 field(base, base_len, 1, &ss, &sl);
			if (redact && !field(base, base_len, 2, &os, &ol))
				os = ol = 0;
		} else if (line[0] != '#') {
			redact = field(line, len, 2, &ts, &tl) && field(line, len, 0, &ss, &sl);
		}
		if (redact) {
			_cleanup_free_ char *type = strndup(base + ts, tl);
			_cleanup_free_ char *src = strndup(base + ss, sl);

			if (!type || !src) {
				r = -ENOMEM;
				break;
			}
			redact = network(type);
			if (redact && (r = redact_name(servers, &src)) >= 0) {
				size_t pre = (size_t)(base - line) + ss;

				fwrite(line, 1, pre, f);
				fputs(src, f);
				if (mountinfo && ol) {
					fwrite(base + ss + sl, 1, os - ss - sl, f);
					fputs("redacted", f);
					fwrite(base + os + ol, 1, base_len - os - ol, f);
				} else
					fwrite(base + ss + sl, 1, base_len - ss - sl, f);
			}
		}
		if (!redact)
			fwrite(line, 1, len, f);
		if (nl)
			fputc('\n', f);
		line = nl ? nl + 1 : line + len;
	}
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(out);
		return r;
	}
	free(*text);
	*text = out;
	if (size)
		*size = out_size;
	return 0;
}

int snapshot_redact(struct snapshot *s, bool (*network)(const char *fstype))
{
	struct names procs = { .prefix = "process" }, users = { .prefix = "user" },
		     servers = { .prefix = "server" };
	char *host = strdup("host");
	int r = 0;

	if (!host)
		return -ENOMEM;
	free(s->hostname);
	s->hostname = host;
	FOREACH_ARRAY (h, s->holders, s->n_holders)
		if (r >= 0)
			r = redact_name(&procs, &h->comm);
	FOREACH_ARRAY (t, s->tty_sessions, s->n_tty_sessions)
		if (r >= 0 && (r = redact_name(&procs, &t->leader_comm)) >= 0)
			r = redact_name(&procs, &t->holder_comm);
	FOREACH_ARRAY (m, s->tty_members, s->n_tty_members)
		if (r >= 0)
			r = redact_name(&users, &m->name);
	if (r >= 0)
		r = redact_table(&s->mountinfo, &s->mountinfo_size, true, &servers, network);
	if (r >= 0)
		r = redact_table(&s->fstab, NULL, false, &servers, network);
	names_done(&procs);
	names_done(&users);
	names_done(&servers);
	return r;
}
