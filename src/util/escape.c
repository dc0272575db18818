/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

static const char hex[] = "0123456789abcdef";

static bool needs_hex(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

/* Escape s into out (at least 4 * strlen(s) + 1 bytes); returns the length written. */
static size_t escape_into(const char *s, char *out, bool brackets)
{
	char *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\') {
			*o++ = '\\';
			*o++ = '\\';
		} else if (needs_hex(*p) || (brackets && (*p == '[' || *p == ']'))) {
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

static char *escape_dup(const char *s, bool brackets)
{
	size_t n = strlen(s ?: "");
	char *out;

	if (n > (SIZE_MAX - 1) / 4)
		return NULL;
	out = malloc(4 * n + 1);
	if (out)
		escape_into(s ?: "", out, brackets);
	return out;
}

char *cescape(const char *s)
{
	return escape_dup(s, false);
}

char *cescape_brackets(const char *s)
{
	return escape_dup(s, true);
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
		size_t n = escape_into(c, buf, false);

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

size_t utf8_char_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		/* E0: no overlong form; ED: no surrogate */
		lo = p[0] == 0xe0 ? 0xa0 : 0x80;
		hi = p[0] == 0xed ? 0x9f : 0xbf;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		/* F0: no overlong form; F4: nothing above U+10FFFF */
		lo = p[0] == 0xf0 ? 0x90 : 0x80;
		hi = p[0] == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

bool utf8_valid(const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_char_len(p + i, n - i);

		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* p copied with each byte that is not part of well-formed UTF-8 written by bad() (at most
 * width bytes), malloc'ed and NUL-terminated, its length in *ret_len (may be NULL); NULL when
 * out of memory. */
static char *utf8_rewrite_invalid(const char *p, size_t n, size_t width,
				  char *(*bad)(char *o, unsigned char c), size_t *ret_len)
{
	char *out, *o;

	if (n > (SIZE_MAX - 1) / width)
		return NULL;
	o = out = malloc(width * n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_char_len(p + i, n - i);

		if (k > 0) {
			memcpy(o, p + i, k);
			o += k;
			i += k;
		} else
			o = bad(o, (unsigned char)p[i++]);
	}
	*o = 0;
	if (ret_len)
		*ret_len = (size_t)(o - out);
	return out;
}

static char *write_replacement(char *o, unsigned char c)
{
	(void)c;
	memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
	return o + 3;
}

static char *write_octal(char *o, unsigned char c)
{
	*o++ = '\\';
	*o++ = (char)('0' + (c >> 6));
	*o++ = (char)('0' + ((c >> 3) & 7));
	*o++ = (char)('0' + (c & 7));
	return o;
}

char *utf8_replace_invalid(const char *p, size_t n, size_t *ret_len)
{
	return utf8_rewrite_invalid(p, n, 3, write_replacement, ret_len);
}

char *hex_bytes(const char *p, size_t n)
{
	char *out;

	if (n > (SIZE_MAX - 1) / 2)
		return NULL;
	out = malloc(2 * n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[(unsigned char)p[i] >> 4];
		out[2 * i + 1] = hex[(unsigned char)p[i] & 0xf];
	}
	out[2 * n] = 0;
	return out;
}

char *octal_escape_invalid_utf8(const char *s, size_t n, size_t *ret_len)
{
	return utf8_rewrite_invalid(s, n, 4, write_octal, ret_len);
}
