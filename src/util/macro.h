/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small macros every file uses: scope-bound cleanup (HACKING.md, Cleanup), ownership
 * hand-off, array sizes. Destructors accept NULL and return NULL.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_	       __attribute__((pure))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Take ownership out of a cleanup-bound variable. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -EBADF;                                                                     \
		_fd;                                                                               \
	})

/* Iterate over num elements of array; array may be NULL when num is 0 (no arithmetic on NULL). */
#define FOREACH_ARRAY(i, array, num)                                                               \
	for (__typeof__((array) + 0) i = (array), _end_##i = i ? i + (num) : NULL;                 \
	     i && i < _end_##i; i++)

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Define a NULL-tolerant pointer destructor `name##p` for use with _cleanup_. */
#define DEFINE_POINTER_CLEANUP(type, func)                                                         \
	static inline void func##p(type **p)                                                       \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}
