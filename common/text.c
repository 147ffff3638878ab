/* text.c - well-formed UTF-8 and one-line text: the checks every program applies to strings that cross a boundary
 * (common/text.h). */
#include "common/text.h"

/* utf8_next - the length of the well-formed UTF-8 sequence at s[0..n) and its code point in *cp; 0 when the
 * bytes there are not one. */
static size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    unsigned min, v;
    if ((c & 0xe0) == 0xc0)
        len = 2, min = 0x80, v = c & 0x1f;
    else if ((c & 0xf0) == 0xe0)
        len = 3, min = 0x800, v = c & 0x0f;
    else if ((c & 0xf8) == 0xf0)
        len = 4, min = 0x10000, v = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[k] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

int text_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t text_utf8_seq(const char *s, size_t n)
{
    unsigned cp;
    return n ? utf8_next((const unsigned char *)s, n, &cp) : 0;
}

static int is_control(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

int text_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned cp;
        size_t l = utf8_next(s + i, n - i, &cp);
        if (!l || cp == 0)
            return 0;
        i += l;
    }
    return 1;
}

int text_line_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned cp;
        size_t l = utf8_next(s + i, n - i, &cp);
        if (!l || is_control(cp))
            return 0;
        i += l;
    }
    return 1;
}

/* clean - text_sanitize and text_one_line: `blank` turns white-space controls into spaces, `mark` ends a copy that
 * had to be cut with "..." (else it is cut where it stops fitting). */
static char *clean(const char *str, char *out, size_t cap, int blank, int mark)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = 0, o = 0, i = 0, whole = 0;
    if (!cap)
        return out;
    while (s[n])
        n++;
    for (size_t k = 0; k < n;) { /* the copy's length, uncut: a bad byte or a control character is one byte */
        unsigned cp;
        size_t l = utf8_next(s + k, n - k, &cp);
        whole += !l || is_control(cp) ? 1 : l;
        k += l ? l : 1;
    }
    int cut = mark && whole + 1 > cap && cap > 4;
    size_t room = cut ? cap - 4 : cap - 1; /* bytes of text; a cut copy keeps 3 for "..." */
    while (i < n) {
        unsigned cp;
        size_t l = utf8_next(s + i, n - i, &cp);
        int bad = !l || is_control(cp);
        if (o + (bad ? 1 : l) > room)
            break;
        if (bad)
            out[o++] = blank && l && (cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f') ? ' ' : '?';
        else
            for (size_t k = 0; k < l; k++)
                out[o++] = (char)s[i + k];
        i += l ? l : 1;
    }
    if (cut)
        for (int k = 0; k < 3; k++)
            out[o++] = '.';
    out[o] = 0;
    return out;
}

char *text_sanitize(const char *str, char *out, size_t cap)
{
    return clean(str, out, cap, 0, 0);
}

char *text_one_line(const char *str, char *out, size_t cap)
{
    return clean(str, out, cap, 1, 1);
}
