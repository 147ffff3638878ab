/* test_cli_consensus.c - the consensus line of `lockstep run` (cli/consensus.h), from a table of the server's
 * answers to the lines printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "cli/consensus.h"

static const struct {
    const char *json, *line;
} CASES[] = {
    {"{\"status\": \"none\", \"checked\": 0, \"first\": null}", "consensus: none checked"},
    {"{\"status\": \"none\", \"checked\": 0, \"first\": null, \"why\": \"no consensus digest came from this run\"}",
     "consensus: none checked: no consensus digest came from this run"},
    {"{\"status\": \"agree\", \"checked\": 1234, \"first\": null}", "consensus: agree (1234 windows checked)"},
    {"{\"status\": \"disagree\", \"checked\": 9, \"first\": {\"step\": 812, \"name\": \"mpi.allreduce\", "
     "\"occurrence\": 3, \"comm_ranks\": [0, 1, 2, 3], \"comm_size\": 4, \"odd_ranks\": [2], \"clear\": true, "
     "\"site\": {\"module\": \"train\", \"offset\": 6699, \"function\": \"train_step\"}, \"node\": \"n2\", "
     "\"gpu\": \"3\"}}",
     "consensus: DISAGREE at step 812, mpi.allreduce #3 on ranks {0,1,2,3}: rank 2 is odd (node n2, gpu 3) at site "
     "train_step (train+0x1a2b) (9 windows checked)"},
    {"{\"status\": \"disagree\", \"checked\": 1, \"first\": {\"step\": 4, \"name\": \"\", \"occurrence\": 0, "
     "\"comm_ranks\": [0, 1], \"comm_size\": 2, \"odd_ranks\": [0, 1], \"clear\": false, \"site\": null, "
     "\"node\": null, \"gpu\": null}}",
     "consensus: DISAGREE at step 4, (its records awaited; a job that ended left them: lockstep replay --steps asked) "
     "on ranks {0,1}: one of ranks 0,1 differs (no majority) "
     "(1 windows checked)"},
    {"{\"status\": \"disagree\", \"checked\": 2, \"first\": {\"step\": 0, \"name\": \"nccl.allgather\", "
     "\"occurrence\": 70, \"comm_ranks\": [], \"comm_size\": 128, \"odd_ranks\": [5, 9], \"clear\": true, "
     "\"site\": null, \"node\": null, \"gpu\": null}}",
     "consensus: DISAGREE at step 0, nccl.allgather #70 on ranks {128 ranks}: ranks 5,9 are odd (2 windows checked)"},
};

static void test_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        json_t *c = json_loads(CASES[i].json, 0, NULL);
        assert_non_null(c);
        char line[1024];
        consensus_format_line(c, line, sizeof(line));
        assert_string_equal(line, CASES[i].line);
        json_decref(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
