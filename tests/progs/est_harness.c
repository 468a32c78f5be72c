/* est_harness.c — drives the estimator directly (own page, own wrapper) to test it apart from the layer core. */
#include "../../src/layer/estimate.h"
#include "scaf/proto.h"

#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);

int scaf_layer_verbose;
void scaf_layer_log(const char *fmt, ...)
{
    va_list ap;
    if (!scaf_layer_verbose)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static void region(void (*fn)(void *), void *data, unsigned threads)
{
    struct scaf_region r;
    unsigned n = scaf_estimate_begin(&r, fn, data, threads, 1);
    if (scaf_estimate_in_child())
        n = 1;
    GOMP_parallel(fn, data, n, 0);
    scaf_estimate_end(&r);
}

struct work { long n; double out; const char *file; int inst; };

static void spin_body(void *p)
{
    struct work *w = p;
    double s = 0;
    #pragma omp for schedule(dynamic, 1000)
    for (long i = 0; i < w->n; i++)
        s += (double)(i % 7) * 0.5;
    #pragma omp atomic
    w->out += s;
}

static void chatty_body(void *p)
{
    struct work *w = p;
    #pragma omp single
    {
        printf("instance %d\n", w->inst);
        FILE *f = fopen(w->file, "a");
        if (f) { fprintf(f, "line %d\n", w->inst); fclose(f); }
    }
    double s = 0;
    #pragma omp for
    for (long i = 0; i < w->n; i++)
        s += (double)(i % 3);
    #pragma omp atomic
    w->out += s;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "spin";
    int inst = argc > 2 ? atoi(argv[2]) : 20;
    long n = argc > 3 ? atol(argv[3]) : 2000000;
    size_t heap_mb = argc > 4 ? (size_t)atol(argv[4]) : 0;
    int fd = memfd_create("page", 0);
    struct scaf_page *pg;
    char *heap = NULL;

    scaf_layer_verbose = getenv("SCAF_VERBOSE") && atoi(getenv("SCAF_VERBOSE"));
    if (fd < 0 || ftruncate(fd, SCAF_PAGE_SIZE) != 0)
        return 3;
    pg = mmap(NULL, SCAF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (pg == MAP_FAILED)
        return 3;
    memset(pg, 0, sizeof *pg);
    atomic_store(&pg->nclients, getenv("H_NCLIENTS") ? (unsigned)atoi(getenv("H_NCLIENTS")) : 2u);
    atomic_store(&pg->threads, 2);
    if (heap_mb) {
        heap = malloc(heap_mb << 20);
        for (size_t i = 0; i < heap_mb << 20; i += 4096)
            heap[i] = (char)i;
    }
    scaf_estimate_attach(pg);
    struct work w = {n, 0, argc > 5 ? argv[5] : "/dev/null", 0};
    double total = 0;
    for (int i = 0; i < inst; i++) {
        w.inst = i;
        w.out = 0;
        region(strcmp(mode, "chatty") == 0 ? chatty_body : spin_body, &w, 2);
        total += w.out;
        fflush(stdout);
        if (heap)
            heap[(size_t)i * 4096 % (heap_mb << 20)]++;
    }
    printf("total=%.1f eff_ppm=%u eff_threads=%u estimate=%u seq=%u experiments=%llu exp_pid=%d flags=%u\n", total,
           pg->efficiency_ppm, pg->eff_threads, pg->estimate, pg->client_seq, (unsigned long long)pg->experiments,
           pg->experiment_pid, pg->client_flags);
    return 0;
}
