/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

static bool needs_hex(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

/* Escape s into out (at least 4 * strlen(s) + 1 bytes); returns the length written. */
static size_t escape_into(const char *s, char *out)
{
	static const char hex[] = "0123456789abcdef";
	char *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\') {
			*o++ = '\\';
			*o++ = '\\';
		} else if (needs_hex(*p)) {
			*o++ = '\\';
			*o++ = 'x';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 0xf];
		} else
			*o++ = (char)*p;
	}
	*o = 0;
	return (size_t)(o - out);
}

char *cescape(const char *s)
{
	size_t n = strlen(s ?: "");
	char *out;

	if (n > (SIZE_MAX - 1) / 4)
		return NULL;
	out = malloc(4 * n + 1);
	if (out)
		escape_into(s ?: "", out);
	return out;
}

int fputs_escaped(const char *s, FILE *f)
{
	s = s ?: "";
	/* The common case, nothing to escape, without a copy. */
	for (const unsigned char *p = (const unsigned char *)s;; p++) {
		if (!*p)
			return fputs(s, f) < 0 ? -EIO : 0;
		if (*p == '\\' || needs_hex(*p))
			break;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char buf[5];
		char c[2] = { (char)*p, 0 };
		size_t n = escape_into(c, buf);

		if (fwrite(buf, 1, n, f) != n)
			return -EIO;
	}
	return 0;
}

void unescape_octal(char *s)
{
	/* Most fields have no escape at all: find the first (strchr is fast) before copying. */
	char *w = strchr(s, '\\');

	if (!w)
		return;
	for (char *p = w; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 4;
		} else
			*w++ = *p++;
	}
	*w = 0;
}
