/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "config/conf-keys.h"
#include "config/conf.h"
#include "util/group.h"
#include "util/limits.h"
#include "util/parse.h"
#include "util/string-table.h"
#include "util/string-util.h"
#include "util/strv.h"

static const char *const repair_policy_table[_REPAIR_POLICY_MAX] = {
	[REPAIR_POLICY_OFF] = "off",
	[REPAIR_POLICY_SAFE] = "safe",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(repair_policy, enum repair_policy);

static const char *const mount_events_table[_MOUNT_EVENTS_MAX] = {
	[MOUNT_EVENTS_AUTO] = "auto",
	[MOUNT_EVENTS_FANOTIFY] = "fanotify",
	[MOUNT_EVENTS_MOUNTINFO] = "mountinfo",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(mount_events, enum mount_events);

static const char *const namespaces_audit_table[_NAMESPACES_AUDIT_MAX] = {
	[NAMESPACES_AUDIT_NONE] = "none",
	[NAMESPACES_AUDIT_ALL] = "all",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(namespaces_audit, enum namespaces_audit);

/* ---- value parsers: 0, or -EINVAL with a message for a person ---- */

_printf_(2, 3) static int bad(char msg[static 512], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, 512, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_blank(const char *v)
{
	return !v || v[strspn(v, " \t\n")] == 0;
}

/* A value that libeconf joined with the next line: a line without '=' followed the key. */
static int single_line(const char *v, char msg[static 512])
{
	if (v && strchr(v, '\n'))
		return bad(msg, "the value continues on the next line (a line without '=' follows "
				"it)");
	return 0;
}

static int parse_tty_group(struct config *c, const char *v, char msg[static 512])
{
	int r;

	if (single_line(v, msg) < 0)
		return -EINVAL;
	free(c->tty_group);
	c->tty_group = NULL;
	c->has_tty_gid = false;
	if (is_blank(v))
		return 0; /* back to the group "tty" of the group database */
	r = group_lookup(v, &c->tty_gid);
	if (r == -ESRCH)
		return bad(msg, "TTYGroup=%s: no such group", v);
	if (r < 0)
		return bad(msg, "TTYGroup=%s: cannot look the group up: %s", v, strerror(-r));
	c->tty_group = strdup(v);
	if (!c->tty_group)
		return -ENOMEM;
	c->has_tty_gid = true;
	return 0;
}

static int parse_mode_pin(struct config *c, const char *v, char msg[static 512])
{
	mode_t mode;

	if (single_line(v, msg) < 0)
		return -EINVAL;
	if (is_blank(v)) {
		c->check_policy = (struct check_policy){ 0 };
		return 0;
	}
	if (parse_mode(v, &mode) < 0 || !devpts_mode_healthy(NULL, mode))
		return bad(msg, "Mode=%s: expected 620 or 600 (or empty for either)", v);
	c->check_policy = (struct check_policy){ .pin_mode = true, .mode = mode };
	return 0;
}

/* One of names[0..n), as its index. */
static int parse_choice(const char *key, const char *const *names, int n, const char *v, int *ret,
			char msg[static 512])
{
	char expected[128] = "";

	if (single_line(v, msg) < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (streq(v, names[i])) {
			*ret = i;
			return 0;
		}
		snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected), "%s%s",
			 i == 0	      ? ""
			 : i == n - 1 ? " or "
				      : ", ",
			 names[i]);
	}
	return bad(msg, "%s=%s: expected %s", key, v ?: "", expected);
}

static int parse_repair_policy(struct config *c, const char *v, char msg[static 512])
{
	int p, r = parse_choice("Policy", repair_policy_table, _REPAIR_POLICY_MAX, v, &p, msg);

	if (r >= 0)
		c->repair_policy = p;
	return r;
}

static int parse_create_ptmx(struct config *c, const char *v, char msg[static 512])
{
	static const char *const names[] = { "node", "symlink" };
	int k, r = parse_choice("CreatePtmx", names, ELEMENTSOF(names), v, &k, msg);

	if (r >= 0)
		c->ptmx_symlink = k == 1;
	return r;
}

static int parse_mount_events(struct config *c, const char *v, char msg[static 512])
{
	int m, r = parse_choice("MountEvents", mount_events_table, _MOUNT_EVENTS_MAX, v, &m, msg);

	if (r >= 0)
		c->mount_events = m;
	return r;
}

/* Split a list on blanks (newlines too: libeconf joins continuation lines) and check each word;
 * the list replaces the one set before (an empty value clears it). */
static int parse_list(char ***list, const char *v, int (*check)(char *w, char *msg),
		      char msg[static 512])
{
	_cleanup_strv_free_ char **l = NULL;
	const char *p = v ?: "";
	int r;

	for (;;) {
		char word[CONFIG_LIST_ITEM_SIZE];
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n == 0)
			break;
		if (n >= sizeof(word))
			return bad(msg, "a list item is longer than %zu bytes", sizeof(word) - 1);
		memcpy(word, p, n);
		word[n] = 0;
		p += n;
		r = check(word, msg);
		if (r == 0)
			r = strv_extend(&l, word);
		if (r < 0)
			return r;
	}
	strv_free(*list);
	*list = TAKE_PTR(l);
	return 0;
}

static int check_id(char *w, char *msg)
{
	if (!check_find(w))
		return bad(msg, "Checks=: unknown check '%s' (see ptsguard checks)", w);
	return 0;
}

static int check_mountpoint(char *w, char *msg)
{
	size_t n = strlen(w);

	if (w[0] != '/')
		return bad(msg, "Mountpoints=: '%s' is not an absolute path", w);
	while (n > 1 && w[n - 1] == '/')
		w[--n] = 0;
	return 0;
}

static int parse_ignore_checks(struct config *c, const char *v, char msg[static 512])
{
	return parse_list(&c->ignore_checks, v, check_id, msg);
}

static int parse_ignore_mountpoints(struct config *c, const char *v, char msg[static 512])
{
	return parse_list(&c->ignore_mountpoints, v, check_mountpoint, msg);
}

/* A number from min to max; what names its unit in the error ("milliseconds"). */
static int parse_ranged(const char *key, const char *v, unsigned min, unsigned max,
			const char *what, unsigned *ret, char msg[static 512])
{
	if (single_line(v, msg) < 0)
		return -EINVAL;
	if (!v || parse_uint(v, ret) < 0 || *ret < min || *ret > max)
		return bad(msg, "%s=%s: expected %s from %u to %u", key, v ?: "", what, min, max);
	return 0;
}

static int parse_coalesce(struct config *c, const char *v, char msg[static 512])
{
	unsigned ms;
	int r =
	    parse_ranged("CoalesceMSec", v, 0, CONFIG_COALESCE_MSEC_MAX, "milliseconds", &ms, msg);

	if (r >= 0)
		c->coalesce_usec = (uint64_t)ms * 1000;
	return r;
}

static int parse_cpu_percent(struct config *c, const char *v, char msg[static 512])
{
	return parse_ranged("AuditCPUPercent", v, 1, 100, "a percentage", &c->audit_cpu_percent,
			    msg);
}

static int parse_holder_rescan(struct config *c, const char *v, char msg[static 512])
{
	unsigned sec;
	int r = parse_ranged("HolderRescanSec", v, 0, CONFIG_HOLDER_RESCAN_SEC_MAX, "seconds", &sec,
			     msg);

	if (r >= 0)
		c->holder_rescan_usec = (uint64_t)sec * 1000000;
	return r;
}

static int parse_namespaces_audit(struct config *c, const char *v, char msg[static 512])
{
	int a, r = parse_choice("Audit", namespaces_audit_table, _NAMESPACES_AUDIT_MAX, v, &a, msg);

	if (r >= 0)
		c->namespaces_audit = a;
	return r;
}

static int parse_namespaces_scan(struct config *c, const char *v, char msg[static 512])
{
	unsigned sec;
	int r = parse_ranged("ScanSec", v, 1, CONFIG_NAMESPACES_SCAN_SEC_MAX, "seconds", &sec, msg);

	if (r >= 0)
		c->namespaces_scan_usec = (uint64_t)sec * 1000000;
	return r;
}

static int parse_heartbeat(struct config *c, const char *v, char msg[static 512])
{
	unsigned sec;
	int r = parse_ranged("PrometheusHeartbeatSec", v, 1, CONFIG_HEARTBEAT_SEC_MAX, "seconds",
			     &sec, msg);

	if (r >= 0)
		c->prometheus_heartbeat_usec = (uint64_t)sec * 1000000;
	return r;
}

static int parse_probe_user(struct config *c, const char *v, char msg[static 512])
{
	int r;

	if (single_line(v, msg) < 0)
		return -EINVAL;
	free(c->probe_user);
	c->probe_user = NULL;
	c->has_probe_user = false;
	if (is_blank(v))
		return 0; /* back to "nobody" */
	r = user_lookup(v, &c->probe_uid, &c->probe_gid);
	if (r == -ESRCH)
		return bad(msg, "User=%s: no such user", v);
	if (r < 0)
		return bad(msg, "User=%s: cannot look the user up: %s", v, strerror(-r));
	if (c->probe_uid == 0 || c->probe_gid == 0)
		return bad(msg,
			   "User=%s: uid %u, gid %u: the probe must run as an unprivileged user "
			   "(uid and gid other than 0)",
			   v, (unsigned)c->probe_uid, (unsigned)c->probe_gid);
	c->probe_user = strdup(v);
	if (!c->probe_user)
		return -ENOMEM;
	c->has_probe_user = true;
	return 0;
}

static int parse_probe_enabled(struct config *c, const char *v, char msg[static 512])
{
	static const char *const names[] = { "no", "yes" };
	int k, r = parse_choice("Enabled", names, ELEMENTSOF(names), v, &k, msg);

	if (r >= 0)
		c->probe_enabled = k == 1;
	return r;
}

static int parse_path(char **field, const char *key, const char *v, char msg[static 512])
{
	char *copy = NULL;

	if (single_line(v, msg) < 0)
		return -EINVAL;
	if (!is_blank(v)) {
		if (v[0] != '/' || v[strlen(v) - 1] == '/')
			return bad(msg, "%s=%s: expected an absolute file name (or empty for none)",
				   key, v);
		copy = strdup(v);
		if (!copy)
			return -ENOMEM;
	}
	free(*field);
	*field = copy;
	return 0;
}

static int parse_state_file(struct config *c, const char *v, char msg[static 512])
{
	return parse_path(&c->state_file, "StateFile", v, msg);
}

static int parse_prometheus_file(struct config *c, const char *v, char msg[static 512])
{
	return parse_path(&c->prometheus_file, "PrometheusFile", v, msg);
}

/* ---- the values in effect, as the "Loaded configuration" line shows them ---- */

static void format_tty_group(const struct config *c, FILE *f)
{
	fputs(c->tty_group ?: TTY_GROUP_NAME, f);
}

static void format_mode_pin(const struct config *c, FILE *f)
{
	mode_t modes[2];
	size_t n = devpts_modes_healthy(&c->check_policy, modes);

	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%03o", i ? "|" : "", (unsigned)modes[i]);
}

static void format_repair_policy(const struct config *c, FILE *f)
{
	fputs(repair_policy_to_string(c->repair_policy), f);
}

static void format_create_ptmx(const struct config *c, FILE *f)
{
	fputs(c->ptmx_symlink ? "symlink" : "node", f);
}

static void format_probe_enabled(const struct config *c, FILE *f)
{
	fputs(c->probe_enabled ? "yes" : "no", f);
}

static void format_probe_user(const struct config *c, FILE *f)
{
	fputs(c->probe_user ?: PROBE_USER_DEFAULT, f);
}

static void format_list(char *const *list, FILE *f)
{
	for (char *const *w = list; w && *w; w++)
		fprintf(f, "%s%s", w == list ? "" : " ", *w);
}

static void format_ignore_checks(const struct config *c, FILE *f)
{
	format_list(c->ignore_checks, f);
}

static void format_ignore_mountpoints(const struct config *c, FILE *f)
{
	format_list(c->ignore_mountpoints, f);
}

static void format_mount_events(const struct config *c, FILE *f)
{
	fputs(mount_events_to_string(c->mount_events), f);
}

static void format_coalesce(const struct config *c, FILE *f)
{
	fprintf(f, "%llu", (unsigned long long)(c->coalesce_usec / 1000));
}

static void format_cpu_percent(const struct config *c, FILE *f)
{
	fprintf(f, "%u", c->audit_cpu_percent);
}

static void format_seconds(uint64_t usec, FILE *f)
{
	fprintf(f, "%llu", (unsigned long long)(usec / 1000000));
}

static void format_holder_rescan(const struct config *c, FILE *f)
{
	format_seconds(c->holder_rescan_usec, f);
}

static void format_state_file(const struct config *c, FILE *f)
{
	fputs(c->state_file ?: "", f);
}

static void format_prometheus_file(const struct config *c, FILE *f)
{
	fputs(c->prometheus_file ?: "", f);
}

static void format_heartbeat(const struct config *c, FILE *f)
{
	format_seconds(c->prometheus_heartbeat_usec, f);
}

static void format_namespaces_audit(const struct config *c, FILE *f)
{
	fputs(namespaces_audit_to_string(c->namespaces_audit), f);
}

static void format_namespaces_scan(const struct config *c, FILE *f)
{
	format_seconds(c->namespaces_scan_usec, f);
}

/* In the order the "Loaded configuration" line shows them. */
const struct config_key config_keys[] = {
	{ "Devpts", "TTYGroup", NULL, parse_tty_group, format_tty_group },
	{ "Devpts", "Mode", NULL, parse_mode_pin, format_mode_pin },
	{ "Repair", "Policy", NULL, parse_repair_policy, format_repair_policy },
	{ "Repair", "CreatePtmx", NULL, parse_create_ptmx, format_create_ptmx },
	{ "Probe", "Enabled", "Probe", parse_probe_enabled, format_probe_enabled },
	{ "Probe", "User", "ProbeUser", parse_probe_user, format_probe_user },
	{ "Daemon", "MountEvents", NULL, parse_mount_events, format_mount_events },
	{ "Daemon", "CoalesceMSec", NULL, parse_coalesce, format_coalesce },
	{ "Daemon", "AuditCPUPercent", NULL, parse_cpu_percent, format_cpu_percent },
	{ "Daemon", "HolderRescanSec", NULL, parse_holder_rescan, format_holder_rescan },
	{ "Daemon", "StateFile", NULL, parse_state_file, format_state_file },
	{ "Daemon", "PrometheusFile", NULL, parse_prometheus_file, format_prometheus_file },
	{ "Daemon", "PrometheusHeartbeatSec", NULL, parse_heartbeat, format_heartbeat },
	{ "Ignore", "Checks", "Ignore", parse_ignore_checks, format_ignore_checks },
	{ "Ignore", "Mountpoints", "Ignore", parse_ignore_mountpoints, format_ignore_mountpoints },
	{ "Namespaces", "Audit", "Namespaces.Audit", parse_namespaces_audit,
	  format_namespaces_audit },
	{ "Namespaces", "ScanSec", NULL, parse_namespaces_scan, format_namespaces_scan },
};
const size_t config_n_keys = ELEMENTSOF(config_keys);

const struct config_key *config_key_find(const char *section, const char *key)
{
	for (size_t i = 0; i < config_n_keys; i++)
		if (streq(config_keys[i].section, section) && streq(config_keys[i].key, key))
			return &config_keys[i];
	return NULL;
}

bool config_section_known(const char *section)
{
	for (size_t i = 0; i < config_n_keys; i++)
		if (streq(config_keys[i].section, section))
			return true;
	return false;
}

const char *config_key_label(const struct config_key *k)
{
	return k->label ?: k->key;
}

char *config_key_value(const struct config *c, const struct config_key *k)
{
	char *text = NULL;
	size_t size;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	k->show(c, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int config_format_loaded(const struct config *c, const char *verb, char **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t size;
	bool oom = false;
	FILE *f;

	f = open_memstream(&text, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%s configuration from ", verb);
	for (char **s = c->sources; s && *s; s++)
		fprintf(f, "%s%s", s == c->sources ? "" : ", ", *s);
	fputs(c->sources && c->sources[0] ? ":" : "built-in defaults:", f);
	/* Rows of one label, one after the other, make one item: their values joined by a space,
	 * "(none)" when all are empty. */
	for (size_t i = 0; i < config_n_keys;) {
		const char *label = config_key_label(&config_keys[i]);
		bool any = false;

		fprintf(f, " %s=", label);
		for (; i < config_n_keys && streq(config_key_label(&config_keys[i]), label); i++) {
			_cleanup_free_ char *v = config_key_value(c, &config_keys[i]);

			oom |= !v;
			if (!v || !v[0])
				continue;
			fprintf(f, "%s%s", any ? " " : "", v);
			any = true;
		}
		if (!any)
			fputs("(none)", f);
	}
	if (fclose(f) != 0 || oom)
		return -ENOMEM;
	*ret = TAKE_PTR(text);
	return 0;
}
