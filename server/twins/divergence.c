/* divergence.c - a rank's first divergence, typed (server/twins/divergence.h). */
#include "server/twins/divergence.h"

#include <stdlib.h>

void divergences_free(divergence *divs, int n)
{
    for (int i = 0; divs && i < n; i++) {
        free(divs[i].name);
        free(divs[i].kind);
        free(divs[i].odd_run_id);
        json_decref(divs[i].runs);
    }
    free(divs);
}
