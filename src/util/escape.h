/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Escaping of strings that come from outside (mountpoints, process names, hostnames, symlink
 * targets, boot-record strings) for text meant for a terminal or a log line: a control
 * character, DEL or any byte outside printable ASCII becomes \xNN and a backslash is doubled,
 * so nothing a user names a file or a process can move the cursor, retitle a terminal or forge
 * a line. Log lines that carry a tag of fixed form to match on (syslog) take brackets escaped
 * too, so a name cannot spell a tag. For formats that must stay valid UTF-8 (JSON, Prometheus)
 * the same names keep their valid UTF-8 and only what is not valid is replaced or escaped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The escaped copy of s (NULL is taken as ""), malloc'ed; NULL when out of memory. */
char *cescape(const char *s);
/* Write s escaped to f; 0, or -EIO. */
int fputs_escaped(const char *s, FILE *f);
/* cescape() that also writes '[' and ']' as \x5b and \x5d: for a log line whose only bracketed
 * tag must be the one its writer put there. */
char *cescape_brackets(const char *s);

/* The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF) that starts p, of at most n bytes; 0 when none does. */
size_t utf8_char_len(const char *p, size_t n);
/* Whether the n bytes at p are well-formed UTF-8. */
bool utf8_valid(const char *p, size_t n);
/* The n bytes at p with each byte that is not part of well-formed UTF-8 replaced by U+FFFD,
 * malloc'ed and NUL-terminated (*ret_len its length); NULL when out of memory. */
char *utf8_replace_invalid(const char *p, size_t n, size_t *ret_len);
/* The n bytes at p as lowercase hex digits, malloc'ed; NULL when out of memory. */
char *hex_bytes(const char *p, size_t n);
/* s with each byte that is not part of well-formed UTF-8 written as the octal escape \ooo of
 * mountinfo and fstab (unescape_octal() gives the bytes back), malloc'ed (*ret_len its
 * length); NULL when out of memory. */
char *octal_escape_invalid_utf8(const char *s, size_t n, size_t *ret_len);

/* Decode the octal escapes of mountinfo and fstab (\040, \011, \012, \134) in place. */
void unescape_octal(char *s);
