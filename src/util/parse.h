/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Numbers as the kernel writes them: octal modes, "major:minor" device numbers, decimal
 * unsigned integers, kernel releases. 0 or -EINVAL unless documented.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Parse a mode written in octal ("620", "0620", "4755"): 0 or -EINVAL. */
int parse_mode(const char *s, mode_t *ret);
/* Format a mode as four-digit octal ("0620"); buf must hold 8 bytes. */
const char *format_mode(mode_t mode, char buf[static 8]);

/* Write v in decimal at p (at most 10 bytes, no NUL); returns the end. No printf: async-signal
 * safe, for a child of clone(CLONE_VM) too. */
char *format_decimal(char *p, unsigned v);

/* Parse "major:minor" into a dev_t. */
int parse_devnum(const char *s, dev_t *ret);
/* Format a dev_t as "major:minor"; buf must hold 24 bytes. */
const char *format_devnum(dev_t dev, char buf[static 24]);

/* Parse a decimal unsigned integer that must span the whole string. */
int parse_uint(const char *s, unsigned *ret);

/* Compare kernel releases: is release at least major.minor? Unparseable counts as new. */
bool kernel_at_least(const char *release, unsigned major, unsigned minor);
