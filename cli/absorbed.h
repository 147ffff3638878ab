/* absorbed.h - a twin group's absorbed differences in one line, as `lockstep twins` and `lockstep compare` print them
 * (the twin API's "absorbed", server/twins/absorbed.h). */
#ifndef CLI_ABSORBED_H
#define CLI_ABSORBED_H

#include <jansson.h>
#include <stddef.h>

/* absorbed_text - "1 collective's inputs differed on some ranks while its outputs matched; first at step 0, rank 2:
 * mpi.allreduce (occurrence 7) at relax_step+0x3eb (heat+0x1ed3)" for `absorbed` (borrowed) into `out`. Returns 1
 * when there is something to say, 0 when `absorbed` is null or missing (out is then ""). */
int absorbed_text(json_t *absorbed, char *out, size_t cap);

#endif /* CLI_ABSORBED_H */
