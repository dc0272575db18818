/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <libeconf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "analysis/analysis.h"
#include "pipeline/conf-size.h"
#include "pipeline/conf.h"
#include "util/group.h"
#include "util/limits.h"
#include "util/strv.h"
#include "util/util.h"

const char config_vendor_dir[] = PTSGUARD_VENDOR_CONFIG_DIR;
const char config_admin_dir[] = PTSGUARD_ADMIN_CONFIG_DIR;

static const char *const repair_policy_names[_REPAIR_POLICY_MAX] = {
	[REPAIR_POLICY_OFF] = "off",
	[REPAIR_POLICY_SAFE] = "safe",
};

static const char *const mount_events_names[_MOUNT_EVENTS_MAX] = {
	[MOUNT_EVENTS_AUTO] = "auto",
	[MOUNT_EVENTS_FANOTIFY] = "fanotify",
	[MOUNT_EVENTS_MOUNTINFO] = "mountinfo",
};

static const char *const namespaces_audit_names[_NAMESPACES_AUDIT_MAX] = {
	[NAMESPACES_AUDIT_NONE] = "none",
	[NAMESPACES_AUDIT_ALL] = "all",
};

const char *namespaces_audit_to_string(enum namespaces_audit a)
{
	return a < _NAMESPACES_AUDIT_MAX ? namespaces_audit_names[a] : NULL;
}

const char *repair_policy_to_string(enum repair_policy p)
{
	return p < _REPAIR_POLICY_MAX ? repair_policy_names[p] : NULL;
}

const char *mount_events_to_string(enum mount_events m)
{
	return m < _MOUNT_EVENTS_MAX ? mount_events_names[m] : NULL;
}

struct config *config_free(struct config *c)
{
	if (!c)
		return NULL;
	free(c->tty_group);
	free(c->probe_user);
	strv_free(c->ignore_checks);
	strv_free(c->ignore_mountpoints);
	free(c->state_file);
	free(c->prometheus_file);
	strv_free(c->sources);
	free(c);
	return NULL;
}

int config_new_default(struct config **ret)
{
	_cleanup_(config_freep) struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->repair_policy = REPAIR_POLICY_OFF;
	c->probe_enabled = true;
	c->coalesce_usec = CONFIG_COALESCE_USEC_DEFAULT;
	c->audit_cpu_percent = CONFIG_AUDIT_CPU_PERCENT_DEFAULT;
	c->holder_rescan_usec = CONFIG_HOLDER_RESCAN_USEC_DEFAULT;
	c->namespaces_scan_usec = CONFIG_NAMESPACES_SCAN_USEC_DEFAULT;
	c->prometheus_heartbeat_usec = CONFIG_HEARTBEAT_USEC_DEFAULT;
	c->state_file = strdup(CONFIG_STATE_FILE_DEFAULT);
	if (!c->state_file)
		return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

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
	int p, r = parse_choice("Policy", repair_policy_names, _REPAIR_POLICY_MAX, v, &p, msg);

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
	int m, r = parse_choice("MountEvents", mount_events_names, _MOUNT_EVENTS_MAX, v, &m, msg);

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
	int a, r = parse_choice("Audit", namespaces_audit_names, _NAMESPACES_AUDIT_MAX, v, &a, msg);

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

void config_probe_identity(const struct config *c, uid_t *uid, gid_t *gid)
{
	if (c && c->has_probe_user) {
		*uid = c->probe_uid;
		*gid = c->probe_gid;
	} else
		(void)user_lookup(PROBE_USER_DEFAULT, uid, gid); /* "nobody" has a fallback */
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

static const struct config_key {
	const char *section;
	const char *key;
	int (*parse)(struct config *c, const char *value, char msg[static 512]);
} config_keys[] = {
	{ "Devpts", "TTYGroup", parse_tty_group },
	{ "Devpts", "Mode", parse_mode_pin },
	{ "Repair", "Policy", parse_repair_policy },
	{ "Repair", "CreatePtmx", parse_create_ptmx },
	{ "Probe", "Enabled", parse_probe_enabled },
	{ "Probe", "User", parse_probe_user },
	{ "Ignore", "Checks", parse_ignore_checks },
	{ "Ignore", "Mountpoints", parse_ignore_mountpoints },
	{ "Daemon", "MountEvents", parse_mount_events },
	{ "Daemon", "CoalesceMSec", parse_coalesce },
	{ "Daemon", "AuditCPUPercent", parse_cpu_percent },
	{ "Daemon", "HolderRescanSec", parse_holder_rescan },
	{ "Daemon", "StateFile", parse_state_file },
	{ "Daemon", "PrometheusFile", parse_prometheus_file },
	{ "Namespaces", "Audit", parse_namespaces_audit },
	{ "Namespaces", "ScanSec", parse_namespaces_scan },
	{ "Daemon", "PrometheusHeartbeatSec", parse_heartbeat },
};

static const struct config_key *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
		if (streq(config_keys[i].section, section) && streq(config_keys[i].key, key))
			return &config_keys[i];
	return NULL;
}

static bool known_section(const char *section)
{
	for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
		if (streq(config_keys[i].section, section))
			return true;
	return false;
}

/*
 * Where in the file text is [section] key=…? libeconf keeps a line per key, but it is off for
 * values continued on later lines, so the text is scanned: this only locates, libeconf parses.
 * section NULL looks for the section header itself, key NULL for keys before any section.
 * Returns how many times the key occurs; *first gets the line of the first, *second of the next.
 */
static unsigned locate(const char *text, const char *section, const char *key, unsigned *first,
		       unsigned *second)
{
	_cleanup_free_ char *cur = NULL;
	unsigned line = 0, hits = 0;

	*first = *second = 0;
	for (const char *p = text; p && *p;) {
		const char *eol = strchrnul(p, '\n'), *s = p;
		size_t n;

		line++;
		s += strspn(s, " \t");
		if (*s == '[') {
			const char *end = memchr(s, ']', (size_t)(eol - s));

			n = end ? (size_t)(end - s - 1) : (size_t)(eol - s - 1);
			free(cur);
			cur = strndup(s + 1, n);
			if (!cur)
				return 0;
			if (!key && section && streq(cur, section) && hits++ == 0)
				*first = line;
		} else if (*s != '#' && *s != ';' && s < eol && key) {
			n = strcspn(s, "= \t\n");
			if (n == strlen(key) && strncmp(s, key, n) == 0 &&
			    (section ? streq(cur, section) : !cur)) {
				if (hits == 0)
					*first = line;
				else if (hits == 1)
					*second = line;
				hits++;
			}
		}
		p = *eol ? eol + 1 : eol;
	}
	return hits;
}

/* Does the first line of key have a '=' (libeconf gives a key without one an empty value)? */
static bool line_has_delimiter(const char *text, unsigned want)
{
	unsigned line = 1;
	const char *p = text;

	for (; *p && line < want; p++)
		if (*p == '\n')
			line++;
	return memchr(p, '=', strchrnul(p, '\n') - p) != NULL;
}

_printf_(4, 5) static int fail(struct config_error *err, const char *file, unsigned line,
			       const char *fmt, ...)
{
	va_list ap;

	snprintf(err->file, sizeof(err->file), "%s", file ?: "");
	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Refused before libeconf reads it: its parser is far slower than linear in the size. */
static int fail_too_large(struct config_error *err, const char *path, off_t size)
{
	return fail(err, path, 0, "the file is too large (%lld bytes, at most %u)", (long long)size,
		    CONFIG_FILE_SIZE_MAX);
}

/* Anything but a regular file: libeconf would wait on a FIFO forever or read a device without
 * end. */
static int fail_check(struct config_error *err, const char *path, int r, off_t size)
{
	if (r == -EFBIG)
		return fail_too_large(err, path, size);
	return fail(err, path, 0, "not a regular file");
}

static int econf_to_errno(econf_err e)
{
	switch (e) {
	case ECONF_SUCCESS:
		return 0;
	case ECONF_NOMEM:
		return -ENOMEM;
	case ECONF_NOFILE:
		return -ENOENT;
	default:
		return -EINVAL;
	}
}

/* libeconf's own errors (syntax, missing file) with the place it reports. */
static int fail_econf(struct config_error *err, econf_err e, const char *fallback_file)
{
	char *file = NULL;
	uint64_t line = 0;

	if (e == ECONF_NOMEM)
		return -ENOMEM;
	econf_errLocation(&file, &line);
	fail(err, file && *file ? file : fallback_file, (unsigned)line, "%s", econf_errString(e));
	free(file);
	return econf_to_errno(e);
}

/* Validate one parsed file and apply its keys over c. */
static int apply_file(struct config *c, econf_file *kf, struct config_error *err)
{
	_cleanup_free_ char *path = econf_getPath(kf), *text = NULL; /* libeconf hands out a copy */
	char **groups = NULL, **keys = NULL;
	size_t n_groups = 0, n_keys = 0;
	unsigned first, second;
	econf_err e;
	int r;

	if (!path)
		return -ENOMEM;
	r = read_full_file(path, CONFIG_FILE_SIZE_MAX, &text, NULL);
	if (r < 0)
		return fail(err, path, 0, "cannot read the file: %s", read_error_string(r)), r;

	e = econf_getKeys(kf, NULL, &n_keys, &keys);
	if (e == ECONF_SUCCESS && n_keys > 0) {
		locate(text, NULL, keys[0], &first, &second);
		r = fail(err, path, first, "'%s' is outside of any [Section]", keys[0]);
		econf_freeArray(keys);
		return r;
	}
	if (e == ECONF_SUCCESS)
		econf_freeArray(keys);

	e = econf_getGroups(kf, &n_groups, &groups);
	if (e == ECONF_NOGROUP || e == ECONF_NOKEY) /* only comments: read, and nothing to apply */
		return strv_extend(&c->sources, path);
	if (e != ECONF_SUCCESS)
		return fail_econf(err, e, path);

	r = 0;
	for (size_t g = 0; r == 0 && g < n_groups; g++) {
		const char *section = groups[g];

		if (!known_section(section)) {
			locate(text, section, NULL, &first, &second);
			r = fail(
			    err, path, first,
			    "unknown section [%s] (expected Devpts, Repair, Probe, Ignore, Daemon "
			    "or Namespaces)",
			    section);
			break;
		}
		keys = NULL;
		e = econf_getKeys(kf, section, &n_keys, &keys);
		if (e == ECONF_NOKEY)
			continue;
		if (e != ECONF_SUCCESS) {
			r = fail_econf(err, e, path);
			break;
		}
		for (size_t k = 0; r == 0 && k < n_keys; k++) {
			const struct config_key *def = find_key(section, keys[k]);
			char *value = NULL;
			char msg[512];

			locate(text, section, keys[k], &first, &second);
			if (!def) {
				r = fail(err, path, first, "unknown key '%s' in [%s]", keys[k],
					 section);
				break;
			}
			if (second) {
				r = fail(err, path, second, "%s= is set again (first on line %u)",
					 keys[k], first);
				break;
			}
			if (first && !line_has_delimiter(text, first)) {
				r = fail(err, path, first, "expected %s=VALUE", keys[k]);
				break;
			}
			e = econf_getStringValue(kf, section, keys[k], &value);
			if (e != ECONF_SUCCESS && e != ECONF_EMPTYKEY &&
			    e != ECONF_KEY_HAS_NULL_VALUE) {
				r = fail_econf(err, e, path);
				break;
			}
			msg[0] = 0;
			r = def->parse(c, value, msg);
			free(value);
			if (r == -EINVAL)
				fail(err, path, first, "%s", msg);
		}
		econf_freeArray(keys);
	}
	econf_freeArray(groups);
	if (r < 0)
		return r;
	return strv_extend(&c->sources, path);
}

int config_load(const char *path, struct config **ret, struct config_error *err)
{
	_cleanup_(config_freep) struct config *c = NULL;
	econf_file **files = NULL;
	size_t n_files = 0;
	char big[sizeof(err->file)];
	off_t size = 0;
	econf_err e;
	int r;

	*err = (struct config_error){ 0 };
	r = config_new_default(&c);
	if (r < 0)
		return r;

	if (path) {
		econf_file *kf = NULL;

		r = config_file_check_size(path, &size);
		if (r < 0)
			return fail_check(err, path, r, size);
		e = econf_readFile(&kf, path, "=", "#;");
		if (e != ECONF_SUCCESS)
			return fail_econf(err, e, path);
		r = apply_file(c, kf, err);
		econf_freeFile(kf);
		if (r < 0)
			return r;
		*ret = TAKE_PTR(c);
		return 0;
	}

	/* libeconf's order: the vendor file, or the admin's one that replaces it, then the vendor
	 * drop-ins and then the admin drop-ins, each directory in lexical order. Applying each file
	 * over the previous ones is libeconf's merge, with every key checked where it was written.
	 */
	r = config_dirs_check_size(config_vendor_dir, config_admin_dir, big, sizeof(big), &size);
	if (r < 0)
		return fail_check(err, big, r, size);
	e = econf_readDirsHistory(&files, &n_files, config_vendor_dir, config_admin_dir, "ptsguard",
				  "conf", "=", "#;");
	if (e == ECONF_NOFILE) {
		free(files); /* libeconf may hand out an empty array */
		*ret = TAKE_PTR(c);
		return 0;
	}
	if (e != ECONF_SUCCESS)
		return fail_econf(err, e, NULL);
	r = 0;
	for (size_t i = 0; i < n_files; i++) {
		if (r == 0)
			r = apply_file(c, files[i], err);
		econf_freeFile(files[i]);
	}
	free(files);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int config_drop_ignored(const struct config *c, struct findings *f)
{
	struct findings dropped = { 0 };
	size_t w = 0;

	if (f->n_items == 0 || (!c->ignore_checks && !c->ignore_mountpoints))
		return 0;
	if (GROW(dropped.items, dropped.allocated, f->n_items) < 0)
		return -ENOMEM;
	FOREACH_ARRAY (i, f->items, f->n_items) {
		if (config_ignores(c, i))
			dropped.items[dropped.n_items++] = *i;
		else
			f->items[w++] = *i;
	}
	f->n_items = w;
	findings_clear(&dropped);
	return 0;
}

bool config_ignores(const struct config *c, const struct finding *f)
{
	if (strv_contains(c->ignore_checks, f->check->id))
		return true;
	if (!f->mountpoint)
		return false;
	for (char **mp = c->ignore_mountpoints; mp && *mp; mp++)
		if (path_at_or_below(f->mountpoint, *mp))
			return true;
	return false;
}

const char *config_error_format(const struct config_error *err,
				char buf[static CONFIG_ERROR_TEXT_MAX])
{
	if (err->file[0] && err->line)
		snprintf(buf, CONFIG_ERROR_TEXT_MAX, "%s:%u: %s", err->file, err->line,
			 err->message);
	else if (err->file[0])
		snprintf(buf, CONFIG_ERROR_TEXT_MAX, "%s: %s", err->file, err->message);
	else
		snprintf(buf, CONFIG_ERROR_TEXT_MAX, "configuration: %s", err->message);
	return buf;
}
