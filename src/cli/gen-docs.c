/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Build-time generator: writes documents derived from the check table so they
 * cannot drift from the code. `gen-docs man-checks` prints ptsguard-checks(7)
 * in scdoc; `gen-docs catalog` prints the journal catalog (one entry per
 * check, keyed by its MESSAGE_ID) that `journalctl -x` explains findings with.
 */
#include <stdio.h>
#include <string.h>

#include "checks/checks.h"
#include "util/string-util.h"

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

/* Catalog text: wrapped at 76 columns. A line may not start with "-- " (that opens an entry). */
static void catalog_wrapped(const char *text)
{
	size_t col = 0;

	for (const char *p = text; *p;) {
		size_t w = strcspn(p, " ");

		if (col > 0 && col + 1 + w > 76) {
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
		catalog_wrapped(c->explanation);
		printf("\nRemedy:\n");
		catalog_wrapped(c->remedy);
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

int main(int argc, char **argv)
{
	if (argc == 2 && streq(argv[1], "man-checks"))
		return man_checks();
	if (argc == 2 && streq(argv[1], "catalog"))
		return catalog();
	fprintf(stderr, "usage: gen-docs man-checks|catalog\n");
	return 2;
}
