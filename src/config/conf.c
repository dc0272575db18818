/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <libeconf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "config/conf-keys.h"
#include "config/conf-size.h"
#include "config/conf.h"
#include "util/alloc.h"
#include "util/fileio.h"
#include "util/group.h"
#include "util/limits.h"
#include "util/path.h"
#include "util/string-util.h"
#include "util/strv.h"

const char config_vendor_dir[] = PTSGUARD_VENDOR_CONFIG_DIR;
const char config_admin_dir[] = PTSGUARD_ADMIN_CONFIG_DIR;

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

void config_probe_identity(const struct config *c, uid_t *uid, gid_t *gid)
{
	if (c && c->has_probe_user) {
		*uid = c->probe_uid;
		*gid = c->probe_gid;
	} else
		(void)user_lookup(PROBE_USER_DEFAULT, uid, gid); /* "nobody" has a fallback */
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

		if (!config_section_known(section)) {
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
			const struct config_key *def = config_key_find(section, keys[k]);
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
	findings_done(&dropped);
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
