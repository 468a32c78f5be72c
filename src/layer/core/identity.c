/* identity.c — this program's key for the daemon's memory: computed once, from /proc/self/exe, /proc/self/cmdline and the directory the program started in. */
#include "identity.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "say.h"
#include "scaf/procfs.h"
#include "scaf/progkey.h"
#include "settings.h"

#define ARGS_MAX 64 /* the interpreters' rules look at the options before the script: these are plenty */

static char start_dir[PATH_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct scaf_progkey key;

void scaf_identity_init(void)
{
    if (!getcwd(start_dir, sizeof start_dir))
        start_dir[0] = '\0';
}

static void compute(void)
{
    /* Static: the key may be computed on a program's thread with a small stack. */
    static char cmdline[4096];
    const char *argv[ARGS_MAX];
    int argc = 0;
    ssize_t n;

    /* A program that rewrote its argv (setproctitle) is named by what it wrote; one too long is cut. */
    n = scaf_procfs_read("/proc/self/cmdline", cmdline, sizeof cmdline);
    for (ssize_t i = 0; i < n && argc < ARGS_MAX; i += (ssize_t)strlen(cmdline + i) + 1)
        argv[argc++] = cmdline + i;
    if (scaf_progkey_of_at(start_dir[0] ? start_dir : NULL, "/proc/self/exe", argv, argc, &key) != 0) {
        if (scaf_settings.memory)
            scaf_layer_log("no key for the daemon's memory: /proc/self/exe unreadable");
        return;
    }
    if (key.key == 0 && scaf_settings.memory)
        scaf_layer_log("no key for the daemon's memory: %s cannot be named (code from stdin?)", key.name);
}

uint64_t scaf_identity_program(const char **name)
{
    pthread_once(&once, compute);
    if (name)
        *name = key.name;
    return key.key;
}

uint64_t scaf_identity_key(const char **name)
{
    if (!scaf_settings.memory) {
        if (name)
            *name = ""; /* SCAF_MEMORY=0: nothing is read or named */
        return 0;
    }
    return scaf_identity_program(name);
}
