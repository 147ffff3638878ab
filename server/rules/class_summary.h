/* class_summary.h - the fleet's classification of a twin group in a dozen words at most, one pure rule: what the front
 * page shows at a glance (the reason in full on expand).
 *
 * From the classification's class and rule code (docs/suspects.md: server/fleet/suspects.c decides them) and the
 * nodes its evidence implicates, e.g. "Hardware: the odd run's node n3", "Hardware: n3 or n4, one of the pair",
 * "Software: the twins' configurations differ". At most two node names are spelled out ("n3, n4 and 2 more"); a
 * code the table does not know says the class alone. Never more than CLASS_SUMMARY_WORDS words. Tested from a
 * table in tests/unit/test_class_summary.c.
 */
#ifndef SERVER_RULES_CLASS_SUMMARY_H
#define SERVER_RULES_CLASS_SUMMARY_H

#include <stddef.h>

#define CLASS_SUMMARY_WORDS 12
#define CLASS_SUMMARY_MAX 256 /* bytes that hold any summary */

/* class_summary - the summary of class `cls` (hardware, software, inconclusive, none), rule `code` and the implicated
 * nodes `implicated` (comma-separated, may be NULL or "") into `out`. Never fails; `out` always holds a summary. */
void class_summary(const char *cls, const char *code, const char *implicated, char *out, size_t cap);

#endif /* SERVER_RULES_CLASS_SUMMARY_H */
