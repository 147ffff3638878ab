/* client.c - the lockstep command's HTTP client for lockstepd (libcurl + Jansson). */
#include "cli/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fsutil.h"

/* config_path - $XDG_CONFIG_HOME/lockstep/NAME, else ~/.config/lockstep/NAME. Returns 0, or -1 when there is no
 * home to look in. */
static int config_path(const char *name, char *out, size_t cap)
{
    const char *home = getenv("HOME");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && *xdg)
        snprintf(out, cap, "%s/lockstep/%s", xdg, name);
    else if (home && *home)
        snprintf(out, cap, "%s/.config/lockstep/%s", home, name);
    else
        return -1;
    return 0;
}

/* read_config - fill unset fields from ~/.config/lockstep/config. */
static void read_config(client_conf *c)
{
    char path[1100];
    if (config_path("config", path, sizeof(path)) < 0)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1200];
    while (fgets(line, sizeof(line), f)) {
        char key[64], val[1100];
        if (line[0] == '#' || sscanf(line, " %63[a-z_] = %1099[^\n]", key, val) != 2)
            continue;
        size_t vn = strlen(val);
        while (vn && (val[vn - 1] == ' ' || val[vn - 1] == '\r'))
            val[--vn] = 0;
        if (strcmp(key, "server") == 0 && !c->server[0])
            snprintf(c->server, sizeof(c->server), "%s", val);
        else if (strcmp(key, "token") == 0 && !c->token[0])
            snprintf(c->token, sizeof(c->token), "%s", val);
        else if (strcmp(key, "ca_file") == 0 && !c->ca_file[0])
            snprintf(c->ca_file, sizeof(c->ca_file), "%s", val);
    }
    fclose(f);
}

/* read_token_file - the admin token in `path` (from `origin`, for messages), trailing blanks and newlines dropped.
 * The file must be private (fs_private_check; `strict` for the default file: yours, mode 0600). Returns 0, or -1
 * after printing why; -1 with errno ENOENT and nothing printed when `missing_ok` and there is no such file. */
static int read_token_file(const char *path, const char *origin, int strict, int missing_ok, char *out, size_t cap)
{
    char fact[1200], why[300];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO planted there must not hang the command */
    if (fd < 0) {
        int e = errno;
        if (!(missing_ok && e == ENOENT))
            cli_errorf("check the path given to --token-file or LOCKSTEP_ADMIN_TOKEN_FILE",
                       "cannot read the admin token file %s (%s): %s", path, origin, strerror(e));
        errno = e;
        return -1;
    }
    snprintf(fact, sizeof(fact), "refusing the admin token file %s (%s)", path, origin);
    if (fs_private_check(fd, strict, why, sizeof(why)) < 0) {
        close(fd);
        cli_error(fact, why,
                  strict ? "the file must be yours and no one else's: chmod 600 it (whoever could read it holds the "
                           "admin token: make a new one if others may have)"
                         : "no other user may read an admin token: chmod o-rwx it, or copy it to a file of yours "
                           "with mode 0600");
        errno = EPERM;
        return -1;
    }
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n < 0)
        n = 0;
    out[n] = 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' ' || out[n - 1] == '\t'))
        out[--n] = 0;
    if (n == 0) {
        cli_error(fact, "it is empty", "put the admin token (the file given to lockstepd --admin-token) in it");
        errno = EINVAL;
        return -1;
    }
    return 0;
}

/* load_token - the admin token from the command line and the environment: --token-file F, else --token T
 * (already in c->token), else LOCKSTEP_ADMIN_TOKEN_FILE, else LOCKSTEP_ADMIN_TOKEN. Returns 0, or -1 after
 * printing why. */
static int load_token(client_conf *c, const char *token_file)
{
    const char *env;
    if (token_file[0])
        return read_token_file(token_file, "--token-file", 0, 0, c->token, sizeof(c->token));
    if (!c->token[0] && (env = getenv("LOCKSTEP_ADMIN_TOKEN_FILE")) && *env &&
        read_token_file(env, "LOCKSTEP_ADMIN_TOKEN_FILE", 0, 0, c->token, sizeof(c->token)) < 0)
        return -1;
    if (!c->token[0] && (env = getenv("LOCKSTEP_ADMIN_TOKEN")) && *env)
        snprintf(c->token, sizeof(c->token), "%s", env);
    return 0;
}

/* load_default_token - the admin token from ~/.config/lockstep/admin-token, when that file exists in a directory
 * of the caller's. A directory the caller cannot read or does not own is another user's, and its file is passed
 * over without a word: HOME can name another user's home (a job submitted by one user that runs as another keeps
 * the submitter's HOME), and a command that needs no admin token must not fail on it. In the caller's own
 * directory the file must be the caller's and private. Returns 0, or -1 after printing why it cannot be used. */
static int load_default_token(client_conf *c)
{
    char path[1100], dir[1100];
    struct stat st;
    if (config_path("admin-token", path, sizeof(path)) < 0)
        return 0;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    if (!slash || stat(dir, &st) < 0 || st.st_uid != geteuid() || access(path, F_OK) < 0)
        return 0;
    if (read_token_file(path, "the default", 1, 1, c->token, sizeof(c->token)) < 0 && errno != ENOENT)
        return -1;
    return 0;
}

int client_conf_load(client_conf *c, const cli_globals *g)
{
    char token_file[1024] = "";
    memset(c, 0, sizeof(*c));
    snprintf(c->server, sizeof(c->server), "%s", g->server ? g->server : "");
    snprintf(c->token, sizeof(c->token), "%s", g->token ? g->token : "");
    snprintf(token_file, sizeof(token_file), "%s", g->token_file ? g->token_file : "");
    snprintf(c->ca_file, sizeof(c->ca_file), "%s", g->ca_file ? g->ca_file : "");
    c->json = g->json;
    const char *env;
    if (!c->server[0] && (env = getenv("LOCKSTEP_SERVER")) && *env)
        snprintf(c->server, sizeof(c->server), "%s", env);
    if (!c->ca_file[0] && (env = getenv("LOCKSTEP_CA_FILE")) && *env)
        snprintf(c->ca_file, sizeof(c->ca_file), "%s", env);
    if (load_token(c, token_file) < 0)
        return -1;
    read_config(c);
    if (!c->token[0] && load_default_token(c) < 0)
        return -1;
    if (!c->server[0]) {
        cli_error("no server given", "this command talks to lockstepd",
                  "pass --server http://HOST:PORT, set LOCKSTEP_SERVER, or put 'server = URL' in "
                  "~/.config/lockstep/config");
        return -1;
    }
    char why[400];
    if (servers_parse(c->server, &c->servers, why, sizeof(why)) < 0) {
        cli_error("bad server address", why,
                  "give one lockstepd URL (http://HOST:PORT), or several separated by commas, with --server, "
                  "LOCKSTEP_SERVER or 'server = URL' in ~/.config/lockstep/config");
        return -1;
    }
    size_t n = strlen(c->server);
    while (n && c->server[n - 1] == '/')
        c->server[--n] = 0;
    return 0;
}

struct body {
    char *p;
    size_t len;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct body *b = arg;
    size_t n = size * nmemb;
    char *np = realloc(b->p, b->len + n + 1);
    if (!np)
        return 0;
    b->p = np;
    memcpy(b->p + b->len, ptr, n);
    b->len += n;
    b->p[b->len] = 0;
    return n;
}

/* passed_over - whether a request that failed with `rc` may go to the next server: it never reached this one, or
 * it was a GET (a read sent twice does no harm). */
static int passed_over(CURLcode rc, const char *method)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || !strcmp(method, "GET");
}

long client_request(const client_conf *c, const char *method, const char *path, json_t *body, json_t **reply)
{
    char url[4096], auth[600];
    struct body resp = {0};
    char *payload = NULL;
    struct curl_slist *hdrs = NULL;
    long status = -1;

    *reply = NULL;
    CURL *h = curl_easy_init();
    if (!h) {
        cli_error("cannot start an HTTP client", NULL, NULL);
        return -1;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (c->ca_file[0])
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (c->token[0]) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    if (body) {
        payload = json_dumps(body, JSON_COMPACT);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload ? payload : "");
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode rc = CURLE_OK;
    for (int k = 0; k < c->servers.n; k++) {
        snprintf(url, sizeof(url), "%s%s", c->servers.url[k], path);
        curl_easy_setopt(h, CURLOPT_URL, url);
        resp.len = 0;
        errbuf[0] = 0;
        rc = curl_easy_perform(h);
        if (rc == CURLE_OK || !passed_over(rc, method))
            break;
    }
    if (rc != CURLE_OK) {
        char fact[1200];
        snprintf(fact, sizeof(fact), "cannot reach lockstepd at %s", c->server);
        cli_error(fact, errbuf[0] ? errbuf : curl_easy_strerror(rc),
                  "is lockstepd running? check --server, LOCKSTEP_SERVER or ~/.config/lockstep/config");
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (resp.p)
            *reply = json_loads(resp.p, 0, NULL);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    free(payload);
    free(resp.p);
    return status;
}

/* The CLI's own words for where to look next, by the request that failed: a hint of lockstepd's that speaks of its
 * HTTP routes ("list runs with GET /api/v1/runs") is meant for API clients, and a user of this command is told the
 * command instead. The first entry whose path prefix the request's path starts with gives the hint. */
static const struct {
    const char *prefix;
    const char *hint;
} CLI_HINTS[] = {
    {"/api/v1/twins/", "list the twin groups with `lockstep twins` (a group of another owner: OWNER/NAME)"},
    {"/api/v1/twins", "`lockstep twins --help` says which filters it takes"},
    {"/api/v1/runs/", "list runs with `lockstep runs` (--group G, --job J, --user U)"},
    {"/api/v1/runs", "`lockstep runs --help` says which filters it takes"},
    {"/api/v1/narrows", "a group's replays: `lockstep narrow GROUP --show [ID]`"},
    {"/api/v1/nodes/", "list the nodes with `lockstep nodes`"},
    {"/api/v1/alerts/", "list the alerts with `lockstep alerts`"},
    {"/api/v1/compare", "`lockstep compare --help` says what BASE, CHANGED and NOISE may be"},
    {"/api/v1/admin/tokens", "`lockstep token --help`"},
};

/* cli_hint - the hint to show for a failed request to `path`: lockstepd's own, unless it speaks HTTP (then the
 * command's words for it, else the docs). */
static const char *cli_hint(const char *path, const char *server_hint)
{
    if (!server_hint || !strstr(server_hint, "/api/v1/"))
        return server_hint;
    for (size_t i = 0; path && i < sizeof(CLI_HINTS) / sizeof(CLI_HINTS[0]); i++)
        if (!strncmp(path, CLI_HINTS[i].prefix, strlen(CLI_HINTS[i].prefix)))
            return CLI_HINTS[i].hint;
    return "docs/cli.md describes each command";
}

int client_fail(long status, json_t *reply, const char *what, const char *path)
{
    const char *err = json_string_value(json_object_get(reply, "error"));
    const char *detail = json_string_value(json_object_get(reply, "detail"));
    const char *hint = cli_hint(path, json_string_value(json_object_get(reply, "hint")));
    char fact[1024];
    snprintf(fact, sizeof(fact), "%s: %s (HTTP %ld)", what, err ? err : "the server refused the request", status);
    if (!hint && (status == 401 || status == 403))
        hint = "admin commands need the admin token: put it in ~/.config/lockstep/admin-token (mode 0600), or "
               "pass --token-file FILE";
    cli_error(fact, detail, hint);
    return status == 404 || status == 400 ? CLI_BAD_INPUT : CLI_SERVER_ERROR;
}

/* call - one request whose answer must be 2xx: 0, or the exit code after saying what went wrong. */
static int call(const client_conf *c, const char *method, const char *path, json_t *body, json_t **reply,
                const char *what)
{
    long st = client_request(c, method, path, body, reply);
    if (st < 0)
        return CLI_UNREACHABLE;
    if (st < 200 || st >= 300) {
        int rc = client_fail(st, *reply, what, path);
        json_decref(*reply);
        *reply = NULL;
        return rc;
    }
    return 0;
}

int client_get(const client_conf *c, const char *path, json_t **reply, const char *what)
{
    int rc = call(c, "GET", path, NULL, reply, what);
    if (rc)
        return rc;
    if (!*reply) {
        cli_errorf("is --server pointing at lockstepd?", "%s: the server's answer is not JSON", what);
        return CLI_SERVER_ERROR;
    }
    return 0;
}

void client_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (; *s && n + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-_.~", ch)) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = 0;
}

int client_post(const client_conf *c, const char *path, json_t *body, json_t **reply, const char *what)
{
    return call(c, "POST", path, body, reply, what);
}

int client_fetch(client_conf *c, const cli_args *a, const char *fmt, const char *what, json_t **reply, const char **arg)
{
    if (a->npos != 1)
        return cli_args_fail(a, a->npos ? "%s takes one argument" : "%s needs an argument", a->cmd->name);
    if (client_conf_load(c, &a->g) < 0)
        return CLI_BAD_INPUT;
    char esc[600], path[1400];
    client_escape(a->pos[0], esc, sizeof(esc));
    snprintf(path, sizeof(path), fmt, esc);
    *arg = a->pos[0];
    return client_get(c, path, reply, what);
}

void client_query(const char *base, const client_filter *filters, size_t n, const cli_args *a, char *out, size_t cap)
{
    char sep = '?';
    snprintf(out, cap, "%s", base);
    for (size_t i = 0; i < n; i++) {
        const char *v = cli_args_last(a, filters[i].key);
        if (!v)
            continue;
        char esc[600];
        client_escape(v, esc, sizeof(esc));
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%c%s=%s", sep, filters[i].param, esc);
        sep = '&';
    }
}

const char *client_cell(json_t *o, const char *key, int short_reals, char *buf, size_t cap)
{
    json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, short_reals ? "%.3g" : "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "yes" : "no");
    else
        return NULL;
    return buf;
}

void client_print_json(json_t *j)
{
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', stdout);
    json_decref(j);
}
