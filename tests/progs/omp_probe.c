/* omp_probe.c — a small OpenMP program that reports the team sizes each kind of region really got. */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Modes (every mode ends with a line `checksum=<hex>` that must not depend on
 * team sizes, then `done`):
 *   follow STOP MAXSEC   loop all region kinds until file STOP exists or MAXSEC
 *                        passed; print `team=N` whenever the plain region's team
 *                        changes, and at the end `kinds k=N ...` (last team per kind)
 *   explicit             print the teams of num_threads(3), if(0), a default
 *                        region, a nested default region inside num_threads(2), and
 *                        num_threads(N) with N the value of OMP_NUM_THREADS (the default)
 *   fixed STOP MAXSEC    call omp_get_max_threads() first (prints `max=N`), then loop
 *   setnum N STOP MAXSEC call omp_set_num_threads(N) first, then loop
 *   fsetnum N STOP MAXSEC, fsetnum8 N STOP MAXSEC, fmax STOP MAXSEC
 *                        the same through the Fortran names
 *   procs STOP MAXSEC    call omp_get_num_procs() first, then its Fortran name,
 *                        then omp_get_max_threads() (prints `procs=P fprocs=F
 *                        max=N`), then loop
 *   split                the GOMP 1.0 split entry points, called directly
 *   fork STOP MAXSEC     regions, then fork and exit; the child runs a one-thread
 *                        region, prints `child=PID`, waits for STOP, exits 0
 *   sum                  only the checksum computation
 */

/* The combined and split libgomp entry points that gcc 12 no longer emits for pragmas. */
void GOMP_parallel_loop_static(void (*)(void *), void *, unsigned, long, long, long, long, unsigned);
void GOMP_parallel_start(void (*)(void *), void *, unsigned);
void GOMP_parallel_end(void);
void GOMP_parallel_loop_static_start(void (*)(void *), void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_dynamic_start(void (*)(void *), void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_guided_start(void (*)(void *), void *, unsigned, long, long, long, long);
void GOMP_parallel_loop_runtime_start(void (*)(void *), void *, unsigned, long, long, long);
void GOMP_parallel_sections_start(void (*)(void *), void *, unsigned, unsigned);
bool GOMP_loop_static_next(long *, long *);
bool GOMP_loop_dynamic_next(long *, long *);
bool GOMP_loop_guided_next(long *, long *);
bool GOMP_loop_runtime_next(long *, long *);
void GOMP_loop_end_nowait(void);
/* The Fortran names, as gfortran programs call them. */
void omp_set_num_threads_(const int *);
void omp_set_num_threads_8_(const long long *);
int omp_get_max_threads_(void);
int omp_get_num_procs_(void);
unsigned GOMP_sections_next(void);
void GOMP_sections_end_nowait(void);

enum kind { K_PAR, K_STATIC, K_DYN, K_DYN_M, K_GUIDED, K_GUIDED_M, K_RUNTIME, K_RUNTIME_M,
            K_RUNTIME_NM, K_SECTIONS, K_REDUCTION, K_LOOP_STATIC, NKINDS };
static const char *kind_name[NKINDS] = {
    "parallel", "for_static", "dynamic", "dynamic_monotonic", "guided", "guided_monotonic",
    "runtime", "runtime_monotonic", "runtime_nonmonotonic", "sections", "reductions",
    "loop_static"};
static int team[NKINDS];

#define N 4096
static double a[N];

/* Any member may record it (a dynamic loop may give thread 0 no iteration): all see the same size. */
static void note(enum kind k)
{
    __atomic_store_n(&team[k], omp_get_num_threads(), __ATOMIC_RELAXED);
}

static void fill(int round)
{
    for (int i = 0; i < N; i++)
        a[i] = (double)((i * 7 + round) % 101);
}

/* Sums in a fixed order: the same bits whatever the team size. */
static unsigned long long digest(void)
{
    unsigned long long h = 1469598103934665603ULL;
    for (int i = 0; i < N; i++) {
        unsigned long long v;
        memcpy(&v, &a[i], sizeof v);
        h = (h ^ v) * 1099511628211ULL;
    }
    return h;
}

static void loop_static_body(void *d)
{
    long s, e;
    (void)d;
    note(K_LOOP_STATIC);
    while (GOMP_loop_static_next(&s, &e))
        for (long i = s; i < e; i++)
            a[i] = a[i] * 0.5 + 1.0;
    GOMP_loop_end_nowait();
}

/* One round of every region kind; each transforms `a` elementwise, so the result is team-independent. */
static void round_all(void)
{
#pragma omp parallel
    {
        note(K_PAR);
        /* Inside a region this is the task's own ICV: it must not make the program non-malleable. */
        if (omp_get_max_threads() < 1)
            a[0] = -1.0;
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++)
            a[i] = a[i] * 1.5 + 1.0;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        note(K_STATIC);
        a[i] = a[i] - 0.25;
    }
#pragma omp parallel for schedule(dynamic, 64)
    for (int i = 0; i < N; i++) {
        note(K_DYN);
        a[i] = a[i] * 0.75;
    }
#pragma omp parallel for schedule(monotonic : dynamic, 64)
    for (int i = 0; i < N; i++) {
        note(K_DYN_M);
        a[i] = a[i] + 3.0;
    }
#pragma omp parallel for schedule(guided)
    for (int i = 0; i < N; i++) {
        note(K_GUIDED);
        a[i] = a[i] * 0.5;
    }
#pragma omp parallel for schedule(monotonic : guided)
    for (int i = 0; i < N; i++) {
        note(K_GUIDED_M);
        a[i] = a[i] + 0.5;
    }
#pragma omp parallel for schedule(runtime)
    for (int i = 0; i < N; i++) {
        note(K_RUNTIME);
        a[i] = a[i] * 1.25;
    }
#pragma omp parallel for schedule(monotonic : runtime)
    for (int i = 0; i < N; i++) {
        note(K_RUNTIME_M);
        a[i] = a[i] - 1.0;
    }
#pragma omp parallel for schedule(nonmonotonic : runtime)
    for (int i = 0; i < N; i++) {
        note(K_RUNTIME_NM);
        a[i] = a[i] + 2.0;
    }
#pragma omp parallel sections
    {
#pragma omp section
        {
            note(K_SECTIONS);
            for (int i = 0; i < N / 2; i++)
                a[i] = a[i] * 2.0;
        }
#pragma omp section
        {
            note(K_SECTIONS);
            for (int i = N / 2; i < N; i++)
                a[i] = a[i] * 2.0;
        }
    }
    long cnt = 0;
#pragma omp parallel reduction(task, + : cnt)
    {
        note(K_REDUCTION);
        cnt += 1;
    }
    a[0] += cnt > 0 ? 0.0 : 1.0; /* cnt is the team size: only its sign may reach the result */
    GOMP_parallel_loop_static(loop_static_body, NULL, 0, 0, N, 1, 16, 0);
}

static bool stop_now(const char *stop, double maxsec, struct timespec *t0)
{
    struct timespec t;
    struct stat st;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (stop && stat(stop, &st) == 0)
        return true;
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec) > maxsec;
}

static int loop_until(const char *stop, double maxsec)
{
    struct timespec t0;
    int last = -1, round = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        fill(round++);
        round_all();
        if (team[K_PAR] != last) {
            last = team[K_PAR];
            printf("team=%d\n", last);
            fflush(stdout);
        }
        usleep(5000);
    } while (!stop_now(stop, maxsec, &t0));
    /* The checksum must not depend on how many rounds fit in the time. */
    fill(1);
    round_all();
    printf("kinds");
    for (int k = 0; k < NKINDS; k++)
        printf(" %s=%d", kind_name[k], team[k]);
    printf("\n");
    return 0;
}

static void sum_only(void)
{
    fill(7);
    for (int r = 0; r < 5; r++)
        round_all();
}

/* ---- split API ---- */
static int split_team[6];

static void split_par(void *d)
{
    (void)d;
    if (omp_get_thread_num() == 0)
        split_team[0] = omp_get_num_threads();
}

#define SPLIT_LOOP(idx, next)                                                                  \
    static void split_loop_##idx(void *d)                                                      \
    {                                                                                          \
        long s, e;                                                                             \
        (void)d;                                                                               \
        if (omp_get_thread_num() == 0)                                                         \
            split_team[idx] = omp_get_num_threads();                                           \
        while (next(&s, &e))                                                                   \
            for (long i = s; i < e; i++)                                                       \
                a[i] = a[i] * 0.5 + (double)idx;                                               \
        GOMP_loop_end_nowait();                                                                \
    }
SPLIT_LOOP(1, GOMP_loop_static_next)
SPLIT_LOOP(2, GOMP_loop_dynamic_next)
SPLIT_LOOP(3, GOMP_loop_guided_next)
SPLIT_LOOP(4, GOMP_loop_runtime_next)

static void split_sections(void *d)
{
    (void)d;
    if (omp_get_thread_num() == 0)
        split_team[5] = omp_get_num_threads();
    for (unsigned s = GOMP_sections_next(); s != 0; s = GOMP_sections_next())
        a[s] += 1.0;
    GOMP_sections_end_nowait();
}

static void split_nested_outer(void *d)
{
    (void)d;
    /* A split region started inside ours on the same thread: nested, passed through. */
    GOMP_parallel_start(split_par, NULL, 1);
    split_par(NULL);
    GOMP_parallel_end();
}

static void split_all(void)
{
    fill(3);
    GOMP_parallel_start(split_par, NULL, 0);
    split_par(NULL);
    GOMP_parallel_end();
    int par = split_team[0];
    GOMP_parallel_start(split_nested_outer, NULL, 0);
    split_nested_outer(NULL);
    GOMP_parallel_end();
    GOMP_parallel_loop_static_start(split_loop_1, NULL, 0, 0, N, 1, 8);
    split_loop_1(NULL);
    GOMP_parallel_end();
    GOMP_parallel_loop_dynamic_start(split_loop_2, NULL, 0, 0, N, 1, 8);
    split_loop_2(NULL);
    GOMP_parallel_end();
    GOMP_parallel_loop_guided_start(split_loop_3, NULL, 0, 0, N, 1, 8);
    split_loop_3(NULL);
    GOMP_parallel_end();
    GOMP_parallel_loop_runtime_start(split_loop_4, NULL, 0, 0, N, 1);
    split_loop_4(NULL);
    GOMP_parallel_end();
    GOMP_parallel_sections_start(split_sections, NULL, 0, 3);
    split_sections(NULL);
    GOMP_parallel_end();
    printf("split parallel=%d loop_static=%d loop_dynamic=%d loop_guided=%d loop_runtime=%d "
           "sections=%d\n",
           par, split_team[1], split_team[2], split_team[3], split_team[4], split_team[5]);
}

static void explicit_all(void)
{
    int ex = 0, iff = 0, def = 0, outer = 0, inner = 0, cond = 0, asdef = 0;
    const char *env = getenv("OMP_NUM_THREADS");
    int n = env ? atoi(env) : 1;

#pragma omp parallel num_threads(3)
    if (omp_get_thread_num() == 0)
        ex = omp_get_num_threads();
#pragma omp parallel if (cond)
    if (omp_get_thread_num() == 0)
        iff = omp_get_num_threads();
#pragma omp parallel
    if (omp_get_thread_num() == 0)
        def = omp_get_num_threads();
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0)
            outer = omp_get_num_threads();
#pragma omp parallel
        if (omp_get_thread_num() == 0 && omp_get_ancestor_thread_num(1) == 0)
            inner = omp_get_num_threads();
    }
    /* The program's own default passed as a clause (Cython's prange): read from the environment,
     * not from omp_get_max_threads(), so that no count query is seen. */
#pragma omp parallel num_threads(n)
    if (omp_get_thread_num() == 0)
        asdef = omp_get_num_threads();
    printf("explicit=%d iffalse=%d default=%d nested_outer=%d nested_inner=%d asdefault=%d\n", ex, iff, def,
           outer, inner, asdef);
    sum_only();
}

/*
 * GNU libgomp cannot run a team of more than one thread in a forked child of a
 * process whose pool already has threads (the child waits for threads that do
 * not exist, with or without scaf). So the child runs one-thread regions, as a
 * real program's child would (or it execs). The parent exits at once: the
 * child must not keep the parent's client slot alive.
 */
static int fork_mode(const char *stop, double maxsec)
{
    struct timespec t0;
    pid_t pid;
    int t1 = 0;

    sum_only();
    printf("parent_team=%d\n", team[K_PAR]);
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0) {
#pragma omp parallel num_threads(1)
        t1 = omp_get_num_threads();
        printf("child=%d child_team=%d\n", (int)getpid(), t1);
        fflush(stdout);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (!stop_now(stop, maxsec, &t0))
            usleep(10000);
        fill(3);
        printf("child_checksum=%016llx\n", digest());
        fflush(stdout);
        _exit(0);
    }
    printf("forked=%d\n", (int)pid);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc = 0;

    if (strcmp(mode, "follow") == 0 && argc == 4) {
        rc = loop_until(argv[2], atof(argv[3]));
    } else if (strcmp(mode, "fixed") == 0 && argc == 4) {
        printf("max=%d\n", omp_get_max_threads());
        rc = loop_until(argv[2], atof(argv[3]));
    } else if (strcmp(mode, "setnum") == 0 && argc == 5) {
        omp_set_num_threads(atoi(argv[2]));
        rc = loop_until(argv[3], atof(argv[4]));
    } else if (strcmp(mode, "fsetnum") == 0 && argc == 5) {
        int n = atoi(argv[2]);
        omp_set_num_threads_(&n);
        rc = loop_until(argv[3], atof(argv[4]));
#ifndef PROBE_NO_FORTRAN8 /* LLVM's libomp has no omp_set_num_threads_8_ */
    } else if (strcmp(mode, "fsetnum8") == 0 && argc == 5) {
        long long n = atoll(argv[2]);
        omp_set_num_threads_8_(&n);
        rc = loop_until(argv[3], atof(argv[4]));
#endif
    } else if (strcmp(mode, "fmax") == 0 && argc == 4) {
        printf("max=%d\n", omp_get_max_threads_());
        rc = loop_until(argv[2], atof(argv[3]));
    } else if (strcmp(mode, "procs") == 0 && argc == 4) {
        int procs = omp_get_num_procs(), fprocs = omp_get_num_procs_();
        printf("procs=%d fprocs=%d max=%d\n", procs, fprocs, omp_get_max_threads());
        rc = loop_until(argv[2], atof(argv[3]));
    } else if (strcmp(mode, "explicit") == 0) {
        explicit_all();
    } else if (strcmp(mode, "split") == 0) {
        split_all();
    } else if (strcmp(mode, "fork") == 0 && argc == 4) {
        rc = fork_mode(argv[2], atof(argv[3]));
    } else if (strcmp(mode, "sum") == 0) {
        sum_only();
    } else {
        fprintf(stderr, "usage: omp_probe follow|fixed|fmax|procs STOP MAXSEC | setnum|fsetnum|fsetnum8 N STOP MAXSEC | "
                        "explicit | split | fork STOP MAXSEC | sum\n");
        return 2;
    }
    printf("checksum=%016llx\ndone\n", digest());
    return rc;
}
