#ifndef GUESTMODE_CCURL_SHIM_H
#define GUESTMODE_CCURL_SHIM_H
#include <curl/curl.h>
#include <dlfcn.h>
#include <stddef.h>

/* libcurl is opened the first time a request is sent (dlopen), not linked: every other command would
   otherwise load it and the thirty shared objects it brings (bench/results.md, "Start-up"). The functions
   guestmode calls, each named once here with curl.h's own type; Swift calls them through the table
   (Sources/GuestModeRemote/HTTPTransport.swift, the one file that does). A libcurl function called
   directly does not link, as the library is not. */
#define GUESTMODE_CURL_FUNCTIONS(X) \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_perform) X(curl_easy_strerror) \
    X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_slist_append) X(curl_slist_free_all)

#define GUESTMODE_CURL_FIELD(name) __typeof__(name) *_Nonnull name;
typedef struct guestmode_curl {
    GUESTMODE_CURL_FUNCTIONS(GUESTMODE_CURL_FIELD)
} guestmode_curl;
#undef GUESTMODE_CURL_FIELD

#ifdef __APPLE__
#define GUESTMODE_CURL_NAME "libcurl.4.dylib"
#else
#define GUESTMODE_CURL_NAME "libcurl.so.4"
#endif

/* Opens libcurl and finds every function of the table: the table, or NULL with the loader's reason in
   *error. Called once (HTTPTransport.swift keeps the answer). */
static inline const guestmode_curl *_Nullable guestmode_curl_open(const char *_Nullable *_Nonnull error) {
    static guestmode_curl table;
    void *library = dlopen(GUESTMODE_CURL_NAME, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        *error = dlerror();
        return NULL;
    }
#define GUESTMODE_CURL_BIND(name) \
    if ((table.name = (__typeof__(name) *)dlsym(library, #name)) == NULL) { \
        *error = dlerror(); \
        return NULL; \
    }
    GUESTMODE_CURL_FUNCTIONS(GUESTMODE_CURL_BIND)
#undef GUESTMODE_CURL_BIND
    return &table;
}

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper per kind of
   argument guestmode passes, each given the table's function. */
typedef __typeof__(curl_easy_setopt) *guestmode_curl_setopt;
static inline CURLcode guestmode_curl_set_long(guestmode_curl_setopt set, CURL *handle, CURLoption option, long value) {
    return set(handle, option, value);
}
static inline CURLcode guestmode_curl_set_large(
    guestmode_curl_setopt set, CURL *handle, CURLoption option, curl_off_t value) {
    return set(handle, option, value);
}
static inline CURLcode guestmode_curl_set_pointer(
    guestmode_curl_setopt set, CURL *handle, CURLoption option, const void *value) {
    return set(handle, option, value);
}
typedef size_t (*guestmode_curl_write_function)(char *data, size_t size, size_t count, void *context);
static inline CURLcode guestmode_curl_set_write_function(
    guestmode_curl_setopt set, CURL *handle, guestmode_curl_write_function function) {
    return set(handle, CURLOPT_WRITEFUNCTION, function);
}
static inline CURLcode guestmode_curl_response_code(
    __typeof__(curl_easy_getinfo) *_Nonnull get, CURL *handle, long *code) {
    return get(handle, CURLINFO_RESPONSE_CODE, code);
}
#endif
