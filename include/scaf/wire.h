/* wire.h — the one codec of the socket messages in proto.h, both directions: what scafd, the layer and the scaf command (scaf-run, Python's proto) encode, and every field each of them decodes from another. */
#ifndef SCAF_WIRE_H
#define SCAF_WIRE_H

#include "scaf/proto.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Pure: no I/O, no globals, no allocation. The daemon and the layer do their
 * own reads and writes (non-blocking and bounded on the daemon's side, with a
 * timeout on the layer's) and hand the bytes to these functions; the fuzzer
 * (tests/fuzz/fuzz_decode.c) calls the same decoders on arbitrary bytes.
 *
 * Messages are decoded in two steps, as they arrive on a stream: the header
 * alone says how long the whole message is (and only exact sizes pass, so a
 * peer can never make the reader wait for more than its buffer holds), then
 * the complete message is decoded.
 */

/* Why a message is rejected: an enum scaf_refuse_reason and the text the peer and the log get. */
struct scaf_wire_refusal {
    uint32_t reason;
    char text[SCAF_REFUSE_TEXT]; /* always NUL-terminated */
};

/* ---- client -> daemon ---- */

/* The longest message a peer may send the daemon: the size of its input buffer. */
#define SCAF_WIRE_REQUEST_MAX (sizeof(struct scaf_msg_memory) > sizeof(struct scaf_msg_hello) \
                                   ? sizeof(struct scaf_msg_memory)                        \
                                   : sizeof(struct scaf_msg_hello))

/* A decoded HELLO: every field checked. */
struct scaf_wire_hello {
    uint32_t max_threads;     /* 1..SCAF_MAX_CPUS */
    uint32_t flags;           /* SCAF_HELLO_F_* only */
    uint64_t key;             /* the program's identity, any value (0: none) */
    char name[SCAF_NAME_MAX]; /* the client's word, NUL-terminated (may hold any other byte) */
};

/* Fills *m with a HELLO of this protocol; max_threads is clamped to SCAF_MAX_CPUS, name truncated and NUL-padded. */
void scaf_wire_encode_hello(struct scaf_msg_hello *m, uint32_t max_threads, uint32_t flags, const char *name,
                            uint64_t key);

/* A decoded MEMORY request: every field checked for its op. */
struct scaf_wire_memory {
    uint32_t op;          /* enum scaf_memory_op */
    uint64_t key;         /* nonzero but for FORGET of everything */
    uint32_t max_threads; /* RECALL: 1..SCAF_MAX_CPUS */
    uint32_t verdict;     /* REMEMBER: SCAF_VERDICT_FIXED or SCAF_VERDICT_MALLEABLE */
    char name[SCAF_MEMORY_NAME]; /* REMEMBER: NUL-terminated */
};

/* Fills *m with a MEMORY request of this protocol (what scaf run, scaf forget and scaf check send). */
void scaf_wire_encode_memory(struct scaf_msg_memory *m, uint32_t op, uint64_t key, uint32_t max_threads,
                             uint32_t verdict, const char *name);
/*
 * Decodes a complete MEMORY (its header passed scaf_wire_check_header).
 * Returns 0, or -1 with *why filled (SCAF_REFUSE_MALFORMED): an unknown op, a
 * field its op does not take set, a key of 0 where one is needed, a
 * max_threads outside 1..SCAF_MAX_CPUS for RECALL, a verdict other than fixed
 * or malleable for REMEMBER, a name without its NUL, a nonzero reserved word.
 */
int scaf_wire_decode_memory(const void *msg, struct scaf_wire_memory *out, struct scaf_wire_refusal *why);
/* A STATUS_REQ: a bare header. */
struct scaf_msg_header scaf_wire_encode_status_req(void);
/* The same STATUS_REQ written to `buf` (sizeof(struct scaf_msg_header) bytes, any alignment), for a caller that
 * cannot take a struct by value (Python's scaf.lib.proto, through ctypes). */
void scaf_wire_put_status_req(void *buf);
/* A WAKE: a bare header (a client whose page says idle runs a region again). */
struct scaf_msg_header scaf_wire_encode_wake(void);

/*
 * The daemon's check of a complete header from a peer, in this order: magic,
 * version (SCAF_REFUSE_VERSION), type (HELLO, STATUS_REQ, MEMORY or WAKE),
 * exact length, reserved, and a second HELLO when `client_id` is nonzero (the
 * connection already said one: SCAF_REFUSE_DUPLICATE), a MEMORY on a client's
 * connection or a WAKE on any other (SCAF_REFUSE_MALFORMED). Returns the whole message's
 * length (at most sizeof(struct scaf_msg_memory)), or 0 with *why filled.
 */
uint32_t scaf_wire_check_header(const struct scaf_msg_header *h, uint32_t client_id, struct scaf_wire_refusal *why);
/*
 * Decodes a complete HELLO (its header already passed scaf_wire_check_header)
 * from `msg`, sizeof(struct scaf_msg_hello) bytes. Returns 0, or -1 with *why
 * filled (always SCAF_REFUSE_MALFORMED): max_threads outside 1..SCAF_MAX_CPUS,
 * an unknown flag, a nonzero reserved word.
 */
int scaf_wire_decode_hello(const void *msg, struct scaf_wire_hello *out, struct scaf_wire_refusal *why);

/* ---- daemon -> client ---- */

/* The daemon's answer to MEMORY, field by field (struct scaf_msg_memory_reply says what each means). */
struct scaf_wire_memory_reply {
    uint32_t op, status, runs, verdict, source, start_team, forgotten;
};

void scaf_wire_encode_memory_reply(struct scaf_msg_memory_reply *m, const struct scaf_wire_memory_reply *r);

/* Fills *m with a REFUSE of this protocol carrying why's reason and text. */
void scaf_wire_encode_refuse(struct scaf_msg_refuse *m, const struct scaf_wire_refusal *why);
/* Fills *m with a WELCOME of this protocol (the page's memfd travels beside it, SCM_RIGHTS). */
void scaf_wire_encode_welcome(struct scaf_msg_welcome *m, uint32_t client_id, uint32_t cpus);
/* The header of a STATUS_REPLY of `length` bytes, header included. */
struct scaf_msg_header scaf_wire_encode_status_reply(uint32_t length);

/* A decoded answer to HELLO. */
struct scaf_wire_answer {
    uint32_t type; /* SCAF_MSG_WELCOME or SCAF_MSG_REFUSE */
    /* WELCOME */
    uint32_t client_id;
    uint32_t cpus;
    /* REFUSE: any reason passes (a newer daemon may have more); only SCAF_REFUSE_VERSION is final */
    uint32_t reason;
    uint32_t daemon_version;
    char text[SCAF_REFUSE_TEXT]; /* NUL-terminated */
};

/*
 * The layer's check of the header of the daemon's answer to HELLO. A REFUSE
 * passes whatever its version (magic, type and length checked): a daemon of
 * another protocol says so in a REFUSE of its own version, and the layer must
 * read it to stop retrying. A WELCOME must be of this protocol with reserved 0.
 * Returns the whole answer's length, or 0 with *why filled (always
 * SCAF_REFUSE_MALFORMED; the text says what was wrong).
 */
uint32_t scaf_wire_check_answer(const struct scaf_msg_header *h, struct scaf_wire_refusal *why);
/*
 * Decodes a complete answer of `len` bytes whose header passed
 * scaf_wire_check_answer. A WELCOME must announce SCAF_PAGE_SIZE. Returns 0,
 * or -1 with *why filled (SCAF_REFUSE_MALFORMED).
 */
int scaf_wire_decode_answer(const void *msg, size_t len, struct scaf_wire_answer *out, struct scaf_wire_refusal *why);

/*
 * The layer's check of the page it mapped from a WELCOME's memfd (the file's
 * size was checked before mapping: touching past its end would SIGBUS the
 * program): magic and version. Returns 0, or -1 with *why filled.
 */
int scaf_wire_check_page(const struct scaf_page *page, struct scaf_wire_refusal *why);

/* ---- the daemon's answers to STATUS_REQ and MEMORY, as the asker reads them (scaf-run, Python's proto) ---- */

/*
 * The asker's check of the header of the daemon's answer to its request of
 * type `asked` (SCAF_MSG_STATUS_REQ or SCAF_MSG_MEMORY); `header` is
 * sizeof(struct scaf_msg_header) bytes at any alignment. Magic first, then:
 * to STATUS_REQ, a STATUS_REPLY of sizeof(struct scaf_msg_header) to
 * SCAF_STATUS_MAX bytes, of any version (its JSON says its own, which the
 * reader checks); to MEMORY, a MEMORY_REPLY of this protocol with its exact
 * length and reserved 0, or a REFUSE of any version (a daemon of another
 * protocol says why in a REFUSE of its own, as to HELLO). Returns the whole
 * answer's length, or 0 with *why filled (always SCAF_REFUSE_MALFORMED; the
 * text says what came instead).
 */
uint32_t scaf_wire_check_reply(const void *header, uint32_t asked, struct scaf_wire_refusal *why);

/* Room for any answer to MEMORY that scaf_wire_check_reply passes, aligned for each. */
union scaf_wire_memory_answer {
    struct scaf_msg_header h;
    struct scaf_msg_memory_reply reply;
    struct scaf_msg_refuse refuse;
};

/* What a complete answer to MEMORY was. */
enum scaf_wire_reply {
    SCAF_WIRE_REPLY_OK = 0,        /* a MEMORY_REPLY: *out holds its fields */
    SCAF_WIRE_REPLY_REFUSED = 1,   /* a REFUSE: *why holds the daemon's reason and its text, made printable */
    SCAF_WIRE_REPLY_MALFORMED = 2, /* neither: *why says what was wrong (SCAF_REFUSE_MALFORMED) */
};

/*
 * Decodes a complete answer to MEMORY, `len` bytes at any alignment, checking
 * its header again (scaf_wire_check_reply) and that `len` is the length it
 * announces; a MEMORY_REPLY's reserved word must be 0. Any status, verdict or
 * source passes (a newer daemon may have more); the asker judges them.
 */
enum scaf_wire_reply scaf_wire_decode_memory_reply(const void *msg, size_t len, struct scaf_wire_memory_reply *out,
                                                   struct scaf_wire_refusal *why);

/*
 * The value of one of proto.h's constants or message sizes by its C spelling
 * ("SCAF_MSG_MEMORY", "SCAF_MEMORY_RECALL", "sizeof(struct scaf_msg_memory)"),
 * for a caller that cannot include proto.h (Python's scaf.lib.proto, through
 * libscaf_launch.so), so that no value of the wire format is written twice.
 * Returns 0 with *value set, or -1 with errno ENOENT for a name it does not
 * hold (src/common/wirenames.c lists those it does).
 */
int scaf_wire_constant(const char *name, uint64_t *value);

#endif
