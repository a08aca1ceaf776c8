#ifndef GUESTMODE_CARCHIVE_SHIM_H
#define GUESTMODE_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>
/* gzip archives are inflated by guestmode itself (ArchiveIO.swift), never by libarchive's filter bidding. */
#include <zlib.h>

/* libarchive is opened on first use (libarchive.c): NULL once it is loaded, otherwise why it cannot be. */
const char *guestmode_libarchive_unavailable(void);
#endif
