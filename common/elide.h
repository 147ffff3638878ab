/* elide.h - differing values shown by their difference: the part every value shares, before and after, elided.
 *
 * One rule for every place a configuration difference is summarised (the manifest diff's "summary",
 * common/json/mdiff.c, which lockstepd's twin reports, `lockstep compare`, alerts, the dashboard and `lockstep
 * diff` all show as it is). Pure; tested by tests/unit/test_elide.c.
 *
 * Values that all fit in ELIDE_WHOLE bytes are shown whole. Otherwise each value keeps what lies between its common
 * prefix and suffix with every other value, widened to whole words (white space separates words) and, before the
 * difference, up to ELIDE_CONTEXT bytes of the words that lead to it; what is left out is marked "…" (U+2026).
 * A word longer than the context is cut after a '/', '=' or ',' where it can be, else at a character's start. The
 * part kept is at most ELIDE_KEEP bytes, cut at a character's start and marked "…" when longer. So
 *   "python3 /a/x.py --steps 20"  vs  "python3 /a/x.py --steps 20 --lr=4e-3"
 * reads '…--steps 20' vs '…--steps 20 --lr=4e-3'.
 */
#ifndef COMMON_ELIDE_H
#define COMMON_ELIDE_H

#include <stddef.h>

#define ELIDE_WHOLE 48   /* values all this short are shown whole */
#define ELIDE_CONTEXT 16 /* bytes of the shared words kept before the difference */
#define ELIDE_KEEP 80    /* the most bytes of a value kept, context included */

/* elide_values - `n` values (each NUL-terminated; NULL reads as "") into `out` (cap bytes, always terminated) as
 * 'A' vs 'B' [vs 'C' ...], each elided as above. Returns the length written (cut where `cap` ends). */
size_t elide_values(const char *const *v, int n, char *out, size_t cap);

#endif /* COMMON_ELIDE_H */
