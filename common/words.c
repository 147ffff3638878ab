/* words.c - argument vectors as text: the word splitter and the sh quoting of a word (common/words.h). */
#include "common/words.h"

#include <stdio.h>
#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int words_split(const char *s, char *buf, size_t cap, char **words, int max, char *why, size_t wcap)
{
    size_t o = 0;
    int n = 0;
    const char *p = s;
    for (;;) {
        while (is_blank(*p))
            p++;
        if (!*p)
            return n;
        if (n == max) {
            snprintf(why, wcap, "more than %d words", max);
            return -1;
        }
        size_t start = o;
        while (*p && !is_blank(*p)) {
            char c = *p++;
            if (c == '\'') { /* everything up to the next ' */
                const char *e = strchr(p, '\'');
                if (!e) {
                    snprintf(why, wcap, "a ' at byte %zu does not end", (size_t)(p - 1 - s));
                    return -1;
                }
                size_t l = (size_t)(e - p);
                if (o + l >= cap)
                    goto out_small;
                memcpy(buf + o, p, l);
                o += l;
                p = e + 1;
                continue;
            }
            if (c == '"') { /* everything up to the next ", a backslash escaping " \ $ ` */
                const char *open = p - 1;
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                        p++;
                    if (o + 1 >= cap)
                        goto out_small;
                    buf[o++] = *p++;
                }
                if (!*p) {
                    snprintf(why, wcap, "a \" at byte %zu does not end", (size_t)(open - s));
                    return -1;
                }
                p++;
                continue;
            }
            if (c == '\\') {
                if (!*p) {
                    snprintf(why, wcap, "a backslash ends the text");
                    return -1;
                }
                c = *p++;
            }
            if (o + 1 >= cap)
                goto out_small;
            buf[o++] = c;
        }
        if (o + 1 > cap)
            goto out_small;
        buf[o++] = 0;
        words[n++] = buf + start;
    }
out_small:
    snprintf(why, wcap, "the words do not fit in %zu bytes", cap);
    return -1;
}

/* put - one byte at out[*n] when it fits (keeping room for the NUL); counts it either way. */
static void put(char *out, size_t cap, size_t *n, char c)
{
    if (*n + 1 < cap)
        out[*n] = c;
    (*n)++;
}

size_t words_quote(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    put(out, cap, &n, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') { /* close the quotes, an escaped ', open them again */
            put(out, cap, &n, '\'');
            put(out, cap, &n, '\\');
            put(out, cap, &n, '\'');
        }
        put(out, cap, &n, *p);
    }
    put(out, cap, &n, '\'');
    if (cap)
        out[n < cap ? n : cap - 1] = 0;
    return n;
}

/* plain - 1 when `s` reads as itself to sh without quotes. */
static int plain(const char *s)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
    return *s && strspn(s, ok) == strlen(s);
}

size_t words_join(char *const *v, int n, char *out, size_t cap)
{
    size_t len = 0;
    if (cap)
        out[0] = 0;
    for (int i = 0; i < n; i++) {
        char *at = len < cap ? out + len : NULL;
        size_t room = len < cap ? cap - len : 0;
        if (i) {
            if (room > 1) {
                at[0] = ' ';
                at[1] = 0;
            }
            len++;
            at = len < cap ? out + len : NULL;
            room = len < cap ? cap - len : 0;
        }
        if (plain(v[i])) {
            size_t l = strlen(v[i]);
            if (room)
                snprintf(at, room, "%s", v[i]);
            len += l;
        } else {
            char none[1];
            len += words_quote(v[i], room ? at : none, room);
        }
    }
    return len;
}
