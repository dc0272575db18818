/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The check catalog and the findings it produces. Each check is one module (src/checks/<id>.c)
 * that holds all it knows: its catalog row (id, severity, texts, MESSAGE_ID), its check function,
 * the remedy it writes, the repair it allows and any journal fields of its own. catalog.c lists
 * the modules in catalog order; the CLI, the man page, the journal catalog, the JSON output and
 * repair all read the rows, and nothing outside src/checks compares a check's id. Check
 * functions are pure: analysis in, findings out.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "analysis/analysis.h"

struct json_emit;

enum severity {
	SEVERITY_INFO,
	SEVERITY_WARNING,
	SEVERITY_CRITICAL,
	_SEVERITY_MAX,
};

const char *severity_to_string(enum severity s);
int severity_from_string(const char *s);

/* What repair may do about a check's findings (docs/checks.md, Repair). The repair module
 * carries each kind out; a check names its kind in its row. */
enum repair_kind {
	REPAIR_NONE,	      /* the remedy is for a person */
	REPAIR_REMOUNT,	      /* remount the serving instance: owner (gid, mode) and ptmxmode */
	REPAIR_CREATE_PTMX,   /* create the missing /dev/ptmx (node, or pts/ptmx link) */
	REPAIR_CHMOD_PTMX,    /* /dev/ptmx to 0666 */
	REPAIR_SLAVES,	      /* group tty and a healthy mode on slaves a user owns */
	REPAIR_DEV_TTY,	      /* create a missing /dev/tty (c 5:0, 0666), or chmod it 0666 */
	REPAIR_SESSION_OWNER, /* chown a root-owned slave to the user of its session */
	_REPAIR_KIND_MAX,
};

struct finding {
	const struct check_info *check;
	enum severity severity;
	char *summary;	  /* one line, specific to this host */
	char *remedy;	  /* exact command(s) for a person, or NULL */
	char *mountpoint; /* where it applies, or NULL */
	unsigned *mount_ids;
	size_t n_mount_ids;
	dev_t *devices;
	size_t n_devices;
	/* The evidence, a JSON object: while the check that made the finding may still add to it
	 * (until the next finding is added), a json-c object; then, sealed, its compact text in
	 * evidence_text, and evidence is NULL. An object of four keys is about a kilobyte of
	 * json-c's hash table, its text about a tenth of that. Read it with the finding_evidence*()
	 * functions below, which take either. */
	json_object *evidence;
	char *evidence_text;
	/* The check's repair cannot work here (a gid= the user namespace cannot name), or the
	 * remedy holds no command at all: it is for a person to read. */
	bool manual;
	/* The check's row predicts an allocation probe failure, but this finding does not (a
	 * devpts mode that still lets the owner open the slave). */
	bool predicts_nothing;
	/* pty-allocation-fails: the warning whose finding predicted the failure (its evidence says
	 * "predicted_by"), or NULL. */
	const struct check_info *predicted_by;
	/* Fields its journal entries carry besides the common ones, "KEY=value", NULL-terminated;
	 * or NULL. One allocation holding the strings too: free() releases it. */
	char **journal_fields;
};

struct findings {
	struct finding *items;
	size_t n_items, allocated;
};

struct check_context {
	const struct analysis *a;
	const struct snapshot *snap;
	const struct check_policy *policy;
};

/* What a check's findings say the allocation probe (snapshot/allocation.h) meets: a failure at
 * one of steps (ALLOC_STEP_BIT()) with one of errnos (0-terminated; none: any errno). gen-docs
 * prints the table of them all for ptsguard(8) and docs/checks.md, "The allocation probe". */
struct probe_prediction {
	unsigned steps;
	int errnos[4];
	/* When a finding of the check predicts nothing after all (predicts_nothing), in words for
	 * the docs (Markdown: `code` allowed); NULL when it always predicts. */
	const char *unless;
};

typedef int (*check_fn)(const struct check_context *ctx, const struct check_info *info,
			struct findings *out);

struct check_info {
	const char *id;
	enum severity severity;
	const char *message_id; /* 32 hex digits, the journal catalog key */
	const char *summary;
	const char *explanation;
	const char *remedy;
	const char *severity_note; /* when the severity depends on the host, how; or NULL */
	enum repair_kind repair;
	/* A remount for this check fixes the instance's owner (gid=, mode=) or its ptmxmode=. */
	bool remount_owner, remount_ptmx;
	bool transition; /* raised by the daemon on a change, never by a one-shot audit */
	struct probe_prediction predicts; /* none: steps 0 */
	bool after_others; /* run after every other check, with their findings in out */
	check_fn run;	   /* NULL for a transition: its module has its own entry point */
};

static inline bool check_repairable(const struct check_info *c)
{
	return c->repair != REPAIR_NONE;
}

static inline bool finding_repairable(const struct finding *f)
{
	return check_repairable(f->check) && !f->manual;
}

/* "open_ptmx with EACCES", "ptsname, open_slave or compare (any errno)": for explain and the
 * docs; "" when it predicts nothing. Returns buf. */
const char *probe_prediction_describe(const struct probe_prediction *p, char *buf, size_t size);
json_object *probe_prediction_to_json(const struct probe_prediction *p);

/* Every check, in catalog order (the order of `ptsguard checks` and of the man page). */
extern const struct check_info *const check_catalog[];
extern const size_t check_catalog_size;
const struct check_info *check_find(const char *id);

/* Run every check; findings come out sorted (severity, then id, then first mount id). */
int checks_run(const struct analysis *a, const struct check_policy *policy, struct findings *out);

/* Add a finding; takes ownership of evidence (also on failure). */
struct finding *findings_add(struct findings *f, const struct check_info *info,
			     enum severity severity, json_object *evidence);
int finding_add_mount(struct finding *f, unsigned mount_id, dev_t dev);
/* Add key to f's evidence, sealed or not; takes v. 0 or -ENOMEM. */
int finding_evidence_add(struct finding *f, const char *key, json_object *v);
/* Whether f's evidence has key (a name JSON writes as it is: no quote, backslash or control
 * character), as json_object_object_get_ex(); *ret is its value, a new reference (NULL: null or
 * absent). */
bool finding_evidence_get(const struct finding *f, const char *key, json_object **ret);
/* f's evidence as compact JSON text, newly allocated, or NULL (out of memory). */
char *finding_evidence_text(const struct finding *f);
/* f's evidence as the value of key in what e describes. */
void finding_emit_evidence(const struct finding *f, struct json_emit *e, const char *key);
/* Seal every finding's evidence (checks_run() does, once the checks are done). */
void findings_seal(struct findings *f);

/* Identity across audits. A finding is the same one when its key matches: the check, its
 * mountpoint and its first mount id. One with the same key is still a new occurrence when its
 * severity changed, or, for a check raised on a change (check_info.transition), when what the
 * thing changed to (its evidence's "after") differs. Nothing else in the evidence matters. */
/* "check<TAB>mountpoint<TAB>first mount id": malloc'ed, or NULL on OOM. */
char *finding_key(const struct finding *f);
/* Are x and y, whose keys match, the same occurrence? */
bool finding_same_occurrence(const struct finding *x, const struct finding *y);
/* "check/severity " for every finding in order; malloc'ed, NULL on OOM. */
char *findings_signature(const struct findings *f);
/* "No findings", or "Findings: N critical, N warning, N info"; malloc'ed, NULL on OOM. */
char *findings_status_text(const struct findings *f);
void findings_sort(struct findings *f);
/* Drop (and free) findings below min. */
void findings_filter(struct findings *f, enum severity min);
/* Drop (and free) the findings keep() says no to, keeping the order of the others. */
void findings_keep(struct findings *f, bool (*keep)(const struct finding *i, void *userdata),
		   void *userdata);
void findings_done(struct findings *f);
enum severity findings_worst(const struct findings *f, bool *any);
