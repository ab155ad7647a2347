#!/usr/bin/env bash
# Regenerates cmd/caddy/default.pgo, the CPU profile that go build uses for a profile-guided
# build of Caddy with partnergate's modules (go.dev/doc/pgo; docs/performance.md, "The
# profile-guided build"). It builds Caddy without a profile and profiles the realistic mix
# (issue 29), so that the build is fitted to no single path:
#
#   1. the load benchmark's whole suite, RS256 main-client links: a (reverse_proxy alone),
#      b (the memory store), c (Redis), d and e (an unknown-kid flood: refusals), f (the
#      floor's flood);
#   2. b and c with PS256 and Go links (-alg PS256 -link go);
#   3. b and c with ES256 main-client links (-alg ES256);
#
# one round each with short phases (a profile needs no long measured window) and a CPU
# profile of each phase, and merges the ten profiles with go tool pprof -proto: the same
# weight for each. Runs 2 and 3 keep phase a, though its profile is left out of the merge:
# the suite sizes the token batches from a's rate, and without it would mint the most
# (-max-tokens) for each phase, minutes of RSA signatures. Each run's results, logs and
# profiles are kept in the folder the script prints. Then compare the builds side by side
# (A against a is the baseline's own gain):
#
#   scripts/pgo.sh                # writes cmd/caddy/default.pgo (about 15 minutes)
#   GOFLAGS=-pgo=off ./xcaddy.sh /tmp/caddy-nopgo && ./xcaddy.sh /tmp/caddy-pgo
#   go run ./bench/cmd/loadbench suite -operator -caddy /tmp/caddy-pgo -compare /tmp/caddy-nopgo
#
# Flags given to the script go to every suite run after its own (the last of a flag wins),
# e.g. scripts/pgo.sh -nice 10. A measurement, not a test: ./test.sh does not run it.
# Needs what scripts/loadbench.sh needs (wrk, redis-server, taskset, 2 CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT
kept=$(mktemp -d "${TMPDIR:-/tmp}/pgo-runs.XXXXXX")
GOFLAGS="${GOFLAGS:+$GOFLAGS }-pgo=off" ./xcaddy.sh "$work/caddy" >/dev/null
go build -o "$work/loadbench" ./bench/cmd/loadbench

extra=("$@")
# run NAME FLAGS...: one suite run of the mix into $kept/NAME.
run() {
	local name=$1
	shift
	echo "pgo.sh: profiling $name" >&2
	"$work/loadbench" suite -caddy "$work/caddy" -rounds 1 -warmup 1s -duration 5s -profile 15s \
		-out "$kept/$name" "$@" "${extra[@]}"
}
run rs256-main
run ps256-go -alg PS256 -link go -skip defg
run es256-main -alg ES256 -skip defg

profiles=("$kept"/rs256-main/profile-[a-f].pb.gz "$kept"/{ps256-go,es256-main}/profile-[bc].pb.gz)
go tool pprof -proto "${profiles[@]}" >"$work/default.pgo"
mv "$work/default.pgo" cmd/caddy/default.pgo
echo "pgo.sh: wrote cmd/caddy/default.pgo from ${#profiles[@]} profiles (each run's results in $kept)"
