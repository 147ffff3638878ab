/* hwcfg.c - lockstepd.conf keys of the suspects, Slurm action and alert parts (their own table beside srv_config). */
#include "server/hwcfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hw_config g_hw = {
    .score = {.threshold = 0.95, .min_evidence = 2.0, .ratio = 2.0, .prior = 2.0},
    .weak_weight = 0.5,
    .software_spread = 4,
    .software_window_days = 7,
    .suspects_interval_ms = 2000,
    .scontrol = "scontrol",
    .alert_retry_ms = 1000,
    .alert_retry_max_s = 300,
    .alert_give_up_s = 259200,
    .alert_timeout_s = 10,
};

static int num(double *dst, const char *v, double lo, double hi, const char *key, char *err, size_t cap)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi)) {
        snprintf(err, cap, "%s must be a number in %g..%g, not \"%s\"", key, lo, hi, v);
        return -1;
    }
    *dst = d;
    return 0;
}

static int integer(int *dst, const char *v, int lo, int hi, const char *key, char *err, size_t cap)
{
    double d;
    if (num(&d, v, lo, hi, key, err, cap) < 0 || d != (int)d) {
        snprintf(err, cap, "%s must be an integer in %d..%d, not \"%s\"", key, lo, hi, v);
        return -1;
    }
    *dst = (int)d;
    return 0;
}

static int str(char *dst, size_t n, const char *v, const char *key, char *err, size_t cap)
{
    if (strlen(v) >= n) {
        snprintf(err, cap, "%s is longer than %zu bytes", key, n - 1);
        return -1;
    }
    snprintf(dst, n, "%s", v);
    return 0;
}

static int url(char *dst, size_t n, const char *v, const char *key, char *err, size_t cap)
{
    if (*v && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
        snprintf(err, cap, "%s must be an http:// or https:// URL, not \"%s\"", key, v);
        return -1;
    }
    return str(dst, n, v, key, err, cap);
}

int hwcfg_set(const char *key, const char *v, char *err, size_t cap)
{
    hw_config *c = &g_hw;
    if (!strcmp(key, "suspect_threshold"))
        return num(&c->score.threshold, v, 0.5, 1.0, key, err, cap);
    if (!strcmp(key, "suspect_min_evidence"))
        return num(&c->score.min_evidence, v, 0.0, 1e6, key, err, cap);
    if (!strcmp(key, "suspect_ratio"))
        return num(&c->score.ratio, v, 1.0, 1000.0, key, err, cap);
    if (!strcmp(key, "suspect_prior"))
        return num(&c->score.prior, v, 0.001, 1e6, key, err, cap);
    if (!strcmp(key, "weak_weight"))
        return num(&c->weak_weight, v, 0.0, 1.0, key, err, cap);
    if (!strcmp(key, "software_spread"))
        return integer(&c->software_spread, v, 2, 100000, key, err, cap);
    if (!strcmp(key, "software_window_days"))
        return integer(&c->software_window_days, v, 1, 100000, key, err, cap);
    if (!strcmp(key, "suspects_interval_ms"))
        return integer(&c->suspects_interval_ms, v, 50, 3600000, key, err, cap);
    if (!strcmp(key, "slurm_action")) {
        if (strcmp(v, "off") && strcmp(v, "drain")) {
            snprintf(err, cap, "slurm_action must be off or drain, not \"%s\"", v);
            return -1;
        }
        c->slurm_drain = !strcmp(v, "drain");
        return 0;
    }
    if (!strcmp(key, "scontrol"))
        return str(c->scontrol, sizeof(c->scontrol), v, key, err, cap);
    if (!strcmp(key, "slurm_conf"))
        return str(c->slurm_conf, sizeof(c->slurm_conf), v, key, err, cap);
    if (!strcmp(key, "public_url"))
        return url(c->public_url, sizeof(c->public_url), v, key, err, cap);
    if (!strcmp(key, "alert_webhook_url"))
        return url(c->webhook_url, sizeof(c->webhook_url), v, key, err, cap);
    if (!strcmp(key, "alert_slack_url"))
        return url(c->slack_url, sizeof(c->slack_url), v, key, err, cap);
    if (!strcmp(key, "alert_alertmanager_url"))
        return url(c->alertmanager_url, sizeof(c->alertmanager_url), v, key, err, cap);
    if (!strcmp(key, "mail_program"))
        return str(c->mail_program, sizeof(c->mail_program), v, key, err, cap);
    if (!strcmp(key, "mail_domain"))
        return str(c->mail_domain, sizeof(c->mail_domain), v, key, err, cap);
    if (!strcmp(key, "mail_from"))
        return str(c->mail_from, sizeof(c->mail_from), v, key, err, cap);
    if (!strcmp(key, "mail_admin"))
        return str(c->mail_admin, sizeof(c->mail_admin), v, key, err, cap);
    if (!strcmp(key, "alert_retry_ms"))
        return integer(&c->alert_retry_ms, v, 10, 3600000, key, err, cap);
    if (!strcmp(key, "alert_retry_max_s"))
        return integer(&c->alert_retry_max_s, v, 1, 86400, key, err, cap);
    if (!strcmp(key, "alert_give_up_s"))
        return integer(&c->alert_give_up_s, v, 1, 31536000, key, err, cap);
    if (!strcmp(key, "alert_timeout_s"))
        return integer(&c->alert_timeout_s, v, 1, 600, key, err, cap);
    return 1;
}
