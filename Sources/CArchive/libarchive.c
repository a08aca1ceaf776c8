#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/*
 * libarchive is opened the first time guestmode calls into it, not linked: with the
 * libraries it needs (libxml2, ICU, the compressors) it cost about 2 M instructions of dynamic
 * loading at the start of every command, most of which never use it
 * (bench/results.md, "Start-up"). Each function below has the signature the
 * header declares and forwards to the library's own, looked up once; a
 * function called from Swift and missing here fails the link.
 */

static void *library;
static char *failure;
static pthread_once_t opened = PTHREAD_ONCE_INIT;

static void open_library(void) {
    library = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        failure = strdup(reason != NULL ? reason : "libarchive.so.13: cannot be opened");
    }
}

const char *guestmode_libarchive_unavailable(void) {
    pthread_once(&opened, open_library);
    if (library != NULL) return NULL;
    return failure != NULL ? failure : "libarchive.so.13: cannot be opened";
}

/* Only reached when the library loaded but lacks a function this build was made
   against: the installed library is not the one guestmode needs. */
static void *resolve(const char *name) {
    const char *unavailable = guestmode_libarchive_unavailable();
    void *function = unavailable == NULL ? dlsym(library, name) : NULL;
    if (function == NULL) {
        fprintf(stderr, "guestmode: cannot use %s from libarchive.so.13: %s\n", name,
                unavailable != NULL ? unavailable : "the installed library does not have it");
        exit(69);
    }
    return function;
}

#define GUESTMODE_FORWARD(ret, name, params, args)                                   \
    ret name params {                                                                \
        static void *function;                                                       \
        void *found = __atomic_load_n(&function, __ATOMIC_ACQUIRE);                  \
        if (found == NULL) {                                                         \
            found = resolve(#name);                                                  \
            __atomic_store_n(&function, found, __ATOMIC_RELEASE);                    \
        }                                                                            \
        return ((ret(*) params)found)args;                                           \
    }
#define GUESTMODE_FORWARD_VOID(name, params, args) GUESTMODE_FORWARD(void, name, params, args)

GUESTMODE_FORWARD(mode_t, archive_entry_filetype, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD_VOID(archive_entry_free, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD(const char *, archive_entry_hardlink, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD(struct archive_entry *, archive_entry_new, (void), ())
GUESTMODE_FORWARD(const char *, archive_entry_pathname, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD_VOID(archive_entry_set_filetype, (struct archive_entry * a0, unsigned int a1), (a0, a1))
GUESTMODE_FORWARD_VOID(archive_entry_set_mtime, (struct archive_entry * a0, time_t a1, long a2), (a0, a1, a2))
GUESTMODE_FORWARD_VOID(archive_entry_set_pathname, (struct archive_entry * a0, const char * a1), (a0, a1))
GUESTMODE_FORWARD_VOID(archive_entry_set_perm, (struct archive_entry * a0, mode_t a1), (a0, a1))
GUESTMODE_FORWARD_VOID(archive_entry_set_size, (struct archive_entry * a0, la_int64_t a1), (a0, a1))
GUESTMODE_FORWARD(la_int64_t, archive_entry_size, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD(int, archive_entry_size_is_set, (struct archive_entry * a0), (a0))
GUESTMODE_FORWARD(int, archive_errno, (struct archive * a0), (a0))
GUESTMODE_FORWARD(const char *, archive_error_string, (struct archive * a0), (a0))
GUESTMODE_FORWARD(la_int64_t, archive_filter_bytes, (struct archive * a0, int a1), (a0, a1))
GUESTMODE_FORWARD(int, archive_filter_count, (struct archive * a0), (a0))
GUESTMODE_FORWARD(la_ssize_t, archive_read_data, (struct archive * a0, void * a1, size_t a2), (a0, a1, a2))
GUESTMODE_FORWARD(int, archive_read_free, (struct archive * a0), (a0))
GUESTMODE_FORWARD(struct archive *, archive_read_new, (void), ())
GUESTMODE_FORWARD(int, archive_read_next_header, (struct archive * a0, struct archive_entry ** a1), (a0, a1))
GUESTMODE_FORWARD(int, archive_read_open, (struct archive * a0, void *_client_data, archive_open_callback * a2, archive_read_callback * a3, archive_close_callback * a4), (a0, _client_data, a2, a3, a4))
GUESTMODE_FORWARD(int, archive_read_open_fd, (struct archive * a0, int _fd, size_t _block_size), (a0, _fd, _block_size))
GUESTMODE_FORWARD(int, archive_read_open_filename, (struct archive * a0, const char *_filename, size_t _block_size), (a0, _filename, _block_size))
GUESTMODE_FORWARD(int, archive_read_support_filter_zstd, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_read_support_format_raw, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_read_support_format_tar, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_read_support_format_zip, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_write_add_filter_gzip, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_write_add_filter_zstd, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_write_close, (struct archive * a0), (a0))
GUESTMODE_FORWARD(la_ssize_t, archive_write_data, (struct archive * a0, const void * a1, size_t a2), (a0, a1, a2))
GUESTMODE_FORWARD(int, archive_write_free, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_write_header, (struct archive * a0, struct archive_entry * a1), (a0, a1))
GUESTMODE_FORWARD(struct archive *, archive_write_new, (void), ())
GUESTMODE_FORWARD(int, archive_write_open, (struct archive * a0, void * a1, archive_open_callback * a2, archive_write_callback * a3, archive_close_callback * a4), (a0, a1, a2, a3, a4))
GUESTMODE_FORWARD(int, archive_write_open_fd, (struct archive * a0, int _fd), (a0, _fd))
GUESTMODE_FORWARD(int, archive_write_set_bytes_in_last_block, (struct archive * a0, int bytes_in_last_block), (a0, bytes_in_last_block))
GUESTMODE_FORWARD(int, archive_write_set_filter_option, (struct archive *_a, const char *m, const char *o, const char *v), (_a, m, o, v))
GUESTMODE_FORWARD(int, archive_write_set_format_option, (struct archive *_a, const char *m, const char *o, const char *v), (_a, m, o, v))
GUESTMODE_FORWARD(int, archive_write_set_format_pax_restricted, (struct archive * a0), (a0))
GUESTMODE_FORWARD(int, archive_write_set_format_zip, (struct archive * a0), (a0))
