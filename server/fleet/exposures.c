/* exposures.c - the hardware suspected in twin groups, read for the twin reads (server/fleet/exposures.h). */
#include "server/fleet/exposures.h"

#include "server/store/db.h"

void exposures_register(void)
{
    db_register("twin_suspected",
                "SELECT e.twin_group, e.node, nullif(e.gpu, ''), max(e.weight), coalesce(min(n.state), 'ok') "
                "FROM hw_exposures e LEFT JOIN hw_nodes n ON n.name = e.node WHERE e.weight > 0 AND e.twin_group IN "
                "(SELECT jsonb_array_elements_text($1::jsonb)) GROUP BY e.twin_group, e.node, e.gpu "
                "ORDER BY e.twin_group, max(e.weight) DESC, e.node, e.gpu");
}

PGresult *exposures_of_groups(const char *names_json, char *err, size_t cap)
{
    const char *p[] = {names_json};
    return db_exec("twin_suspected", 1, p, err, cap);
}
