#!/bin/sh
# tools/man/build.sh — `make man`: the manual pages, generated from the programs' own --help texts (help2man) and docs/settings.md (lowdown), into $BUILD/man.
#
# One source each, so page and program cannot drift: scaf(1) and one scaf-COMMAND(1) per subcommand
# from `scaf [COMMAND] --help`, scafd(8) from `scafd --help`, scaf-settings(7) from docs/settings.md.
set -eu
: "${BUILD:?}" "${VPY:?}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
out="$BUILD/man"
for tool in help2man lowdown; do
    command -v "$tool" >/dev/null || { echo "make man: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done
rm -rf "$out" && mkdir -p "$out/bin"
# help2man dates each page; the last commit's date keeps rebuilt pages identical.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)"
    export SOURCE_DATE_EPOCH
fi
export SCAF_MAN_SCAF="$BUILD/bin/scaf" SCAF_MAN_SCAFD="$BUILD/bin/scafd"
version="$(PYTHONPATH="$src/python" "$VPY" -c 'import scaf; print(scaf.__version__)')"

page() { # page NAME SECTION DESCRIPTION
    ln -sf "$src/tools/man/help-text" "$out/bin/$1"
    help2man --no-info --section="$2" --name="$3" --version-string="$version" \
        --include="$src/tools/man/see-also.h2m" "$out/bin/$1" > "$out/$1.$2"
}

page scaf 1 "space-share the CPUs among OpenMP programs"
# Each subcommand the parser has, with the one-line help `scaf --help` shows for it.
PYTHONPATH="$src/python" "$VPY" - <<'EOF' > "$out/commands"
import argparse
from scaf import cli
for action in cli.build_parser()._actions:
    if isinstance(action, argparse._SubParsersAction):
        for choice in action._choices_actions:
            print(f"{choice.dest}\t{choice.help}")
EOF
while IFS="	" read -r name what; do
    page "scaf-$name" 1 "$what"
done < "$out/commands"
page scafd 8 "the scaf daemon: gives each OpenMP program on the machine its share of the CPUs"

"$src/tools/man/settings-md" "$src/docs/settings.md" |
    lowdown -s -Tman -M title=scaf-settings -M section=7 -M source="scaf $version" \
        -M date="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" > "$out/scaf-settings.7"
rm -rf "$out/bin" "$out/commands"
echo "manual pages in $out: $(cd "$out" && ls | tr '\n' ' ')"
