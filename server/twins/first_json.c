/* first_json.c - a first divergence's judgement in JSON (server/twins/first_json.h). */
#include "server/twins/first_json.h"

#include "common/site.h"

void first_json_judge(json_t *o, const cause_result *cv, json_t *configuration)
{
    json_t *origin = json_array();
    for (int k = 0; k < cv->norigin; k++)
        json_array_append_new(origin, json_integer(cv->origin[k]));
    json_object_set_new(o, "cause", json_string(cause_name(cv->kind)));
    json_object_set_new(o, "cause_detail", json_string(cv->why));
    json_object_set_new(o, "origin_ranks", origin);
    json_object_set_new(o, "thin_evidence", json_boolean(cv->thin));
    json_object_set_new(o, "configuration",
                        cv->kind == CAUSE_CONFIGURATION && configuration ? json_incref(configuration) : json_null());
}

json_t *first_json_site(const rec_site *st)
{
    if (!st->module_len && !st->function_len && !st->caller_len)
        return json_null();
    rec_site s = *st;
    s.module = s.module ? s.module : "";
    s.function = s.function ? s.function : "";
    s.caller = s.caller ? s.caller : "";
    char text[SITE_TEXT_MAX];
    site_format(&s, text, sizeof(text));
    return json_pack("{s:s%, s:I, s:s%, s:I, s:s%, s:s}", "module", s.module, (size_t)s.module_len, "offset",
                     (json_int_t)s.offset, "function", s.function, (size_t)s.function_len, "function_offset",
                     (json_int_t)s.function_offset, "caller", s.caller, (size_t)s.caller_len, "text", text);
}
