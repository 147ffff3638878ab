/* first_json.h - a first divergence's judgement in JSON: what the cause rule (common/cause.h) said of it, the
 * same keys wherever a first divergence is written (a twin group's first_divergence, server/twins/findings.c;
 * a change's first effect, server/effect/effect_data.c), and a record's call site. Tested in
 * tests/unit/test_first_json.c. */
#ifndef SERVER_TWINS_FIRST_JSON_H
#define SERVER_TWINS_FIRST_JSON_H

#include <jansson.h>

#include "common/cause.h"
#include "common/record.h"

/* first_json_judge - set on divergence object `o` what verdict `cv` says: "cause" (cause_name), "cause_detail"
 * (its sentence), "origin_ranks" (ascending), "thin_evidence", and "configuration": `configuration` (the manifest
 * diff's summary, a borrowed reference) when the cause is a configuration difference and one is given, else null.
 * Never fails. */
void first_json_judge(json_t *o, const cause_result *cv, json_t *configuration);

/* first_json_site - a decoded record's call site (rec_record.site, e.g. from its stored frame) as {"module",
 * "offset", "function", "function_offset", "caller", "text"} (text as people read it: common/site.h), or null
 * when it has none: how every read of records spells a call site. */
json_t *first_json_site(const rec_site *st);

#endif /* SERVER_TWINS_FIRST_JSON_H */
