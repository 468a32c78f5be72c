/* file.h — one user's memory file: its header and records checked before anything is believed, written atomically, a damaged one set aside (not an installed interface). */
#ifndef SCAFD_MEMORY_FILE_H
#define SCAFD_MEMORY_FILE_H

#include "memo.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SCAF_MEMFILE_MAGIC 0x314d454d46414353ull /* "SCAFMEM1" read as little-endian bytes */
#define SCAF_MEMFILE_VERSION 2u
/* Version 1 had `reserved` (0) where a record now keeps run_ms: it is read as runs of unknown length, and written
 * back as version 2. */
#define SCAF_MEMFILE_VERSION_1 1u
/* The most records a file may hold (and --memory-programs' ceiling): 22 MB, read whole at load. */
#define SCAF_MEMFILE_MAX_RECORDS 16384u

/*
 * DIR/memory-UID.bin: this header, then `count` struct scaf_memo_record, in
 * the daemon's byte order (the file never leaves its machine). A file is
 * believed only when every field checks: magic, version (this one or 1),
 * record size, uid, reserved, a length of exactly header + count records, the
 * CRC, each record (scaf_memo_record_check; run_ms 0 in version 1), no key
 * twice.
 */
struct scaf_memfile_header {
    uint64_t magic;       /* SCAF_MEMFILE_MAGIC */
    uint32_t version;     /* SCAF_MEMFILE_VERSION */
    uint32_t record_size; /* sizeof(struct scaf_memo_record) */
    uint32_t count;       /* records that follow, at most SCAF_MEMFILE_MAX_RECORDS */
    uint32_t crc;         /* CRC-32 (IEEE 802.3, zlib's crc32) of the records */
    uint32_t uid;         /* whose memory: a file copied from another user's is not theirs */
    uint32_t reserved;    /* 0 */
};
static_assert(sizeof(struct scaf_memfile_header) == 32, "file layout");

/* CRC-32 of n bytes, continued from crc (start with 0). */
uint32_t scaf_memfile_crc32(uint32_t crc, const void *p, size_t n);

/* "memory-UID.bin": the file's name in the state directory. */
void scaf_memfile_name(uid_t uid, char *buf, size_t len);

/*
 * Whether `len` bytes read from uid's file can be believed (pure): NULL and
 * *count, or what is wrong with them ("another magic", "a CRC mismatch", ...).
 */
const char *scaf_memfile_check(const void *buf, size_t len, uid_t uid, uint32_t *count);

enum scaf_memfile_load {
    SCAF_MEMFILE_LOADED = 0, /* *recs, *count hold the file's records (malloc'd; NULL when 0) */
    SCAF_MEMFILE_ABSENT,     /* no file yet: an empty memory */
    SCAF_MEMFILE_DAMAGED,    /* not to be believed (why says what); the caller sets it aside */
    SCAF_MEMFILE_ERROR,      /* could not be read (why): neither believed nor replaced */
};

/* Reads uid's file from the state directory `dirfd`. */
enum scaf_memfile_load scaf_memfile_load(int dirfd, uid_t uid, struct scaf_memo_record **recs, uint32_t *count,
                                         char *why, size_t whylen);

/*
 * Renames uid's file to memory-UID.bin.bad-YYYYmmddTHHMMSSZ (UTC of now_s;
 * -2, -3, ... when that name is taken), its new name in `name`. Returns 0, or
 * -1 with errno.
 */
int scaf_memfile_set_aside(int dirfd, uid_t uid, int64_t now_s, char *name, size_t namelen);

/* For tests only (scafd's SCAFD_TEST_MEMORY_* variables): a crash in the middle of a write, a disk that stalls. */
struct scaf_memfile_hooks {
    long long kill_at; /* >= 0: SIGKILL once that many bytes of the temporary file are written */
    pid_t kill_also;   /* and SIGKILL this process first (the daemon, when a child writes for it); 0 = none */
    const char *hold;  /* while this path exists, the write waits after writing the temporary file, before its
                        * fsync (what a slow disk or NFS server stalls); NULL = never */
};

/*
 * Writes uid's file atomically: memory-UID.bin.tmp (0600) written whole and
 * fsynced, renamed over the file, the directory fsynced. A crash at any point
 * leaves the old file or the new one, whole. `hooks` is NULL but in tests.
 * Returns 0, or -1 with errno and why filled.
 */
int scaf_memfile_save(int dirfd, uid_t uid, const struct scaf_memo_record *recs, uint32_t count,
                      const struct scaf_memfile_hooks *hooks, char *why, size_t whylen);

#endif
