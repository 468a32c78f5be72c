/* test_progkey.c — the program key (src/common/progkey.c): build IDs of synthetic ELF files, interpreters' argv rules, scripts, the canonical text. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scaf/progkey.h"

static char dir[4096];

/* ---- synthetic ELF files: a header, program headers, one note segment ---- */

struct elf_spec {
    const char *name;
    int cls;             /* ELFCLASS64 or ELFCLASS32 */
    int data;            /* ELFDATA2LSB or ELFDATA2MSB */
    int note_seg;        /* a PT_NOTE program header */
    unsigned align;      /* its p_align */
    int abi_tag_first;   /* an NT_GNU_ABI_TAG note before the build ID */
    int property_first;  /* an NT_GNU_PROPERTY_TYPE_0 note (16-byte desc) before it, 8-aligned */
    const char *owner;   /* the build ID note's owner ("GNU") */
    unsigned id_len;     /* its length; 0: no build ID note */
    uint32_t lie_descsz; /* nonzero: the note claims this descsz */
    size_t truncate;     /* nonzero: only this many bytes are written */
    const char *expect;  /* "build-id:HEX" or "file:" (the text after "exe=" starts with it) */
};

static size_t put_note(unsigned char *p, unsigned align, uint32_t type, const char *owner, const unsigned char *desc,
                       uint32_t descsz, uint32_t claim)
{
    uint32_t namesz = (uint32_t)strlen(owner) + 1, hdr[3] = {namesz, claim ? claim : descsz, type};
    size_t off = 12, a = align == 8 ? 8 : 4;

    memcpy(p, hdr, 12);
    memcpy(p + off, owner, namesz);
    off = (off + namesz + a - 1) & ~(a - 1);
    memcpy(p + off, desc, descsz);
    off = (off + descsz + a - 1) & ~(a - 1);
    return off;
}

/* Writes the file and returns its path (static storage, one at a time). */
static const char *write_elf(const struct elf_spec *s)
{
    static char path[4200];
    unsigned char img[1024] = {0}, notes[256] = {0}, id[80], prop[16] = {0}, abi[16] = {0};
    size_t nlen = 0, phoff, noff, len;
    int fd;

    for (unsigned i = 0; i < sizeof id; i++)
        id[i] = (unsigned char)(0xa0 + i);
    if (s->property_first)
        nlen += put_note(notes + nlen, 8, 5 /* NT_GNU_PROPERTY_TYPE_0 */, "GNU", prop, 16, 0);
    if (s->abi_tag_first)
        nlen += put_note(notes + nlen, s->align, NT_GNU_ABI_TAG, "GNU", abi, 16, 0);
    if (s->id_len)
        nlen += put_note(notes + nlen, s->align, NT_GNU_BUILD_ID, s->owner ? s->owner : "GNU", id, s->id_len,
                         s->lie_descsz);
    memcpy(img, ELFMAG, SELFMAG);
    img[EI_CLASS] = (unsigned char)s->cls;
    img[EI_DATA] = (unsigned char)s->data;
    img[EI_VERSION] = EV_CURRENT;
    if (s->cls == ELFCLASS64) {
        Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
        Elf64_Phdr ph[2] = {{.p_type = PT_LOAD, .p_offset = 0, .p_filesz = 512, .p_align = 4096}};

        phoff = sizeof *eh;
        noff = phoff + 2 * sizeof ph[0];
        ph[1] = (Elf64_Phdr){.p_type = s->note_seg ? PT_NOTE : PT_NULL, .p_offset = noff, .p_filesz = nlen,
                             .p_memsz = nlen, .p_align = s->align};
        eh->e_type = ET_EXEC;
        eh->e_phoff = phoff;
        eh->e_phentsize = sizeof ph[0];
        eh->e_phnum = 2;
        memcpy(img + phoff, ph, sizeof ph);
    } else {
        Elf32_Ehdr *eh = (Elf32_Ehdr *)img;
        Elf32_Phdr ph[2] = {{.p_type = PT_LOAD, .p_offset = 0, .p_filesz = 512, .p_align = 4096}};

        phoff = sizeof *eh;
        noff = phoff + 2 * sizeof ph[0];
        ph[1] = (Elf32_Phdr){.p_type = s->note_seg ? PT_NOTE : PT_NULL, .p_offset = (Elf32_Off)noff,
                             .p_filesz = (Elf32_Word)nlen, .p_memsz = (Elf32_Word)nlen, .p_align = s->align};
        eh->e_type = ET_EXEC;
        eh->e_phoff = (Elf32_Off)phoff;
        eh->e_phentsize = sizeof ph[0];
        eh->e_phnum = 2;
        memcpy(img + phoff, ph, sizeof ph);
    }
    memcpy(img + noff, notes, nlen);
    len = s->truncate ? s->truncate : noff + nlen;
    snprintf(path, sizeof path, "%s/%s", dir, s->name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (fd < 0 || write(fd, img, len) != (ssize_t)len)
        fail("write_elf", path);
    if (fd >= 0)
        close(fd);
    return path;
}

#define ID20 "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3"

static const struct elf_spec elves[] = {
    {"id64", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 20, 0, 0, "build-id:" ID20},
    {"id64-after-abi", ELFCLASS64, ELFDATA2LSB, 1, 4, 1, 0, NULL, 20, 0, 0, "build-id:" ID20},
    {"id64-align8", ELFCLASS64, ELFDATA2LSB, 1, 8, 0, 1, NULL, 20, 0, 0, "build-id:" ID20},
    {"id64-md5", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 16, 0, 0, "build-id:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"},
    {"id32", ELFCLASS32, ELFDATA2LSB, 1, 4, 0, 0, NULL, 20, 0, 0, "build-id:" ID20},
    {"no-id", ELFCLASS64, ELFDATA2LSB, 1, 4, 1, 0, NULL, 0, 0, 0, "file:"},
    {"no-note-seg", ELFCLASS64, ELFDATA2LSB, 0, 4, 0, 0, NULL, 20, 0, 0, "file:"},
    {"other-owner", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, "XYZ", 20, 0, 0, "file:"},
    {"id-too-long", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 72, 0, 0, "file:"},
    {"descsz-lies", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 20, 100000, 0, "file:"},
    {"big-endian", ELFCLASS64, ELFDATA2MSB, 1, 4, 0, 0, NULL, 20, 0, 0, "file:"},
    {"truncated", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 20, 0, 10, "file:"},
    {"notes-cut", ELFCLASS64, ELFDATA2LSB, 1, 4, 0, 0, NULL, 20, 0, 64 + 112 + 20, "file:"},
};

static void test_build_ids(void)
{
    for (size_t i = 0; i < sizeof elves / sizeof elves[0]; i++) {
        const struct elf_spec *s = &elves[i];
        const char *path = write_elf(s);
        const char *argv[] = {path};
        struct scaf_progkey k;
        int rc = scaf_progkey_of(path, argv, 1, &k);

        CHECK(rc == 0, "%s: rc %d (%s)", s->name, rc, strerror(errno));
        CHECK(strncmp(k.text, "exe=", 4) == 0 && strncmp(k.text + 4, s->expect, strlen(s->expect)) == 0,
              "%s: text '%s', expected exe=%s...", s->name, k.text, s->expect);
        if (strcmp(s->expect, "file:") == 0) {
            /* exe=file:PATH:SIZE:SEC.NSEC, the path canonical (the temporary folder is /tmp's) */
            char want[4400];
            struct stat st;

            stat(path, &st);
            snprintf(want, sizeof want, "exe=file:%s:%lld:%lld.%09ld", path, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
            CHECK(strcmp(k.text, want) == 0, "%s: text '%s', expected '%s'", s->name, k.text, want);
        } else {
            CHECK(strlen(k.text) == 4 + strlen(s->expect), "%s: text '%s' goes on", s->name, k.text);
        }
        CHECK(k.key == scaf_progkey_fnv(SCAF_FNV_OFFSET, k.text, strlen(k.text)), "%s: key is not FNV-1a of the text",
              s->name);
        CHECK(k.key != 0, "%s: key 0", s->name);
        CHECK(strcmp(k.name, s->name) == 0, "%s: name '%s'", s->name, k.name);
    }
}

/* ---- the interpreters' argv rules ---- */

struct argv_row {
    const char *exe;       /* the executable's basename */
    const char *args[10];  /* argv, NULL-terminated */
    int kind;              /* enum scaf_progkey_kind */
    const char *parts[4];  /* what each part names, in order */
};

#define P SCAF_PROGKEY_PLAIN
#define S SCAF_PROGKEY_SCRIPT
#define M SCAF_PROGKEY_MODULE
#define C SCAF_PROGKEY_CODE
#define I SCAF_PROGKEY_STDIN

static const struct argv_row argv_rows[] = {
    /* not interpreters */
    {"omp_probe", {"omp_probe", "x.py"}, P, {NULL}},
    {"Rgui", {"Rgui", "x.R"}, P, {NULL}},
    {"pythonista", {"pythonista", "x.py"}, P, {NULL}},
    /* python, pypy */
    {"python3.11", {"python3", "train.py", "--depth", "8"}, S, {"train.py"}},
    {"python3", {"python3", "-u", "-O", "train.py"}, S, {"train.py"}},
    {"python3", {"python3", "-uO", "train.py", "-c", "x"}, S, {"train.py"}},
    {"python3", {"python3", "-W", "ignore", "-X", "dev", "train.py"}, S, {"train.py"}},
    {"python3", {"python3", "-Wignore", "-Xdev", "train.py"}, S, {"train.py"}},
    {"python3", {"python3", "--check-hash-based-pycs", "always", "t.py"}, S, {"t.py"}},
    {"python3", {"python3", "-m", "xgboost.cli", "train.conf"}, M, {"xgboost.cli"}},
    {"python3", {"python3", "-mxgboost.cli"}, M, {"xgboost.cli"}},
    {"python3", {"python3", "-Bm", "pkg"}, M, {"pkg"}},
    {"python3", {"python3", "-c", "import x; x.run()", "arg"}, C, {"import x; x.run()"}},
    {"python3", {"python3", "-Ec", "print(1)"}, C, {"print(1)"}},
    {"python3", {"python3", "--", "-odd-name.py"}, S, {"-odd-name.py"}},
    {"python3", {"python3"}, I, {NULL}},
    {"python3", {"python3", "-i"}, I, {NULL}},
    {"python3", {"python3", "-", "arg"}, I, {NULL}},
    {"python3", {"python3", "-c"}, I, {NULL}},
    {"pypy3", {"pypy3", "bench.py"}, S, {"bench.py"}},
    /* the R engine, as Rscript and the R shell script exec it */
    {"R", {"/usr/lib/R/bin/exec/R", "--no-echo", "--no-restore", "--file=group.R", "--args", "-f", "x"},
     S, {"group.R"}},
    {"R", {"R", "-f", "group.R"}, S, {"group.R"}},
    {"R", {"R", "--no-echo", "--no-restore", "-e", "library(data.table)", "-e", "f()"}, C,
     {"library(data.table)", "f()"}},
    {"R", {"R", "--vanilla"}, I, {NULL}},
    {"R", {"R", "--file=-"}, I, {NULL}},
    {"R", {"R", "-g", "Tk", "--file=a.R"}, S, {"a.R"}},
    /* Rscript, as scaf run sees it */
    {"Rscript", {"Rscript", "--vanilla", "group.R", "-e", "x"}, S, {"group.R"}},
    {"Rscript", {"Rscript", "-e", "a()", "-e", "b()", "file.R"}, C, {"a()", "b()"}},
    {"Rscript", {"Rscript", "--verbose"}, I, {NULL}},
    /* julia */
    {"julia", {"julia", "-t", "4", "--project=.", "sim.jl", "-e", "x"}, S, {"sim.jl"}},
    {"julia-1.10", {"julia", "-t4", "-O3", "sim.jl"}, S, {"sim.jl"}},
    {"julia", {"julia", "--threads", "4", "--project", "sim.jl"}, S, {"sim.jl"}},
    {"julia", {"julia", "-e", "using X", "-E", "f()", "arg.jl"}, C, {"using X", "f()"}},
    {"julia", {"julia", "--eval=using X"}, C, {"using X"}},
    {"julia", {"julia", "-m", "Pkg", "x"}, M, {"Pkg"}},
    {"julia", {"julia", "--", "run.jl"}, S, {"run.jl"}},
    {"julia", {"julia", "-i"}, I, {NULL}},
    /* octave */
    {"octave-cli", {"octave-cli", "--no-gui", "-p", "lib", "run.m"}, S, {"run.m"}},
    {"octave", {"octave", "--path", "lib", "-q", "run.m", "x"}, S, {"run.m"}},
    {"octave", {"octave", "--eval", "disp(1)"}, C, {"disp(1)"}},
    {"octave", {"octave", "--eval=disp(1)", "run.m"}, C, {"disp(1)"}},
    {"octave", {"octave", "-q"}, I, {NULL}},
};

static void test_argv_rules(void)
{
    for (size_t r = 0; r < sizeof argv_rows / sizeof argv_rows[0]; r++) {
        const struct argv_row *row = &argv_rows[r];
        struct scaf_progkey_source src;
        int argc = 0, nparts = 0;

        while (row->args[argc])
            argc++;
        while (nparts < 4 && row->parts[nparts])
            nparts++;
        scaf_progkey_source(scaf_progkey_interpreter(row->exe), row->args, argc, &src);
        CHECK(src.kind == row->kind, "row %zu (%s %s): kind %d, expected %d", r, row->exe,
              argc > 1 ? row->args[1] : "", src.kind, row->kind);
        if (row->kind == P || row->kind == I) {
            CHECK(src.parts == 0, "row %zu: %d parts for a program without one", r, src.parts);
            continue;
        }
        CHECK(src.parts == nparts, "row %zu: %d parts, expected %d", r, src.parts, nparts);
        for (int i = 0; i < nparts && i < src.parts; i++)
            CHECK(strcmp(row->args[src.part[i].arg] + src.part[i].off, row->parts[i]) == 0,
                  "row %zu: part %d is '%s', expected '%s'", r, i, row->args[src.part[i].arg] + src.part[i].off,
                  row->parts[i]);
    }
}

/* ---- scripts, modules, code: the text and the key ---- */

/* An "interpreter": a copy of a synthetic ELF named python3.11 (the rules go by the name). */
static void test_scripts(void)
{
    struct elf_spec py = elves[0];
    char interp[4200], script[4200], text[8600], sub[4200];
    struct scaf_progkey a, b, c, d;
    struct stat st;
    const char *path;
    int fd;

    py.name = "python3.11";
    path = write_elf(&py);
    snprintf(interp, sizeof interp, "%s", path);
    snprintf(script, sizeof script, "%s/train.py", dir);
    fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "print(1)\n", 9) == 9, "cannot write %s", script);
    close(fd);
    stat(script, &st);

    {
        const char *argv[] = {"python3", "-u", script, "--x"};
        CHECK(scaf_progkey_of(interp, argv, 4, &a) == 0, "script: rc");
        snprintf(text, sizeof text, "exe=build-id:" ID20 "\nscript=file:%s:9:%lld.%09ld", script,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        CHECK(strcmp(a.text, text) == 0, "script: text '%s', expected '%s'", a.text, text);
        CHECK(strcmp(a.name, "python3.11 train.py") == 0, "script: name '%s'", a.name);
        CHECK(a.key != 0 && a.key == scaf_progkey_fnv(SCAF_FNV_OFFSET, a.text, strlen(a.text)), "script: key");
    }
    {
        /* The same script named relative to the directory given, and through a symbolic link. */
        const char *argv[] = {"python3", "train.py"};
        snprintf(sub, sizeof sub, "%s/link.py", dir);
        CHECK(symlink(script, sub) == 0, "symlink: %s", strerror(errno));
        CHECK(scaf_progkey_of_at(dir, interp, argv, 2, &b) == 0 && b.key == a.key,
              "relative to cwd: '%s' vs '%s'", b.text, a.text);
        const char *argv2[] = {"python3", sub};
        CHECK(scaf_progkey_of(interp, argv2, 2, &b) == 0 && b.key == a.key, "through a link: '%s'", b.text);
        /* Relative to the current directory (the test's is not dir): not found, so not named. */
        CHECK(scaf_progkey_of(interp, argv, 2, &b) == 0 && b.key == 0, "a missing script is named: '%s'", b.text);
    }
    {
        /* A changed script is another program. */
        fd = open(script, O_WRONLY | O_APPEND);
        CHECK(fd >= 0 && write(fd, "print(2)\n", 9) == 9, "append");
        close(fd);
        const char *argv[] = {"python3", script};
        CHECK(scaf_progkey_of(interp, argv, 2, &b) == 0 && b.key != a.key && b.key != 0, "changed script, same key");
    }
    {
        const char *m1[] = {"python3", "-m", "xgboost"}, *m2[] = {"python3", "-m", "lightgbm"};
        CHECK(scaf_progkey_of(interp, m1, 3, &c) == 0 &&
                  strcmp(c.text, "exe=build-id:" ID20 "\nscript=module:xgboost") == 0 &&
                  strcmp(c.name, "python3.11 -m xgboost") == 0,
              "module: '%s' '%s'", c.text, c.name);
        CHECK(scaf_progkey_of(interp, m2, 3, &d) == 0 && d.key != c.key, "two modules, one key");
    }
    {
        const char *c1[] = {"python3", "-c", "import x"}, *c2[] = {"python3", "-c", "import y"};
        const char *e1[] = {"R", "-e", "a", "-e", "b"}, *e2[] = {"R", "-e", "ab"};
        char want[128];
        uint64_t h = scaf_progkey_fnv(SCAF_FNV_OFFSET, "import x", 8);

        snprintf(want, sizeof want, "exe=build-id:" ID20 "\nscript=code:%016llx", (unsigned long long)h);
        CHECK(scaf_progkey_of(interp, c1, 3, &c) == 0 && strcmp(c.text, want) == 0, "code: '%s' vs '%s'", c.text,
              want);
        CHECK(scaf_progkey_of(interp, c2, 3, &d) == 0 && d.key != c.key, "two codes, one key");
        /* The engine's name decides the rules: the same file named R. */
        py.name = "R";
        path = write_elf(&py);
        CHECK(scaf_progkey_of(path, e1, 5, &c) == 0 && scaf_progkey_of(path, e2, 3, &d) == 0 && c.key != d.key &&
                  c.key && d.key,
              "-e a -e b is -e ab: '%s' '%s'", c.text, d.text);
    }
    {
        /* From stdin or a terminal: not named. */
        const char *argv[] = {"python3"};
        CHECK(scaf_progkey_of(interp, argv, 1, &c) == 0 && c.key == 0 && strstr(c.text, "script=stdin"),
              "stdin: key %llx '%s'", (unsigned long long)c.key, c.text);
        const char *dev[] = {"python3", "/dev/null"};
        CHECK(scaf_progkey_of(interp, dev, 2, &c) == 0 && c.key == 0, "a device as script: '%s'", c.text);
    }
}

/* ---- the executable itself ---- */

struct self_obj {
    uint64_t object;
    int found;
};

static int main_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct self_obj *s = arg;

    (void)size;
    /* The first entry is the main program. */
    s->object = scaf_progkey_object(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    s->found = 1;
    return 1;
}

static void test_self(void)
{
    struct scaf_progkey k;
    struct self_obj obj = {0};
    const char *argv[] = {"test_progkey"};
    const char *hex;
    unsigned char id[64];
    size_t n = 0;

    CHECK(scaf_progkey_of("/proc/self/exe", argv, 1, &k) == 0, "self: rc");
    dl_iterate_phdr(main_object, &obj);
    if (strncmp(k.text, "exe=build-id:", 13) != 0) {
        /* Built without a build ID: the object has none either. */
        CHECK(obj.object == 0, "no build ID in the file, but one in memory");
        return;
    }
    hex = k.text + 13;
    while (hex[2 * n] && n < sizeof id) {
        unsigned v;
        sscanf(hex + 2 * n, "%2x", &v);
        id[n++] = (unsigned char)v;
    }
    /* The file's note, read with pread, and the loaded one, read in memory, are the same bytes. */
    CHECK(obj.found && obj.object == scaf_progkey_fnv(SCAF_FNV_OFFSET, id, n), "self: object %llx, file id %s",
          (unsigned long long)obj.object, hex);
    CHECK(strcmp(k.name, "test_progkey") == 0, "self: name '%s'", k.name);
}

static void test_errors(void)
{
    struct scaf_progkey k;
    char path[4200];
    const char *argv[] = {"x"};

    memset(&k, 0x5a, sizeof k);
    snprintf(path, sizeof path, "%s/absent", dir);
    errno = 0;
    CHECK(scaf_progkey_of(path, argv, 1, &k) == -1 && errno == ENOENT, "absent: errno %d", errno);
    CHECK(k.key == 0 && k.text[0] == 0 && k.name[0] == 0, "absent: out not zeroed");
    CHECK(scaf_progkey_of(NULL, argv, 1, &k) == -1 && errno == EINVAL, "NULL exe");
    /* A shell script: no ELF, named by its file; argv NULL is allowed. */
    snprintf(path, sizeof path, "%s/run.sh", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECK(fd >= 0 && write(fd, "#!/bin/sh\n", 10) == 10, "write run.sh");
    close(fd);
    CHECK(scaf_progkey_of(path, NULL, 0, &k) == 0 && strncmp(k.text, "exe=file:", 9) == 0 && k.key != 0,
          "shell script: '%s'", k.text);
    CHECK(scaf_progkey_interpreter(NULL) == SCAF_INTERP_NONE, "NULL basename");
    CHECK(scaf_progkey_size() == sizeof(struct scaf_progkey), "size");
}

static void cleanup(void)
{
    char cmd[4200];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
    char tmpl[] = "/tmp/scaf-progkey-XXXXXX";

    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    /* Canonical, so that the expected texts name it as the kernel does (/tmp may be a link). */
    if (!realpath(tmpl, dir)) {
        perror("realpath");
        return 1;
    }
    test_build_ids();
    test_argv_rules();
    test_scripts();
    test_self();
    test_errors();
    cleanup();
    return check_exit("test_progkey");
}
