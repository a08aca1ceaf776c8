#ifndef GUESTMODE_CCURL_SHIM_H
#define GUESTMODE_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper per kind of
   argument guestmode passes. */
static inline CURLcode guestmode_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guestmode_curl_set_large(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode guestmode_curl_set_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*guestmode_curl_write_function)(char *data, size_t size, size_t count, void *context);
static inline CURLcode guestmode_curl_set_write_function(CURL *handle, guestmode_curl_write_function function) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, function);
}
static inline CURLcode guestmode_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}
#endif
