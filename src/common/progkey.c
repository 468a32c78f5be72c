/* progkey.c — names a program and its code for the daemon's memory (include/scaf/progkey.h): build IDs read with pread, interpreters' scripts, FNV-1a; no allocation, no stdio. */
#include "scaf/progkey.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The layer calls this from a program's first OpenMP call, which may come
 * from another library's constructor, on any thread: so no malloc, no stdio
 * (snprintf included), no locale; only open, pread, fstat, readlink, close.
 */

#define BUILD_ID_MAX 64      /* SHA-1 ids are 20 bytes, MD5 and UUID 16; a longer note is not a build ID */
#define NOTE_SCAN 2048       /* bytes of one PT_NOTE segment read from a file */
#define PHDR_MAX 256         /* program headers looked at; executables have about a dozen */
#define TEXT_PATH_MAX 120    /* a longer path is named by its hash, so that exe and script always fit */

uint64_t scaf_progkey_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

size_t scaf_progkey_size(void)
{
    return sizeof(struct scaf_progkey);
}

/* ---- GNU build ID notes ---- */

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/*
 * The NT_GNU_BUILD_ID note among the notes of buf[0 .. len), entries aligned
 * to `align` (4, or 8 for the 64-bit .note.gnu.property layout) as glibc reads
 * them. Returns the id's length (1..BUILD_ID_MAX) with *id pointing into buf,
 * or 0. Nothing is read outside buf, whatever the sizes say.
 */
static size_t find_build_id(const unsigned char *buf, size_t len, size_t align, const unsigned char **id)
{
    size_t off = 0;

    if (align != 8)
        align = 4;
    while (off + 12 <= len) {
        uint32_t namesz, descsz, type;
        size_t name_at = off + 12, desc_at, next;

        memcpy(&namesz, buf + off, 4);
        memcpy(&descsz, buf + off + 4, 4);
        memcpy(&type, buf + off + 8, 4);
        if (namesz > len || descsz > len)
            return 0;
        desc_at = align_up(name_at + namesz, align);
        next = align_up(desc_at + descsz, align);
        if (desc_at + descsz > len)
            return 0;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(buf + name_at, "GNU", 4) == 0 && descsz >= 1 &&
            descsz <= BUILD_ID_MAX) {
            *id = buf + desc_at;
            return descsz;
        }
        if (next <= off)
            return 0;
        off = next;
    }
    return 0;
}

static int pread_all(int fd, void *buf, size_t len, off_t at)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, at + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* One program header of either class, as the fields the search needs. */
struct phdr {
    uint32_t type;
    uint64_t offset, filesz, align;
};

/* The build ID of the ELF file open on fd (this machine's byte order), copied to out; 0 when none. */
static size_t file_build_id(int fd, unsigned char out[BUILD_ID_MAX])
{
    unsigned char ident[EI_NIDENT], seg[NOTE_SCAN];
    uint64_t phoff;
    size_t phentsize, phnum, want_ent;
    int is64;

    if (pread_all(fd, ident, sizeof ident, 0) != 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
        return 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (ident[EI_DATA] != ELFDATA2LSB)
        return 0;
#else
    if (ident[EI_DATA] != ELFDATA2MSB)
        return 0;
#endif
    if (ident[EI_CLASS] == ELFCLASS64) {
        Elf64_Ehdr eh;
        if (pread_all(fd, &eh, sizeof eh, 0) != 0)
            return 0;
        phoff = eh.e_phoff;
        phentsize = eh.e_phentsize;
        phnum = eh.e_phnum;
        want_ent = sizeof(Elf64_Phdr);
        is64 = 1;
    } else if (ident[EI_CLASS] == ELFCLASS32) {
        Elf32_Ehdr eh;
        if (pread_all(fd, &eh, sizeof eh, 0) != 0)
            return 0;
        phoff = eh.e_phoff;
        phentsize = eh.e_phentsize;
        phnum = eh.e_phnum;
        want_ent = sizeof(Elf32_Phdr);
        is64 = 0;
    } else {
        return 0;
    }
    /* PN_XNUM (more headers than e_phnum holds) is never an executable's case: no build ID then. */
    if (phentsize != want_ent || phnum == 0 || phnum >= PN_XNUM || phoff > (uint64_t)INT64_MAX / 2)
        return 0;
    if (phnum > PHDR_MAX)
        phnum = PHDR_MAX;
    for (size_t i = 0; i < phnum; i++) {
        struct phdr ph;
        const unsigned char *id;
        size_t len, idlen;

        if (is64) {
            Elf64_Phdr p;
            if (pread_all(fd, &p, sizeof p, (off_t)(phoff + i * phentsize)) != 0)
                return 0;
            ph = (struct phdr){p.p_type, p.p_offset, p.p_filesz, p.p_align};
        } else {
            Elf32_Phdr p;
            if (pread_all(fd, &p, sizeof p, (off_t)(phoff + i * phentsize)) != 0)
                return 0;
            ph = (struct phdr){p.p_type, p.p_offset, p.p_filesz, p.p_align};
        }
        if (ph.type != PT_NOTE || ph.offset > (uint64_t)INT64_MAX / 2)
            continue;
        len = ph.filesz < sizeof seg ? (size_t)ph.filesz : sizeof seg;
        if (len == 0 || pread_all(fd, seg, len, (off_t)ph.offset) != 0)
            continue;
        idlen = find_build_id(seg, len, (size_t)ph.align, &id);
        if (idlen) {
            memcpy(out, id, idlen);
            return idlen;
        }
    }
    return 0;
}

uint64_t scaf_progkey_object(uintptr_t base, const void *phdr, size_t phnum)
{
    const ElfW(Phdr) *ph = phdr;

    for (size_t i = 0; ph && i < phnum; i++) {
        const unsigned char *id;
        size_t idlen;
        uint64_t h;

        if (ph[i].p_type != PT_NOTE || ph[i].p_memsz == 0)
            continue;
        /* Loaded notes lie in a PT_LOAD segment: readable for as long as the object is loaded. */
        idlen = find_build_id((const unsigned char *)(base + ph[i].p_vaddr), ph[i].p_memsz, ph[i].p_align, &id);
        if (!idlen)
            continue;
        h = scaf_progkey_fnv(SCAF_FNV_OFFSET, id, idlen);
        return h ? h : 1;
    }
    return 0;
}

/* ---- the canonical text ---- */

/* An appender that never writes past its buffer; `over` remembers that something did not fit. */
struct text {
    char *p;
    size_t n, cap;
    int over;
};

static void put(struct text *t, const char *s, size_t n)
{
    if (t->n + n >= t->cap) {
        t->over = 1;
        n = t->cap > t->n + 1 ? t->cap - t->n - 1 : 0;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
}

static void puts_(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void put_u64(struct text *t, uint64_t v, int width)
{
    char d[24];
    int i = (int)sizeof d;

    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
        width--;
    } while (v || width > 0);
    put(t, d + i, sizeof d - (size_t)i);
}

static void put_hex(struct text *t, const unsigned char *b, size_t n)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        char c[2] = {hex[b[i] >> 4], hex[b[i] & 15]};
        put(t, c, 2);
    }
}

static void put_hex64(struct text *t, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (56 - 8 * i));
    put_hex(t, b, sizeof b);
}

/* A path, or "#" and its hash when it is too long for the text. */
static void put_path(struct text *t, const char *path)
{
    size_t n = strlen(path);

    if (n <= TEXT_PATH_MAX) {
        put(t, path, n);
        return;
    }
    puts_(t, "#");
    put_hex64(t, scaf_progkey_fnv(SCAF_FNV_OFFSET, path, n));
}

/* "file:PATH:SIZE:SEC.NSEC" */
static void put_file(struct text *t, const char *path, const struct stat *st)
{
    puts_(t, "file:");
    put_path(t, path);
    puts_(t, ":");
    put_u64(t, (uint64_t)st->st_size, 1);
    puts_(t, ":");
    put_u64(t, (uint64_t)st->st_mtim.tv_sec, 1);
    puts_(t, ".");
    put_u64(t, (uint64_t)st->st_mtim.tv_nsec, 9);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/*
 * Opens `path` (relative to `cwd` when given and the path is relative) and
 * writes its canonical absolute path (the kernel's, from /proc/self/fd: every
 * symbolic link resolved) into out. Returns the descriptor, or -1 with errno.
 */
static int open_canon(const char *cwd, const char *path, int flags, char *out, size_t outlen)
{
    char joined[PATH_MAX], link[40];
    struct text j = {joined, 0, sizeof joined, 0};
    struct text l = {link, 0, sizeof link, 0};
    ssize_t n;
    int fd;

    joined[0] = '\0';
    if (path[0] != '/' && cwd && cwd[0]) {
        puts_(&j, cwd);
        puts_(&j, "/");
    }
    puts_(&j, path);
    if (j.over) {
        errno = ENAMETOOLONG;
        return -1;
    }
    do
        fd = open(joined, flags | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    puts_(&l, "/proc/self/fd/");
    put_u64(&l, (uint64_t)fd, 1);
    n = readlink(link, out, outlen - 1);
    if (n > 0 && out[0] == '/') {
        out[n] = '\0';
    } else {
        /* No /proc: the path as given (absolute when cwd was). */
        size_t len = strlen(joined) < outlen - 1 ? strlen(joined) : outlen - 1;
        memcpy(out, joined, len);
        out[len] = '\0';
    }
    return fd;
}

/* ---- interpreters and their argv ---- */

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int scaf_progkey_interpreter(const char *basename)
{
    static const struct {
        const char *name;
        int interp;
    } names[] = {
        {"python", SCAF_INTERP_PYTHON}, {"pypy", SCAF_INTERP_PYTHON}, {"Rscript", SCAF_INTERP_RSCRIPT},
        {"R", SCAF_INTERP_R},           {"julia", SCAF_INTERP_JULIA}, {"octave", SCAF_INTERP_OCTAVE},
    };

    if (!basename)
        return SCAF_INTERP_NONE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i].name);

        if (strncmp(basename, names[i].name, len) == 0 && !is_letter(basename[len]))
            return names[i].interp;
    }
    return SCAF_INTERP_NONE;
}

static void add_part(struct scaf_progkey_source *s, int kind, int arg, int off)
{
    s->kind = kind;
    if (s->parts < SCAF_PROGKEY_PARTS) {
        s->part[s->parts].arg = arg;
        s->part[s->parts].off = off;
        s->parts++;
    }
}

static void only_part(struct scaf_progkey_source *s, int kind, int arg, int off)
{
    s->parts = 0;
    add_part(s, kind, arg, off);
}

/*
 * An option's value: the rest of argv[*i] from `off` when there is one,
 * else the next argument (consumed). Returns 0 with (*arg, *voff), or -1 when
 * the value is missing.
 */
static int option_value(const char *const *argv, int argc, int *i, size_t off, int *arg, int *voff)
{
    if (argv[*i][off]) {
        *arg = *i;
        *voff = (int)off;
        return 0;
    }
    if (*i + 1 >= argc)
        return -1;
    *i += 1;
    *arg = *i;
    *voff = 0;
    return 0;
}

/* python/pypy: [options] (-c CODE | -m MODULE | SCRIPT | - | nothing) [args]; short options cluster. */
static void python_source(const char *const *argv, int argc, struct scaf_progkey_source *s)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int arg, off;

        if (strcmp(a, "--") == 0) {
            if (i + 1 < argc && strcmp(argv[i + 1], "-") != 0)
                only_part(s, SCAF_PROGKEY_SCRIPT, i + 1, 0);
            return;
        }
        if (a[0] != '-') {
            only_part(s, SCAF_PROGKEY_SCRIPT, i, 0);
            return;
        }
        if (a[1] == '\0')
            return; /* "-": the program comes from stdin */
        if (a[1] == '-') {
            if (strcmp(a, "--check-hash-based-pycs") == 0)
                i++;
            continue;
        }
        for (size_t j = 1; a[j]; j++) {
            char c = a[j];

            if (c == 'c' || c == 'm') {
                if (option_value(argv, argc, &i, j + 1, &arg, &off) != 0)
                    return;
                only_part(s, c == 'c' ? SCAF_PROGKEY_CODE : SCAF_PROGKEY_MODULE, arg, off);
                return;
            }
            if (c == 'W' || c == 'X') {
                (void)option_value(argv, argc, &i, j + 1, &arg, &off);
                break;
            }
        }
    }
}

/* The R engine (what Rscript and the R shell script exec): --file=F or -f F, -e EXPR..., until --args. */
static void r_source(const char *const *argv, int argc, struct scaf_progkey_source *s)
{
    int script = -1, script_off = 0, code = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--args") == 0)
            break;
        if (strncmp(a, "--file=", 7) == 0) {
            script = i;
            script_off = 7;
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) {
            if (i + 1 < argc) {
                script = ++i;
                script_off = 0;
            }
        } else if (strcmp(a, "-e") == 0) {
            if (i + 1 < argc) {
                add_part(s, SCAF_PROGKEY_CODE, ++i, 0);
                code = 1;
            }
        } else if (strcmp(a, "-g") == 0 || strcmp(a, "--gui") == 0 || strcmp(a, "-d") == 0 ||
                   strcmp(a, "--debugger") == 0) {
            i++;
        }
    }
    if (code)
        return;
    s->parts = 0;
    s->kind = SCAF_PROGKEY_STDIN;
    if (script >= 0 && strcmp(argv[script] + script_off, "-") != 0 &&
        strcmp(argv[script] + script_off, "stdin") != 0)
        only_part(s, SCAF_PROGKEY_SCRIPT, script, script_off);
}

/* Rscript [--options] (-e EXPR [-e EXPR...] | FILE) [args]: options first, then one of the two. */
static void rscript_source(const char *const *argv, int argc, struct scaf_progkey_source *s)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-e") == 0) {
            if (i + 1 < argc)
                add_part(s, SCAF_PROGKEY_CODE, ++i, 0);
            continue;
        }
        if (a[0] == '-' && a[1] == '-')
            continue;
        if (s->kind == SCAF_PROGKEY_CODE)
            return; /* the first of the expressions' arguments */
        if (strcmp(a, "-") != 0)
            only_part(s, SCAF_PROGKEY_SCRIPT, i, 0);
        return;
    }
}

/* julia [switches] [--] [PROGRAMFILE] [args]: -e/-E code (repeatable), -m MODULE, getopt's clustering. */
static void julia_source(const char *const *argv, int argc, struct scaf_progkey_source *s)
{
    static const char *const long_value[] = {"--load", "--sysimage", "--threads", "--procs", "--cpu-target",
                                             "--home", "--machine-file", "--gcthreads", "--heap-size-hint",
                                             NULL};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int arg, off;

        if (strcmp(a, "--") == 0) {
            if (s->kind != SCAF_PROGKEY_CODE && i + 1 < argc)
                only_part(s, SCAF_PROGKEY_SCRIPT, i + 1, 0);
            return;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (s->kind != SCAF_PROGKEY_CODE && a[0] != '-')
                only_part(s, SCAF_PROGKEY_SCRIPT, i, 0);
            return;
        }
        if (a[1] == '-') {
            const char *eq = strchr(a, '=');
            size_t name = eq ? (size_t)(eq - a) : strlen(a);

            if ((name == 6 && strncmp(a, "--eval", 6) == 0) || (name == 7 && strncmp(a, "--print", 7) == 0)) {
                if (eq)
                    add_part(s, SCAF_PROGKEY_CODE, i, (int)name + 1);
                else if (i + 1 < argc)
                    add_part(s, SCAF_PROGKEY_CODE, ++i, 0);
                continue;
            }
            if (name == 8 && strncmp(a, "--module", 8) == 0) {
                if (eq)
                    only_part(s, SCAF_PROGKEY_MODULE, i, (int)name + 1);
                else if (i + 1 < argc)
                    only_part(s, SCAF_PROGKEY_MODULE, i + 1, 0);
                return;
            }
            /* --project and --optimize take a value only as --project=DIR: never the next argument. */
            for (int k = 0; long_value[k] && !eq; k++)
                if (strcmp(a, long_value[k]) == 0) {
                    i++;
                    break;
                }
            continue;
        }
        for (size_t j = 1; a[j]; j++) {
            char c = a[j];

            if (c == 'e' || c == 'E') {
                if (option_value(argv, argc, &i, j + 1, &arg, &off) == 0)
                    add_part(s, SCAF_PROGKEY_CODE, arg, off);
                break;
            }
            if (c == 'm') {
                if (option_value(argv, argc, &i, j + 1, &arg, &off) == 0)
                    only_part(s, SCAF_PROGKEY_MODULE, arg, off);
                return;
            }
            if (strchr("LJtpCH", c)) {
                (void)option_value(argv, argc, &i, j + 1, &arg, &off);
                break;
            }
        }
    }
}

/* octave [options] [FILE]: --eval CODE, options with a value (--path, -p, ...), "--" before a file. */
static void octave_source(const char *const *argv, int argc, struct scaf_progkey_source *s)
{
    static const char *const long_value[] = {"--path", "--exec-path", "--image-path", "--info-file",
                                             "--info-program", "--doc-cache-file", "--texi-macros-file",
                                             "--built-in-docstrings-file", NULL};
    int script = -1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--") == 0) {
            if (script < 0 && i + 1 < argc)
                script = i + 1;
            break;
        }
        if (strcmp(a, "--eval") == 0) {
            if (i + 1 < argc)
                add_part(s, SCAF_PROGKEY_CODE, ++i, 0);
            continue;
        }
        if (strncmp(a, "--eval=", 7) == 0) {
            add_part(s, SCAF_PROGKEY_CODE, i, 7);
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "-p") == 0)
                i++;
            for (int k = 0; long_value[k]; k++)
                if (strcmp(a, long_value[k]) == 0) {
                    i++;
                    break;
                }
            continue;
        }
        if (script < 0 && strcmp(a, "-") != 0)
            script = i;
    }
    if (s->kind == SCAF_PROGKEY_CODE)
        return;
    if (script >= 0)
        only_part(s, SCAF_PROGKEY_SCRIPT, script, 0);
}

void scaf_progkey_source(int interp, const char *const *argv, int argc, struct scaf_progkey_source *out)
{
    memset(out, 0, sizeof *out);
    if (interp == SCAF_INTERP_NONE)
        return;
    /* An interpreter whose argv names no code reads it from stdin or a terminal: not nameable. */
    out->kind = SCAF_PROGKEY_STDIN;
    if (!argv || argc < 1)
        return;
    switch (interp) {
    case SCAF_INTERP_PYTHON:
        python_source(argv, argc, out);
        break;
    case SCAF_INTERP_R:
        r_source(argv, argc, out);
        break;
    case SCAF_INTERP_RSCRIPT:
        rscript_source(argv, argc, out);
        break;
    case SCAF_INTERP_JULIA:
        julia_source(argv, argc, out);
        break;
    case SCAF_INTERP_OCTAVE:
        octave_source(argv, argc, out);
        break;
    default:
        break;
    }
    if (out->parts == 0)
        out->kind = SCAF_PROGKEY_STDIN;
}

/* ---- the key ---- */

/* The name status shows: "EXE", "EXE SCRIPT", "EXE -m MODULE", "EXE -c". */
static void make_name(struct scaf_progkey *out, const char *exe_path, const struct scaf_progkey_source *src,
                      const char *const *argv)
{
    struct text n = {out->name, 0, sizeof out->name, 0};
    const char *p = src->parts ? argv[src->part[0].arg] + src->part[0].off : "";

    out->name[0] = '\0';
    puts_(&n, base_name(exe_path));
    if (src->kind == SCAF_PROGKEY_SCRIPT) {
        puts_(&n, " ");
        puts_(&n, base_name(p));
    } else if (src->kind == SCAF_PROGKEY_MODULE) {
        puts_(&n, " -m ");
        puts_(&n, p);
    } else if (src->kind == SCAF_PROGKEY_CODE) {
        puts_(&n, " (code)");
    }
}

/* "\nscript=..." for the code the interpreter runs; 0, or -1 when it cannot be named. */
static int put_source(struct text *t, const char *cwd, const struct scaf_progkey_source *src,
                      const char *const *argv)
{
    char path[PATH_MAX];
    struct stat st;
    uint64_t h = SCAF_FNV_OFFSET;
    int fd, rc = 0;

    switch (src->kind) {
    case SCAF_PROGKEY_SCRIPT:
        fd = open_canon(cwd, argv[src->part[0].arg] + src->part[0].off, O_PATH, path, sizeof path);
        if (fd < 0)
            return -1;
        /* A pipe or a terminal (python <(...), /dev/stdin) names no file that runs again. */
        if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
            rc = -1;
        close(fd);
        if (rc == 0) {
            puts_(t, "\nscript=");
            put_file(t, path, &st);
        }
        return rc;
    case SCAF_PROGKEY_MODULE:
        puts_(t, "\nscript=module:");
        put_path(t, argv[src->part[0].arg] + src->part[0].off);
        return 0;
    case SCAF_PROGKEY_CODE:
        /* Each part, and a NUL between them: "-e a -e b" is not "-e ab". */
        for (int i = 0; i < src->parts; i++) {
            const char *c = argv[src->part[i].arg] + src->part[i].off;
            h = scaf_progkey_fnv(h, c, strlen(c) + (i + 1 < src->parts ? 1 : 0));
        }
        puts_(t, "\nscript=code:");
        put_hex64(t, h);
        return 0;
    case SCAF_PROGKEY_STDIN:
        puts_(t, "\nscript=stdin");
        return -1;
    default:
        return 0;
    }
}

int scaf_progkey_of_at(const char *cwd, const char *exe, const char *const *argv, int argc,
                       struct scaf_progkey *out)
{
    char path[PATH_MAX];
    unsigned char id[BUILD_ID_MAX];
    struct text t = {out->text, 0, sizeof out->text, 0};
    struct scaf_progkey_source src;
    struct stat st;
    size_t idlen = 0;
    int fd, named, saved;

    memset(out, 0, sizeof *out);
    if (!exe) {
        errno = EINVAL;
        return -1;
    }
    fd = open_canon(cwd, exe, O_RDONLY, path, sizeof path);
    /* An executable we may run but not read (mode 711) is still named, by its path, size and time. */
    if (fd < 0 && errno == EACCES)
        fd = open_canon(cwd, exe, O_PATH, path, sizeof path);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        saved = errno;
        close(fd);
        memset(out, 0, sizeof *out);
        errno = saved;
        return -1;
    }
    if (S_ISREG(st.st_mode))
        idlen = file_build_id(fd, id);
    close(fd);

    puts_(&t, "exe=");
    if (idlen) {
        puts_(&t, "build-id:");
        put_hex(&t, id, idlen);
    } else {
        put_file(&t, path, &st);
    }
    scaf_progkey_source(scaf_progkey_interpreter(base_name(path)), argv, argc, &src);
    named = put_source(&t, cwd, &src, argv) == 0;
    make_name(out, path, &src, argv);
    if (named && !t.over) {
        out->key = scaf_progkey_fnv(SCAF_FNV_OFFSET, out->text, t.n);
        if (out->key == 0)
            out->key = 1;
    }
    return 0;
}

int scaf_progkey_of(const char *exe, const char *const *argv, int argc, struct scaf_progkey *out)
{
    return scaf_progkey_of_at(NULL, exe, argv, argc, out);
}
