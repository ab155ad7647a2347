#!/usr/bin/env bash
# Regenerates cmd/caddy/default.pgo, the CPU profile that go build uses for a profile-guided
# build of Caddy with partnergate's modules (go.dev/doc/pgo; docs/performance.md,
# "Profile-guided build"). It builds Caddy without a profile, runs the load benchmark's
# whole suite once with a CPU profile of each phase: a (reverse_proxy alone), b (the memory
# store), c (Redis), d and e (an unknown-kid flood: refusals), f (the floor's flood), and
# merges them into one profile, so that the build is not fitted to one path. Then compare
# the builds side by side:
#
#   scripts/pgo.sh                # writes cmd/caddy/default.pgo (about 20 minutes)
#   GOFLAGS=-pgo=off ./xcaddy.sh /tmp/caddy-nopgo && ./xcaddy.sh /tmp/caddy-pgo
#   go run ./bench/cmd/loadbench suite -operator -caddy /tmp/caddy-pgo -compare /tmp/caddy-nopgo
#
# A measurement, not a test: ./test.sh does not run it. Needs what scripts/loadbench.sh
# needs (wrk, redis-server, taskset, 2 CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT
GOFLAGS="${GOFLAGS:+$GOFLAGS }-pgo=off" ./xcaddy.sh "$work/caddy" >/dev/null
go build -o "$work/loadbench" ./bench/cmd/loadbench
"$work/loadbench" suite -caddy "$work/caddy" -rounds 1 -profile 15s -out "$work/out"
profiles=("$work"/out/profile-[a-f].pb.gz)
go tool pprof -proto "${profiles[@]}" >"$work/default.pgo"
mv "$work/default.pgo" cmd/caddy/default.pgo
echo "pgo.sh: wrote cmd/caddy/default.pgo from ${#profiles[@]} profiles"
