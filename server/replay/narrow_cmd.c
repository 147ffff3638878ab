/* narrow_cmd.c - what a placement of a narrow runs, as words: the run's argv (or its command split at white space),
 * or its resume template split into words and filled in from the newest checkpoint before the window
 * (server/replay/narrow_int.h). No text becomes a shell line here or anywhere after. */
#include "server/replay/narrow_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/wire.h"
#include "common/words.h"
#include "server/core/xalloc.h"
#include "server/store/frames.h"
#include "server/store/db.h"

#define CK_SAVED_KIND "2" /* saved state entries' own segments (server/store/frames.h) */
_Static_assert(FRAMES_KIND_SAVED == 2, "CK_SAVED_KIND follows FRAMES_KIND_SAVED");

#define WORD_CAP 8192 /* one filled-in word of a template */

/* substitute - the template word `tpl` with {step}, {path} and {stop} filled in, into `out`. Returns 0, or -1 when
 * it does not fit or names a placeholder it cannot fill ({path} without a path). The filled word stays one word,
 * whatever the values hold. */
static int substitute(const char *tpl, long long step, const char *path, long long stop, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *c = tpl; *c; c++) {
        char val[32];
        const char *v = NULL;
        if (!strncmp(c, "{step}", 6) || !strncmp(c, "{stop}", 6)) {
            snprintf(val, sizeof(val), "%lld", !strncmp(c, "{step}", 6) ? step : stop);
            v = val;
            c += 5;
        } else if (!strncmp(c, "{path}", 6)) {
            if (!path || !*path)
                return -1;
            v = path;
            c += 5;
        }
        size_t l = v ? strlen(v) : 1;
        if (n + l >= cap)
            return -1;
        memcpy(out + n, v ? v : c, l);
        n += l;
    }
    out[n] = 0;
    return 0;
}

/* add - append word `w` to `out`'s argv; -1 when it is full. */
static int add(narrow_cmd *out, const char *w)
{
    if (json_array_size(out->argv) >= WIRE_ARGV_WORDS)
        return -1;
    json_array_append_new(out->argv, json_string(w));
    return 0;
}

/* run_words - the run's own words: its registered argv, else its command split at white space (a run registered
 * without argv: by the agent alone, or before lockstepd kept it), no character meaning anything else. */
static void run_words(const char *argv_json, const char *command, narrow_cmd *out)
{
    json_t *a = argv_json && *argv_json ? json_loads(argv_json, 0, NULL) : NULL;
    size_t i;
    json_t *w;
    if (json_is_array(a) && json_array_size(a)) {
        json_array_foreach(a, i, w) if (json_is_string(w)) add(out, json_string_value(w));
        json_decref(a);
        return;
    }
    json_decref(a);
    for (const char *p = command; *p;) {
        size_t skip = strspn(p, " \t"), len = strcspn(p + skip, " \t");
        if (!len)
            break;
        char word[WORD_CAP];
        snprintf(word, sizeof(word), "%.*s", (int)(len < sizeof(word) ? len : sizeof(word) - 1), p + skip);
        if (add(out, word) < 0)
            break;
        p += skip + len;
    }
    if (json_array_size(out->argv))
        snprintf(out->how, sizeof(out->how),
                 "; its job registered no argument vector: its command line is split at white space");
}

/* template_words - `tpl` split into words, each filled in from checkpoint `step` at `path` up to `stop`, into
 * out->argv. Returns 0, or -1 (out->argv left empty) when it does not split or a word cannot be filled. */
static int template_words(const char *tpl, long long step, const char *path, long long stop, narrow_cmd *out)
{
    char buf[WIRE_RESUME_MAX], *words[WIRE_RESUME_WORDS], why[120], filled[WORD_CAP];
    int n = words_split(tpl, buf, sizeof(buf), words, WIRE_RESUME_WORDS, why, sizeof(why));
    for (int i = 0; i < n; i++)
        if (substitute(words[i], step, path, stop, filled, sizeof(filled)) < 0 || add(out, filled) < 0)
            n = -1;
    if (n < 1) {
        json_array_clear(out->argv);
        return -1;
    }
    return 0;
}

int narrow_cmd_make(const char *run_key, const char *argv_json, const char *command, const char *resume, long long from,
                    long long to, narrow_cmd *out, char *err, size_t cap)
{
    memset(out, 0, sizeof(*out));
    out->argv = json_array();
    if (resume[0]) {
        /* The newest checkpoint before the window, known from either fact a run gives of one: declared
         * (ls_checkpoint, POST /runs/ID/checkpoints: its step and path) or a saved state block of that step on
         * every rank (ls_state_begin LS_STATE_SAVED: its step only). A template that names {path} needs a
         * declared one. */
        char stepb[32];
        snprintf(stepb, sizeof(stepb), "%lld", from);
        const char *pc[] = {run_key, stepb, strstr(resume, "{path}") ? "t" : "f"};
        PGresult *ck = db_exec_once("ncmd_checkpoint", 3, pc, err, cap);
        if (!ck) {
            json_decref(out->argv);
            out->argv = NULL;
            return -1;
        }
        if (PQntuples(ck) == 1) {
            long long c = strtoll(PQgetvalue(ck, 0, 0), NULL, 10);
            int declared = PQgetvalue(ck, 0, 2)[0] == 't', saved = PQgetvalue(ck, 0, 3)[0] == 't';
            const char *known = declared && saved ? "declared, and its saved state block recorded"
                                : declared        ? "declared"
                                                  : "known from its saved state block";
            if (template_words(resume, c, PQgetvalue(ck, 0, 1), to, out) == 0) {
                snprintf(out->resume_step, sizeof(out->resume_step), "%lld", c);
                snprintf(out->how, sizeof(out->how), " (from the checkpoint of step %lld, %s)", c, known);
            } else {
                snprintf(out->how, sizeof(out->how),
                         " (the whole run: its resume template does not fit with the checkpoint of step %lld)", c);
            }
        } else {
            snprintf(out->how, sizeof(out->how),
                     strstr(resume, "{path}") ? " (the whole run: no checkpoint with a path declared before step %lld)"
                                              : " (the whole run: no checkpoint declared or saved before step %lld)",
                     from);
        }
        PQclear(ck);
    }
    if (!out->resume_step[0]) { /* the whole run: its own words, and the reason the template was not used */
        char how[sizeof(out->how)];
        snprintf(how, sizeof(how), "%s", out->how);
        out->how[0] = 0;
        run_words(argv_json, command, out);
        size_t l = strlen(how);
        snprintf(how + l, sizeof(how) - l, "%s", out->how);
        memcpy(out->how, how, sizeof(how));
    }
    /* The words as one line for people: what sh would run, on one line. */
    size_t n = json_array_size(out->argv);
    char **v = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        v[i] = (char *)json_string_value(json_array_get(out->argv, i));
    size_t need = words_join(v, (int)n, NULL, 0) + 1;
    char *joined = xmalloc(need);
    words_join(v, (int)n, joined, need);
    text_one_line(joined, out->command, sizeof(out->command)); /* cut, and marked so, when it does not fit */
    free(v);
    free(joined);
    return 0;
}

void narrow_cmd_register(void)
{
    db_register("ncmd_checkpoint",
                "SELECT step, max(path), bool_or(declared), bool_or(saved) FROM ("
                "SELECT step, path, true AS declared, false AS saved FROM run_checkpoints WHERE run_key = $1::bigint "
                "AND step < $2::bigint UNION ALL "
                "SELECT step, '', false, true FROM record_frames WHERE run_key = $1::bigint AND kind = " CK_SAVED_KIND
                " "
                "AND step < $2::bigint GROUP BY step HAVING count(DISTINCT rank) >= greatest(1, (SELECT count(*) "
                "FROM manifests m WHERE m.run_key = $1::bigint))) c "
                "GROUP BY step HAVING NOT $3::boolean OR max(path) <> '' ORDER BY step DESC LIMIT 1");
}
