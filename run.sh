#!/usr/bin/env bash
# The whole link flow on this machine, in one command: builds the gateway (./caddy with the
# jwt_partner module), the reference app service and the partner kit's command line,
# creates the demo partner's keys once, starts the app service (SQLite in ./data) behind the
# gateway (Caddyfile.example, memory nonce store) and prints what to do next. Ctrl-C stops
# both. Needs only Go.
#
#   ./run.sh           start and keep running
#   ./run.sh --check   start, walk the link flow from a partner's link to the member's
#                      plan, stop; exit status 0 when the whole flow works
#   ./run.sh --help    the flags and the variables that move its ports and data folder
#
# The work is cmd/demo's, a Go program (go run ./cmd/demo does the same from this folder):
# run.sh builds it into bin/demo and runs it here. This file stays a few lines of plain
# shell, so that it runs under any bash (macOS's 3.2 too).
set -eu
start_dir=$PWD
cd "$(dirname "$0")"

command -v go >/dev/null 2>&1 || {
	echo "run.sh: Go is not installed: see https://go.dev/doc/install" >&2
	exit 1
}

# A relative PARTNERGATE_CADDYFILE is taken from the folder run.sh was started in.
case "${PARTNERGATE_CADDYFILE:-}" in
"" | /*) ;;
*) export PARTNERGATE_CADDYFILE="$start_dir/$PARTNERGATE_CADDYFILE" ;;
esac

go build -o bin/demo ./cmd/demo
exec bin/demo "$@"
