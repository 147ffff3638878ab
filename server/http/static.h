/* static.h - serve the dashboard's static files from the web directory, safely. */
#ifndef SERVER_HTTP_STATIC_H
#define SERVER_HTTP_STATIC_H

#include "server/http/request.h"

/* web_content_type - the Content-Type for a file name by its extension
 * ("application/octet-stream" when unknown). */
const char *web_content_type(const char *path);

/* web_path_safe - 1 when the URL path `url` (already percent-decoded) names
 * a file inside the web directory: no ".." or "." segments, no backslashes,
 * control bytes or hidden names. */
int web_path_safe(const char *url);

/* web_path_served - 1 when `rel` (a path inside the web directory, without
 * its leading '/') is one of the dashboard's own files: "" or index.html, or
 * a web asset (.css, .js, .svg, ... by its extension, not .html) under css/,
 * js/ or vendor/. */
int web_path_served(const char *rel);

/* web_serve - GET/HEAD of a static file ("/" is index.html); 404 JSON when
 * missing, 405 for other methods. Symbolic links that leave the web
 * directory are refused. The route table's fallback (route_set_fallback). */
enum MHD_Result web_serve(http_req *req, char **args);

#endif /* SERVER_HTTP_STATIC_H */
