#ifndef GUESTMODE_CLIBPQ_SHIM_H
#define GUESTMODE_CLIBPQ_SHIM_H
#include <dlfcn.h>
#include <stddef.h>
#if __has_include(<postgresql/libpq-fe.h>)
#include <postgresql/libpq-fe.h>
#else
#include <libpq-fe.h>
#endif

/* libpq is opened the first time a PostgreSQL store is (dlopen), not linked: a command on a SQLite store
   would otherwise load it and the twenty shared objects it brings, most of its start-up (bench/results.md,
   "Start-up"). The functions guestmode calls, each named once here with libpq-fe.h's own type; Swift calls
   them through the table (Sources/GuestModePostgres/Connection/PostgresConnection.swift, the one file that
   does). A libpq function called directly does not link, as the library is not. Pipeline mode (a
   transaction's BEGIN sent with its first statement) needs libpq 14 or later. */
#define GUESTMODE_LIBPQ_FUNCTIONS(X) \
    X(PQclear) X(PQcmdTuples) X(PQconnectPoll) X(PQconnectStartParams) X(PQconnectdb) X(PQconninfoFree) \
    X(PQconninfoParse) X(PQconsumeInput) X(PQenterPipelineMode) X(PQerrorMessage) X(PQexec) X(PQexitPipelineMode) X(PQfinish) X(PQflush) X(PQfname) \
    X(PQfreemem) X(PQgetCopyData) X(PQgetResult) X(PQgetisnull) X(PQgetvalue) X(PQisBusy) X(PQnfields) X(PQntuples) \
    X(PQpipelineSync) X(PQputCopyData) X(PQputCopyEnd) X(PQresultErrorField) X(PQresultErrorMessage) X(PQresultStatus) \
    X(PQsendPrepare) X(PQsendQuery) X(PQsendQueryParams) X(PQsendQueryPrepared) X(PQsetNoticeProcessor) X(PQsetnonblocking) X(PQsocket) X(PQstatus) \
    X(PQtransactionStatus)

#define GUESTMODE_LIBPQ_FIELD(name) __typeof__(name) *_Nonnull name;
typedef struct guestmode_libpq {
    GUESTMODE_LIBPQ_FUNCTIONS(GUESTMODE_LIBPQ_FIELD)
} guestmode_libpq;
#undef GUESTMODE_LIBPQ_FIELD

#ifdef __APPLE__
#define GUESTMODE_LIBPQ_NAME "libpq.5.dylib"
#else
#define GUESTMODE_LIBPQ_NAME "libpq.so.5"
#endif

/* Opens libpq and finds every function of the table: the table, or NULL with the loader's reason in
   *error. Called once (PostgresConnection.swift keeps the answer). */
static inline const guestmode_libpq *_Nullable guestmode_libpq_open(const char *_Nullable *_Nonnull error) {
    static guestmode_libpq table;
    void *library = dlopen(GUESTMODE_LIBPQ_NAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        *error = dlerror();
        return NULL;
    }
#define GUESTMODE_LIBPQ_BIND(name) \
    if ((table.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { \
        *error = dlerror(); \
        return NULL; \
    }
    GUESTMODE_LIBPQ_FUNCTIONS(GUESTMODE_LIBPQ_BIND)
#undef GUESTMODE_LIBPQ_BIND
    return &table;
}
#endif
