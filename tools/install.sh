#!/usr/bin/env bash
# tools/install.sh — `make install` / `make uninstall`: copies the build into the GNU directories and records each path, so uninstall removes exactly those.
#
# usage: tools/install.sh install|uninstall   (the Makefile passes the directories as variables:
#   DESTDIR prefix bindir sbindir libdir pkglibdir mandir docdir systemdsystemunitdir
#   systemduserunitdir BUILD PYTHON)
#
# Everything scaf-specific that is not a single named file lives in $pkglibdir (layers, workloads,
# a virtual environment holding the Python package); the manifest $pkglibdir/installed-files lists
# the named files outside it, and the directories this install created, so uninstall can remove
# them and nothing else.
set -euo pipefail

: "${DESTDIR:=}" "${BUILD:?}" "${PYTHON:=python3}"
for v in prefix bindir sbindir libdir pkglibdir mandir docdir systemdsystemunitdir systemduserunitdir; do
    [ -n "${!v:-}" ] || { echo "install.sh: $v is not set (run it through make)" >&2; exit 2; }
    case "${!v}" in /*) ;; *) echo "install.sh: $v=${!v} must be an absolute path" >&2; exit 2 ;; esac
done
manifest="$pkglibdir/installed-files"
tmp=""
src="$(cd "$(dirname "$0")/.." && pwd)"

say() { printf '  %s\n' "$*"; }

# Directories are created one level at a time, so the manifest names exactly those that did not exist.
created_dirs=()
mkdir_rec() {
    local d="$1"
    [ -d "$DESTDIR$d" ] && return 0
    # DESTDIR itself is the packager's staging area, not part of the install.
    if [ "$d" = / ]; then mkdir -p "$DESTDIR/"; return 0; fi
    mkdir_rec "$(dirname "$d")"
    mkdir -m 755 "$DESTDIR$d"
    created_dirs+=("$d")
}

# Whether users other than the owner may run FILE: it and every directory above its real path o+x.
others_can_run() {
    local p
    p="$(readlink -f "$1")" || return 1
    while [ "$p" != / ]; do
        [ -n "$(find "$p" -maxdepth 0 -perm -o+x)" ] || return 1
        p="$(dirname "$p")"
    done
}

files=()
put() { # put MODE SRC DEST: one file
    mkdir_rec "$(dirname "$3")"
    install -m "$1" "$2" "$DESTDIR$3"
    files+=("$3")
}

# Unit files, the launcher and the Python layout module name installed paths, never DESTDIR.
subst() {
    sed -e "s|@BINDIR@|$bindir|g" -e "s|@SBINDIR@|$sbindir|g" -e "s|@PKGLIBDIR@|$pkglibdir|g" "$1"
}

do_install() {
    local f name
    [ -x "$BUILD/bin/scafd" ] || { echo "install.sh: $BUILD/bin/scafd is missing (run make first)" >&2; exit 1; }
    if [ -e "$DESTDIR$manifest" ]; then
        echo "install.sh: scaf is already installed in $DESTDIR$pkglibdir; make uninstall first" >&2
        exit 1
    fi
    # uninstall removes $pkglibdir as a whole, so it must hold nothing but what we put there.
    if [ -d "$DESTDIR$pkglibdir" ] && [ -n "$(ls -A "$DESTDIR$pkglibdir")" ]; then
        echo "install.sh: $DESTDIR$pkglibdir exists and is not empty; choose another pkglibdir" >&2
        exit 1
    fi
    tmp="$(mktemp -d)"
    trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

    say "daemon    $sbindir/scafd"
    put 755 "$BUILD/bin/scafd" "$sbindir/scafd"

    # pkglibdir is wholly ours: uninstall removes it as a tree, so its files are not listed.
    mkdir_rec "$pkglibdir"
    say "layers    $pkglibdir/"
    for f in "$BUILD"/lib/libscaf_*.so; do
        [ -e "$f" ] || { echo "install.sh: no $BUILD/lib/libscaf_*.so (run make first)" >&2; exit 1; }
        install -m 644 "$f" "$DESTDIR$pkglibdir/"
    done
    # `scaf run` replays a decision made before with it (docs/python.md, "Replays").
    install -m 755 "$BUILD/lib/scaf-run" "$DESTDIR$pkglibdir/"
    install -d -m 755 "$DESTDIR$pkglibdir/workloads"
    for f in "$BUILD"/workloads/*; do
        if [ -f "$f" ] && [ -x "$f" ]; then install -m 755 "$f" "$DESTDIR$pkglibdir/workloads/"; fi
    done

    # A virtual environment of its own, from the pinned runtime requirements: the system Python's
    # packages are neither used nor touched (Debian marks them externally managed). The scaf
    # package goes into its site-packages. Everything is found relative to where it lies, so the
    # tree also runs from DESTDIR or after being moved as a whole.
    say "python    $pkglibdir/venv"
    "$PYTHON" -m venv "$DESTDIR$pkglibdir/venv"
    others_can_run "$DESTDIR$pkglibdir/venv/bin/python" ||
        echo "install.sh: warning: $(readlink -f "$DESTDIR$pkglibdir/venv/bin/python") cannot be run by other" \
            "users, so neither can the installed scaf; install with INSTALL_PYTHON=/usr/bin/python3" >&2
    "$DESTDIR$pkglibdir/venv/bin/python" -m pip install -q --disable-pip-version-check \
        --no-warn-script-location -r "$src/requirements-run.txt"
    local purelib
    purelib="$("$DESTDIR$pkglibdir/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
    (cd "$src/python" && find scaf -name '*.py' -print0) | while IFS= read -r -d '' f; do
        install -D -m 644 "$src/python/$f" "$purelib/$f"
    done
    cat > "$purelib/scaf/lib/installed.py" <<EOF_PY
"""Where \`make install\` put scaf, relative to this virtual environment (written by tools/install.sh; absent from the source tree)."""

import os
import sys

# <libdir>/scaf: the directory that holds this virtual environment.
PKGLIBDIR = os.path.dirname(os.path.abspath(sys.prefix))
SBINDIR = os.path.normpath(os.path.join(PKGLIBDIR, "$(realpath -m --relative-to="$pkglibdir" "$sbindir")"))
EOF_PY
    "$DESTDIR$pkglibdir/venv/bin/python" -m compileall -q "$purelib/scaf" >/dev/null

    # -P: the current directory is not put on sys.path, so a user's ./numpy.py cannot shadow ours.
    local pflag=""
    "$DESTDIR$pkglibdir/venv/bin/python" -P -c pass 2>/dev/null && pflag=" -P"
    say "command   $bindir/scaf"
    subst "$src/tools/scaf-installed.in" | sed -e "s|@PFLAG@|$pflag|g" \
        -e "s|@BIN_TO_PKGLIB@|$(realpath -m --relative-to="$bindir" "$pkglibdir")|g" > "$tmp/scaf"
    put 755 "$tmp/scaf" "$bindir/scaf"

    say "manuals   $mandir/man{1,7,8}/"
    for f in "$BUILD"/man/*.[178]; do
        [ -e "$f" ] || { echo "install.sh: no manual pages in $BUILD/man (make man)" >&2; exit 1; }
        name="$(basename "$f")"
        put 644 "$f" "$mandir/man${name##*.}/$name"
    done

    say "units     $systemdsystemunitdir/scafd.{service,socket}, $systemduserunitdir/scafd.{service,socket}"
    for f in "$src"/dist/systemd/system/*.in; do
        name="$(basename "$f" .in)"
        subst "$f" > "$tmp/$name"
        put 644 "$tmp/$name" "$systemdsystemunitdir/$name"
    done
    for f in "$src"/dist/systemd/user/*.in; do
        name="$(basename "$f" .in)"
        subst "$f" > "$tmp/$name"
        put 644 "$tmp/$name" "$systemduserunitdir/$name"
    done

    # A TaskProlog runs from slurm.conf by absolute path; in pkglibdir, uninstall removes it with the rest.
    say "slurm     $pkglibdir/slurm-taskprolog"
    subst "$src/dist/slurm/slurm-taskprolog.in" > "$tmp/slurm-taskprolog"
    install -m 755 "$tmp/slurm-taskprolog" "$DESTDIR$pkglibdir/slurm-taskprolog"

    say "docs      $docdir/"
    for f in "$src"/README.md "$src"/docs/*.md; do
        put 644 "$f" "$docdir/$(basename "$f")"
    done

    # Deepest directories last, so uninstall (which reads the list backwards) removes children first.
    {
        for f in "${files[@]}"; do echo "file $f"; done
        for d in "${created_dirs[@]}"; do echo "dir $d"; done
    } > "$DESTDIR$manifest"
}

do_uninstall() {
    local kind path dirs=()
    if [ ! -f "$DESTDIR$manifest" ]; then
        echo "install.sh: nothing to uninstall: $DESTDIR$manifest does not exist" >&2
        exit 1
    fi
    while read -r kind path; do
        case "$kind" in
            file) rm -f "$DESTDIR$path" ;;
            dir) dirs+=("$path") ;;
        esac
    done < "$DESTDIR$manifest"
    rm -rf -- "$DESTDIR$pkglibdir"
    # Created directories, children before parents; one that now holds someone else's file stays.
    local i
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        [ "${dirs[i]}" = "$pkglibdir" ] && continue
        rmdir "$DESTDIR${dirs[i]}" 2>/dev/null || true
    done
    say "removed scaf from ${DESTDIR}${prefix}"
}

case "${1:-}" in
    install) do_install ;;
    uninstall) do_uninstall ;;
    *) echo "usage: tools/install.sh install|uninstall (run through make)" >&2; exit 2 ;;
esac
