// tbb_probe.h — what tbb_for.cpp and tbb_reduce.cpp share: the argument parsing, the round loop, the count of threads a round used.
#ifndef SCAF_TBB_PROBE_H
#define SCAF_TBB_PROBE_H

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

// One item's value: a few rounds of an integer mix, so that a round has enough work for the
// workers to join, and every result is exact (integers wrap, never round).
static inline uint64_t probe_item(uint64_t i)
{
    uint64_t x = i + 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 40; k++) {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebull;
        x ^= x >> 31;
    }
    return x;
}

// The distinct threads that ran a round's chunks (arena slot numbers, as oneTBB numbers them).
struct probe_threads {
    std::atomic<uint64_t> mask{0};
    void saw() { mask.fetch_or(1ull << (tbb::this_task_arena::current_thread_index() & 63), std::memory_order_relaxed); }
    int count() const { return __builtin_popcountll(mask.load()); }
};

struct probe_args {
    uint64_t n = 2000000;
    long rounds = 4;          // at least this many
    const char *stop = nullptr; // and then until this file exists
    const char *idle = nullptr; // while this file exists, no round starts (the program sleeps)
};

static inline int probe_parse(int argc, char **argv, probe_args &a)
{
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--stop") && i + 1 < argc)
            a.stop = argv[++i];
        else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
            a.rounds = std::strtol(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--idle") && i + 1 < argc)
            a.idle = argv[++i];
        else if (!std::strcmp(argv[i], "--n") && i + 1 < argc)
            a.n = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: %s [--n N] [--rounds R] [--stop FILE] [--idle FILE]\n", argv[0]);
            return -1;
        }
    }
    if (a.n < 1 || a.rounds < 1) {
        std::fprintf(stderr, "%s: --n and --rounds must be at least 1\n", argv[0]);
        return -1;
    }
    return 0;
}

static inline bool probe_more(const probe_args &a, long done)
{
    struct stat st;
    // Idle between rounds while the idle file exists: oneTBB's arena runs out of work and its
    // permit is deactivated, as in a program between two phases.
    while (a.idle && stat(a.idle, &st) == 0 && !(a.stop && stat(a.stop, &st) == 0))
        usleep(10000);
    if (done < a.rounds)
        return true;
    return a.stop && stat(a.stop, &st) != 0;
}

// Runs rounds of `one` (which returns the round's result and fills its thread count) and prints
// "round=R threads=T result=X" for each, then "done rounds=R result=X": the same X every round.
template <class F> int probe_main(const char *name, int argc, char **argv, F one)
{
    probe_args a;
    uint64_t first = 0;
    long done = 0;

    if (probe_parse(argc, argv, a) != 0)
        return 2;
    std::printf("%s tbb=%s interface=%d max_concurrency=%d\n", name, TBB_runtime_version(),
                TBB_runtime_interface_version(), tbb::this_task_arena::max_concurrency());
    std::fflush(stdout);
    while (probe_more(a, done)) {
        probe_threads t;
        uint64_t x = one(a.n, t);
        if (done == 0)
            first = x;
        else if (x != first) {
            std::fprintf(stderr, "%s: round %ld gave %llx, round 0 %llx\n", name, done, (unsigned long long)x,
                         (unsigned long long)first);
            return 1;
        }
        std::printf("round=%ld threads=%d result=%016llx\n", done, t.count(), (unsigned long long)x);
        std::fflush(stdout);
        done++;
    }
    std::printf("done rounds=%ld result=%016llx\n", done, (unsigned long long)first);
    return 0;
}

#endif
