/* tlscheck.h — whether a region's effects depend on the thread-local data it finds: a pair of sandboxed serial runs, compared. */
#ifndef SCAF_LAYER_TLSCHECK_H
#define SCAF_LAYER_TLSCHECK_H

struct scaf_site;

/*
 * Starts the TLS check of `site` (docs/layer.md, "Thread-local data"): a
 * forked coordinator forks two sandboxed children from one frozen copy of the
 * process; both run the region serially with `run(data)`, one of them after
 * scrambling the thread-local block of the object that holds `fn`; each
 * records the pages it writes (write-protection, one fault per page) and sends
 * a digest of them. The same digest means the region overwrote whatever it
 * read of that data first: per-region scratch. The result lands in
 * site->tls_result (enum scaf_tls_result) when scaf_tlscheck_poll sees it.
 *
 * `run` must be a complete serial execution of the region on the calling
 * thread (NULL: none exists, the site is recorded as unchecked).
 * `stack_keep`: the lowest address of the program's own stack frames (the
 * region's record in its wrapper's frame); stack below it belongs to the
 * layer and is not compared. Call at an outermost region's entry, before the
 * region runs. One check runs at a time: returns 1 when another one is
 * running (try again at a later instance), 0 when started or recorded.
 */
int scaf_tlscheck_start(struct scaf_site *site, void (*fn)(void *), void (*run)(void *), void *data,
                        const void *stack_keep);

/* Collects the running check's result if it has one; kills it past its time bound. Cheap when none runs. */
void scaf_tlscheck_poll(void);

#endif
