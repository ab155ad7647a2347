#!/usr/bin/env bash
# Runs the wrapper's Windows programs and test binaries under Debian's Wine, with the
# workarounds of Wine 8 that docs/webwrapper.md ("Under Wine") explains:
#
#   scripts/wine.sh prefix DIR     makes a Wine prefix in DIR (an empty or missing folder):
#                                  wineboot, then bcryptprimitives.dll (scripts/wine/) in
#                                  its system32, which Go 1.22+ needs at start; leaves its
#                                  wineserver running, one for every later command, until
#                                  `WINEPREFIX=DIR wineserver -k`
#   scripts/wine.sh exec PROG ARGS runs PROG under wine in $WINEPREFIX; what `go test
#                                  -exec` calls
#
# WINEDEBUG=-all keeps Wine's own diagnostics out of the test output; mscoree and mshtml
# are turned off so that wineboot never offers to download Mono or Gecko (no network).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="

case "${1:-}" in
prefix)
	dir="$2"
	mkdir -p "$dir"
	export WINEPREFIX="$dir"
	wineboot -i >/dev/null 2>&1
	# One persistent wineserver for everything after, instead of one per command.
	# Its output goes nowhere: it outlives this script, and a caller that reads this
	# script's output through a pipe would wait for it forever.
	wineserver -w
	wineserver -p </dev/null >/dev/null 2>&1
	x86_64-w64-mingw32-gcc -O2 -shared -o "$dir/drive_c/windows/system32/bcryptprimitives.dll" \
		"$here/wine/bcryptprimitives.c" "$here/wine/bcryptprimitives.def" -ladvapi32
	# The Windows tests read dates in the user's culture: Norwegian's dd.MM.yyyy, set as a
	# user's own change of the short date format (internal/wintest.TestShortDate).
	wine reg add 'HKCU\Control Panel\International' /v sShortDate /d dd.MM.yyyy /f >/dev/null 2>&1
	# Wine's services keep a first program's output open ("Test I/O incomplete" in go
	# test): start them now, once.
	wine cmd /c exit >/dev/null 2>&1 || true
	;;
exec)
	shift
	: "${WINEPREFIX:?WINEPREFIX must name a prefix made by scripts/wine.sh prefix}"
	exec wine "$@"
	;;
*)
	echo "usage: scripts/wine.sh prefix DIR | exec PROGRAM [ARGS...]" >&2
	exit 2
	;;
esac
