/* node_of.c - which node and GPU ran a rank (common/json/node_of.h): pure, tested from tests/data/node_of/. */
#include "common/json/node_of.h"

#include <string.h>

/* text_of - `key` of `o` when it is a non-empty string, else NULL. */
static const char *text_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : NULL;
}

const char *node_of_reported(const json_t *manifest)
{
    static const char *const keys[] = {"slurm_node", "node", "host"};
    if (!json_is_object(manifest))
        return "";
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *s = text_of(manifest, keys[i]);
        if (s)
            return s;
    }
    return "";
}

int node_of_same_host(const char *reported, const char *node)
{
    size_t n = strlen(node);
    return !strcmp(reported, node) || (!strncmp(reported, node, n) && reported[n] == '.');
}

/* gpu_of - the manifest's GPU: its `gpu` object, else the one element of `gpus`, else NULL. */
static const json_t *gpu_of(const json_t *manifest)
{
    const json_t *gpu = json_object_get(manifest, "gpu"), *gpus = json_object_get(manifest, "gpus");
    if (json_is_object(gpu))
        return gpu;
    if (json_is_array(gpus) && json_array_size(gpus) == 1 && json_is_object(json_array_get(gpus, 0)))
        return json_array_get(gpus, 0);
    return NULL;
}

/* single_node - `nodes` when it names one node (no list, no range), else NULL. */
static const char *single_node(const char *nodes)
{
    return nodes && *nodes && !strpbrk(nodes, "[],") ? nodes : NULL;
}

void node_of_rank(const json_t *manifest, const node_facts *facts, node_place *out)
{
    if (!json_is_object(manifest))
        manifest = NULL;
    out->reported = node_of_reported(manifest);
    out->gpu = out->gpu_name = "";
    if (facts->attested && *facts->attested)
        out->node = !*out->reported || node_of_same_host(out->reported, facts->attested) ? facts->attested : NULL;
    else if (!facts->trust_reported)
        out->node = NULL;
    else
        out->node = *out->reported ? out->reported : single_node(facts->run_nodes);
    const json_t *gpu = out->node ? gpu_of(manifest) : NULL;
    if (gpu) {
        const char *s = json_string_value(json_object_get(gpu, "uuid"));
        out->gpu = s ? s : "";
        s = json_string_value(json_object_get(gpu, "name"));
        out->gpu_name = s ? s : "";
    }
}
