/* test_daemon_lineage.c — a client's ancestors: the depth table, and real parents, children and grandchildren read from /proc. */
#include "../../src/daemon/collect/lineage.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static struct scaf_lineage of(pid_t self, uint64_t start, uint32_t n, const pid_t *up, const uint64_t *up_start)
{
    struct scaf_lineage l = {.self = self, .self_start = start, .n = n};

    for (uint32_t i = 0; i < n; i++) {
        l.up[i] = up[i];
        l.up_start[i] = up_start[i];
    }
    return l;
}

/* scaf_lineage_depth over written lineages: parent, grandparent, a reused pid, an unknown start, no relation. */
static void depth_table(void)
{
    const pid_t up[] = {100, 50, 10};
    const uint64_t st[] = {1000, 500, 100};
    struct scaf_lineage child = of(200, 2000, 3, up, st);
    const struct {
        const char *name;
        struct scaf_lineage anc;
        uint32_t want;
    } rows[] = {
        {"its parent", of(100, 1000, 0, NULL, NULL), 1},
        {"its grandparent", of(50, 500, 0, NULL, NULL), 2},
        {"three up", of(10, 100, 0, NULL, NULL), 3},
        {"a pid reused by a later process", of(100, 1001, 0, NULL, NULL), 0},
        {"an ancestor whose start is unknown", of(100, 0, 0, NULL, NULL), 0},
        {"a sibling", of(201, 2001, 3, up, st), 0},
        {"itself", child, 0},
        {"its own child (below it, not above)", of(300, 3000, 1, (const pid_t[]){200}, (const uint64_t[]){2000}), 0},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint32_t got = scaf_lineage_depth(&child, &rows[i].anc);
        CHECK(got == rows[i].want, "depth, %s: %u, want %u", rows[i].name, got, rows[i].want);
    }
}

/*
 * Real processes: this test, a child and its child. The child reads its own lineage and the grandchild's,
 * and says over a pipe what depths it found, so that the check runs on lineages read while all three live.
 */
static void real_tree(void)
{
    int fd[2];
    struct scaf_lineage me;
    uint32_t got[4] = {0};

    scaf_lineage_read(&me, getpid());
    CHECK(me.self == getpid() && me.self_start > 0, "own start time read (%llu)", (unsigned long long)me.self_start);
    CHECK(me.n >= 1 && me.up[0] == getppid(), "parent first: up[0] %d, getppid %d", me.n ? (int)me.up[0] : -1,
          (int)getppid());
    if (pipe(fd) < 0) {
        fail("pipe", strerror(errno));
        return;
    }
    pid_t child = fork();
    if (child == 0) {
        int gp[2];
        uint32_t out[4] = {0};
        struct scaf_lineage c, g;

        close(fd[0]);
        if (pipe(gp) < 0)
            _exit(2);
        pid_t grand = fork();
        if (grand == 0) {
            char b;
            close(gp[1]);
            (void)!read(gp[0], &b, 1); /* lives until the child has read it */
            _exit(0);
        }
        close(gp[0]);
        scaf_lineage_read(&c, getpid());
        scaf_lineage_read(&g, grand);
        out[0] = scaf_lineage_depth(&c, &me);    /* the test is the child's parent: 1 */
        out[1] = scaf_lineage_depth(&g, &me);    /* and the grandchild's grandparent: 2 */
        out[2] = scaf_lineage_depth(&g, &c);     /* the child is the grandchild's parent: 1 */
        out[3] = scaf_lineage_depth(&me, &g);    /* nothing below is above */
        (void)!write(gp[1], "x", 1);
        close(gp[1]);
        waitpid(grand, NULL, 0);
        (void)!write(fd[1], out, sizeof out);
        _exit(0);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], got, sizeof got);
    close(fd[0]);
    waitpid(child, NULL, 0);
    CHECK(n == (ssize_t)sizeof got, "the child answered (%zd bytes)", n);
    CHECK(got[0] == 1, "the test is its child's parent: depth %u", got[0]);
    CHECK(got[1] == 2, "and its grandchild's grandparent: depth %u", got[1]);
    CHECK(got[2] == 1, "the child is the grandchild's parent: depth %u", got[2]);
    CHECK(got[3] == 0, "a grandchild is no ancestor: depth %u", got[3]);

    /* A process that has ended: no start time, no ancestors, and nobody's ancestor. */
    struct scaf_lineage gone;
    scaf_lineage_read(&gone, child);
    CHECK(gone.self_start == 0 && gone.n == 0, "an ended process reads as unknown (start %llu, %u up)",
          (unsigned long long)gone.self_start, gone.n);
    pid_t pp;
    uint64_t start;
    CHECK(scaf_procfs_parent(0, &pp, &start) < 0 && errno == EINVAL, "pid 0 is EINVAL");
}

int main(void)
{
    depth_table();
    real_tree();
    return check_exit("test_daemon_lineage");
}
