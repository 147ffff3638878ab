/* resume_train.c - a momentum trainer with checkpoints that records state blocks where it saves and where it restores,
 * so `lockstep diff` checks every resume.
 *
 * usage: resume_train [--steps N] [--save K FILE] [--resume FILE] [--bug drop-momentum|wrong-rng|stale-data]
 * The model is least squares with SGD and momentum; each step draws its batch from a stateful xorshift
 * generator and advances the data position. --save writes the weights, the momentum, the generator's state
 * and the data position after step K and records them in a saved state block of step K; --resume loads such
 * a file, records what it holds in a restored block of the checkpoint's step, and trains on from the next
 * step. --bug makes the loader forget something, as real loaders do: the momentum (the optimizer state),
 * the generator's state, or the data position; the trajectory then parts from the uninterrupted run, and the
 * restore check names the entry at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockstep.h>

#define DIM 64
#define BATCH 32

/* Everything a bit-exact resume needs. */
typedef struct state {
    int64_t step; /* steps done */
    double w[DIM], momentum[DIM];
    uint64_t rng;      /* the data generator's state */
    uint64_t data_pos; /* samples drawn so far */
} state;

static double draw(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 - 0.5;
}

static int fail(const char *what)
{
    fprintf(stderr, "resume_train: %s: %s\n", what, ls_last_error());
    return 1;
}

/* record_state - the state block of `st` at step st->step, as saved or as restored. */
static int record_state(const state *st, int kind)
{
    int64_t shape[1] = {DIM};
    if (ls_state_begin(st->step, kind) < 0 || ls_state("linear.weight", st->w, sizeof(st->w), LS_F64, 1, shape) < 0 ||
        ls_state("momentum", st->momentum, sizeof(st->momentum), LS_F64, 1, shape) < 0 ||
        ls_state("rng", &st->rng, sizeof(st->rng), LS_U64, 0, NULL) < 0 ||
        ls_state("data_pos", &st->data_pos, sizeof(st->data_pos), LS_U64, 0, NULL) < 0 || ls_state_end() < 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    long steps = 20, save_at = -1;
    const char *save_file = NULL, *resume_file = NULL, *bug = "none";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
            steps = atol(argv[++i]);
        } else if (strcmp(argv[i], "--save") == 0 && i + 2 < argc) {
            save_at = atol(argv[++i]);
            save_file = argv[++i];
        } else if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc) {
            resume_file = argv[++i];
        } else if (strcmp(argv[i], "--bug") == 0 && i + 1 < argc) {
            bug = argv[++i];
        } else {
            fprintf(stderr, "usage: resume_train [--steps N] [--save K FILE] [--resume FILE] "
                            "[--bug drop-momentum|wrong-rng|stale-data]\n");
            return 2;
        }
    }
    if (ls_init() < 0)
        return fail("ls_init");

    state st;
    memset(&st, 0, sizeof(st));
    st.step = -1; /* no step done */
    st.rng = 0x9e3779b97f4a7c15ULL + (uint64_t)ls_rank();
    double truth[DIM];
    uint64_t t = 12345;
    for (int j = 0; j < DIM; j++)
        truth[j] = draw(&t);

    if (resume_file) {
        FILE *f = fopen(resume_file, "rb");
        state got;
        if (!f || fread(&got, sizeof(got), 1, f) != 1) {
            fprintf(stderr, "resume_train: cannot read checkpoint %s\n", resume_file);
            return 1;
        }
        fclose(f);
        memcpy(st.w, got.w, sizeof(st.w));
        st.step = got.step;
        if (strcmp(bug, "drop-momentum") != 0) /* the classic: the optimizer state is not loaded */
            memcpy(st.momentum, got.momentum, sizeof(st.momentum));
        if (strcmp(bug, "wrong-rng") != 0) /* the generator restarts from its seed */
            st.rng = got.rng;
        if (strcmp(bug, "stale-data") != 0) /* the data loader starts over */
            st.data_pos = got.data_pos;
        if (record_state(&st, LS_STATE_RESTORED) < 0)
            return fail("restored state block");
        printf("resumed after step %lld\n", (long long)st.step);
    }

    int64_t shape[1] = {DIM};
    for (long step = st.step + 1; step < steps; step++) {
        ls_step_begin(step);
        double loss = 0, grad[DIM] = {0};
        for (int b = 0; b < BATCH; b++) {
            double x[DIM], pred = 0, target = 0;
            for (int j = 0; j < DIM; j++) {
                x[j] = draw(&st.rng) + (double)(st.data_pos % 7) * 0.01;
                pred += st.w[j] * x[j];
                target += truth[j] * x[j];
            }
            st.data_pos++;
            double err = pred - target;
            loss += err * err / BATCH;
            for (int j = 0; j < DIM; j++)
                grad[j] += 2 * err * x[j] / BATCH;
        }
        for (int j = 0; j < DIM; j++) {
            st.momentum[j] = 0.9 * st.momentum[j] + grad[j];
            st.w[j] -= 0.05 * st.momentum[j];
        }
        st.step = step;
        if (ls_metric("loss", loss) < 0 || ls_tensor("linear.weight", st.w, sizeof(st.w), LS_F64, 1, shape) < 0)
            return fail("recording");
        ls_step_end();
        if (step == save_at) {
            FILE *f = fopen(save_file, "wb");
            if (!f || fwrite(&st, sizeof(st), 1, f) != 1 || fclose(f) != 0) {
                fprintf(stderr, "resume_train: cannot write checkpoint %s\n", save_file);
                return 1;
            }
            if (record_state(&st, LS_STATE_SAVED) < 0)
                return fail("saved state block");
        }
    }
    printf("rank %d: trained to step %ld\n", ls_rank(), steps - 1);
    ls_shutdown();
    return 0;
}
