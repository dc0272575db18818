/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The keys of ptsguard.conf(5), one row each: its section and name, how a value is parsed into
 * struct config (0, or -EINVAL with a message for a person), and how the value in effect is
 * shown in the daemon's "Loaded configuration" line. The table is the only list of keys: the
 * loader looks keys up in it and that line walks it, so a new key is one row.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config/conf.h"

struct config_key {
	const char *section;
	const char *key;
	/* Its name in the "Loaded configuration" line, NULL: key. Rows of one label, one after
	 * the other, are shown as one item (Ignore= is Checks= and Mountpoints=). */
	const char *label;
	int (*parse)(struct config *c, const char *value, char msg[static 512]);
	/* The value in effect, written to f; nothing for none ("(none)" in the line). */
	void (*show)(const struct config *c, FILE *f);
};

extern const struct config_key config_keys[];
extern const size_t config_n_keys;

/* The row of [section] key=, or NULL. */
const struct config_key *config_key_find(const char *section, const char *key);
/* Does any key live in [section]? */
bool config_section_known(const char *section);
/* k's name in the "Loaded configuration" line. */
const char *config_key_label(const struct config_key *k);
/* k's value in c as that line shows it, malloc'ed ("" for none); NULL when out of memory. */
char *config_key_value(const struct config *c, const struct config_key *k);
