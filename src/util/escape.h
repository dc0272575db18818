/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Escaping of strings that come from outside (mountpoints, process names, hostnames, symlink
 * targets, boot-record strings) for text meant for a terminal or a log line: a control
 * character, DEL or any byte outside printable ASCII becomes \xNN and a backslash is doubled,
 * so nothing a user names a file or a process can move the cursor, retitle a terminal or forge
 * a line. The JSON output stays exact and never goes through here.
 */
#pragma once

#include <stdio.h>

/* The escaped copy of s (NULL is taken as ""), malloc'ed; NULL when out of memory. */
char *cescape(const char *s);
/* Write s escaped to f; 0, or -EIO. */
int fputs_escaped(const char *s, FILE *f);

/* Decode the octal escapes of mountinfo and fstab (\040, \011, \012, \134) in place. */
void unescape_octal(char *s);
