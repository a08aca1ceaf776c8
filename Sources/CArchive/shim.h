#ifndef GUESTMODE_CARCHIVE_SHIM_H
#define GUESTMODE_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>
/* gzip archives are inflated by guestmode itself (ArchiveIO.swift), never by libarchive's filter bidding. */
#include <zlib.h>
/* zstd archives are compressed by guestmode itself, with a content checksum libarchive's filter does not write. */
#include <zstd.h>
#endif
