/* test_tbblib.c — what a oneTBB library says of itself (src/common/tbblib.c): the strings far apart, cut at a chunk's boundary, missing. */
#include "scaf/tbblib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char tmp[] = "/tmp/scaf-test-tbb-XXXXXX";

/* Writes LEN bytes of 'x' to tmp, with TEXT at each offset of AT (N of them). */
static void put(size_t len, const char *const *text, const size_t *at, size_t n)
{
    static char body[200000];
    int fd = open(tmp, O_WRONLY | O_TRUNC);

    memset(body, 'x', len);
    for (size_t i = 0; i < n; i++)
        memcpy(body + at[i], text[i], strlen(text[i]));
    CHECK(fd >= 0 && write(fd, body, len) == (ssize_t)len, "write");
    if (fd >= 0)
        close(fd);
}

int main(void)
{
    static const char V23[] = "oneTBB: VERSION\t\t2023.2.0\n", TCM[] = "tcmConnect";
    struct scaf_tbblib lib;
    int fd = mkstemp(tmp);

    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    /* The strings far apart, the tag across the first 64 KiB chunk's boundary. */
    put(200000, (const char *[]){V23, TCM}, (size_t[]){65536 - 10, 150000}, 2);
    CHECK(scaf_tbblib_read(tmp, &lib) == 0 && lib.tcm == 1 && strcmp(lib.version, "2023.2.0") == 0,
          "tag cut: tcm %d version %s", lib.tcm, lib.version);
    /* The digits across the boundary: the version is read whole from the next chunk, not cut to "202". */
    put(200000, (const char *[]){V23}, (size_t[]){65536 - 20}, 1);
    CHECK(scaf_tbblib_read(tmp, &lib) == 0 && lib.tcm == 0 && strcmp(lib.version, "2023.2.0") == 0,
          "digits cut: tcm %d version %s", lib.tcm, lib.version);
    /* A version that is the file's last bytes. */
    put(100, (const char *[]){"oneTBB: VERSION\t2021.8"}, (size_t[]){78}, 1);
    CHECK(scaf_tbblib_read(tmp, &lib) == 0 && strcmp(lib.version, "2021.8") == 0, "at the end: version %s",
          lib.version);
    /* Neither string. */
    put(1000, NULL, NULL, 0);
    CHECK(scaf_tbblib_read(tmp, &lib) == 0 && lib.tcm == 0 && lib.version[0] == '\0', "none: tcm %d version %s",
          lib.tcm, lib.version);
    unlink(tmp);
    CHECK(scaf_tbblib_read(tmp, &lib) == -1 && errno == ENOENT, "a missing file");
    CHECK(scaf_tbblib_read("/", &lib) == -1 && errno == EISDIR, "a directory");
    CHECK(strcmp(scaf_tbblib_tcm_first(), SCAF_TBBLIB_TCM_FIRST) == 0, "tcm_first");
    /* Debian's own oneTBB, where it is installed: 2021.8, no TCM. */
    if (scaf_tbblib_read("/usr/lib/x86_64-linux-gnu/libtbb.so.12", &lib) == 0)
        CHECK(lib.tcm == 0 && strncmp(lib.version, "2021.", 5) == 0, "Debian's libtbb: tcm %d version %s", lib.tcm,
              lib.version);
    return check_exit("test_tbblib");
}
