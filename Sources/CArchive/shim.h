#ifndef GUESTMODE_CARCHIVE_SHIM_H
#define GUESTMODE_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>
#endif
