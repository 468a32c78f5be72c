/* keep.c — the memories scafd keeps, one per user: the state directory opened at start, each user's table loaded at first use, written back at most once a second by a child and at exit by the daemon itself. */
#include "keep.h"
#include "file.h"
#include "statedir.h"
#include "../say.h"
#include "scaf/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int scaf_keep_open(struct scaf_keep *m, const struct scaf_keep_opts *o)
{
    enum scaf_statedir_from from;
    const char *kill = getenv("SCAFD_TEST_MEMORY_KILL_AT");
    const char *hold = getenv("SCAFD_TEST_MEMORY_HOLD");
    char why[256];

    memset(m, 0, sizeof *m);
    m->dirfd = -1;
    m->writer.fd = -1;
    m->programs = o->programs ? o->programs : SCAF_KEEP_PROGRAMS_DEFAULT;
    /* For tests only: a daemon that dies this many bytes into writing a memory file, and a disk that stalls. */
    m->hooks.kill_at = kill && *kill ? strtoll(kill, NULL, 10) : -1;
    m->hooks.hold = hold && *hold ? hold : NULL;
    if (o->off)
        return 0;
    from = scaf_statedir_choose(o->state_dir, getenv("STATE_DIRECTORY"), getenv("XDG_STATE_HOME"), getenv("HOME"),
                                m->dir, sizeof m->dir);
    if (from == SCAF_STATEDIR_NONE) {
        scaf_say("no state directory (no $STATE_DIRECTORY, $XDG_STATE_HOME or $HOME): keeping no memory of "
                 "programs (--state-dir DIR chooses one)");
        return 0;
    }
    m->dirfd = scaf_statedir_open(m->dir, from, why, sizeof why);
    if (m->dirfd < 0) {
        if (from == SCAF_STATEDIR_OPTION) {
            scaf_say("cannot use --state-dir %s: %s", m->dir, why);
            return -1;
        }
        scaf_say("cannot keep a memory of programs in %s: %s; they are learned afresh at every run "
                 "(--state-dir DIR chooses another directory, --no-memory says this on purpose)", m->dir, why);
        return 0;
    }
    m->on = true;
    return 0;
}

/* One line for a file that is not believed, and the file out of the way. */
static void set_aside(struct scaf_keep *m, uid_t uid, const char *why)
{
    char name[64], aside[128];

    scaf_memfile_name(uid, name, sizeof name);
    if (scaf_memfile_set_aside(m->dirfd, uid, (int64_t)time(NULL), aside, sizeof aside) < 0)
        scaf_say("memory of uid %u: %s/%s is damaged (%s) and cannot be set aside (%s): starting empty; it will be "
                 "replaced at the next write", (unsigned)uid, m->dir, name, why, strerror(errno));
    else
        scaf_say("memory of uid %u: %s/%s is damaged (%s): set aside as %s; starting empty", (unsigned)uid, m->dir,
                 name, why, aside);
}

/* A store for uid, loaded from its file. */
static void load(struct scaf_keep *m, struct scaf_store *s)
{
    struct scaf_memo_record *recs = NULL;
    uint32_t n = 0, gone;
    char why[256];

    switch (scaf_memfile_load(m->dirfd, s->uid, &recs, &n, why, sizeof why)) {
    case SCAF_MEMFILE_LOADED:
        scaf_store_adopt(s, recs, n);
        /* A file written under a larger --memory-programs keeps the most recently seen. */
        gone = scaf_store_trim(s, m->programs);
        if (gone)
            scaf_say("memory of uid %u: %u programs forgotten to keep --memory-programs %u", (unsigned)s->uid, gone,
                     m->programs);
        break;
    case SCAF_MEMFILE_ABSENT:
        break;
    case SCAF_MEMFILE_DAMAGED:
        set_aside(m, s->uid, why);
        break;
    case SCAF_MEMFILE_ERROR:
        s->unreadable = true;
        scaf_say("memory of uid %u: %s: keeping none for this user until scafd restarts (the file is left as it is)",
                 (unsigned)s->uid, why);
        break;
    }
}

struct scaf_store *scaf_keep_store(struct scaf_keep *m, uid_t uid)
{
    struct scaf_store *s;

    if (!m->on)
        return NULL;
    for (uint32_t i = 0; i < m->nstores; i++)
        if (m->stores[i].uid == uid)
            return m->stores[i].unreadable ? NULL : &m->stores[i];
    if (m->nstores == m->capstores) {
        uint32_t cap = m->capstores ? m->capstores * 2 : 4;
        struct scaf_store *grown = realloc(m->stores, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        m->stores = grown;
        m->capstores = cap;
    }
    s = &m->stores[m->nstores++];
    memset(s, 0, sizeof *s);
    s->uid = uid;
    load(m, s);
    return s->unreadable ? NULL : s;
}

/* A write of s that ended: `changes` is the change count its copy had; what came after stays to be written. */
static void written(struct scaf_keep *m, struct scaf_store *s, bool ok, uint64_t changes)
{
    if (!ok) {
        s->failing = true;
        return;
    }
    if (s->failing)
        scaf_say("memory of uid %u: written again in %s", (unsigned)s->uid, m->dir);
    s->failing = false;
    s->dirty = s->changes != changes;
}

/* The child's outcome, if it has ended (or, with `wait`, once it has). */
static void settle(struct scaf_keep *m, bool wait)
{
    uint32_t i = m->writer.store;
    uint64_t changes = m->writer.changes;
    int ok = scaf_memwriter_reap(&m->writer, wait);

    if (ok >= 0 && i < m->nstores)
        written(m, &m->stores[i], ok == 1, changes);
}

int scaf_keep_flush(struct scaf_keep *m, double now, bool force)
{
    char why[256];

    if (!m->on)
        return 0;
    if (m->writer.pid) {
        settle(m, force);
        if (m->writer.pid)
            return 0;
    }
    for (uint32_t i = 0; i < m->nstores; i++) {
        struct scaf_store *s = &m->stores[i];

        if (!s->dirty || s->unreadable || (!force && now - s->written_at < SCAF_KEEP_WRITE_EVERY_S))
            continue;
        s->written_at = now;
        /* One child at a time; the next table at the next flush. A fork that fails writes in place. */
        if (!force && scaf_memwriter_start(&m->writer, m->dirfd, m->dir, i, s, s->failing, &m->hooks) == 0)
            return 1;
        if (scaf_memfile_save(m->dirfd, s->uid, s->recs, s->count, &m->hooks, why, sizeof why) < 0) {
            if (!s->failing)
                scaf_say("memory of uid %u: cannot write it in %s: %s (tried again each second)", (unsigned)s->uid,
                         m->dir, why);
            written(m, s, false, 0);
            continue;
        }
        written(m, s, true, s->changes);
    }
    return 0;
}

int scaf_keep_writer_fd(const struct scaf_keep *m)
{
    return m->writer.fd;
}

void scaf_keep_close(struct scaf_keep *m)
{
    scaf_keep_flush(m, scaf_clock_s(CLOCK_MONOTONIC), true);
    for (uint32_t i = 0; i < m->nstores; i++)
        scaf_store_free(&m->stores[i]);
    free(m->stores);
    m->stores = NULL;
    m->nstores = m->capstores = 0;
    /* Only an opened memory holds a descriptor (a zeroed struct's 0 is stdin). */
    if (m->on && m->dirfd >= 0)
        close(m->dirfd);
    m->dirfd = -1;
    m->on = false;
}
