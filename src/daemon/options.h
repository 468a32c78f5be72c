/* options.h — scafd's command line: one table of options that parses argv and writes --help (not an installed interface). */
#ifndef SCAFD_OPTIONS_H
#define SCAFD_OPTIONS_H

#include <stdio.h>

struct scafd;

/* What the command line asks for. */
enum scaf_options_result {
    SCAF_OPTIONS_RUN = 0,    /* serve */
    SCAF_OPTIONS_DONE,       /* --help or --version was printed: exit 0 */
    SCAF_OPTIONS_USAGE,      /* bad command line (said on stderr): exit 2 */
    SCAF_OPTIONS_BAD_SOCKET, /* the socket path cannot be a Unix socket address (said on stderr): exit 1, like a
                              * failed bind */
};

/*
 * Fills d->opt (every option's default first, then what argv says), d->policy
 * and d->policy_index. Each complaint is one line on stderr, then the usage
 * line. --help and --version print on stdout.
 */
enum scaf_options_result scaf_options_parse(struct scafd *d, int argc, char **argv);

/* The manual that --help prints: its OPTIONS and SYNOPSIS written from the same table that parses argv. */
void scaf_options_help(FILE *f);

#endif
