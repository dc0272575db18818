#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The bash completion, as bash calls it: the script is sourced, COMP_WORDS and
# COMP_CWORD are set to a command line, _ptsguard runs and COMPREPLY is
# compared with what the real program says: its commands (--help), each
# command's getopt table (src/cli/cmd-*.c), its catalog as JSON, files in a
# scratch directory.
#
#   bash-completion.sh PTSGUARD COMPLETION-SCRIPT SOURCE-ROOT
set -uo pipefail

PTSGUARD=$1
SOURCE_ROOT=$3
# Options kept out of --help on purpose (test hooks): never offered.
HIDDEN='--pause-before-act'
# shellcheck source=/dev/null
source "$2" || exit 1

FAILS=0
PASSES=0
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# complete WORD... : the reply for the command line WORDS, the last word being
# the one under the cursor; printed sorted, one per line.
complete_line()
{
	COMP_WORDS=("$PTSGUARD" "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_ptsguard
	printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort
}

sorted()
{
	printf '%s\n' "$@" | sed '/^$/d' | sort
}

expect()
{
	local what=$1 got=$2 want=$3
	if [[ "$got" == "$want" ]]; then
		echo "ok: $what"
		PASSES=$((PASSES + 1))
	else
		echo "FAIL: $what"
		echo "  want: $(echo "$want" | tr '\n' ' ')"
		echo "  got:  $(echo "$got" | tr '\n' ' ')"
		FAILS=$((FAILS + 1))
	fi
}

# The commands, from the usage of ptsguard --help (two spaces, then the name).
mapfile -t commands < <("$PTSGUARD" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
((${#commands[@]} >= 7)) || { echo "FAIL: could not read the commands from ptsguard --help"; exit 1; }
expect "ptsguard <TAB>: every command and --help, --version" \
	"$(complete_line '')" "$(sorted "${commands[@]}" --help --version)"
expect "ptsguard au<TAB>" "$(complete_line au)" "audit"

# Each command's options, as its getopt_long table in src/cli/cmd-*.c lists them.
for cmd in "${commands[@]}"; do
	[[ $cmd == explain ]] && continue
	src=$SOURCE_ROOT/src/cli/cmd-${cmd%-record}.c
	want=$(sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)", *[a-z_]*_argument.*/--\1/p' "$src" | grep -vxF -- "$HIDDEN" | sort -u)
	# The options several commands share come from macros of src/cli/cli.h (FORMAT_OPTIONS,
	# COLOR_OPTIONS).
	for macro in $(sed -n 's/^[[:space:]]*\([A-Z_]*_OPTIONS\),.*/\1/p' "$src"); do
		shared=$(sed -n "/^#define $macro/,/[^\\\\]\$/p" "$SOURCE_ROOT/src/cli/cli.h" | grep -o '"[a-z][a-z-]*"' | tr -d '"' | sed 's/^/--/')
		[[ -n $shared ]] || { echo "FAIL: no options in $macro of src/cli/cli.h"; exit 1; }
		want=$(sorted $want $shared | sort -u)
	done
	[[ -n $want ]] || { echo "FAIL: no option table in $src"; exit 1; }
	expect "ptsguard $cmd --<TAB>: the options of $(basename "$src")" "$(complete_line "$cmd" --)" "$want"
done

# Option values.
expect "audit --format <TAB>" "$(complete_line audit --format '')" "$(sorted text json prometheus plugin)"
expect "checks --format=<TAB> (three words)" "$(complete_line checks --format = '')" "$(sorted text json)"
expect "repair --format=j<TAB>" "$(complete_line repair --format = j)" "json"
expect "audit --min-severity w<TAB>" "$(complete_line audit --min-severity w)" "warning"
expect "audit --color=<TAB> (three words)" "$(complete_line audit --color = '')" "$(sorted auto always never)"
expect "repair --color=a<TAB>" "$(complete_line repair --color = a)" "$(sorted auto always)"
expect "audit --color <TAB>: no value (it takes one only after =)" "$(complete_line audit --color '' | grep -cx -e auto -e always -e never)" 0

# Check ids come from the binary's catalog.
ids=$("$PTSGUARD" checks --format json | python3 -c 'import json, sys; print("\n".join(sorted(c["id"] for c in json.load(sys.stdin))))')
[[ -n "$ids" ]] || { echo "FAIL: no check ids from ptsguard checks --format json"; exit 1; }
expect "repair --check <TAB>: every check id" "$(complete_line repair --dry-run --check '')" "$ids"
expect "explain devpts-<TAB>" "$(complete_line explain devpts-)" "$(grep '^devpts-' <<<"$ids")"
# explain takes several ids: after one, the ids again (and its options).
expect "explain ID <TAB>: more ids" "$(complete_line explain ptmx-mode '')" "$(printf '%s\n' --help --json $ids | sort)"

# PIDs for --namespace: this shell's is among them, and a prefix narrows them.
pids=$(complete_line audit --namespace '')
grep -qx "$$" <<<"$pids" && got=yes || got=no
expect "audit --namespace <TAB>: the PIDs in /proc, this shell's among them" "$got" yes
expect "repair --namespace $$<TAB>: PIDs starting so" \
	"$(complete_line repair --namespace "$$" | grep -vx "$$" | grep -v "^$$" | wc -l)" 0
# --mntns: nothing offered (the id must be the one listed, not the one the PID has now).
expect "repair --namespace PID --mntns <TAB>: nothing" "$(complete_line repair --namespace "$$" --mntns '')" ""
expect "repair --namespace PID --target <TAB>: nothing" "$(complete_line repair --namespace "$$" --target '')" ""

# Files and directories.
mkdir "$SCRATCH/snapdir"
touch "$SCRATCH/snap.json" "$SCRATCH/other"
expect "audit --snapshot DIR/sna<TAB>: files" "$(complete_line audit --snapshot "$SCRATCH/sna")" \
	"$(sorted "$SCRATCH/snap.json" "$SCRATCH/snapdir")"
expect "daemon --config DIR/o<TAB>" "$(complete_line daemon --config "$SCRATCH/o")" "$SCRATCH/other"
expect "snapshot --output=DIR/snap.<TAB>" "$(complete_line snapshot --output = "$SCRATCH/snap.")" "$SCRATCH/snap.json"
expect "initramfs-record --newroot DIR/sna<TAB>: directories only" \
	"$(complete_line initramfs-record --newroot "$SCRATCH/sna")" "$SCRATCH/snapdir"

echo "$PASSES passed, $FAILS failed"
((FAILS == 0))
