#!/usr/bin/zsh -f
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The zsh completion parses, and compinit binds it to ptsguard from its
# directory on fpath (its #compdef line), as it will from site-functions.
#
#   zsh-completion.zsh COMPLETION-DIR
zsh -n $1/_ptsguard || { print "FAIL: _ptsguard does not parse"; exit 1 }
fpath=($1 $fpath)
autoload -Uz compinit
compinit -u -D
if [[ $_comps[ptsguard] == _ptsguard ]]; then
	print "ok: compinit binds _ptsguard to ptsguard"
else
	print "FAIL: compinit does not bind _ptsguard to ptsguard (got '$_comps[ptsguard]')"
	exit 1
fi
