/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/boot.h"
#include "report/stack-picture.h"
#include "util/escape.h"
#include "util/string-util.h"
#include "util/parse.h"

#define ANSI_BOLD  "\033[1m"
#define ANSI_RESET "\033[0m"

/* A picture stays a few lines: the layers past these are counted, not drawn. */
#define LAYERS_MAX	   12
#define CHAIN_MAX	   64 /* mounts walked down one stack (hostile tables stack thousands) */
#define HOLDERS_SHOWN	   4  /* holders named on a layer; the rest counted */
#define NAMED_MOUNTS_MAX   8  /* mounts of one finding looked at */
#define INSTANCE_SCAN_MAX  4096
#define FINDING_PLACES_MAX 4

static bool is_devpts(const struct mount_entry *e)
{
	return streq(e->fstype, "devpts");
}

/* "held by pid 812 (sshd) pts/0, ...": the holders the snapshot found on dev. For a devpts no
 * path reaches, when the search looked and found none, says so: nothing keeps it. */
static void write_holders(FILE *f, const struct snapshot *s, const struct mount_entry *e,
			  bool reachable, unsigned indent)
{
	size_t n = 0;

	FOREACH_ARRAY (h, s->holders, s->n_holders) {
		if (h->dev != e->dev)
			continue;
		if (n == 0)
			fprintf(f, "%*sheld by ", (int)indent, "");
		if (n < HOLDERS_SHOWN) {
			fprintf(f, "%spid %d (", n ? ", " : "", (int)h->pid);
			fputs_escaped(h->comm ?: "?", f);
			fprintf(f, ") pts/%u", h->index);
		}
		n++;
	}
	if (n > HOLDERS_SHOWN)
		fprintf(f, ", and %zu more", n - HOLDERS_SHOWN);
	if (n > 0 && s->holders_progress.partial)
		fputs(" (the search is not complete)", f);
	if (n > 0)
		fputc('\n', f);
	else if (!reachable && s->holders_scanned && !s->holders_progress.partial &&
		 s->holders_skipped == 0)
		fprintf(f, "%*sno pty held on it\n", (int)indent, "");
}

static void write_layer(FILE *f, const struct analysis *a, size_t m, unsigned number,
			unsigned indent, bool color)
{
	const struct snapshot *s = a->snap;
	const struct mount_entry *e = analysis_mount(a, m);
	const char *state;
	char dev[24];

	if (a->reachable[m])
		state = "reachable";
	else if (a->stacked_on[m] != NO_MOUNT)
		state = "covered";
	else
		state = "hidden";
	fprintf(f, "%*s%u mount %u ", (int)indent, "", number, e->id);
	fputs_escaped(e->fstype, f);
	fprintf(f, " %s ", format_devnum(e->dev, dev));
	fputs_escaped(e->super_options, f);
	fprintf(f, " [%s]", state);
	if (is_devpts(e)) {
		if (snapshot_is_host_instance(s, e->dev))
			fputs(" (the host's instance)", f);
		if (initramfs_instance(s, e->dev))
			fputs(" (from the initramfs)", f);
		if (a->serving && a->serving->dev == e->dev)
			fprintf(f, " %s<- %s%s", color ? ANSI_BOLD : "", PTMX_PATH,
				color ? ANSI_RESET : "");
	}
	fputc('\n', f);
	if (is_devpts(e))
		write_holders(f, s, e, a->reachable[m], indent + 4);
}

/* The stack whose top is top, bottom first, into out (at most CHAIN_MAX); its length. */
static size_t chain_down(const struct analysis *a, size_t top, size_t out[static CHAIN_MAX])
{
	const struct mount_table *t = a->snap->mounts;
	size_t n = 0, cur = top;

	while (cur != NO_MOUNT && n < CHAIN_MAX) {
		size_t p = a->parent[cur];

		out[n++] = cur;
		if (p == NO_MOUNT || !streq(t->entries[p].mountpoint, t->entries[top].mountpoint) ||
		    a->stacked_on[p] != cur)
			break;
		cur = p;
	}
	for (size_t i = 0; i < n / 2; i++) {
		size_t x = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = x;
	}
	return n;
}

int stack_picture_draw(FILE *f, const struct analysis *a, const char *mountpoint, unsigned indent,
		       bool color)
{
	const struct mount_table *t = a->snap->mounts;
	unsigned number = 0, not_drawn = 0;

	fprintf(f, "%*sstack at ", (int)indent, "");
	fputs_escaped(mountpoint, f);
	fputs(", bottom to top:\n", f);
	/* Every stack at this path: first those no path reaches (the old /dev/pts under a new
	 * /dev), then the one that is reached, so the lines read from the oldest layer up. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < t->n_entries; i++) {
			size_t chain[CHAIN_MAX], n;

			if (a->stacked_on[i] != NO_MOUNT || a->reachable[i] != (pass == 1) ||
			    !streq(t->entries[i].mountpoint, mountpoint))
				continue;
			n = chain_down(a, i, chain);
			for (size_t k = 0; k < n; k++) {
				number++;
				if (number > LAYERS_MAX) {
					not_drawn++;
					continue;
				}
				write_layer(f, a, chain[k], number, indent + 2, color);
			}
			if (!a->reachable[i] && number <= LAYERS_MAX) {
				const struct mount_entry *c = analysis_mount(a, a->covered_by[i]);

				if (c) {
					fprintf(f, "%*shidden by mount %u, ", (int)indent + 4, "",
						c->id);
					fputs_escaped(c->fstype, f);
					fputs(" on ", f);
					fputs_escaped(c->mountpoint, f);
					fputc('\n', f);
				}
			}
		}
	if (number == 0)
		fprintf(f, "%*snothing is mounted there\n", (int)indent + 2, "");
	if (not_drawn > 0)
		fprintf(f, "%*s(%u more layer%s not drawn)\n", (int)indent + 2, "", not_drawn,
			not_drawn == 1 ? "" : "s");
	return ferror(f) ? -EIO : 0;
}

static bool has_id(const struct finding *fi, unsigned id)
{
	FOREACH_ARRAY (i, fi->mount_ids, fi->n_mount_ids)
		if (*i == id)
			return true;
	return false;
}

/* The devpts mounts the finding names (the mounts of its instances with its mount ids), at most
 * NAMED_MOUNTS_MAX; how many. */
static size_t named_mounts(const struct analysis *a, const struct finding *fi,
			   size_t out[static NAMED_MOUNTS_MAX])
{
	size_t n = 0;

	FOREACH_ARRAY (d, fi->devices, fi->n_devices) {
		const struct instance *in = analysis_find_instance(a, *d);

		if (!in)
			continue;
		for (size_t k = 0; k < in->n_mounts && k < INSTANCE_SCAN_MAX; k++)
			if (has_id(fi, analysis_mount(a, in->mounts[k])->id)) {
				if (n == NAMED_MOUNTS_MAX)
					return n;
				out[n++] = in->mounts[k];
			}
	}
	return n;
}

/* /dev/ptmx allocates on an instance that is not the one at /dev/pts beside it. */
static bool ptmx_routed_elsewhere(const struct analysis *a)
{
	size_t at_pts;

	if (!a->serving)
		return false;
	at_pts = analysis_mount_at(a, PTS_PATH);
	return at_pts == NO_MOUNT || !is_devpts(analysis_mount(a, at_pts)) ||
	       analysis_mount(a, at_pts)->dev != a->serving->dev;
}

static bool drawn_already(const struct stack_pictures *drawn, const char *mp)
{
	for (size_t i = 0; i < drawn->n; i++)
		if (streq(drawn->drawn[i], mp))
			return true;
	return false;
}

static void add_place(const char *places[static FINDING_PLACES_MAX], size_t *n, const char *mp)
{
	for (size_t i = 0; i < *n; i++)
		if (streq(places[i], mp))
			return;
	if (*n < FINDING_PLACES_MAX)
		places[(*n)++] = mp;
}

int stack_picture_write(FILE *f, const struct analysis *a, const struct finding *fi,
			struct stack_pictures *drawn, bool color)
{
	size_t named[NAMED_MOUNTS_MAX], n_named, n_places = 0, done = 0;
	const char *places[FINDING_PLACES_MAX];
	bool several = false, unreached = false, host = false, routed = false;

	n_named = named_mounts(a, fi, named);
	if (n_named == 0)
		return 0;
	for (size_t k = 0; k < n_named; k++) {
		const struct mount_entry *e = analysis_mount(a, named[k]);

		several = several || e->dev != analysis_mount(a, named[0])->dev;
		unreached = unreached || !a->reachable[named[k]];
		host = host || snapshot_is_host_instance(a->snap, e->dev);
		add_place(places, &n_places, e->mountpoint);
	}
	/* A finding about /dev/ptmx itself, when it leads away from /dev/pts: both places. */
	if (fi->mountpoint && streq(fi->mountpoint, PTMX_PATH) && ptmx_routed_elsewhere(a)) {
		routed = true;
		add_place(places, &n_places, PTS_PATH);
	}
	if (!several && !unreached && !host && !routed)
		return 0;
	for (size_t k = 0; k < n_places; k++) {
		if (drawn_already(drawn, places[k]) || drawn->n >= STACK_PICTURES_MAX)
			continue;
		drawn->drawn[drawn->n++] = places[k];
		if (stack_picture_draw(f, a, places[k], 4, color) < 0)
			return -EIO;
		done++;
	}
	return (int)done;
}
