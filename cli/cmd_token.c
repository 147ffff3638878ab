/* cmd_token.c - `lockstep token JOB`: a job's ingest token, from the site secret or from lockstepd (admin). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/crypto/token.h"

static const char *const usage = "usage: lockstep token JOB [--secret FILE | --server URL --token-file ADMIN] [--json]";

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

int cmd_token(int argc, char **argv)
{
    const char *secret = getenv("LOCKSTEP_SECRET_FILE");
    int json = 0;
    /* --secret FILE: mint locally; otherwise ask the server. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--secret") == 0 && i + 1 < argc) {
            secret = argv[i + 1];
            memmove(argv + i, argv + i + 2, (size_t)(argc - i - 1) * sizeof(char *));
            argc -= 2;
            i--;
        }
    }
    if (secret && *secret) {
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--json") == 0) {
                json = 1;
                memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof(char *));
                argc--;
                i--;
            }
        if (argc != 2 || !valid_job(argv[1])) {
            cli_error("token needs one job id (decimal)", NULL, usage);
            return CLI_BAD_INPUT;
        }
        size_t len;
        unsigned char *key = token_load_secret(secret, &len);
        if (!key) {
            char detail[1200];
            snprintf(detail, sizeof(detail), "%s: %s", secret, errno == EINVAL ? "empty" : strerror(errno));
            cli_error("cannot read the site secret", detail, "the secret is the file given to lockstepd --secret");
            return CLI_BAD_INPUT;
        }
        char tok[TOKEN_HEX_LEN + 1];
        int rc = token_compute(key, len, argv[1], tok);
        free(key);
        if (rc < 0) {
            cli_error("cannot compute the token", "OpenSSL's HMAC failed", NULL);
            return CLI_BAD_INPUT;
        }
        print_token(argv[1], tok, json);
        return CLI_OK;
    }

    client_conf c;
    if (client_conf_load(&c, &argc, argv) < 0)
        return CLI_BAD_INPUT;
    if (argc != 2 || !valid_job(argv[1])) {
        cli_error("token needs one job id (decimal)", NULL, usage);
        return CLI_BAD_INPUT;
    }
    json_t *body = json_pack("{s:s}", "job_id", argv[1]), *reply;
    int rc = client_post(&c, "/api/v1/admin/tokens", body, &reply, "cannot mint the token");
    json_decref(body);
    if (rc)
        return rc;
    const char *tok = json_string_value(json_object_get(reply, "token"));
    if (tok) {
        print_token(argv[1], tok, c.json);
    } else {
        cli_error("the server's answer holds no token", NULL, "is --server pointing at lockstepd?");
        rc = CLI_SERVER_ERROR;
    }
    json_decref(reply);
    return rc;
}
