/* msecret.c - a posted manifest without secret-named variables (common/json/msecret.h). */
#include "common/json/msecret.h"

#include <string.h>

#include "common/envrule.h"

/* kept - 1 when a secret-named variable's recorded value is what the agent writes in its place. */
static int kept(json_t *v)
{
    char id[ENV_KEY_ID_LEN + 1];
    const char *s = json_string_value(v);
    return s && (env_digest_key_id(s, id) == 0 || !strcmp(s, ENV_SECRET_NO_KEY));
}

int msecret_scrub(json_t *m)
{
    int removed = 0;
    json_t *env = json_object_get(m, "env"), *v, *files = json_object_get(m, "files");
    const char *k;
    void *tmp;
    json_object_foreach_safe(env, tmp, k, v)
    {
        if (env_secret_name(k, strlen(k), NULL) && !kept(v)) {
            json_object_del(env, k);
            removed++;
        }
    }
    for (size_t i = json_array_size(files); i-- > 0;) {
        const char *name = json_string_value(json_object_get(json_array_get(files, i), "env"));
        if (name && env_secret_name(name, strlen(name), NULL)) {
            json_array_remove(files, i);
            removed++;
        }
    }
    return removed;
}
