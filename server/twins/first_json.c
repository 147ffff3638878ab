/* first_json.c - a first divergence's judgement in JSON (server/twins/first_json.h). */
#include "server/twins/first_json.h"

void first_json_judge(json_t *o, const cause_result *cv, json_t *configuration)
{
    json_t *origin = json_array();
    for (int k = 0; k < cv->norigin; k++)
        json_array_append_new(origin, json_integer(cv->origin[k]));
    json_object_set_new(o, "cause", json_string(cause_name(cv->kind)));
    json_object_set_new(o, "cause_detail", json_string(cv->why));
    json_object_set_new(o, "origin_ranks", origin);
    json_object_set_new(o, "thin_evidence", json_boolean(cv->thin));
    json_object_set_new(o, "configuration", cv->kind == CAUSE_CONFIGURATION && configuration
                                                ? json_incref(configuration)
                                                : json_null());
}
