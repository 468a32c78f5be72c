/* sandbox.h — the steps that make a freshly forked child a sandboxed one, shared by the estimator's experiment and the TLS check's runs. */
#ifndef SCAF_LAYER_SANDBOX_H
#define SCAF_LAYER_SANDBOX_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Copy-on-write: a child pays a page copy for every page its region writes,
 * and so does the parent. That cost grows with the heap, like the fork itself
 * (page tables), so a child's CPU-time bound grows with the time the fork
 * took, by this factor. Measured here: a region writing all of a 1 GiB heap
 * pays 50-65x the fork time in copy-on-write faults, more on a loaded
 * machine; twice that keeps such a child inside its bound. The bound is for
 * stuck children, so generous costs nothing.
 */
#define SCAF_SANDBOX_COW_ALLOWANCE 128

/*
 * The same allowance counted by pages, whichever is larger. A fork's time is
 * the page tables it copied, not what a page copy costs at that moment: in a
 * VM the host may have to supply each new page. On the 2-vCPU build VM one
 * run in six of a 1 GiB heap's region took over 2.7x its usual CPU for the
 * same writes, past 128x a fast fork (12 ms). 16 us a resident page is 6x the
 * 2.6 us such a region takes there per page, copy included.
 */
#define SCAF_SANDBOX_COW_PAGE_NS 16000ull

/*
 * A forked child becomes a sandboxed one in three steps, in this order; each
 * returns 0 or -1, and after a failure the child must _exit without running
 * program code.
 *
 * enter: marks the process a sandboxed child (regions run on one thread, the
 * daemon is never touched: scaf_sandbox_in_child), runs the adapter's child
 * preparation, dies with `parent` (-1: already orphaned), sets the
 * synchronous signals to their defaults and blocks every other one, leaves no
 * core file.
 */
int scaf_sandbox_enter(pid_t parent);

/*
 * fork() for a child that will enter the sandbox: the child counts as one
 * (scaf_sandbox_in_child) from the fork itself, so that the layer's own fork
 * handlers leave it alone. Without it, a forked Python process's handler
 * started a helper that connected the check's coordinator, or an experiment,
 * to the daemon as a client of its own, which took a share from the program
 * for as long as it ran. The program's own fork handlers still run, as with
 * fork(). Returns what fork() returns.
 */
pid_t scaf_sandbox_fork(void);

/*
 * isolate: makes writable shared mappings private (small ones) or read-only
 * (large ones), and ends the child (SIGPROF) after `bound_ns` of CPU time.
 */
int scaf_sandbox_isolate(uint64_t bound_ns);

/* filter: seccomp, so that only `write_fd` can be written and only `read_fd` (or nothing, -1) read. */
int scaf_sandbox_filter(int write_fd, int read_fd);

/* The copy-on-write allowance of a fork that took fork_ns, by both rules above. */
uint64_t scaf_sandbox_cow_allowance_ns(uint64_t fork_ns);

/* A child's CPU-time bound: `bound_ns` plus the copy-on-write allowance for a fork that began at fork_t0. */
uint64_t scaf_sandbox_bound_ns(uint64_t bound_ns, uint64_t fork_t0);

/*
 * Nonzero in a sandboxed child (once scaf_sandbox_enter ran in it): regions
 * then run with one thread. Either fn(data) directly or the real entry with
 * num_threads 1 works; a team of 2 or more hangs there, because the runtime's
 * pool threads were not copied by fork.
 */
int scaf_sandbox_in_child(void);

/*
 * An adapter's preparation of a child, called first in every sandboxed child,
 * before the sandbox: a runtime that re-initialises itself in a forked child
 * (LLVM's libomp, Intel's libiomp5) finishes that here, where its system
 * calls are allowed. Set once, from the adapter's constructor; NULL: none.
 */
void scaf_sandbox_set_child_prepare(void (*prepare)(void));

#endif
