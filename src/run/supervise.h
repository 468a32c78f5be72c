/* supervise.h — runs the program as scaf-run's child, passes the signals a user or a job manager sends on to it, and returns its exit status as a shell reports it. */
#ifndef SCAF_RUN_SUPERVISE_H
#define SCAF_RUN_SUPERVISE_H

/*
 * Starts PATH with ARGV and ENVP and waits for it, passing SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2 on (not those the terminal already sent its whole process group). Returns its exit status, 128+N
 * when signal N ended it, 127 when PATH is missing and 126 when it cannot be executed (with one line on
 * stderr), as the Python `scaf run`'s supervise does.
 */
int scaf_run_supervise(const char *path, char *const *argv, char *const *envp);

#endif
