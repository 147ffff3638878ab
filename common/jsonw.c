/* jsonw.c - a tiny JSON writer that never aborts (an allocation failure marks the text unusable). */
#include "common/jsonw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

void jw_init(jw *w)
{
    memset(w, 0, sizeof(*w));
}

void jw_release(jw *w)
{
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

static void put(jw *w, const char *s, size_t n)
{
    if (w->err)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t nc = w->cap ? w->cap : 256;
        while (nc < w->len + n + 1)
            nc *= 2;
        char *nb = realloc(w->buf, nc);
        if (!nb) {
            w->err = 1;
            return;
        }
        w->buf = nb;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

/* sep - a comma before every element but the first of its container. */
static void sep(jw *w)
{
    if (w->depth > 0) {
        if (!w->first[w->depth - 1])
            put(w, ",", 1);
        w->first[w->depth - 1] = 0;
    }
}

static void open_c(jw *w, const char *c)
{
    sep(w);
    put(w, c, 1);
    if (w->depth >= JW_MAX_DEPTH) {
        w->err = 1;
        return;
    }
    w->first[w->depth++] = 1;
}

static void close_c(jw *w, const char *c)
{
    if (w->depth > 0)
        w->depth--;
    put(w, c, 1);
}

void jw_obj_begin(jw *w)
{
    open_c(w, "{");
}

void jw_obj_end(jw *w)
{
    close_c(w, "}");
}

void jw_arr_begin(jw *w)
{
    open_c(w, "[");
}

void jw_arr_end(jw *w)
{
    close_c(w, "]");
}

/* quoted - `s` as a JSON string. JSON text is UTF-8: a byte that is not part of well-formed UTF-8 (an environment
 * variable, a path or a command line can hold any bytes) is written as U+FFFD, so that the text stays JSON that
 * lockstepd takes. */
static void quoted(jw *w, const char *s)
{
    put(w, "\"", 1);
    const char *p = s ? s : "";
    size_t left = strlen(p);
    while (*p) {
        const unsigned char c = (unsigned char)*p;
        char esc[8];
        size_t l = c < 0x80 ? 1 : text_utf8_seq(p, left);
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(w, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            put(w, esc, 6);
        } else if (!l) {
            put(w, "\\ufffd", 6);
            l = 1;
        } else {
            put(w, p, l);
        }
        p += l;
        left -= l;
    }
    put(w, "\"", 1);
}

void jw_key(jw *w, const char *key)
{
    sep(w);
    quoted(w, key);
    put(w, ":", 1);
    if (w->depth > 0)
        w->first[w->depth - 1] = 1; /* the value that follows takes no comma */
}

void jw_str(jw *w, const char *s)
{
    sep(w);
    quoted(w, s);
}

void jw_int(jw *w, long long v)
{
    char num[32];
    int n = snprintf(num, sizeof(num), "%lld", v);
    sep(w);
    put(w, num, (size_t)n);
}

void jw_kv_str(jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_str(w, s);
}

void jw_kv_int(jw *w, const char *key, long long v)
{
    jw_key(w, key);
    jw_int(w, v);
}

const char *jw_text(const jw *w)
{
    return w->err || !w->buf ? NULL : w->buf;
}
