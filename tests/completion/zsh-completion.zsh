#!/usr/bin/zsh -f
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The zsh completion, driven the way a user drives it: an interactive zsh in a
# pseudo-terminal (zsh/zpty) with compinit and the completion directory on
# fpath is sent a command line and a TAB; compadd is wrapped to print every
# match offered. The matches are compared with what the real program says:
# its commands (--help), each command's getopt table (src/cli/cmd-*.c), its
# catalog as JSON, files in a scratch directory.
#
#   zsh-completion.zsh PTSGUARD COMPLETION-DIR SOURCE-ROOT
emulate -L zsh
setopt err_return no_unset pipe_fail

PTSGUARD=$1 COMPDIR=$2 SOURCE_ROOT=$3
HIDDEN=(--pause-before-act)
integer passes=0 fails=0
SCRATCH=$(mktemp -d)
trap 'zpty -d z 2>/dev/null; rm -rf $SCRATCH' EXIT

zsh -n $COMPDIR/_ptsguard || { print "FAIL: _ptsguard does not parse"; exit 1 }

# What the shell in the pty runs first: the build's ptsguard first on PATH,
# compinit, no grouping or menus, and TAB completes with compadd reporting each
# match between two marker lines instead of inserting anything.
cat >$SCRATCH/setup.zsh <<EOF
PS1='' PROMPT='' RPROMPT='' PROMPT_EOL_MARK=''
unsetopt zle_bracketed_paste 2>/dev/null
path=(${PTSGUARD:h} \$path)
fpath=($COMPDIR \$fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
zstyle ':completion:*' menu no
comp_begin() { print -r -- '<<BEGIN>>' }
comp_end() { compstate[insert]=''; compstate[list]=''; print -r -- '<<END>>' }
# zsh empties these two arrays after each completion: set them for every TAB.
complete_and_report() {
	compprefuncs=(comp_begin)
	comppostfuncs=(comp_end)
	zle complete-word
}
zle -N complete_and_report
bindkey '^I' complete_and_report
compadd() {
	# Calls that only collect matches into arrays are not offers.
	if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
		builtin compadd "\$@"
		return
	fi
	local -a hits
	local -A opts
	zparseopts -E -A opts P: p: S: s: i: I: W:
	builtin compadd -A hits "\$@"
	local h
	for h in \$hits; do
		print -r -- "<<M>>\${opts[-p]-}\$h"
	done
	builtin compadd "\$@"
}
EOF

zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "source ${(q)SCRATCH}/setup.zsh"

# complete_line LINE: the matches offered for LINE with the cursor at its end,
# sorted, one per line. The line is then cleared for the next one.
complete_line() {
	local out chunk
	zpty -n -w z "$1"$'\t'
	out=
	while zpty -r z chunk; do
		out+=$chunk
		[[ $out == *'<<END>>'* ]] && break
	done
	zpty -n -w z $'\C-u'
	out=${out#*'<<BEGIN>>'}
	out=${out%%'<<END>>'*}
	print -rl -- ${(o)${(u)${(M)${(f)out//$'\r'/}:#'<<M>>'*}#'<<M>>'}}
}

sorted() { print -rl -- ${(ou)@:#} }

expect() {
	local what=$1 got=$2 want=$3
	if [[ $got == $want ]]; then
		print -r -- "ok: $what"
		passes+=1
	else
		print -r -- "FAIL: $what"
		print -r -- "  want: ${(f)want}"
		print -r -- "  got:  ${(f)got}"
		fails+=1
	fi
}

# The commands, from the usage of ptsguard --help (two spaces, then the name).
cmds=(${(f)"$($PTSGUARD --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')"})
(( $#cmds >= 7 )) || { print "FAIL: could not read the commands from ptsguard --help"; exit 1 }
expect "ptsguard <TAB>: every command" "$(complete_line 'ptsguard ')" "$(sorted $cmds)"
expect "ptsguard au<TAB>" "$(complete_line 'ptsguard au')" audit
expect "ptsguard -<TAB>" "$(complete_line 'ptsguard --')" "$(sorted --help --version)"

# Each command's options, as its getopt_long table in src/cli/cmd-*.c lists them.
# The options several commands share come from macros of src/cli/cli.h (FORMAT_OPTIONS,
# COLOR_OPTIONS).
shared_options() {
	sed -n "/^#define $1/,/[^\\\\]\$/p" $SOURCE_ROOT/src/cli/cli.h |
		grep -o '"[a-z][a-z-]*"' | tr -d '"' | sed 's/^/--/'
}
for cmd in $cmds; do
	[[ $cmd == explain ]] && continue
	src=$SOURCE_ROOT/src/cli/cmd-${cmd%-record}.c
	want=(${(f)"$(sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)", *[a-z_]*_argument.*/--\1/p' $src)"})
	for macro in ${(f)"$(sed -n 's/^[[:space:]]*\([A-Z_]*_OPTIONS\),.*/\1/p' $src)"}; do
		shared=(${(f)"$(shared_options $macro)"})
		(( $#shared )) || { print "FAIL: no options in $macro of src/cli/cli.h"; exit 1 }
		want+=($shared)
	done
	want=(${want:|HIDDEN})
	(( $#want )) || { print "FAIL: no option table in $src"; exit 1 }
	expect "ptsguard $cmd --<TAB>: the options of ${src:t}" \
		"$(complete_line "ptsguard $cmd --")" "$(sorted $want)"
done

# Option values.
expect "audit --format=<TAB>" "$(complete_line 'ptsguard audit --format=')" "$(sorted text json prometheus plugin)"
expect "checks --format=<TAB>" "$(complete_line 'ptsguard checks --format=')" "$(sorted text json)"
expect "audit --min-severity=w<TAB>" "$(complete_line 'ptsguard audit --min-severity=w')" warning
expect "repair --color=<TAB>" "$(complete_line 'ptsguard repair --color=')" "$(sorted auto always never)"

# Check ids come from the binary's catalog.
ids=$($PTSGUARD checks --format json | python3 -c 'import json, sys; print("\n".join(sorted(c["id"] for c in json.load(sys.stdin))))')
[[ -n $ids ]] || { print "FAIL: no check ids from ptsguard checks --format json"; exit 1 }
expect "explain <TAB>: every check id" "$(complete_line 'ptsguard explain ')" "$ids"
expect "repair --check=devpts-<TAB>" "$(complete_line 'ptsguard repair --check=devpts-')" \
	"$(print -rl -- ${(M)${(f)ids}:#devpts-*})"

# PIDs for --namespace (zsh's _pids): this shell's is among them.
pids=$(complete_line 'ptsguard audit --namespace=')
pid_list=(${(f)pids})
(( ${pid_list[(Ie)$$]} )) && got=yes || got=no
expect "audit --namespace=<TAB>: every PID in /proc, this shell's among them" $got yes
# --mntns: nothing offered (the id must be the one listed, not the one the PID has now).
expect "repair --namespace=PID --mntns=<TAB>: nothing" "$(complete_line "ptsguard repair --namespace=$$ --mntns=")" ""
expect "repair --namespace=PID --target=<TAB>: nothing" "$(complete_line "ptsguard repair --namespace=$$ --target=")" ""

# Files and directories.
mkdir $SCRATCH/snapdir
touch $SCRATCH/snap.json $SCRATCH/other
expect "audit --snapshot=DIR/sna<TAB>: files" "$(complete_line "ptsguard audit --snapshot=$SCRATCH/sna")" \
	"$(sorted $SCRATCH/snap.json $SCRATCH/snapdir)"
expect "initramfs-record --newroot=DIR/sna<TAB>: directories only" \
	"$(complete_line "ptsguard initramfs-record --newroot=$SCRATCH/sna")" $SCRATCH/snapdir

print "$passes passed, $fails failed"
(( fails == 0 ))
