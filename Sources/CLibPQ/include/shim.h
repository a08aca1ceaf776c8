#ifndef GUESTMODE_CLIBPQ_SHIM_H
#define GUESTMODE_CLIBPQ_SHIM_H
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

/* libpq is opened on first use (libpq.c): NULL once it is loaded, otherwise why it cannot be. */
const char *guestmode_libpq_unavailable(void);
#endif
