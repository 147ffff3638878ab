/* test_score.c - the suspects' pure parts: the incomplete beta function, the score, blame shares, the spread cover,
 * manifest differences, Slack escaping and alert payloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/fleet/evidence.h"
#include "server/core/state.h"
#include "server/rules/score.h"
#include "server/alerts/sinks.h"

static void test_beta_cdf_known_values(void **state)
{
    (void)state;
    /* I_0.5(2, 3) = 11/16; I_x(1, 1) = x; I_x(a, 1) = x^a; arcsine law I_x(1/2, 1/2) = 2/pi asin(sqrt x) */
    assert_true(fabs(score_beta_cdf(0.5, 2, 3) - 0.6875) < 1e-12);
    assert_true(fabs(score_beta_cdf(0.3, 1, 1) - 0.3) < 1e-12);
    assert_true(fabs(score_beta_cdf(0.7, 4, 1) - pow(0.7, 4)) < 1e-12);
    assert_true(fabs(score_beta_cdf(0.3, 0.5, 0.5) - 2 / M_PI * asin(sqrt(0.3))) < 1e-10);
    /* symmetry I_x(a, b) = 1 - I_{1-x}(b, a), large parameters */
    assert_true(fabs(score_beta_cdf(0.4, 30.5, 70.2) + score_beta_cdf(0.6, 70.2, 30.5) - 1.0) < 1e-10);
    assert_true(score_beta_cdf(0, 2, 2) == 0.0 && score_beta_cdf(1, 2, 2) == 1.0);
    assert_true(score_beta_cdf(-1, 2, 2) == 0.0 && score_beta_cdf(2, 2, 2) == 1.0);
}

static void test_score_separates_a_bad_node(void **state)
{
    (void)state;
    score_params p = {.threshold = 0.95, .min_evidence = 2.0, .ratio = 2.0, .prior = 2.0};
    score_result r;
    /* the worked example of docs/suspects.md: 7 involvements in 8 runs, the fleet 8.5 in 32 */
    score_compute(&p, 7, 8, 8.5, 32, &r);
    assert_true(fabs(r.reference - 2.0 / 25.0) < 1e-12);
    assert_true(r.score > 0.999 && r.suspect);
    /* a healthy node at the baseline */
    score_compute(&p, 0.5, 8, 8.5, 32, &r);
    assert_true(r.score < 0.05 && !r.suspect);
    /* high rate but too little evidence */
    score_compute(&p, 1, 1, 1, 100, &r);
    assert_true(r.score > 0.95 && !r.suspect);
    /* no exposure, no score */
    score_compute(&p, 0, 0, 5, 50, &r);
    assert_true(r.score == 0.0 && !r.suspect && r.rate == 0.0);
}

/* The fleet baseline is one number for the whole fleet (its involvements over its runs), the same whichever node is
 * looked at; a node's reference rate is another one (the rest of the fleet, smoothed), and the text of both is a
 * percentage with one decimal. The worked example of docs/suspects.md: 8 involvements in 32 runs. */
static void test_fleet_baseline_is_one_number(void **state)
{
    (void)state;
    score_params p = {.threshold = 0.95, .min_evidence = 2.0, .ratio = 2.0, .prior = 2.0};
    assert_true(fabs(score_fleet_baseline(8, 32) - 0.25) < 1e-12);
    assert_true(score_fleet_baseline(0, 0) == 0.0 && score_fleet_baseline(0, 10) == 0.0);
    score_result n3, n4;
    score_compute(&p, 6.772, 8, 8, 32, &n3);
    score_compute(&p, 1.059, 8, 8, 32, &n4);
    assert_true(fabs(n3.reference - 0.0691) < 1e-4 && fabs(n4.reference - 0.2976) < 1e-4);
    char t[32];
    score_format_rate(score_fleet_baseline(8, 32), t, sizeof(t));
    assert_string_equal(t, "25.0%");
    score_format_rate(0.19, t, sizeof(t));
    assert_string_equal(t, "19.0%");
    score_format_rate(0.0416, t, sizeof(t));
    assert_string_equal(t, "4.2%");
    score_format_rate(0.0, t, sizeof(t));
    assert_string_equal(t, "0.0%");
}

static void test_share_blame_follows_the_common_node(void **state)
{
    (void)state;
    /* node 0 diverges with partners 1, 2, 3 in turn: it takes the blame */
    ev_weak w[6] = {{{0, 1}, 2, 1.0}, {{0, 2}, 2, 1.0}, {{0, 3}, 2, 1.0},
                    {{0, 1}, 2, 1.0}, {{0, 2}, 2, 1.0}, {{0, 3}, 2, 1.0}};
    double strong[4] = {0}, expo[4] = {6, 6, 6, 6}, k[4];
    ev_share_blame(w, 6, strong, expo, 4, k);
    assert_true(k[0] > 5.0);
    assert_true(k[1] < 0.5 && k[2] < 0.5 && k[3] < 0.5);
    assert_true(fabs(k[0] + k[1] + k[2] + k[3] - 6.0) < 1e-9); /* the mass is kept */
    /* one pair alone: split evenly */
    ev_weak one = {{2, 3}, 2, 1.0};
    ev_share_blame(&one, 1, strong, expo, 4, k);
    assert_true(fabs(k[2] - 0.5) < 1e-9 && fabs(k[3] - 0.5) < 1e-9 && k[0] == 0.0);
}

static void test_cover_size(void **state)
{
    (void)state;
    const char *one_node[] = {"n3,n1", "n3,n2", "n4,n3", "n3"};
    assert_int_equal(ev_cover_size(one_node, 4), 1);
    const char *spread[] = {"a,b", "c,d", "e,f", "g,h"};
    assert_int_equal(ev_cover_size(spread, 4), 4);
    const char *prefix[] = {"n1", "n10", "n1,n2"}; /* names are compared whole */
    assert_int_equal(ev_cover_size(prefix, 3), 2);
    assert_int_equal(ev_cover_size(NULL, 0), 0);
    const char *empty[] = {""};
    assert_int_equal(ev_cover_size(empty, 1), 0);
}

static void test_slack_escape_and_payloads(void **state)
{
    (void)state;
    char *e = sink_slack_escape("a<b>&c <@here>");
    assert_string_equal(e, "a&lt;b&gt;&amp;c &lt;@here&gt;");
    free(e);
    json_t *d = json_pack("{s:i}", "step", 7);
    alert_msg m = {.id = 5,
                   .kind = "divergence",
                   .group = "g<1>",
                   .severity = "warning",
                   .summary = "twin group g<1> diverged at step 7",
                   .body = "value 1 & 2 <x>",
                   .url = "http://h/#/twins/g%3C1%3E",
                   .created_at = "2026-11-29T12:00:00.000Z",
                   .details = d,
                   .mail_to = "alice@example.org,bob\nX-Evil: 1@x.org,carol@other.org,dave"};
    json_t *s = sink_payload("slack", &m);
    assert_string_equal(json_string_value(json_object_get(s, "text")),
                        "lockstep: twin group g<1> diverged at step 7 — http://h/#/twins/g%3C1%3E");
    json_t *blocks = json_object_get(s, "blocks");
    assert_int_equal(json_array_size(blocks), 3);
    const char *body = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 1), "text"), "text"));
    assert_string_equal(body, "value 1 &amp; 2 &lt;x&gt;");
    json_decref(s);
    /* Alertmanager: the labels and annotations fixed when the alert was raised, endsAt as given */
    m.labels = json_pack("{s:s, s:s, s:s}", "alertname", "LockstepTwinDivergence", "twin_group", "g<1>", "node", "n3");
    m.annotations = json_pack("{s:s, s:s}", "summary", m.summary, "classification", "hardware");
    m.ends_at = "2026-11-29T12:04:00.000Z";
    json_t *am = sink_payload("alertmanager", &m);
    assert_true(json_is_array(am));
    json_t *labels = json_object_get(json_array_get(am, 0), "labels");
    assert_true(json_equal(labels, m.labels));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(am, 0), "annotations"), "classification")),
        "hardware");
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "startsAt")), m.created_at);
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "endsAt")), m.ends_at);
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "generatorURL")), m.url);
    json_decref(am);
    json_t *w = sink_payload("webhook", &m);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "details"), "step")), 7);
    assert_string_equal(json_string_value(json_object_get(w, "status")), "firing");
    assert_null(json_object_get(w, "resolved_at"));
    json_decref(w);

    /* the resolution messages: webhook and Slack say how it ended, Alertmanager gets endsAt = resolved_at */
    alert_msg r = m;
    r.resolved = 1;
    r.resolved_at = r.ends_at = "2026-11-29T12:01:00.000Z";
    r.resolved_reason = "acknowledged";
    r.resolved_by = "ops";
    w = sink_payload("webhook", &r);
    assert_string_equal(json_string_value(json_object_get(w, "status")), "resolved");
    assert_string_equal(json_string_value(json_object_get(w, "resolution")), "acknowledged by ops");
    assert_string_equal(json_string_value(json_object_get(w, "resolved_at")), r.resolved_at);
    assert_true(json_is_null(json_object_get(w, "superseded_by")));
    json_decref(w);
    s = sink_payload("slack", &r);
    assert_string_equal(
        json_string_value(json_object_get(s, "text")),
        "lockstep: resolved (acknowledged by ops): twin group g<1> diverged at step 7 — http://h/#/twins/g%3C1%3E");
    body = json_string_value(
        json_object_get(json_object_get(json_array_get(json_object_get(s, "blocks"), 1), "text"), "text"));
    assert_string_equal(body, "Resolved: acknowledged by ops.");
    json_decref(s);
    am = sink_payload("alertmanager", &r);
    assert_string_equal(json_string_value(json_object_get(json_array_get(am, 0), "endsAt")), r.resolved_at);
    assert_true(json_equal(json_object_get(json_array_get(am, 0), "labels"), m.labels)); /* the same alert */
    json_decref(am);
    char why[200];
    r.resolved_reason = "repaired";
    r.resolved_by = "n3";
    sink_resolution_text(&r, why, sizeof(why));
    assert_string_equal(why, "node n3 repaired");
    r.resolved_reason = "superseded";
    r.superseded_by = 12;
    sink_resolution_text(&r, why, sizeof(why));
    assert_string_equal(
        why,
        "superseded by alert 12 (a newer report on the group: it was evaluated again, or a replay gave its verdict)");
    char err[200];
    assert_int_equal(sink_deliver("mail", &r, err, sizeof(err)), -1); /* mail carries no resolution */
    assert_string_equal(err, "mail carries no resolution message");
    json_decref(m.labels);
    json_decref(m.annotations);
    m.labels = m.annotations = NULL;
    assert_null(sink_payload("pigeon", &m));
    /* mail: to the addresses fixed when the alert was raised, only clean ones (no header injection), and no
     * domain appended here: a bare name is no address */
    snprintf(g_srv.cfg.mail_domain, sizeof(g_srv.cfg.mail_domain), "example.org");
    char *mail = sink_mail_text(&m);
    assert_non_null(mail);
    assert_non_null(strstr(mail, "To: alice@example.org, carol@other.org\n"));
    assert_null(strstr(mail, "X-Evil"));
    assert_null(strstr(mail, "dave"));
    free(mail);
    m.mail_to = "";
    assert_null(sink_mail_text(&m));
    json_decref(d);
}

static void test_config_keys(void **state)
{
    (void)state;
    char err[256];
    cfg_defaults(&g_srv.cfg);
    assert_int_equal(cfg_set(&g_srv.cfg, "suspect_threshold", "0.99", err, sizeof(err)), 0);
    assert_true(g_srv.cfg.suspect_threshold == 0.99);
    assert_int_equal(cfg_set(&g_srv.cfg, "suspect_threshold", "2", err, sizeof(err)), -1);
    assert_int_equal(cfg_set(&g_srv.cfg, "slurm_action", "drain", err, sizeof(err)), 0);
    assert_int_equal(g_srv.cfg.slurm_drain, 1);
    assert_int_equal(cfg_set(&g_srv.cfg, "slurm_action", "reboot", err, sizeof(err)), -1);
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_slack_url", "ftp://x", err, sizeof(err)), -1);
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_retry_ms", "1.5", err, sizeof(err)), -1);
    assert_int_equal(g_srv.cfg.alert_give_up_s, 259200); /* three days unless configured */
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_give_up_s", "3600", err, sizeof(err)), 0);
    assert_int_equal(g_srv.cfg.alert_give_up_s, 3600);
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_give_up_s", "0", err, sizeof(err)), -1);
    assert_int_equal(cfg_set(&g_srv.cfg, "pigeon_rate", "1", err, sizeof(err)), -1); /* unknown key */
    assert_non_null(strstr(err, "unknown setting"));
    assert_int_equal(g_srv.cfg.alert_resend_s, 60); /* Alertmanager hears of an open alert every minute */
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_resend_s", "0", err, sizeof(err)), -1);
    assert_int_equal(cfg_set(&g_srv.cfg, "alert_resend_s", "30", err, sizeof(err)), 0);
    assert_int_equal(g_srv.cfg.alert_resend_s, 30);
    assert_int_equal(cfg_set(&g_srv.cfg, "cluster", "della", err, sizeof(err)), 0);
    assert_string_equal(g_srv.cfg.cluster, "della");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beta_cdf_known_values),
        cmocka_unit_test(test_score_separates_a_bad_node),
        cmocka_unit_test(test_fleet_baseline_is_one_number),
        cmocka_unit_test(test_share_blame_follows_the_common_node),
        cmocka_unit_test(test_cover_size),
        cmocka_unit_test(test_slack_escape_and_payloads),
        cmocka_unit_test(test_config_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
