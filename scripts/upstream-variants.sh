#!/usr/bin/env bash
# Builds throw-away Caddy binaries of this checkout with the upstream changes that
# docs/performance.md ("What upstream changes would give") proposes, to measure what each
# would buy against the build as it is:
#
#   go-rsa  Go's crypto/rsa keeps a public key's prepared modulus (bench/upstream/go-rsa-modulus-cache.diff,
#           applied to a copy of GOROOT)
#   lazy    Caddy's reverse_proxy builds its per-request logger with zap's WithLazy
#           (bench/upstream/caddy-reverseproxy-withlazy.diff, applied to a copy of the
#           pinned Caddy module)
#   both    the two together
#
#   scripts/upstream-variants.sh OUTDIR     writes OUTDIR/caddy-{go-rsa,lazy,both}
#
# then, for example:
#
#   ./xcaddy.sh /tmp/caddy-main
#   go run ./bench/cmd/loadbench suite -caddy OUTDIR/caddy-both -compare /tmp/caddy-main -operator -duration 6s -rounds 3
#
# A measurement, not a product: nothing of it is shipped, and the repository's builds never
# use these patches. Needs only the Go toolchain and the module cache.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: scripts/upstream-variants.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

caddy_version=$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)
caddy_dir=$(go list -m -f '{{.Dir}}' github.com/caddyserver/caddy/v2)
cp -r "$caddy_dir" "$work/caddy" && chmod -R u+w "$work/caddy"
patch -s -p1 -d "$work/caddy" <bench/upstream/caddy-reverseproxy-withlazy.diff
cp -a "$(go env GOROOT)" "$work/goroot"
patch -s -p1 -d "$work/goroot" <bench/upstream/go-rsa-modulus-cache.diff

# build GOROOT OUTPUT [go mod edit flags]: xcaddy.sh's throw-away main module, with more replaces.
build() {
	local goroot=$1 output=$2
	shift 2
	local main="$work/main-$(basename "$output")"
	mkdir "$main"
	cp cmd/caddy/main.go go.sum "$main/"
	sed "s#^module .*#module caddy#" go.mod >"$main/go.mod"
	(
		cd "$main"
		go mod edit -require="$(cd "$root" && go list -m)@v0.0.0-00010101000000-000000000000" -replace="$(cd "$root" && go list -m)=$root" "$@"
		GOROOT=$goroot PATH="$goroot/bin:$PATH" GOFLAGS=-mod=mod go build -o "$output" .
	)
	echo "$output"
}
echo "upstream-variants: Caddy $caddy_version, $(go version)" >&2
build "$work/goroot" "$out/caddy-go-rsa"
build "$(go env GOROOT)" "$out/caddy-lazy" -replace="github.com/caddyserver/caddy/v2=$work/caddy"
build "$work/goroot" "$out/caddy-both" -replace="github.com/caddyserver/caddy/v2=$work/caddy"
