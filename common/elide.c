/* elide.c - differing values shown by their difference (common/elide.h). */
#include "common/elide.h"

#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026 */

static int is_cont(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* put - append `n` bytes of `s` to out[*len..cap), cut at a character's start when they do not fit. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= cap)
        return;
    if (n > cap - 1 - *len) {
        n = cap - 1 - *len;
        while (n > 0 && is_cont(s[n]))
            n--;
    }
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = 0;
}

/* context_start - where the kept part of `s` begins, the difference starting at `pre`: the start of the word it is
 * in, then of the words before it while they fit in ELIDE_CONTEXT bytes; inside a longer word, after a '/', '=' or
 * ',' within the context, else at the context's first character. */
static size_t context_start(const char *s, size_t pre)
{
    size_t from = pre;
    while (from > 0 && !is_space(s[from - 1]))
        from--;
    if (pre - from > ELIDE_CONTEXT) {
        size_t lo = pre - ELIDE_CONTEXT;
        for (size_t p = lo; p <= pre; p++)
            if (p > 0 && strchr("/=,", s[p - 1]))
                return p;
        while (lo < pre && is_cont(s[lo]))
            lo++;
        return lo;
    }
    while (from > 0) {
        size_t j = from;
        while (j > 0 && is_space(s[j - 1]))
            j--;
        while (j > 0 && !is_space(s[j - 1]))
            j--;
        if (pre - j > ELIDE_CONTEXT)
            break;
        from = j;
    }
    return from;
}

/* put_value - append `s` (`l` bytes) quoted: whole when `whole`, else from the context of the difference at `pre`
 * to the shared suffix of `suf` bytes, white space at the cut left out. */
static void put_value(char *out, size_t cap, size_t *len, const char *s, size_t l, size_t pre, size_t suf, int whole)
{
    size_t from = 0, to = l;
    if (!whole) {
        from = context_start(s, pre);
        to = l - suf;
        while (to > from && suf && is_space(s[to - 1]))
            to--;
    }
    int cut = 0;
    if (to - from > ELIDE_KEEP) {
        to = from + ELIDE_KEEP;
        while (to > from && is_cont(s[to]))
            to--;
        cut = 1;
    }
    put(out, cap, len, "'", 1);
    if (from > 0)
        put(out, cap, len, ELLIPSIS, 3);
    put(out, cap, len, s + from, to - from);
    if (cut || to < l)
        put(out, cap, len, ELLIPSIS, 3);
    put(out, cap, len, "'", 1);
}

/* inside_word - 1 when, in some value, the shared suffix of `suf` bytes would start inside a word after `lo`. */
static int inside_word(const char *const *v, int n, size_t lo, size_t suf)
{
    for (int k = 0; k < n; k++) {
        const char *s = v[k] ? v[k] : "";
        size_t at = strlen(s) - suf;
        if (at > lo && !is_space(s[at - 1]) && !is_space(s[at]))
            return 1;
    }
    return 0;
}

size_t elide_values(const char *const *v, int n, char *out, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return 0;
    out[0] = 0;
    if (n <= 0)
        return 0;
    const char *s0 = v[0] ? v[0] : "";
    size_t l0 = strlen(s0), pre = l0, suf = l0, shortest = l0;
    int whole = l0 <= ELIDE_WHOLE;
    for (int k = 1; k < n; k++) {
        const char *s = v[k] ? v[k] : "";
        size_t l = strlen(s), p = 0, q = 0;
        while (p < pre && p < l && s[p] == s0[p])
            p++;
        while (q < suf && q < l && s[l - 1 - q] == s0[l0 - 1 - q])
            q++;
        pre = p;
        suf = q;
        shortest = l < shortest ? l : shortest;
        whole &= l <= ELIDE_WHOLE;
    }
    while (pre > 0 && is_cont(s0[pre])) /* the difference starts at a character's start */
        pre--;
    size_t word = pre; /* the shared suffix ends where the word of the difference starts, at the latest */
    while (word > 0 && !is_space(s0[word - 1]))
        word--;
    if (suf > shortest - word)
        suf = shortest - word;
    while (suf > 0 && inside_word(v, n, word, suf)) /* and starts at a word's start (so at a character's) */
        suf--;
    for (int k = 0; k < n; k++) {
        const char *s = v[k] ? v[k] : "";
        if (k)
            put(out, cap, &len, " vs ", 4);
        put_value(out, cap, &len, s, strlen(s), pre, suf, whole || n < 2);
    }
    return len;
}
