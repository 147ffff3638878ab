/* hwcfg.h - lockstepd.conf keys of the suspects, Slurm action and alert parts (their own table beside srv_config). */
#ifndef SERVER_HWCFG_H
#define SERVER_HWCFG_H

#include <stddef.h>

#include "server/score.h"

typedef struct hw_config {
    score_params score;          /* suspect_threshold, suspect_min_evidence, suspect_ratio, suspect_prior */
    double weak_weight;          /* evidence of each run of a diverging pair (0.5) */
    int software_spread;         /* nodes needed to explain one record's divergences before it is software (4) */
    int software_window_days;    /* how far back the spread rule looks (7) */
    int suspects_interval_ms;    /* sweep period of the suspects thread (2000) */
    int slurm_drain;             /* slurm_action = drain: drain suspects, resume repaired nodes */
    char scontrol[1024];         /* scontrol program (default: scontrol on PATH) */
    char slurm_conf[1024];       /* SLURM_CONF for scontrol ("" = inherit) */
    char public_url[512];        /* dashboard base URL for links ("" = http://LISTEN) */
    char webhook_url[1024];      /* generic JSON webhook */
    char slack_url[1024];        /* Slack incoming webhook */
    char alertmanager_url[1024]; /* Alertmanager base URL (POST BASE/api/v2/alerts) */
    char mail_program[1024];     /* sendmail-compatible program */
    char mail_domain[256];       /* user -> user@mail_domain */
    char mail_from[256];         /* From: (default lockstep@mail_domain) */
    char mail_admin[256];        /* recipient of node alerts ("" = none by mail) */
    int alert_retry_ms;          /* first retry delay (1000), doubled per attempt */
    int alert_retry_max_s;       /* backoff cap (300) */
    int alert_give_up_s;         /* an alert undelivered this long after it was raised: stop (259200, 3 days) */
    int alert_timeout_s;         /* per delivery attempt (10) */
} hw_config;

extern hw_config g_hw;

/* hwcfg_set - apply `key` = `value` when the key belongs to this table.
 * Returns 0 when applied, 1 when the key is not one of these (the caller
 * goes on), -1 with a reason in `err` for a bad value. */
int hwcfg_set(const char *key, const char *value, char *err, size_t cap);

#endif /* SERVER_HWCFG_H */
