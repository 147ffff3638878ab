/* mhd_errors.c - libmicrohttpd's own error answers (a malformed request line, headers too large, a bad Content-Length,
 * ...) as lockstepd's JSON errors.
 *
 * libmicrohttpd 0.9.75 answers requests it cannot parse itself, before lockstepd sees them, with fixed HTML
 * pages, and has no hook to change them. It builds each of those answers with
 * MHD_create_response_from_buffer(len, page, MHD_RESPMEM_PERSISTENT), called through the library's PLT; the
 * lockstepd executable exports its own MHD_create_response_from_buffer (server.mk: --export-dynamic-symbol),
 * which the dynamic linker binds that call to. It recognises the library's pages (a persistent buffer that
 * starts with "<html><head><title>"), answers the same status with a JSON body of the same meaning, and
 * passes every other call through to the library untouched. tests/integration/test_http.c sends each kind of
 * request libmicrohttpd refuses and checks that the answer is JSON.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <microhttpd.h>

#include "server/http/reply.h"

typedef struct MHD_Response *(*create_fn)(size_t, void *, enum MHD_ResponseMemoryMode);

static create_fn real_create;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_real(void)
{
    real_create = (create_fn)dlsym(RTLD_NEXT, "MHD_create_response_from_buffer");
}

/* The library's pages by their title, and what lockstepd says instead. */
static const struct {
    const char *title, *body;
} pages[] = {
    {"Request too big",
     "{\"error\":\"request head too large\",\"detail\":\"the request line or its headers do not fit the server's "
     "limit\",\"hint\":\"send a shorter URL and fewer or shorter headers\"}\n"},
    {"Request malformed",
     "{\"error\":\"malformed request\",\"detail\":\"the request is not well-formed HTTP/1.1 (its request line, "
     "a header, its Content-Length or its chunked encoding)\",\"hint\":\"send a well-formed HTTP/1.1 request\"}\n"},
    {"Requested HTTP version is not supported",
     "{\"error\":\"HTTP version not supported\",\"detail\":\"lockstepd speaks HTTP/1.0 and HTTP/1.1\","
     "\"hint\":\"send HTTP/1.1\"}\n"},
    {"&quot;Host:&quot; header required",
     "{\"error\":\"Host header required\",\"detail\":\"an HTTP/1.1 request must carry a Host header\","
     "\"hint\":\"send a Host header\"}\n"},
    {"Request content too large",
     "{\"error\":\"request body too large\",\"detail\":\"the declared body or chunk is larger than the server "
     "takes\",\"hint\":\"see the limits in docs/server.md\"}\n"},
    {"Internal server error",
     "{\"error\":\"internal error\",\"detail\":\"the HTTP layer could not handle the request\","
     "\"hint\":\"retry; see the lockstepd log\"}\n"},
};

static const char PREFIX[] = "<html><head><title>";
static const char OTHER[] = "{\"error\":\"bad request\",\"detail\":\"the HTTP layer refused the request\","
                            "\"hint\":\"send a well-formed HTTP/1.1 request\"}\n";

__attribute__((visibility("default"))) struct MHD_Response *
MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode)
{
    pthread_once(&once, find_real);
    if (!real_create)
        return NULL;
    const char *page = buffer;
    if (mode != MHD_RESPMEM_PERSISTENT || !page || size < sizeof(PREFIX) - 1 ||
        memcmp(page, PREFIX, sizeof(PREFIX) - 1) != 0)
        return real_create(size, buffer, mode);
    const char *json = OTHER;
    const char *title = page + sizeof(PREFIX) - 1;
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++)
        if (!strncmp(title, pages[i].title, strlen(pages[i].title))) {
            json = pages[i].body;
            break;
        }
    struct MHD_Response *r = real_create(strlen(json), (void *)json, MHD_RESPMEM_PERSISTENT);
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        http_common_headers(r);
    }
    return r;
}
