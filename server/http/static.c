/* static.c - serve the dashboard's static files from the web directory, safely. */
#include "server/http/static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/core/state.h"
#include "server/http/reply.h"

static const struct {
    const char *ext, *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".gif", "image/gif"},
    {".ico", "image/x-icon"},
    {".webp", "image/webp"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".txt", "text/plain; charset=utf-8"},
    {".wasm", "application/wasm"},
};

const char *web_content_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* The dashboard's own files: index.html at the top, and assets under these folders. Everything else in the
 * web directory (node_modules/, package.json, web.mk, the browser tests' files) is not served. */
static const char *const asset_dirs[] = {"css/", "js/", "vendor/"};

int web_path_served(const char *rel)
{
    if (!*rel || !strcmp(rel, "index.html"))
        return 1;
    for (size_t i = 0; i < sizeof(asset_dirs) / sizeof(asset_dirs[0]); i++)
        if (!strncmp(rel, asset_dirs[i], strlen(asset_dirs[i]))) {
            const char *t = web_content_type(rel);
            return strcmp(t, "application/octet-stream") != 0 && strncmp(t, "text/html", 9) != 0;
        }
    return 0;
}

int web_path_safe(const char *url)
{
    if (url[0] != '/')
        return 0;
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '\\' || *p == 0x7f)
            return 0;
    const char *seg = url + 1;
    while (*seg) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);
        if (len > 0 && seg[0] == '.') /* ".", "..", hidden files */
            return 0;
        if (len == 0 && end) /* "//" */
            return 0;
        if (!end)
            break;
        seg = end + 1;
    }
    return 1;
}

static enum MHD_Result web_not_found(http_req *req)
{
    char detail[300];
    snprintf(detail, sizeof(detail), "no file at %.250s", req->url);
    return http_reply_error(req, 404, "not found", detail,
                            g_srv.web_dir[0] ? "the dashboard lives at /" : "start lockstepd with --web-dir DIR");
}

enum MHD_Result web_serve(http_req *req, char **args)
{
    (void)args;
    if (!g_srv.web_dir[0] || !web_path_safe(req->url) || !web_path_served(req->url + 1))
        return web_not_found(req);
    char path[PATH_MAX], real[PATH_MAX];
    const char *rel = req->url + 1;
    size_t rl = strlen(rel);
    int n = snprintf(path, sizeof(path), "%s/%s%s", g_srv.web_dir, rel,
                     (rl == 0 || rel[rl - 1] == '/') ? "index.html" : "");
    if (n < 0 || (size_t)n >= sizeof(path) || !realpath(path, real))
        return web_not_found(req);
    size_t wl = strlen(g_srv.web_dir);
    if (strncmp(real, g_srv.web_dir, wl) != 0 || (real[wl] != '/' && real[wl] != 0))
        return web_not_found(req); /* a link that leads outside */
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return web_not_found(req);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        if (S_ISDIR(st.st_mode)) {
            /* a directory without a trailing slash: redirect so relative links work */
            struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
            char loc[2100];
            snprintf(loc, sizeof(loc), "%s/", req->url);
            MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
            http_common_headers(resp);
            enum MHD_Result r = MHD_queue_response(req->conn, MHD_HTTP_MOVED_PERMANENTLY, resp);
            MHD_destroy_response(resp);
            req->status = 301;
            return r;
        }
        return web_not_found(req);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, web_content_type(real));
    http_common_headers(resp);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    req->status = 200;
    return r;
}
