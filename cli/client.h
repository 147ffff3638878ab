/* client.h - the lockstep command's HTTP client for lockstepd: where the server is, requests, JSON replies. */
#ifndef CLI_CLIENT_H
#define CLI_CLIENT_H

#include <jansson.h>

#include "cli/args.h"
#include "common/servers.h"

/* Exit codes of the server subcommands, beside those in cli.h. */
enum client_exit {
    CLI_UNREACHABLE = 3,  /* the server could not be reached */
    CLI_SERVER_ERROR = 4, /* the server answered with an error */
};

/* Where to reach lockstepd and with which credentials. */
typedef struct client_conf {
    char server[1024];   /* base URL, no trailing slash; or several, separated by commas (common/servers.h) */
    server_list servers; /* them, parsed: a request goes to the first that answers */
    char token[512];     /* bearer token (admin or job), may be empty */
    char ca_file[1024];  /* for https, may be empty */
    int json;            /* --json: print the server's JSON */
} client_conf;

/* client_conf_load - resolve the server URL and token: the global options `--server URL`, `--token-file F` (or
 * `--token T`), `--ca-file F` and `--json` (from cli_args_parse); else LOCKSTEP_SERVER / LOCKSTEP_ADMIN_TOKEN_FILE
 * (or LOCKSTEP_ADMIN_TOKEN) / LOCKSTEP_CA_FILE; else the keys server, token, ca_file of ~/.config/lockstep/config
 * (key = value); else, for the token, ~/.config/lockstep/admin-token when it exists. A token file must be closed
 * to other users (the default one: yours, mode 0600), else it is refused. Returns 0, or -1 after printing an
 * error. */
int client_conf_load(client_conf *c, const cli_globals *g);

/* client_request - send `method` to `path` (e.g. "/api/v1/runs?user=a") with
 * an optional JSON `body` (borrowed). On an HTTP answer, returns its status
 * and sets *reply to the parsed JSON (a new reference; NULL when the body is
 * not JSON). With several servers, one that cannot be reached is passed over
 * (a GET also after a timeout: a POST that may have arrived is not sent twice).
 * Returns -1 after printing an error when no server can be reached. */
long client_request(const client_conf *c, const char *method, const char *path, json_t *body, json_t **reply);

/* client_fail - print the server's error reply ({"error","detail","hint"}) for `status` of a request to `path`
 * and return CLI_SERVER_ERROR (or CLI_BAD_INPUT for 404 / 400). A hint that speaks of lockstepd's HTTP routes is
 * replaced by the command to run instead. */
int client_fail(long status, json_t *reply, const char *what, const char *path);

/* client_get - client_request("GET") that returns 0 with *reply set on a 2xx,
 * else the exit code after printing the error. */
int client_get(const client_conf *c, const char *path, json_t **reply, const char *what);

/* client_post - client_request("POST") that returns 0 with *reply set on a
 * 2xx, else the exit code after printing the error. */
int client_post(const client_conf *c, const char *path, json_t *body, json_t **reply, const char *what);

/* client_fetch - the common shape of a read command: exactly one positional argument (else the usage), the
 * configuration (client_conf_load), GET `fmt` with that argument escaped into its %s, and the parsed reply.
 * Returns 0 with *reply and *arg set, else the exit code. */
int client_fetch(client_conf *c, const cli_args *a, const char *fmt, const char *what, json_t **reply,
                 const char **arg);

/* A list command's option that is a query parameter of its API request. */
typedef struct client_filter {
    int key;           /* the option's key (cli_opt.key) */
    const char *param; /* the query parameter */
} client_filter;

/* client_query - `base` with a query parameter for each option of `filters` given on the command line (the last of
 * each, percent-encoded), into `out`. */
void client_query(const char *base, const client_filter *filters, size_t n, const cli_args *a, char *out, size_t cap);

/* client_cell - a JSON member as text for a table cell: strings as they
 * are, integers in decimal, reals with `%.17g` (exact) or `%.3g` (short),
 * booleans as yes/no; NULL when absent or null. `buf` holds the text. */
const char *client_cell(json_t *o, const char *key, int short_reals, char *buf, size_t cap);

/* client_print_json - print `j` indented with sorted keys, then drop the
 * reference. */
void client_print_json(json_t *j);

/* client_escape - `s` percent-encoded for a URL path segment or query value,
 * into `out`. */
void client_escape(const char *s, char *out, size_t cap);

#endif /* CLI_CLIENT_H */
