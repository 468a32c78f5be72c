/* refusals.h — the refusal log: the first few each second in full, the rest counted by reason and summarized (not an installed interface). */
#ifndef SCAFD_REFUSALS_H
#define SCAFD_REFUSALS_H

#include <stdint.h>

/* Lines logged in full per one-second window; the rest only in the window's summary. */
#define SCAF_REFUSALS_FULL_PER_S 5u

/* Why scafd turned a peer away. */
enum scaf_refusal_kind {
    SCAF_REFUSAL_MALFORMED = 0, /* bad message (REFUSE MALFORMED) */
    SCAF_REFUSAL_VERSION,       /* another protocol version */
    SCAF_REFUSAL_DUPLICATE,     /* a second HELLO */
    SCAF_REFUSAL_FULL,          /* client table full */
    SCAF_REFUSAL_USER_CLIENTS,  /* the user's quota of the client table (--shared) */
    SCAF_REFUSAL_USER_PENDING,  /* the user's quota of connections without HELLO (--shared) */
    SCAF_REFUSAL_CONNECTIONS,   /* no room for another connection without HELLO */
    SCAF_REFUSAL_SILENT,        /* no HELLO or status request in time */
    SCAF_REFUSAL_STALLED,       /* left a status reply unread */
    SCAF_REFUSAL_DESCRIPTORS,   /* scafd is out of file descriptors */
    SCAF_REFUSAL_INTERNAL,      /* scafd could not serve it (memfd, SO_PEERCRED, ...) */
    SCAF_REFUSAL_KINDS
};

struct scaf_refusals {
    double window_start; /* monotonic seconds; the window is one second long */
    uint32_t full;       /* lines logged in full in this window */
    uint64_t count[SCAF_REFUSAL_KINDS]; /* refusals in this window, by kind */
    unsigned long long dropped_seen;    /* scaf_say_dropped() at the last summary */
};

/* The short name of a kind, as the summary prints it. */
const char *scaf_refusal_kind_name(enum scaf_refusal_kind kind);

/* Counts one refusal at `now` and logs `fmt` in full while the window has room for it. */
void scaf_refusals_note(struct scaf_refusals *r, double now, enum scaf_refusal_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Once a second: a window that has ended and held refusals not shown in full gets its summary line,
 * "N refused in the last second (M shown above), by reason: ...", with the lines stderr dropped. */
void scaf_refusals_tick(struct scaf_refusals *r, double now);

#endif
