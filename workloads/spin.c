/* spin.c — wavefront Gauss-Seidel pipeline whose threads busy-wait on their neighbours, like NPB LU. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Each thread owns a band of rows. Column block b of a band may start only
 * when the band above has finished block b (data), and only while the band
 * below is at most LAG blocks behind (a bounded pipeline, as stages with
 * fixed buffers are). So threads advance in near lockstep, spinning on both
 * neighbours' progress counters once per block. That fine-grained
 * user-level spinning is what makes this kernel collapse when threads
 * outnumber cores: a spinning thread burns the time slice that the
 * descheduled neighbour it waits for needs. LAG >= 2 keeps it deadlock-free
 * for any team: a thread never waits on a neighbour that waits on it. */

/* Column blocks per sweep, whatever the grid: the number of lockstep steps
 * sets how hard oversubscription hurts, and the pipeline fill (nt-1 of
 * NBLOCKS+nt-1 steps) how well many threads scale. */
#define NBLOCKS 32
#define LAG 2
#define PAD 16 /* longs per counter: one counter per 128-byte line */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* A thread that has burnt this much CPU time waiting for one block declares
 * the pipeline stalled: its neighbour had as much CPU and did not move, so
 * the runtime broke the team (a thread number given twice, say). The run
 * then fails verification instead of hanging. CPU time, not wall time, so a
 * stopped or descheduled process never trips it. */
#define STALL_CPU_S 2.0

static _Atomic int stalled;

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Spins until *counter > floor. Returns -1 once the pipeline has stalled. */
static int wait_above(_Atomic long *counter, long floor)
{
    unsigned long spins = 0;
    double start = -1.0;
    while (atomic_load_explicit(counter, memory_order_acquire) <= floor) {
        cpu_relax();
        if ((++spins & 0x3ff) == 0 && atomic_load_explicit(&stalled, memory_order_relaxed))
            return -1;
        if ((spins & 0xfffff) == 0) {
            const double now = thread_cpu_now();
            if (start < 0.0) {
                start = now;
            } else if (now - start > STALL_CPU_S) {
                if (!atomic_exchange(&stalled, 1))
                    fprintf(stderr, "spin: pipeline stalled: a neighbour made no progress in "
                                    "%.0f s of spinning\n", STALL_CPU_S);
                return -1;
            }
        }
    }
    return 0;
}

static const struct wl_spec spec = {
    .name = "spin",
    .description = "wavefront pipeline with busy-wait neighbour synchronization (like NPB LU); "
                   "collapses when threads outnumber cores",
    .takes_until = 1,
};

/* The Gauss-Seidel update, shared by the sweep and its check so both round identically. */
static inline double gs(double up, double left, double down, double right)
{
    return 0.25 * ((up + down) + (left + right));
}

struct grid {
    int rows, cols; /* interior size; storage has a one-cell border */
    size_t stride;
    double *a, *old;
};

#define AT(g, p, i, j) ((p)[(size_t)(i) * (g)->stride + (size_t)(j)])

static void grid_init(struct grid *g)
{
    for (int i = 0; i <= g->rows + 1; i++)
        for (int j = 0; j <= g->cols + 1; j++) {
            double v;
            if (i == 0)
                v = 1.0; /* hot top edge, cold elsewhere */
            else if (i == g->rows + 1 || j == 0 || j == g->cols + 1)
                v = 0.0;
            else
                v = wl_unit(wl_mix64((uint64_t)i * 1000003u + (uint64_t)j));
            AT(g, g->a, i, j) = v;
            AT(g, g->old, i, j) = v;
        }
}

/* One region = one complete pipeline pass, so a team that differs from the
 * previous region's is harmless. Returns the number of cells whose value
 * does not satisfy the sweep's equation against the pre-sweep copy. */
static long sweep(struct grid *g)
{
    static _Atomic long *progress;
    long bad = 0;
    const int nblocks = NBLOCKS;
    const int width = (g->cols + NBLOCKS - 1) / NBLOCKS;

#pragma omp parallel
    {
        const int nt = omp_get_num_threads();
        const int t = omp_get_thread_num();
        wl_team_note();
#pragma omp single
        {
            progress = calloc((size_t)nt * PAD, sizeof *progress);
            if (!progress)
                abort();
        }
        /* The copy and the check below are shared out by libgomp's dynamic
         * schedule, never by thread number, so a runtime or layer that
         * misreports the team cannot make them skip the rows the sweep skipped. */
#pragma omp for schedule(dynamic, 8)
        for (int i = 0; i <= g->rows + 1; i++)
            for (int j = 0; j <= g->cols + 1; j++)
                AT(g, g->old, i, j) = AT(g, g->a, i, j);

        const int r0 = 1 + (int)((long)t * g->rows / nt);
        const int r1 = 1 + (int)((long)(t + 1) * g->rows / nt);
        for (int b = 0; b < nblocks; b++) {
            if ((t > 0 && wait_above(&progress[(size_t)(t - 1) * PAD], b) != 0) ||
                (t < nt - 1 && wait_above(&progress[(size_t)(t + 1) * PAD], b - LAG) != 0)) {
                /* Release both neighbours for good, then leave the sweep. */
                atomic_store_explicit(&progress[(size_t)t * PAD], nblocks + LAG,
                                      memory_order_release);
                break;
            }
            const int j0 = 1 + b * width < g->cols + 1 ? 1 + b * width : g->cols + 1;
            const int j1 = j0 + width <= g->cols + 1 ? j0 + width : g->cols + 1;
            for (int i = r0; i < r1; i++)
                for (int j = j0; j < j1; j++)
                    AT(g, g->a, i, j) = gs(AT(g, g->a, i - 1, j), AT(g, g->a, i, j - 1),
                                           AT(g, g->a, i + 1, j), AT(g, g->a, i, j + 1));
            atomic_store_explicit(&progress[(size_t)t * PAD], b + 1, memory_order_release);
        }
#pragma omp barrier
        /* Every cell must equal the update of its new upper/left and old
         * lower/right neighbours: by induction over sweeps this proves the
         * grid equals the serial Gauss-Seidel result, at a fraction of its cost. */
#pragma omp for schedule(dynamic, 8) reduction(+ : bad)
        for (int i = 1; i <= g->rows; i++)
            for (int j = 1; j <= g->cols; j++)
                bad += AT(g, g->a, i, j) != gs(AT(g, g->a, i - 1, j), AT(g, g->a, i, j - 1),
                                               AT(g, g->old, i + 1, j), AT(g, g->old, i, j + 1));
#pragma omp single nowait
        free(progress);
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    struct grid g;
    g.rows = g.cols = WL_PICK(args.size, 1024, 2048, 4096);
    const int sweeps = (int)wl_scaled(&args, WL_PICK(args.size, 8, 300, 300), 1, 1);
    g.stride = (size_t)g.cols + 2;
    g.a = malloc((size_t)(g.rows + 2) * g.stride * sizeof(double));
    g.old = malloc((size_t)(g.rows + 2) * g.stride * sizeof(double));
    if (!g.a || !g.old) {
        fprintf(stderr, "spin: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    grid_init(&g);

    long bad = 0;
    double t0 = wl_clock_now();
    long s;
    for (s = 0; wl_round_runs(args.until, s, sweeps); s++)
        bad += sweep(&g);
    double elapsed = wl_clock_now() - t0;

    wl_checksum_print(wl_hash_doubles(0, g.a, (size_t)(g.rows + 2) * g.stride));
    printf("sweeps=%ld bad_cells=%ld\n", s, bad);
    const int ok = bad == 0 && !atomic_load(&stalled);
    free(g.a);
    free(g.old);
    return wl_result_print(spec.name, elapsed, ok);
}
