/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Build-time generator: writes documents derived from the check table so they
 * cannot drift from the code. `gen-docs man-checks` prints ptsguard-checks(7)
 * in scdoc; `gen-docs catalog` prints the journal catalog (one entry per
 * check, keyed by its MESSAGE_ID) that `journalctl -x` explains findings with;
 * `gen-docs man-page TEMPLATE` prints ptsguard(8) from man/ptsguard.8.scd with
 * its generated parts (the REPAIR list, the table of probe predictions) in
 * place of their placeholder lines; `gen-docs predictions-md` prints that table
 * for docs/checks.md, which the cli suite compares with the copy there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/checks.h"
#include "snapshot/allocation.h"
#include "util/string-util.h"
#include "util/fileio.h"

/* scdoc treats * _ and a leading \ specially; escape them in catalog text. */
static void scd(const char *s)
{
	for (; *s; s++) {
		if (*s == '*' || *s == '_' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

static int man_checks(void)
{
	printf(
	    "ptsguard-checks(7)\n\n"
	    "# NAME\n\n"
	    "ptsguard-checks - the checks ptsguard runs on devpts and /dev/ptmx\n\n"
	    "# DESCRIPTION\n\n"
	    "Every finding of *ptsguard*(8) carries one of the ids below. Ids, their meaning and "
	    "their default severity are a stable contract: suppression lists, alert rules and "
	    "the journal catalog key on them.\n\n"
	    "*critical*: pty allocation or pty permissions are broken right now, or a known "
	    "privilege escalation path is open. *warning*: a latent problem that breaks "
	    "something under a known, common trigger. *info*: a fact worth knowing that breaks "
	    "nothing by itself.\n\n"
	    "The healthy devpts options are *gid=*<tty gid> with a slave *mode=620* (the "
	    "traditional value) or *mode=600* (systemd 258's default, which makes *write*(1) "
	    "and *wall*(1) need *mesg y*).\n\n"
	    "# CHECKS\n\n");
	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = check_catalog[i];

		printf("## %s\n\n", c->id);
		printf("Severity: *%s*%s%s%s%s. MESSAGE\\_ID=%s\n\n",
		       severity_to_string(c->severity), c->severity_note ? " (" : "",
		       c->severity_note ?: "", c->severity_note ? ")" : "",
		       check_repairable(c) ? "; repairable by *ptsguard repair*" : "",
		       c->message_id);
		scd(c->summary);
		printf(".\n\n");
		scd(c->explanation);
		printf("\n\nRemedy: ");
		printf("_");
		scd(c->remedy);
		printf("_\n\n");
		if (c->transition)
			printf(
			    "Raised only by the daemon, when it sees the change; a one-shot audit "
			    "never reports it.\n\n");
	}
	printf("# SEE ALSO\n\n*ptsguard*(8), *pts*(4), *mount*(8), *journalctl*(1)\n");
	return 0;
}

/* Text wrapped at width columns. A line may not start with "-- " (that opens a catalog entry). */
static void wrapped(const char *text, size_t width)
{
	size_t col = 0;

	for (const char *p = text; *p;) {
		size_t w = strcspn(p, " ");

		if (col > 0 && col + 1 + w > width) {
			putchar('\n');
			col = 0;
		} else if (col > 0) {
			putchar(' ');
			col++;
		}
		if (col == 0 && strncmp(p, "-- ", 3) == 0)
			putchar(' ');
		fwrite(p, 1, w, stdout);
		col += w;
		p += w;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

static int catalog(void)
{
	printf("# SPDX-License-Identifier: GPL-2.0-or-later\n"
	       "# The ptsguard journal catalog, generated from the check table by gen-docs.\n"
	       "# Install into the catalog directory and run journalctl --update-catalog.\n");
	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = check_catalog[i];

		printf("\n-- %s\n", c->message_id);
		printf("Subject: %s\n", c->summary);
		printf("Defined-By: ptsguard\n");
		printf("Documentation: man:ptsguard-checks(7)\n");
		printf("Documentation: man:ptsguard(8)\n\n");
		/* Only fields every entry has: a missing one would spoil the substitution. */
		printf("ptsguard reports the check %s (default severity %s)\n"
		       "as @PTSGUARD_STATE@.\n\n",
		       c->id, severity_to_string(c->severity));
		wrapped(c->explanation, 76);
		printf("\nRemedy:\n");
		wrapped(c->remedy, 76);
		if (check_repairable(c))
			printf("\n\"ptsguard repair --check %s\" applies this remedy, and so does\n"
			       "the daemon with [Repair] Policy=safe.\n",
			       c->id);
		if (c->transition)
			printf("\nOnly the daemon raises this check, when it sees the change; the\n"
			       "evidence (PTSGUARD_EVIDENCE) shows the state before and after.\n");
	}
	return 0;
}

/* What repair does for each kind of repair a check's row may name (checks.h, enum repair_kind),
 * in scdoc, in the order of ptsguard(8)'s REPAIR list; a remount by what it fixes. Which checks
 * head each entry comes from the rows, so a new repairable check is listed where it belongs and
 * one of a kind described nowhere stops the build. */
static const struct repair_doc {
	enum repair_kind kind;
	bool owner, ptmx; /* REPAIR_REMOUNT: remount_owner, remount_ptmx */
	const char *text;
} repair_docs[] = {
	{ REPAIR_CREATE_PTMX, false, false,
	  "Create */dev/ptmx* as a character node 5:2, mode 0666, refused if a\n"
	  "file appeared there in the meantime. With *CreatePtmx=symlink*\n"
	  "(*ptsguard.conf*(5)) and a devpts at */dev/pts* mounted with\n"
	  "*ptmxmode=0666*, a symbolic link to _pts/ptmx_ instead, made only if\n"
	  "that node is still the instance's, mode 0666, when the link is made." },
	{ REPAIR_CHMOD_PTMX, false, false,
	  "*chmod 0666* the character node */dev/ptmx* leads to." },
	{ REPAIR_DEV_TTY, false, false,
	  "Create a missing */dev/tty* as a character node 5:0, mode 0666,\n"
	  "refused if a file appeared there in the meantime; or *chmod 0666* the\n"
	  "character node 5:0 that */dev/tty* leads to when only its mode is\n"
	  "wrong. Verified by opening */dev/tty* as the unprivileged user from a\n"
	  "session of its own whose controlling terminal is a new pty. Anything\n"
	  "else at */dev/tty* (a regular file, another device, a dangling link)\n"
	  "is left to a person: repair never deletes a file." },
	{ REPAIR_REMOUNT, true, false,
	  "Remount with *gid=* of the tty group and a mode chosen by the mode\n"
	  "rule below. The remedy in the report names the same options. Not in a\n"
	  "user namespace that maps no tty gid (*unshare -r*): *gid=* cannot be\n"
	  "mounted there, and the finding says so and is not repairable." },
	{ REPAIR_REMOUNT, false, true,
	  "Remount with *ptmxmode=666*. Not when */dev/ptmx* is a link on the\n"
	  "host's devtmpfs, where it replaced the kernel's character node: the\n"
	  "remedy restores the node instead, for a person to apply." },
	{ REPAIR_SLAVES, false, false,
	  "Set group tty, and the mode the serving instance gives new ptys by the\n"
	  "mode rule below (0600 with *Mode=600*, say), on each slave node with the\n"
	  "wrong group or mode that is not owned by root. Under a pinned *Mode=*, a\n"
	  "slave at the other of 620 and 600 has the wrong mode." },
	{ REPAIR_SESSION_OWNER, false, false,
	  "*chown* the root-owned slave to the real uid of the session it is the\n"
	  "controlling terminal of (group and mode stay), through a handle that\n"
	  "follows no link, only while it is still the slave probed (same inode,\n"
	  "owner and change time). Verified by opening it by name as that uid." },
};

static bool repair_doc_of(const struct repair_doc *d, const struct check_info *c)
{
	return c->repair == d->kind &&
	       (d->kind != REPAIR_REMOUNT ||
		(c->remount_owner == d->owner && c->remount_ptmx == d->ptmx));
}

static int repair_actions(void)
{
	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = check_catalog[i];
		bool described = false;

		for (size_t k = 0; k < ELEMENTSOF(repair_docs); k++)
			described = described || repair_doc_of(&repair_docs[k], c);
		if (check_repairable(c) && !described) {
			fprintf(stderr, "gen-docs: %s: its repair is described nowhere\n", c->id);
			return -EINVAL;
		}
	}
	for (size_t k = 0; k < ELEMENTSOF(repair_docs); k++) {
		size_t n = 0;

		for (size_t i = 0; i < check_catalog_size; i++)
			if (repair_doc_of(&repair_docs[k], check_catalog[i]))
				printf("%s*%s*", n++ ? ", " : "", check_catalog[i]->id);
		if (n == 0) {
			fprintf(stderr, "gen-docs: repair %zu describes no check's repair\n", k);
			return -EINVAL;
		}
		printf("\n\t");
		for (const char *t = repair_docs[k].text; *t; t++)
			if (*t == '\n')
				fputs("\n\t", stdout);
			else
				putchar(*t);
		printf("\n\n");
	}
	return 0;
}

/* The steps and errnos of a prediction as the table cells say them; code wraps each step. */
static void prediction_cells(const struct probe_prediction *p, const char *code, const char *sep)
{
	size_t k = 0;

	for (int s = 0; s < _ALLOC_STEP_MAX; s++)
		if (p->steps & ALLOC_STEP_BIT(s)) {
			printf("%s%s", k++ ? ", " : "", code);
			for (const char *n = alloc_step_to_string(s); *n; n++) {
				if (*n == '_' && code[0] == '*')
					putchar('\\');
				putchar(*n);
			}
			printf("%s", code);
		}
	printf("%s", sep);
	for (size_t i = 0; i < ELEMENTSOF(p->errnos) && p->errnos[i]; i++)
		printf("%s%s", i ? ", " : "", errno_name(p->errnos[i]));
	if (!p->errnos[0])
		printf("any");
}

static bool predicts_nothing(const struct check_info *c)
{
	return !c->predicts.steps && !c->after_others;
}

/* The checks that predict nothing, "`a`, `b`" (Markdown) or "*a*, *b*" (scdoc), malloc'ed. */
static char *others(const char *mark)
{
	char *s = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&s, &size);

	if (!f)
		return NULL;
	for (size_t i = 0, n = 0; i < check_catalog_size; i++)
		if (predicts_nothing(check_catalog[i]))
			fprintf(f, "%s%s%s%s", n++ ? ", " : "", mark, check_catalog[i]->id, mark);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

static int predictions_md(void)
{
	_cleanup_free_ char *rest = others("`"), *text = NULL;

	printf("| check | predicted failed step | errno | not predicted when |\n"
	       "|---|---|---|---|\n");
	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = check_catalog[i];

		if (!c->predicts.steps)
			continue;
		printf("| `%s` | ", c->id);
		prediction_cells(&c->predicts, "`", " | ");
		printf(" |%s%s |\n", c->predicts.unless ? " " : "", c->predicts.unless ?: "");
	}
	if (!rest || asprintf(&text,
			      "The other checks (%s) predict nothing about a new allocation; "
			      "`pty-allocation-fails` is the failure itself.",
			      rest) < 0)
		return -ENOMEM;
	putchar('\n');
	wrapped(text, 72);
	return 0;
}

/* Markdown `code` in scdoc: the backticks dropped, the rest escaped. */
static void scd_from_md(const char *s)
{
	for (; *s; s++) {
		if (*s == '`')
			continue;
		if (*s == '*' || *s == '_' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

static int predictions_scd(void)
{
	_cleanup_free_ char *rest = others("*");

	if (!rest)
		return -ENOMEM;
	printf("[[ *check*\n:< *predicted failed step*\n:< *errno*\n:< *not predicted when*\n");
	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = check_catalog[i];

		if (!c->predicts.steps)
			continue;
		printf("|  *%s*\n:  ", c->id);
		prediction_cells(&c->predicts, "*", "\n:  ");
		printf("\n:  ");
		scd_from_md(c->predicts.unless ?: "-");
		putchar('\n');
	}
	printf("\nThe other checks (");
	/* the ids are plain names: nothing in them scdoc would take for markup but the dashes */
	printf("%s) predict nothing about a new allocation; *pty-allocation-fails* is the failure "
	       "itself.\n",
	       rest);
	return 0;
}

/* man/ptsguard.8.scd with each placeholder line replaced by what it names. */
static int man_page(const char *template)
{
	_cleanup_free_ char *text = NULL;
	size_t size;
	int r = read_full_file(template, 4u << 20, &text, &size);
	unsigned seen = 0;

	if (r < 0) {
		fprintf(stderr, "gen-docs: %s: %s\n", template, strerror(-r));
		return r;
	}
	for (char *line = text, *end; line < text + size; line = end + 1) {
		end = memchr(line, '\n', (size_t)(text + size - line)) ?: text + size;
		*end = 0;
		if (streq(line, "@REPAIR_ACTIONS@")) {
			r = repair_actions();
			seen |= 1;
		} else if (streq(line, "@PROBE_PREDICTIONS@")) {
			r = predictions_scd();
			seen |= 2;
		} else
			r = printf("%s\n", line) < 0 ? -EIO : 0;
		if (r < 0)
			return r;
	}
	if (seen != 3) {
		fprintf(stderr,
			"gen-docs: %s lacks a placeholder line (@REPAIR_ACTIONS@, "
			"@PROBE_PREDICTIONS@)\n",
			template);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && streq(argv[1], "man-checks"))
		return man_checks();
	if (argc == 2 && streq(argv[1], "catalog"))
		return catalog();
	if (argc == 3 && streq(argv[1], "man-page"))
		return man_page(argv[2]) < 0 ? 1 : 0;
	if (argc == 2 && streq(argv[1], "predictions-md"))
		return predictions_md() < 0 ? 1 : 0;
	fprintf(stderr, "usage: gen-docs man-checks|catalog|predictions-md|man-page TEMPLATE\n");
	return 2;
}
