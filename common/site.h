/* site.h - call sites as people read them, and the glob patterns that pick records by name or call site.
 *
 * One module for every program: the agent matches LOCKSTEP_IGNORE and LOCKSTEP_STEP_ON with it, the SPANK
 * plugin checks --lockstep-ignore at submission with it, and lockstepd and the CLI print sites and suggest
 * ignore rules with it. A pattern is a shell glob (fnmatch(3), no flags: '*' also matches '/', '.', ':')
 * matched against the record's name and every function its call site names: the function, the caller,
 * and each of those without its parameter list ("Solver::report_timings" for
 * "Solver::report_timings(int) const"), so a user need not know the signature; and against the site's place,
 * "MODULE+0xOFFSET" ("hpcc+0x157a4"), the one handle on a call from a stripped program.
 */
#ifndef COMMON_SITE_H
#define COMMON_SITE_H

#include <stddef.h>

#include "common/record.h"

#define SITE_PATTERN_MAX 255 /* longest pattern */
#define SITE_PATTERNS_MAX 32 /* most patterns in one list */
#define SITE_TEXT_MAX 2400   /* a buffer that holds any formatted site */

/* A list of patterns, as parsed from "GLOB[,GLOB...]". */
typedef struct site_patterns {
    int n;
    char pat[SITE_PATTERNS_MAX][SITE_PATTERN_MAX + 1];
} site_patterns;

/* site_pattern_check - 0 when `pat` (`len` bytes) is a usable pattern, else -1
 * with a user-facing reason in `why`: empty, longer than SITE_PATTERN_MAX, a
 * control character or comma, an unclosed '[' or a trailing '\', or a
 * pattern made of '*' alone (it would drop every record). */
int site_pattern_check(const char *pat, size_t len, char *why, size_t cap);

/* site_patterns_parse - parse a comma-separated list into `out`. NULL or ""
 * is the empty list. Returns 0, or -1 with a user-facing reason in `why`
 * naming the bad pattern (out is then empty). */
int site_patterns_parse(const char *spec, site_patterns *out, char *why, size_t cap);

/* site_patterns_match - 1 when some pattern of `p` matches the record name
 * (`name_len` bytes) or a function `site` names (site may be NULL), else 0.
 * Never fails. */
int site_patterns_match(const site_patterns *p, const char *name, size_t name_len, const rec_site *site);

/* site_base_name - `fn` (`len` bytes) without its parameter list and what
 * follows it, into `out` (always NUL-terminated): "ns::f<int>" for
 * "ns::f<int>(int, char) const". "(anonymous namespace)" is kept as part of
 * the name. Returns the length written. */
size_t site_base_name(const char *fn, size_t len, char *out, size_t cap);

/* site_format - the site as people read it, into `out` (always
 * NUL-terminated); returns the length written:
 *   "Solver::report_timings(int)+0x1a3 (libsolver.so.2+0x41a3)"      a function with a symbol
 *   "libsolver.so.2+0x1234 (no symbol), called from Solver::finish()" no symbol: the nearest named caller
 *   "libsolver.so.2+0x1234"                                          no symbol and no named caller
 *   "train.py:84 step"                                               a function alone (a client's own site) */
size_t site_format(const rec_site *s, char *out, size_t cap);

/* site_suggest_ignore - the pattern that would ignore records from this call
 * site (the function's base name, else the caller's, else MODULE+0xOFFSET, else `name`), into
 * `out` (always NUL-terminated). Commas, which cannot appear in a pattern,
 * become '?'. Returns the length written. */
size_t site_suggest_ignore(const rec_site *s, const char *name, size_t name_len, char *out, size_t cap);

#endif /* COMMON_SITE_H */
