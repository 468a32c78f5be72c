/* supervise.h — runs the program as the child of scaf-run or of the Python `scaf run`, passes the signals a user or a job manager sends on to it, and returns its exit status as a shell reports it. */
#ifndef SCAF_SUPERVISE_H
#define SCAF_SUPERVISE_H

#include <stdint.h>

/*
 * Starts PATH with ARGV and ENVP and waits for it, passing SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on (not those the terminal already sent
 * its whole process group, the program included). The program dies with the
 * caller's thread (PR_SET_PDEATHSIG, SIGKILL): a caller killed with SIGKILL
 * cannot pass that on. The program starts with the caller's signal mask, and
 * with SIGPIPE and SIGXFSZ at their default action (Python ignores both;
 * signals ignored otherwise stay ignored, as with exec).
 * Returns its exit status, 128+N when signal N ended it, 127 when PATH is
 * missing and 126 when it cannot be executed (with one line on stderr:
 * "scaf: ARGV0: REASON", "scaf: ARGV0: cannot execute: REASON").
 */
int scaf_run_supervise(const char *path, char *const *argv, char *const *envp);

/*
 * The signals the supervisor waits for, the forwarded ones and SIGCHLD, as a
 * mask: bit N-1 stands for signal N.
 */
uint64_t scaf_run_supervise_signals(void);

/*
 * scaf_run_supervise for a caller whose own signal handlers would otherwise
 * see those signals first (Python's, which run only when the interpreter gets
 * control back, after the program ended): the caller blocks
 * scaf_run_supervise_signals() in its thread before the call and restores its
 * mask after. CHILD_MASK is
 * the mask the program starts with, as bits like those of
 * scaf_run_supervise_signals(): the caller's mask before it blocked them.
 * Returns as scaf_run_supervise does, or -1 with errno EINVAL when one of those
 * signals is not blocked in the calling thread (it could end the caller, or run
 * its handler, instead of reaching the program); the calling thread's mask is
 * left as it was.
 */
int scaf_run_supervise_blocked(const char *path, char *const *argv, char *const *envp, uint64_t child_mask);

#endif
