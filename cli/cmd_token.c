/* cmd_token.c - `lockstep token JOB`: a job's ingest token, from the site secret or from lockstepd (admin). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/crypto/token.h"

enum { TK_SECRET = CLI_KEY_LONG };

/* print_token - the token alone, or {"job_id","token"} with --json. */
static void print_token(const char *job, const char *tok, int json)
{
    if (json)
        printf("{\"job_id\": \"%s\", \"token\": \"%s\"}\n", job, tok);
    else
        printf("%s\n", tok);
}

static int valid_job(const char *job)
{
    size_t n = strlen(job);
    if (n == 0 || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (job[i] < '0' || job[i] > '9')
            return 0;
    return 1;
}

static int cmd_token(const cli_args *a)
{
    const char *secret = cli_args_last(a, TK_SECRET) ?: getenv("LOCKSTEP_SECRET_FILE");
    if (a->npos != 1 || !valid_job(a->pos[0]))
        return cli_args_fail(a, "token needs one job id (decimal)");
    const char *job = a->pos[0];
    /* --secret FILE: mint locally; otherwise ask the server. */
    if (secret && *secret) {
        size_t len;
        unsigned char *key = token_load_secret(secret, &len);
        if (!key) {
            char detail[1200];
            snprintf(detail, sizeof(detail), "%s: %s", secret, errno == EINVAL ? "empty" : strerror(errno));
            cli_error("cannot read the site secret", detail, "the secret is the file given to lockstepd --secret");
            return CLI_BAD_INPUT;
        }
        char tok[TOKEN_HEX_LEN + 1];
        int rc = token_compute(key, len, job, tok);
        free(key);
        if (rc < 0) {
            cli_error("cannot compute the token", "OpenSSL's HMAC failed", NULL);
            return CLI_BAD_INPUT;
        }
        print_token(job, tok, a->g.json);
        return CLI_OK;
    }

    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    json_t *body = json_pack("{s:s}", "job_id", job), *reply;
    int rc = client_post(&c, "/api/v1/admin/tokens", body, &reply, "cannot mint the token");
    json_decref(body);
    if (rc)
        return rc;
    const char *tok = json_string_value(json_object_get(reply, "token"));
    if (tok) {
        print_token(job, tok, c.json);
    } else {
        cli_error("the server's answer holds no token", NULL, "is --server pointing at lockstepd?");
        rc = CLI_SERVER_ERROR;
    }
    json_decref(reply);
    return rc;
}

static const cli_opt token_opts[] = {
    {"secret", TK_SECRET, "FILE", "@file", "compute it here from the site secret (default: LOCKSTEP_SECRET_FILE)"},
    {0},
};

const cli_command cli_cmd_token = {
    .name = "token",
    .run = cmd_token,
    .synopsis = "token JOB [--secret FILE]",
    .summary = "a job's ingest token (admin: from the site secret or the server)",
    .opts = token_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
