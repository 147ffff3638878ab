/* request.c - one HTTP request as every handler sees it: its query and header values. */
#include "server/http/request.h"

const char *http_query(http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_header(http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, key);
}
