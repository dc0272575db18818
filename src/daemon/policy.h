/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's decisions: when and whether its work runs, as pure functions of plain state and
 * the time. Nothing here reads a clock, arms a timer or touches the system: the caller passes
 * now (CLOCK_MONOTONIC) and carries out what comes back (daemon/timer.h arms the timers). The
 * pacing constants of the whole daemon are the ones below.
 *
 *   - Scheduling (struct schedule): the one coalescing and CPU-share rule of the host's audits,
 *     of the passes of audits of the other mount namespaces (daemon/nsfollow.h) and of the mount
 *     tracker's re-reads (daemon/mount-source.h). The first wake-up after a quiet window runs at
 *     once (at idle a change is seen one run after it); the wake-ups within the window after a
 *     run are handled by one run at its end, so a burst costs one run per window. The share: a
 *     run starts no sooner after the previous one than that one's cost allows within
 *     cpu_percent of one CPU, so a storm on a huge table costs bounded CPU.
 *   - The host's audit: whether its holder search is put off, and when the holder timer fires
 *     next; whether an audit that saw /dev/ptmx change is set aside; the output retry backoff.
 *   - Policy=safe: which findings are tried (each appearance once), which tries are forgotten,
 *     how many rounds one audit runs.
 *   - The namespace follower: the settle time of a namespace just found, the budget of one pass
 *     and where the next pass resumes; how many namespaces it follows and which it lets in.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checks/checks.h"
#include "config/conf.h"
#include "daemon/holder-cache.h"
#include "util/clock.h"

/* ---- the pacing constants ---- */

/* A timer may fire this late: the coalescing window is counted in milliseconds. */
#define TIMER_ACCURACY_USEC (1 * USEC_PER_MSEC)
/* A failed write of the state file or the textfile (a full or read-only /run) is retried by
 * auditing again: first after OUTPUT_RETRY_MIN_USEC, doubling up to OUTPUT_RETRY_MAX_USEC, until
 * both files are written; so they catch up with the system soon after space is freed. */
#define OUTPUT_RETRY_MIN_USEC (100ULL * USEC_PER_MSEC)
#define OUTPUT_RETRY_MAX_USEC (1ULL * USEC_PER_SEC)
/* Audits in a row set aside while /dev/ptmx keeps changing; the next one reports whatever. */
#define TORN_AUDITS_MAX 3
/* Repairs in one audit: each round tries what the previous one's re-audit found untried. */
#define REPAIR_ROUNDS_MAX 3
/* A namespace just found is audited once it is this old: a runtime builds a container's /dev
 * after creating its namespace, and the half-built state is nothing to report. */
#define NAMESPACE_SETTLE_USEC (500 * USEC_PER_MSEC)
/* One pass of audits runs at most this long before it lets the event loop (the host's audit,
 * the watchdog) go on; the rest waits for the next pass, which AuditCPUPercent= spaces. */
#define PASS_BUDGET_USEC (50 * USEC_PER_MSEC)
/* A namespace followed holds two descriptors (its process's pidfd, its mount table). This many
 * are kept for everything else, the host's audits first: whoever can make mount namespaces (any
 * user, where user namespaces are allowed) must not leave the daemon without descriptors. */
#define FDS_PER_NAMESPACE 2
#define FDS_RESERVED	  256
/* And never more than this many, whatever that limit: each costs the daemon about 10 KiB (its
 * findings, its processes, its container), and a host runs a few thousand containers at most. */
#define FOLLOWED_MAX 16384

/* ---- scheduling ---- */

/* What the host's audit is scheduled for: it decides how soon (schedule_flags()). */
enum audit_reason {
	REASON_MOUNT = 1 << 0,
	REASON_UDEV = 1 << 1,
	/* inotify: an entry of /dev/pts or /dev/pts itself; the mode or owner of / or /dev */
	REASON_PTS = 1 << 2,
	REASON_PTMX = 1 << 3, /* inotify: the ptmx entry of /dev */
	REASON_RELOAD = 1 << 4,
	REASON_HOLDERS = 1 << 5, /* the holder search of covered instances is too old, or partial */
	REASON_HELPER = 1 << 6,	 /* inotify: a pt_chown appeared, changed or went away */
	REASON_RETRY = 1 << 7,	 /* the last audit's output files could not be written */
	REASON_REPAIR = 1 << 8,	 /* repairs exposed more than the rounds of one audit could try */
};

/* One kind of work's history. Zero: it never ran. */
struct schedule {
	uint64_t last_start; /* when the last run started */
	uint64_t last_usec;  /* what the last finished run took */
	bool ran;
};

struct schedule_rule {
	uint64_t window_usec; /* CoalesceMSec= */
	unsigned cpu_percent; /* AuditCPUPercent= (1-100); 0: no share */
};

enum {
	/* Wait a whole window from now, even after a quiet one: what explains the change comes
	 * after it (udev sends its event once it has replaced or chmodded /dev/ptmx). */
	SCHEDULE_WAIT_WINDOW = 1 << 0,
	/* The last run's cost says nothing of the next one's (a read of the whole mount table
	 * before a read of the few mounts followed; the tracker's cheap re-reads). */
	SCHEDULE_COST_UNKNOWN = 1 << 1,
};

/* CoalesceMSec= and AuditCPUPercent= of c. */
struct schedule_rule schedule_rule_from_config(const struct config *c);
/* The flags of an audit of the host for reasons (enum audit_reason). */
unsigned schedule_flags(unsigned reasons);
/* When work woken at now runs: now or later. */
uint64_t schedule_due(const struct schedule *s, const struct schedule_rule *rule, uint64_t now,
		      unsigned flags);
/* A run starts at now; ends at now. */
void schedule_start(struct schedule *s, uint64_t now);
void schedule_end(struct schedule *s, uint64_t now);
/* How late a timer armed for due may fire: not at all when it is due now (the loop's next turn,
 * after the other sources ready with it, not up to the accuracy later, which an idle loop would
 * sleep through); else TIMER_ACCURACY_USEC. */
uint64_t timer_accuracy(uint64_t due, uint64_t now);

/* What to do with a one-shot timer. */
struct timer_decision {
	enum {
		TIMER_LEAVE, /* as it is */
		TIMER_OFF,
		TIMER_AT, /* fire once at usec */
	} action;
	uint64_t usec;
};

/* ---- the host's audit ---- */

/* The host's holder search. A search that would start where the findings kept were judged with
 * no holder (an instance covered where none was) is put off: that audit lists the processes, runs
 * no slice, and reports the search partial, so the change that asked for it (the overmount) is in
 * the state file and the journal without waiting for a read of every fd on the host. Nothing an
 * earlier search found can leave meanwhile, as there was none. The next audit, at once (as the
 * schedule spaces it), runs the search and writes again; two audits in a row never put it off,
 * so a table that changes at every audit still gets its search. */
struct holder_pacing {
	bool judged_without_holders; /* the findings kept were judged with no holder at all */
	bool put_off;		     /* the last audit put the search off */
};
/* Whether this audit puts the search off; search_started: one is under way already. */
bool holder_pacing_put_off(const struct holder_pacing *p, bool search_started);
/* The search ran (put_off: or was put off) with result (enum holder_fill): the pacing
 * updated, and what the holder timer does. A search under way goes on at once (the schedule
 * spaces it as AuditCPUPercent= says: no dispatch of the loop holds the watchdog for the whole);
 * a complete one is searched again when it expires, max_age from now. */
struct timer_decision holder_pacing_after(struct holder_pacing *p, bool put_off, int result,
					  uint64_t now, uint64_t max_age);

/* /dev/ptmx replaced while an audit looked (woken: the reasons read at its end): its node and
 * the probe's open may have met two different ones (the old node judged healthy, the new one
 * failing the probe: a critical pty-allocation-fails for one audit). Whether the audit is set
 * aside, the change asking for the next one, which reports instead; TORN_AUDITS_MAX in a row at
 * most (only root can replace it). *torn_audits counts them; reset when one is reported. */
bool torn_audit_set_aside(unsigned *torn_audits, unsigned woken);

/* The output retry interval after the files were written (failed: not both), from the current
 * one (0: none): 0 when written (the retry timer off), else OUTPUT_RETRY_MIN_USEC, doubling up
 * to OUTPUT_RETRY_MAX_USEC. */
uint64_t output_retry_next(uint64_t current, bool failed);

/* ---- Policy=safe ---- */

/*
 * Policy=safe tries each appearance of a repairable finding once: one that a repair cannot fix
 * is not tried again on every wake-up (the daemon's own remount is a mount event too). An
 * appearance is the finding's key (report/transitions.h) with its evidence: the same check on
 * the same mount with other evidence (one more slave with the wrong mode, other options) is a
 * new problem, tried in turn, whether it comes in an ordinary audit or in the re-audit after a
 * repair; one whose evidence did not change since its try is not. The tries of a key are kept
 * while a finding of that key stays (it may come back to evidence tried before: a slave of
 * root's left alone after a user's was repaired beside it).
 */
/* The appearance of f, a string to keep while f stays (free()); NULL: out of memory. */
char *finding_try_key(const struct finding *f);
/* Forget the tries (*tried, a string list of finding_try_key()) of the keys now has no finding
 * of: one that comes back is tried again. 0 or -ENOMEM. */
int repair_tries_prune(char ***tried, const struct findings *now);
/* The repairable findings of now not tried in their present appearance into *fresh (borrowed:
 * fresh->items is freed alone, before now), each recorded in *tried from here on. 0 or -ENOMEM
 * (fresh then empty). */
int repair_tries_select(char ***tried, const struct findings *now, struct findings *fresh);

/* After round (from 0) of one audit's repairs, which tried something or not: another round
 * (its re-audit may have found what the repair exposed), done, or done with another audit wanted
 * because REPAIR_ROUNDS_MAX ran out while each round still tried something. */
enum repair_round_next {
	REPAIR_ROUND_DONE,
	REPAIR_ROUND_AGAIN,
	REPAIR_ROUND_NEXT_AUDIT,
};
enum repair_round_next repair_round_next(unsigned round, bool tried);

/* ---- the namespace follower ---- */

/* One pass of audits of the namespaces that changed, round from where the last one stopped
 * (none waits behind others that keep changing). */
struct ns_pass {
	uint64_t start;	  /* when the pass started */
	uint64_t settled; /* the earliest a namespace left to settle may be audited; 0: none */
	size_t resume;	  /* where the next pass starts, when this one was cut */
	bool cut;	  /* its budget ran out with namespaces left */
};
enum ns_pass_step {
	NS_PASS_SKIP,  /* nothing changed in it */
	NS_PASS_WAIT,  /* too young: audited once it settled (ns_pass.settled) */
	NS_PASS_AUDIT, /* audit it now */
	NS_PASS_STOP,  /* the budget ran out: the pass ends here, the next resumes at it */
};
/* The index of the k-th namespace a pass visits of n, starting at resume. */
size_t ns_pass_index(size_t resume, size_t k, size_t n);
void ns_pass_begin(struct ns_pass *p, uint64_t now);
/* What the pass does with namespace i: dirty (something changed in it), found at found; now is
 * the time as the pass reaches it. */
enum ns_pass_step ns_pass_next(struct ns_pass *p, size_t i, bool dirty, uint64_t found,
			       uint64_t now);

/* How many namespaces to follow with nofile open files allowed (UINT64_MAX: no limit):
 * FOLLOWED_MAX, or what the limit leaves room for with FDS_RESERVED kept. */
size_t follow_limit(uint64_t nofile);
/* Whether a namespace new to the follower is followed, n of at most max followed already: yes;
 * at the limit, one made by a process privileged in our user namespace takes the place of one
 * made in a user namespace (whoever makes namespaces of their own cannot crowd out the
 * containers of the host's runtimes), if there is one; else no. */
enum follow_new {
	FOLLOW_NEW_YES,
	FOLLOW_NEW_IN_PLACE, /* let go of one not privileged to make room; none: not followed */
	FOLLOW_NEW_NO,
};
enum follow_new follow_new(size_t n, size_t max, bool privileged);
