#!/usr/bin/env bash
# The whole-gateway load benchmark (docs/performance.md): builds ./caddy and the suite,
# then in one invocation measures Caddy with reverse_proxy alone (a), with jwt_partner and
# the memory nonce store (b), with the Redis store (c), and b under an unknown-kid flood
# (d, and e the flood alone), and under the same flood answered by a fixed 401 that
# verifies nothing (f and g, the floor), and prints requests/s, p50/p99, errors and the
# ratios. The load is Debian's wrk with bench/wrk/partner.lua, which sends each pre-minted
# token once.
#
#   scripts/loadbench.sh [duration] [loadbench suite flags...]
#
# With -operator it runs the configuration of issue 19's outside measurement instead (a and
# b only, jwks_file, one wrk with 32 connections, an upstream that drains the body and
# answers 35 bytes of text, tokens with ten short payload fields; docs/performance.md,
# Against the leanest baseline).
#
# duration is each phase's measured window in whole seconds (default 10s). Caddy is pinned
# to CPU 1 and wrk, the upstream and Redis to CPU 0 with taskset (the Go processes with
# GOMAXPROCS=1). All traffic stays on loopback; every process it starts is stopped when it
# ends. It is a measurement, not a test: ./test.sh does not run it. It takes about
# (duration + 6s) x 7 per round plus the time to mint the tokens (an RSA signature each, on every
# core) and to profile.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-10s}
shift || true

missing=()
command -v taskset >/dev/null 2>&1 || missing+=("taskset (Debian package util-linux)")
command -v redis-server >/dev/null 2>&1 || missing+=("redis-server (Debian package redis-server)")
command -v wrk >/dev/null 2>&1 || missing+=("wrk (Debian package wrk)")
command -v go >/dev/null 2>&1 || missing+=("go")
if [ ${#missing[@]} -gt 0 ]; then
	echo "loadbench: missing ${missing[*]}; install and run again" >&2
	exit 1
fi
if [ "$(nproc)" -lt 2 ]; then
	echo "loadbench: needs 2 CPUs (Caddy on one, wrk on the other); this machine has $(nproc)" >&2
	exit 1
fi

./xcaddy.sh >/dev/null
bin=$(mktemp -d "${TMPDIR:-/tmp}/loadbench-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
# A private copy, so that a rebuild of ./caddy during the run does not change what is measured.
cp ./caddy "$bin/caddy"
go build -o "$bin/loadbench" ./bench/cmd/loadbench
"$bin/loadbench" suite -caddy "$bin/caddy" -duration "$duration" "$@"
