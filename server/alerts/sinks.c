/* sinks.c - alert formats and delivery: generic JSON webhook, Slack incoming webhook, Alertmanager v2, mail through a
 * sendmail-compatible program. */
#include "server/alerts/sinks.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/alerts/mailmap.h"

char *sink_slack_escape(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '&' ? 5 : (*p == '<' || *p == '>') ? 4 : 1;
    char *o = xmalloc(n + 1), *q = o;
    for (const char *p = s; *p; p++) {
        const char *rep = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : NULL;
        if (rep) {
            memcpy(q, rep, strlen(rep));
            q += strlen(rep);
        } else {
            *q++ = *p;
        }
    }
    *q = 0;
    return o;
}

void sink_resolution_text(const alert_msg *a, char *out, size_t cap)
{
    const char *why = a->resolved_reason ? a->resolved_reason : "";
    const char *by = a->resolved_by && *a->resolved_by ? a->resolved_by : NULL;
    if (!strcmp(why, "acknowledged"))
        snprintf(out, cap, "acknowledged%s%s", by ? " by " : "", by ? by : "");
    else if (!strcmp(why, "repaired"))
        snprintf(out, cap, "node %s repaired", by ? by : "?");
    else if (!strcmp(why, "superseded") && a->superseded_by > 0)
        snprintf(out, cap,
                 "superseded by alert %lld (a newer report on the group: it was evaluated again, or a replay gave its "
                 "verdict)",
                 a->superseded_by);
    else
        snprintf(out, cap, "%s", *why ? why : "resolved");
}

static json_t *slack_payload(const alert_msg *a)
{
    char *sum = sink_slack_escape(a->summary), *body = sink_slack_escape(a->body);
    char *url = sink_slack_escape(a->url);
    if (strlen(body) > 2900)
        strcpy(body + 2890, "\n…");
    char head[1200], link[1200], fallback[2000], why[400];
    snprintf(link, sizeof(link), "<%s|Open in the Lockstep dashboard>", url);
    if (a->resolved) {
        sink_resolution_text(a, why, sizeof(why));
        char *w = sink_slack_escape(why);
        snprintf(head, sizeof(head), ":white_check_mark: *lockstep: resolved — %s*", sum);
        snprintf(fallback, sizeof(fallback), "lockstep: resolved (%s): %s — %s", why, a->summary, a->url);
        free(body);
        size_t n = strlen(w) + 64;
        body = xmalloc(n);
        snprintf(body, n, "Resolved: %s.", w);
        free(w);
    } else {
        snprintf(head, sizeof(head), ":rotating_light: *lockstep: %s*", sum);
        snprintf(fallback, sizeof(fallback), "lockstep: %s — %s", a->summary, a->url);
    }
    json_t *o =
        json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}, {s:s, s:{s:s, s:s}}, {s:s, s:[{s:s, s:s}]}]}", "text", fallback,
                  "blocks", "type", "section", "text", "type", "mrkdwn", "text", head, "type", "section", "text",
                  "type", "mrkdwn", "text", body, "type", "context", "elements", "type", "mrkdwn", "text", link);
    free(sum);
    free(body);
    free(url);
    return o;
}

const char *sink_alert_name(const char *kind)
{
    return !strcmp(kind, "suspect")     ? "LockstepHardwareSuspect"
           : !strcmp(kind, "verdict")   ? "LockstepReplayVerdict"
           : !strcmp(kind, "consensus") ? "LockstepConsensusDisagreement"
                                        : "LockstepTwinDivergence";
}

json_t *sink_am_alert(const alert_msg *a)
{
    json_t *labels = a->labels && json_object_size(a->labels) ? json_deep_copy(a->labels) : json_object();
    if (!json_object_size(labels)) { /* never without an identity: the alert's own id and kind */
        char id[32];
        snprintf(id, sizeof(id), "%lld", a->id);
        json_object_set_new(labels, "alertname", json_string(sink_alert_name(a->kind)));
        json_object_set_new(labels, "lockstep_alert_id", json_string(id));
    }
    json_t *ann = a->annotations && json_object_size(a->annotations)
                      ? json_deep_copy(a->annotations)
                      : json_pack("{s:s, s:s}", "summary", a->summary, "description", a->body);
    json_t *o = json_pack("{s:o, s:o, s:s, s:s}", "labels", labels, "annotations", ann, "generatorURL", a->url,
                          "startsAt", a->created_at);
    if (a->ends_at)
        json_object_set_new(o, "endsAt", json_string(a->ends_at));
    return o;
}

json_t *sink_payload(const char *sink, const alert_msg *a)
{
    if (!strcmp(sink, "webhook")) {
        json_t *o =
            json_pack("{s:I, s:s, s:s, s:s, s:s?, s:s?, s:s, s:s, s:s, s:s, s:O}", "id", (json_int_t)a->id, "kind",
                      a->kind, "status", a->resolved ? "resolved" : "firing", "created_at", a->created_at, "group",
                      a->group, "node", a->node, "severity", a->severity, "summary", a->summary, "text", a->body, "url",
                      a->url, "details", a->details ? a->details : json_null());
        if (a->resolved) {
            char why[400];
            sink_resolution_text(a, why, sizeof(why));
            json_object_set_new(o, "resolved_at", a->resolved_at ? json_string(a->resolved_at) : json_null());
            json_object_set_new(o, "resolved_reason",
                                a->resolved_reason ? json_string(a->resolved_reason) : json_null());
            json_object_set_new(o, "resolved_by", a->resolved_by ? json_string(a->resolved_by) : json_null());
            json_object_set_new(o, "superseded_by",
                                a->superseded_by > 0 ? json_integer(a->superseded_by) : json_null());
            json_object_set_new(o, "resolution", json_string(why));
        }
        return o;
    }
    if (!strcmp(sink, "slack"))
        return slack_payload(a);
    if (!strcmp(sink, "alertmanager")) {
        json_t *arr = json_array();
        json_array_append_new(arr, sink_am_alert(a));
        return arr;
    }
    return NULL;
}

char *sink_mail_text(const alert_msg *a)
{
    char to[4096] = "", one[MAIL_ADDR_MAX + 1];
    size_t tl = 0;
    for (const char *p = a->mail_to ? a->mail_to : ""; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        snprintf(one, sizeof(one), "%.*s", (int)(l < sizeof(one) ? l : sizeof(one) - 1), p);
        if (l < sizeof(one) && mail_addr_valid(one) && tl + l + 3 < sizeof(to))
            tl += (size_t)snprintf(to + tl, sizeof(to) - tl, "%s%s", tl ? ", " : "", one);
        p += l + (e ? 1 : 0);
    }
    if (!tl)
        return NULL;
    char from[300], subject[400];
    if (g_srv.cfg.mail_from[0])
        snprintf(from, sizeof(from), "%s", g_srv.cfg.mail_from);
    else
        snprintf(from, sizeof(from), "lockstep@%s", g_srv.cfg.mail_domain[0] ? g_srv.cfg.mail_domain : "localhost");
    snprintf(subject, sizeof(subject), "[lockstep] %s", a->summary);
    for (char *c = subject; *c; c++)
        if (*c == '\r' || *c == '\n')
            *c = ' ';
    for (char *c = from; *c; c++)
        if (*c == '\r' || *c == '\n')
            *c = ' ';
    size_t n = strlen(to) + strlen(from) + strlen(subject) + strlen(a->body) + strlen(a->url) + 512;
    char *m = xmalloc(n);
    snprintf(m, n,
             "To: %s\nFrom: %s\nSubject: %s\nContent-Type: text/plain; charset=utf-8\nAuto-Submitted: auto-generated\n"
             "X-Lockstep-Alert: %lld\n\n%s\n-- \nlockstepd, %s\n",
             to, from, subject, a->id, a->body, a->url);
    return m;
}

static size_t drop(void *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

int sink_post(const char *url, const char *body, char *err, size_t cap)
{
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, cap, "curl_easy_init failed");
        return -1;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "User-Agent: lockstepd");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)g_srv.cfg.alert_timeout_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        snprintf(err, cap, "POST %s: %s", url, curl_easy_strerror(rc));
        return -1;
    }
    if (code < 200 || code > 299) {
        snprintf(err, cap, "POST %s: HTTP %ld", url, code);
        return -1;
    }
    return 0;
}

#define MAIL_TIMEOUT_S 30 /* the mail program is killed after this */

int sink_timeout_s(const char *sink)
{
    return !strcmp(sink, "mail") ? MAIL_TIMEOUT_S : g_srv.cfg.alert_timeout_s;
}

/* run_mail - feed `msg` to `mail_program -t -i` (no shell), MAIL_TIMEOUT_S at most. */
static int run_mail(const char *msg, char *err, size_t cap)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(err, cap, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(fd[0], 0);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl(g_srv.cfg.mail_program, g_srv.cfg.mail_program, "-t", "-i", (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    size_t len = strlen(msg), off = 0;
    while (off < len) {
        ssize_t w = write(fd[1], msg + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd[1]);
    int st = 0;
    for (int i = 0; i < MAIL_TIMEOUT_S * 10; i++) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            goto done;
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    snprintf(err, cap, "%s took more than %d s", g_srv.cfg.mail_program, MAIL_TIMEOUT_S);
    return -1;
done:
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    snprintf(err, cap, "%s exited with %d", g_srv.cfg.mail_program,
             WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return -1;
}

void sink_am_url(char *out, size_t cap)
{
    const char *base = g_srv.cfg.alertmanager_url;
    size_t l = strlen(base);
    while (l && base[l - 1] == '/')
        l--;
    snprintf(out, cap, "%.*s/api/v2/alerts", (int)l, base);
}

int sink_deliver(const char *sink, const alert_msg *a, char *err, size_t cap)
{
    if (!strcmp(sink, "mail")) {
        if (a->resolved) {
            snprintf(err, cap, "mail carries no resolution message");
            return -1;
        }
        if (!g_srv.cfg.mail_program[0]) {
            snprintf(err, cap, "mail_program is not configured");
            return -1;
        }
        char *m = sink_mail_text(a);
        if (!m) {
            snprintf(err, cap, "no address to mail (mail_to \"%.200s\")", a->mail_to ? a->mail_to : "");
            return -1;
        }
        int rc = run_mail(m, err, cap);
        free(m);
        return rc;
    }
    const char *base = !strcmp(sink, "webhook")        ? g_srv.cfg.webhook_url
                       : !strcmp(sink, "slack")        ? g_srv.cfg.slack_url
                       : !strcmp(sink, "alertmanager") ? g_srv.cfg.alertmanager_url
                                                       : NULL;
    if (!base || !*base) {
        snprintf(err, cap, "sink %s is not configured", sink);
        return -1;
    }
    char url[1200];
    if (!strcmp(sink, "alertmanager"))
        sink_am_url(url, sizeof(url));
    else
        snprintf(url, sizeof(url), "%s", base);
    json_t *p = sink_payload(sink, a);
    char *body = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (!body) {
        snprintf(err, cap, "cannot build the %s payload", sink);
        return -1;
    }
    int rc = sink_post(url, body, err, cap);
    free(body);
    return rc;
}
