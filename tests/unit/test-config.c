/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's "Loaded configuration" line walks the key table: every key shows, with the value
 * in effect (PrometheusHeartbeatSec= was once left out of a hand-written list). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/conf-keys.h"
#include "config/conf.h"
#include "test.h"
#include "util/string-util.h"

/* A value for every key of the table, each other than its default. A key added to the table
 * without a value here fails the test. */
static const struct {
	const char *section, *key, *value;
} values[] = {
	{ "Devpts", "TTYGroup", "root" },
	{ "Devpts", "Mode", "600" },
	{ "Repair", "Policy", "safe" },
	{ "Repair", "CreatePtmx", "symlink" },
	{ "Probe", "Enabled", "no" },
	{ "Probe", "User", "daemon" },
	{ "Ignore", "Checks", "pty-capacity ptmx-mode" },
	{ "Ignore", "Mountpoints", "/srv/pts" },
	{ "Daemon", "MountEvents", "mountinfo" },
	{ "Daemon", "CoalesceMSec", "70" },
	{ "Daemon", "AuditCPUPercent", "40" },
	{ "Daemon", "HolderRescanSec", "12" },
	{ "Daemon", "StateFile", "/run/test-ptsguard/state.json" },
	{ "Daemon", "PrometheusFile", "/run/test-ptsguard/metrics.prom" },
	{ "Daemon", "PrometheusHeartbeatSec", "120" },
	{ "Namespaces", "Audit", "all" },
	{ "Namespaces", "ScanSec", "9" },
};

static struct config *load(const char *text)
{
	char path[] = "/tmp/test-config-XXXXXX";
	struct config_error err = { 0 };
	struct config *c = NULL;
	int fd = mkstemp(path), r;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		CHECK_MSG(false, "cannot write %s", path);
		return NULL;
	}
	close(fd);
	r = config_load(path, &c, &err);
	CHECK_MSG(r == 0, "config_load: %d: %u: %s", r, err.line, err.message);
	unlink(path);
	return c;
}

/* Every row of the table has a value above, and the line shows it under the row's label. */
static void test_every_key_shows(void)
{
	_cleanup_(config_freep) struct config *defaults = NULL, *c = NULL;
	_cleanup_free_ char *text = NULL, *line = NULL;
	size_t size;
	FILE *f = open_memstream(&text, &size);

	for (size_t i = 0; i < ELEMENTSOF(values); i++)
		fprintf(f, "[%s]\n%s=%s\n", values[i].section, values[i].key, values[i].value);
	fclose(f);
	EXPECT_INT(config_new_default(&defaults), 0);
	c = load(text);
	if (!c || !defaults)
		return;
	EXPECT_INT(config_format_loaded(c, "Loaded", &line), 0);
	if (!line)
		return;
	EXPECT(strncmp(line, "Loaded configuration from /tmp/test-config-", 43) == 0);

	for (size_t i = 0; i < config_n_keys; i++) {
		const struct config_key *k = &config_keys[i];
		_cleanup_free_ char *item = NULL, *want = config_key_value(c, k),
				    *def = config_key_value(defaults, k);
		bool given = false;

		for (size_t v = 0; v < ELEMENTSOF(values); v++)
			given |=
			    streq(values[v].section, k->section) && streq(values[v].key, k->key);
		CHECK_MSG(given, "[%s] %s= has no value in this test", k->section, k->key);
		CHECK_MSG(want && def && !streq(want, def), "[%s] %s=: \"%s\" is its default",
			  k->section, k->key, want ?: "");
		if (asprintf(&item, " %s=", config_key_label(k)) < 0)
			item = NULL;
		CHECK_MSG(item && strstr(line, item), "no \"%s\" in: %s", item ?: "", line);
		CHECK_MSG(want && item && strstr(strstr(line, item) ?: "", want),
			  "[%s] %s=: \"%s\" not after \"%s\" in: %s", k->section, k->key,
			  want ?: "", item ?: "", line);
	}
	EXPECT(strstr(line, " PrometheusHeartbeatSec=120 ") != NULL);
	EXPECT(strstr(line, " Ignore=pty-capacity ptmx-mode /srv/pts ") != NULL);
}

/* The defaults, as the daemon's journal showed them before the table was walked, and the
 * heartbeat beside the textfile. */
static void test_defaults_line(void)
{
	_cleanup_(config_freep) struct config *c = NULL;
	_cleanup_free_ char *line = NULL;

	EXPECT_INT(config_new_default(&c), 0);
	if (!c)
		return;
	EXPECT_INT(config_format_loaded(c, "Reloaded", &line), 0);
	EXPECT_STR(line, "Reloaded configuration from built-in defaults: TTYGroup=tty Mode=620|600 "
			 "Policy=off CreatePtmx=node Probe=yes ProbeUser=nobody MountEvents=auto "
			 "CoalesceMSec=20 AuditCPUPercent=25 HolderRescanSec=30 "
			 "StateFile=/run/ptsguard/report.json PrometheusFile=(none) "
			 "PrometheusHeartbeatSec=60 Ignore=(none) Namespaces.Audit=none ScanSec=5");
}

int main(void)
{
	test_every_key_shows();
	test_defaults_line();
	return test_result("test-config");
}
