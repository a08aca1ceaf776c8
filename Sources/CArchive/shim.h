#ifndef GUESTMODE_CARCHIVE_SHIM_H
#define GUESTMODE_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <stddef.h>
/* gzip archives are inflated by guestmode itself (ArchiveIO.swift), never by libarchive's filter bidding. */
#include <zlib.h>
/* zstd archives are compressed by guestmode itself, with a content checksum libarchive's filter does not write. */
#include <zstd.h>

/* libarchive is opened the first time an archive is read or written (dlopen), not linked: every other
   command would otherwise load it and the eleven shared objects it brings (libxml2 and ICU among them),
   4.5 M instructions of every start (bench/results.md, "Start-up"). zlib and zstd stay linked: they are
   small, and libsqlite3 or libc bring most of what they need. The functions guestmode calls, each named
   once here with archive.h's own type; Swift calls them through the table
   (Sources/GuestModeArchive/Archive/ArchiveIO.swift, the one file that does). A libarchive function
   called directly does not link, as the library is not. */
#define GUESTMODE_LIBARCHIVE_FUNCTIONS(X) \
    X(archive_entry_filetype) X(archive_entry_free) X(archive_entry_hardlink) X(archive_entry_new) \
    X(archive_entry_pathname) X(archive_entry_set_filetype) X(archive_entry_set_mtime) \
    X(archive_entry_set_pathname) X(archive_entry_set_perm) X(archive_entry_set_size) X(archive_entry_size) \
    X(archive_entry_size_is_set) X(archive_errno) X(archive_error_string) X(archive_filter_bytes) \
    X(archive_filter_count) X(archive_read_data) X(archive_read_free) X(archive_read_new) \
    X(archive_read_next_header) X(archive_read_open) X(archive_read_open_fd) X(archive_read_open_filename) \
    X(archive_read_support_filter_zstd) X(archive_read_support_format_raw) X(archive_read_support_format_tar) \
    X(archive_read_support_format_zip) X(archive_write_add_filter_gzip) X(archive_write_close) \
    X(archive_write_data) X(archive_write_free) X(archive_write_header) X(archive_write_new) \
    X(archive_write_open) X(archive_write_open_fd) X(archive_write_set_bytes_in_last_block) \
    X(archive_write_set_filter_option) X(archive_write_set_format_option) \
    X(archive_write_set_format_pax_restricted) X(archive_write_set_format_zip)

#define GUESTMODE_LIBARCHIVE_FIELD(name) __typeof__(name) *_Nonnull name;
typedef struct guestmode_libarchive {
    GUESTMODE_LIBARCHIVE_FUNCTIONS(GUESTMODE_LIBARCHIVE_FIELD)
} guestmode_libarchive;
#undef GUESTMODE_LIBARCHIVE_FIELD

/* The runtime name (the soname), not the development symlink libarchive.so, which only libarchive-dev
   installs. */
#ifdef __APPLE__
#define GUESTMODE_LIBARCHIVE_NAME "libarchive.13.dylib"
#else
#define GUESTMODE_LIBARCHIVE_NAME "libarchive.so.13"
#endif

/* Opens libarchive and finds every function of the table: the table, or NULL with the loader's reason in
   *error. Called once (ArchiveIO.swift keeps the answer). */
static inline const guestmode_libarchive *_Nullable guestmode_libarchive_open(
    const char *_Nullable *_Nonnull error) {
    static guestmode_libarchive table;
    void *library = dlopen(GUESTMODE_LIBARCHIVE_NAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        *error = dlerror();
        return NULL;
    }
#define GUESTMODE_LIBARCHIVE_BIND(name) \
    if ((table.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { \
        *error = dlerror(); \
        return NULL; \
    }
    GUESTMODE_LIBARCHIVE_FUNCTIONS(GUESTMODE_LIBARCHIVE_BIND)
#undef GUESTMODE_LIBARCHIVE_BIND
    return &table;
}
#endif
