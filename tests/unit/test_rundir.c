/* test_rundir.c — the runtime directory's rules and the daemon trust check, on real directories and sockets. */
#include "scaf/peer.h"
#include "scaf/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"

static char top[] = "/tmp/scaf-test-rundir-XXXXXX";

/* How each row prepares DIR (inside top) before scaf_rundir_open. */
enum setup { MISSING, MINE_0700, MINE_0770, MINE_0777, STICKY_1777, SYMLINK, FILE_, MISSING_PARENT };

static const struct row {
    const char *name;
    enum setup setup;
    int flags;
    int ok;          /* expect a descriptor */
    int err;         /* else this errno */
    const char *why; /* and this in the reason */
} rows[] = {
    {"missing, private: created", MISSING, SCAF_RUNDIR_PRIVATE, 1, 0, NULL},
    {"missing, shared: created", MISSING, SCAF_RUNDIR_SHARED, 1, 0, NULL},
    {"ours 0700, private", MINE_0700, SCAF_RUNDIR_PRIVATE, 1, 0, NULL},
    {"ours 0770, private: group-writable", MINE_0770, SCAF_RUNDIR_PRIVATE, 0, EPERM, "writable by other users"},
    {"ours 0770, given path", MINE_0770, 0, 1, 0, NULL},
    {"ours 0777, given path: not sticky", MINE_0777, 0, 0, EPERM, "not sticky"},
    {"ours 1777, given path: sticky like /tmp", STICKY_1777, 0, 1, 0, NULL},
    {"ours 1777, private", STICKY_1777, SCAF_RUNDIR_PRIVATE, 0, EPERM, "writable by other users"},
    {"symlink to ours, private", SYMLINK, SCAF_RUNDIR_PRIVATE, 0, ELOOP, "symbolic link"},
    {"symlink to ours, given path", SYMLINK, 0, 0, ELOOP, "symbolic link"},
    {"a plain file", FILE_, 0, 0, ENOTDIR, "not a directory"},
    {"missing parent: never created", MISSING_PARENT, SCAF_RUNDIR_PRIVATE, 0, ENOENT, "cannot create"},
};

static void prepare(const struct row *r, char *dir, size_t len)
{
    char target[256];

    snprintf(dir, len, "%s/d", top);
    snprintf(target, sizeof target, "%s/target", top);
    switch (r->setup) {
    case MISSING:
        break;
    case MINE_0700:
    case MINE_0770:
    case MINE_0777:
    case STICKY_1777:
        mkdir(dir, 0700);
        chmod(dir, r->setup == MINE_0700 ? 0700 : r->setup == MINE_0770 ? 0770 : r->setup == MINE_0777 ? 0777 : 01777);
        break;
    case SYMLINK:
        mkdir(target, 0700);
        CHECK(symlink(target, dir) == 0, "symlink");
        break;
    case FILE_:
        close(open(dir, O_CREAT | O_WRONLY, 0600));
        break;
    case MISSING_PARENT:
        snprintf(dir, len, "%s/no/d", top);
        break;
    }
}

static void cleanup(void)
{
    char cmd[128];

    snprintf(cmd, sizeof cmd, "rm -rf %s/d %s/target %s/no", top, top, top);
    CHECK(system(cmd) == 0, "rm");
}

static void test_open_table(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        char dir[256], why[160] = "";
        struct stat st;
        int fd;

        prepare(r, dir, sizeof dir);
        errno = 0;
        fd = scaf_rundir_open(dir, r->flags, why, sizeof why);
        if (r->ok) {
            CHECK(fd >= 0, "%s: refused: %s", r->name, why);
            if (r->setup == MISSING && fd >= 0 && fstat(fd, &st) == 0)
                CHECK((st.st_mode & 0777) == (r->flags & SCAF_RUNDIR_SHARED ? 0755u : 0700u), "%s: mode %o", r->name,
                      st.st_mode & 0777);
        } else {
            CHECK(fd < 0 && errno == r->err, "%s: fd %d errno %d, expected %d", r->name, fd, errno, r->err);
            CHECK(strstr(why, r->why) != NULL, "%s: reason '%s'", r->name, why);
        }
        if (fd >= 0)
            close(fd);
        if (r->setup == SYMLINK) {
            char target[256];
            snprintf(target, sizeof target, "%s/target", top);
            CHECK(rmdir(target) == 0, "%s: nothing written through the link", r->name);
        }
        cleanup();
    }
}

static void test_openat(void)
{
    char dir[256], why[160], victim[256];
    int dfd, fd;

    snprintf(dir, sizeof dir, "%s/d", top);
    snprintf(victim, sizeof victim, "%s/victim", top);
    dfd = scaf_rundir_open(dir, SCAF_RUNDIR_PRIVATE, why, sizeof why);
    CHECK(dfd >= 0, "open dir: %s", why);
    if (dfd < 0)
        return;
    /* New: created, ours. */
    fd = scaf_rundir_openat(dfd, "new.lock", O_RDWR | O_CREAT, 0600, why, sizeof why);
    CHECK(fd >= 0, "new file: %s", why);
    if (fd >= 0)
        close(fd);
    /* A planted symlink: refused, its target never created. */
    CHECK(symlinkat(victim, dfd, "planted.log") == 0, "symlinkat");
    fd = scaf_rundir_openat(dfd, "planted.log", O_WRONLY | O_CREAT | O_APPEND, 0600, why, sizeof why);
    CHECK(fd < 0 && errno == ELOOP && strstr(why, "symbolic link"), "planted link: fd %d '%s'", fd, why);
    CHECK(access(victim, F_OK) != 0, "the link's target was created");
    /* A hard link (two names): refused. */
    CHECK(linkat(dfd, "new.lock", dfd, "second", 0) == 0, "linkat");
    fd = scaf_rundir_openat(dfd, "second", O_RDWR, 0, why, sizeof why);
    CHECK(fd < 0 && errno == EPERM, "hard-linked file accepted");
    /* A directory where a file should be: refused. */
    CHECK(mkdirat(dfd, "adir", 0700) == 0, "mkdirat");
    fd = scaf_rundir_openat(dfd, "adir", O_RDONLY, 0, why, sizeof why);
    CHECK(fd < 0, "a directory accepted as a file");
    close(dfd);
    cleanup();
}

static void test_split(void)
{
    static const struct {
        const char *path, *dir, *base;
    } t[] = {
        {"/tmp/scaf-1/scafd.sock", "/tmp/scaf-1", "scafd.sock"},
        {"/s.sock", "/", "s.sock"},
        {"s.sock", ".", "s.sock"},
        {"a/b", "a", "b"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char dir[64];
        const char *base = scaf_rundir_split(t[i].path, dir, sizeof dir);
        CHECK(strcmp(dir, t[i].dir) == 0 && strcmp(base, t[i].base) == 0, "split %s: %s + %s", t[i].path, dir, base);
    }
}

/* Our own daemon (a socketpair stands in for the connection): trusted; the credentials are real. */
static void test_peer_self(void)
{
    int sv[2];
    uid_t uid = (uid_t)-1;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    CHECK(scaf_peer_trusted(sv[0], "/tmp/x/s.sock", NULL, &uid) == 1 && uid == getuid(), "own uid %u", (unsigned)uid);
    CHECK(scaf_peer_trusted(sv[0], "/tmp/x/s.sock", "no-such-user-scaf", &uid) == 1, "an unknown name changes nothing");
    close(sv[0]);
    close(sv[1]);
    CHECK(scaf_peer_trusted(-1, "/tmp/x/s.sock", NULL, &uid) == -1 && errno == EBADF, "bad fd");
}

int main(void)
{
    if (!mkdtemp(top)) {
        perror("mkdtemp");
        return 1;
    }
    test_open_table();
    test_openat();
    test_split();
    test_peer_self();
    rmdir(top);
    return check_exit("test_rundir");
}
