/* site.c - call sites as people read them, and the glob patterns that pick records by name or call site
 * (common/site.h). */
#include "common/site.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int site_pattern_check(const char *pat, size_t len, char *why, size_t cap)
{
    if (len == 0) {
        snprintf(why, cap, "an empty pattern");
        return -1;
    }
    if (len > SITE_PATTERN_MAX) {
        snprintf(why, cap, "pattern '%.40s...' is longer than %d bytes", pat, SITE_PATTERN_MAX);
        return -1;
    }
    int only_stars = 1, parens = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)pat[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(why, cap, "pattern '%.*s' contains a control character", (int)len, pat);
            return -1;
        }
        if (c == ',') {
            snprintf(why, cap, "pattern '%.*s' contains a comma, which separates patterns; match it with '?'", (int)len,
                     pat);
            return -1;
        }
        if (c != '*')
            only_stars = 0;
        if (c == '(')
            parens++;
        if (c == ')' && --parens < 0) {
            snprintf(why, cap, "pattern '%.*s' has a ')' without its '('", (int)len, pat);
            return -1;
        }
        if (c == '\\') {
            if (i + 1 == len) {
                snprintf(why, cap, "pattern '%.*s' ends with a lone '\\'", (int)len, pat);
                return -1;
            }
            i++;
        } else if (c == '[') {
            /* a bracket expression: "[]...]" and "[!]...]" take the first ']' literally */
            size_t j = i + 1;
            if (j < len && (pat[j] == '!' || pat[j] == '^'))
                j++;
            if (j < len && pat[j] == ']')
                j++;
            while (j < len && pat[j] != ']')
                j++;
            if (j >= len) {
                snprintf(why, cap, "pattern '%.*s' has a '[' without its ']'", (int)len, pat);
                return -1;
            }
            i = j;
        }
    }
    if (parens) {
        /* "f(int, double)" split at its comma: say so, rather than match two halves of a signature */
        snprintf(why, cap,
                 "pattern '%.*s' has a '(' without its ')'; commas separate patterns, so match a comma "
                 "inside a signature with '?'",
                 (int)len, pat);
        return -1;
    }
    if (only_stars) {
        snprintf(why, cap, "pattern '%.*s' matches every record; to record nothing use --lockstep=off", (int)len, pat);
        return -1;
    }
    return 0;
}

int site_patterns_parse(const char *spec, site_patterns *out, char *why, size_t cap)
{
    out->n = 0;
    if (!spec || !*spec)
        return 0;
    for (const char *p = spec;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char reason[400];
        if (site_pattern_check(p, len, reason, sizeof(reason)) < 0) {
            snprintf(why, cap, "%s in '%s'", reason, spec);
            out->n = 0;
            return -1;
        }
        if (out->n == SITE_PATTERNS_MAX) {
            snprintf(why, cap, "more than %d patterns in '%.60s...'", SITE_PATTERNS_MAX, spec);
            out->n = 0;
            return -1;
        }
        memcpy(out->pat[out->n], p, len);
        out->pat[out->n][len] = 0;
        out->n++;
        if (!e)
            return 0;
        p = e + 1;
    }
}

size_t site_base_name(const char *fn, size_t len, char *out, size_t cap)
{
    static const char anon[] = "(anonymous namespace)";
    size_t end = len;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (fn[i] == '(' && len - i >= sizeof(anon) - 1 && memcmp(fn + i, anon, sizeof(anon) - 1) == 0) {
            i += sizeof(anon) - 2;
            continue;
        }
        if (fn[i] == '<')
            depth++;
        else if (fn[i] == '>' && depth > 0)
            depth--;
        else if (fn[i] == '(' && depth == 0 && i > 0) {
            end = i;
            break;
        }
    }
    if (cap == 0)
        return 0;
    size_t n = end < cap - 1 ? end : cap - 1;
    memcpy(out, fn, n);
    out[n] = 0;
    return n;
}

/* matches - 1 when a pattern of `p` matches `s` (`len` bytes). */
static int matches(const site_patterns *p, const char *s, size_t len)
{
    char buf[REC_SITE_NAME_MAX + 1];
    if (!len)
        return 0;
    if (len > REC_SITE_NAME_MAX)
        len = REC_SITE_NAME_MAX;
    memcpy(buf, s, len);
    buf[len] = 0;
    for (int i = 0; i < p->n; i++)
        if (fnmatch(p->pat[i], buf, 0) == 0)
            return 1;
    return 0;
}

/* matches_function - a function's full name, or its name without the parameter list. */
static int matches_function(const site_patterns *p, const char *fn, size_t len)
{
    char base[REC_SITE_NAME_MAX + 1];
    if (!len)
        return 0;
    if (matches(p, fn, len))
        return 1;
    size_t n = site_base_name(fn, len, base, sizeof(base));
    return n != len && matches(p, base, n);
}

int site_patterns_match(const site_patterns *p, const char *name, size_t name_len, const rec_site *site)
{
    if (!p || p->n == 0)
        return 0;
    if (matches(p, name, name_len))
        return 1;
    if (!site)
        return 0;
    if (matches_function(p, site->function, site->function_len) || matches_function(p, site->caller, site->caller_len))
        return 1;
    /* A call from code no symbol names (a stripped program): its place, MODULE+0xOFFSET, is the handle. */
    if (site->module_len) {
        char where[REC_SITE_MODULE_MAX + 24];
        int n = snprintf(where, sizeof(where), "%.*s+0x%" PRIx64, (int)site->module_len, site->module, site->offset);
        return n > 0 && matches(p, where, (size_t)n);
    }
    return 0;
}

size_t site_format(const rec_site *s, char *out, size_t cap)
{
    int n;
    if (cap == 0)
        return 0;
    out[0] = 0;
    if (s->function_len && s->module_len)
        n = snprintf(out, cap, "%.*s+0x%" PRIx64 " (%.*s+0x%" PRIx64 ")", (int)s->function_len, s->function,
                     s->function_offset, (int)s->module_len, s->module, s->offset);
    else if (s->function_len)
        n = s->function_offset
                ? snprintf(out, cap, "%.*s+0x%" PRIx64, (int)s->function_len, s->function, s->function_offset)
                : snprintf(out, cap, "%.*s", (int)s->function_len, s->function);
    else if (s->module_len && s->caller_len)
        n = snprintf(out, cap, "%.*s+0x%" PRIx64 " (no symbol), called from %.*s", (int)s->module_len, s->module,
                     s->offset, (int)s->caller_len, s->caller);
    else if (s->module_len)
        n = snprintf(out, cap, "%.*s+0x%" PRIx64, (int)s->module_len, s->module, s->offset);
    else if (s->caller_len)
        n = snprintf(out, cap, "called from %.*s", (int)s->caller_len, s->caller);
    else
        n = 0;
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t site_suggest_ignore(const rec_site *s, const char *name, size_t name_len, char *out, size_t cap)
{
    char raw[REC_SITE_NAME_MAX + 1];
    size_t n;
    if (cap == 0)
        return 0;
    if (s && s->function_len)
        n = site_base_name(s->function, s->function_len, raw, sizeof(raw));
    else if (s && s->caller_len)
        n = site_base_name(s->caller, s->caller_len, raw, sizeof(raw));
    else if (s && s->module_len)
        n = (size_t)snprintf(raw, sizeof(raw), "%.*s+0x%" PRIx64, (int)s->module_len, s->module, s->offset);
    else {
        n = name_len < sizeof(raw) - 1 ? name_len : sizeof(raw) - 1;
        memcpy(raw, name, n);
        raw[n] = 0;
    }
    /* Glob characters in the name are escaped; commas (they separate patterns) and control bytes become '?'. */
    size_t o = 0;
    for (size_t i = 0; i < n && o + 2 < cap && o + 2 < SITE_PATTERN_MAX; i++) {
        char c = raw[i];
        if (c == ',' || (unsigned char)c < 0x20 || c == 0x7f) {
            out[o++] = '?';
        } else {
            if (strchr("*?[]\\", c))
                out[o++] = '\\';
            out[o++] = c;
        }
    }
    out[o] = 0;
    return o;
}
