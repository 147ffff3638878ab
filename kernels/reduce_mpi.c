/* reduce_mpi.c - lockstep-train's gradient sum over MPI ranks: fixed rank order, or message-arrival order. */
#include "kernels/reduce_mpi.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/lsfp1.h"

#define SLOT_NS 200000L
#define SLOTS 8
#define TAG_PIECE 7100

int red_sum_fixed(float *g, size_t n, float *tmp, MPI_Comm comm)
{
    int rank, world;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    if (rank == 0) {
        for (int r = 1; r < world; r++) {
            if (MPI_Recv(tmp, (int)n, MPI_FLOAT, r, TAG_PIECE, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return -1;
            for (size_t i = 0; i < n; i++)
                g[i] += tmp[i];
        }
    } else if (MPI_Send(g, (int)n, MPI_FLOAT, 0, TAG_PIECE, comm) != MPI_SUCCESS) {
        return -1;
    }
    return MPI_Bcast(g, (int)n, MPI_FLOAT, 0, comm) == MPI_SUCCESS ? 0 : -1;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
    int64_t now = mono_ns();
    if (t <= now)
        return;
    struct timespec ts = {(time_t)((t - now) / 1000000000), (long)((t - now) % 1000000000)};
    nanosleep(&ts, NULL);
}

/* piece_delay - when piece k of `rank` leaves, after the rank is ready. */
static int64_t piece_delay(uint64_t run_seed, int64_t step, int rank, int k)
{
    uint64_t h = fp_fmix64(
        run_seed ^ fp_fmix64((uint64_t)step * 0x9e3779b97f4a7c15ULL + (uint64_t)rank * 977 + (uint64_t)k * 131 + 1));
    return (int64_t)(h % SLOTS) * SLOT_NS;
}

static void add_piece(float *out, const float *src, size_t n, int first)
{
    if (first) {
        memcpy(out, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] += src[i];
}

int red_sum_arrival(float *const *pieces, size_t n, float *out, float *tmp, uint64_t run_seed, int64_t step, int *order,
                    MPI_Comm comm)
{
    int rank, world;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    int64_t t0 = mono_ns();
    int64_t due[RED_PIECES];
    for (int k = 0; k < RED_PIECES; k++)
        due[k] = t0 + piece_delay(run_seed, step, rank, k);

    if (rank != 0) {
        int sent[RED_PIECES] = {0};
        for (int done = 0; done < RED_PIECES; done++) {
            int k = -1;
            for (int j = 0; j < RED_PIECES; j++)
                if (!sent[j] && (k < 0 || due[j] < due[k]))
                    k = j;
            sleep_until(due[k]);
            if (MPI_Send(pieces[k], (int)n, MPI_FLOAT, 0, TAG_PIECE + k, comm) != MPI_SUCCESS)
                return -1;
            sent[k] = 1;
        }
    } else {
        int total = world * RED_PIECES, added = 0;
        int own_done[RED_PIECES] = {0};
        while (added < total) {
            /* Rank 0's own pieces "arrive" when their delay is over. */
            int64_t now = mono_ns();
            int k = -1;
            for (int j = 0; j < RED_PIECES; j++)
                if (!own_done[j] && due[j] <= now && (k < 0 || due[j] < due[k]))
                    k = j;
            if (k >= 0) {
                add_piece(out, pieces[k], n, added == 0);
                own_done[k] = 1;
                order[added++] = k;
                continue;
            }
            int flag = 0;
            MPI_Status st;
            if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st) != MPI_SUCCESS)
                return -1;
            if (!flag) {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
                continue;
            }
            if (MPI_Recv(tmp, (int)n, MPI_FLOAT, st.MPI_SOURCE, st.MPI_TAG, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return -1;
            add_piece(out, tmp, n, added == 0);
            order[added++] = st.MPI_SOURCE * RED_PIECES + (st.MPI_TAG - TAG_PIECE);
        }
    }
    return MPI_Bcast(out, (int)n, MPI_FLOAT, 0, comm) == MPI_SUCCESS ? 0 : -1;
}

uint64_t red_run_seed(MPI_Comm comm)
{
    int rank;
    uint64_t seed = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_REALTIME, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        seed = fp_fmix64((uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec) ^
               fp_fmix64((uint64_t)getpid() << 20 ^ (uint64_t)b.tv_nsec);
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, comm);
    return seed;
}
