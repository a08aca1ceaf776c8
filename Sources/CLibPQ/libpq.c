#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/*
 * libpq is opened the first time guestmode calls into it, not linked: with the
 * libraries it needs (OpenSSL, Kerberos, LDAP, GnuTLS) it cost about 12 M instructions of dynamic
 * loading at the start of every command, most of which never use it
 * (bench/results.md, "Start-up"). Each function below has the signature the
 * header declares and forwards to the library's own, looked up once; a
 * function called from Swift and missing here fails the link.
 */

static void *library;
static char *failure;
static pthread_once_t opened = PTHREAD_ONCE_INIT;

static void open_library(void) {
    library = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        failure = strdup(reason != NULL ? reason : "libpq.so.5: cannot be opened");
    }
}

const char *guestmode_libpq_unavailable(void) {
    pthread_once(&opened, open_library);
    if (library != NULL) return NULL;
    return failure != NULL ? failure : "libpq.so.5: cannot be opened";
}

/* Only reached when the library loaded but lacks a function this build was made
   against: the installed library is not the one guestmode needs. */
static void *resolve(const char *name) {
    const char *unavailable = guestmode_libpq_unavailable();
    void *function = unavailable == NULL ? dlsym(library, name) : NULL;
    if (function == NULL) {
        fprintf(stderr, "guestmode: cannot use %s from libpq.so.5: %s\n", name,
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

GUESTMODE_FORWARD_VOID(PQclear, (PGresult *res), (res))
GUESTMODE_FORWARD(char *, PQcmdTuples, (PGresult *res), (res))
GUESTMODE_FORWARD(PGconn *, PQconnectdb, (const char *conninfo), (conninfo))
GUESTMODE_FORWARD_VOID(PQconninfoFree, (PQconninfoOption *connOptions), (connOptions))
GUESTMODE_FORWARD(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg), (conninfo, errmsg))
GUESTMODE_FORWARD(char *, PQerrorMessage, (const PGconn *conn), (conn))
GUESTMODE_FORWARD(PGresult *, PQexec, (PGconn *conn, const char *query), (conn, query))
GUESTMODE_FORWARD(PGresult *, PQexecParams, (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat), (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat))
GUESTMODE_FORWARD_VOID(PQfinish, (PGconn *conn), (conn))
GUESTMODE_FORWARD(char *, PQfname, (const PGresult *res, int field_num), (res, field_num))
GUESTMODE_FORWARD_VOID(PQfreemem, (void *ptr), (ptr))
GUESTMODE_FORWARD(PGresult *, PQgetResult, (PGconn *conn), (conn))
GUESTMODE_FORWARD(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
GUESTMODE_FORWARD(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
GUESTMODE_FORWARD(int, PQnfields, (const PGresult *res), (res))
GUESTMODE_FORWARD(int, PQntuples, (const PGresult *res), (res))
GUESTMODE_FORWARD(int, PQputCopyData, (PGconn *conn, const char *buffer, int nbytes), (conn, buffer, nbytes))
GUESTMODE_FORWARD(int, PQputCopyEnd, (PGconn *conn, const char *errormsg), (conn, errormsg))
GUESTMODE_FORWARD(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode))
GUESTMODE_FORWARD(char *, PQresultErrorMessage, (const PGresult *res), (res))
GUESTMODE_FORWARD(ExecStatusType, PQresultStatus, (const PGresult *res), (res))
GUESTMODE_FORWARD(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg))
GUESTMODE_FORWARD(ConnStatusType, PQstatus, (const PGconn *conn), (conn))
GUESTMODE_FORWARD(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn))
