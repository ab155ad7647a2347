#!/usr/bin/env bash
# Builds ./caddy with partnergate's modules at the pinned Caddy version, the way xcaddy does:
# a throw-away main module (cmd/caddy's main.go) that requires this repository at its
# version and replaces it with this checkout. Going through a separate main module is what
# makes `caddy list-modules --versions` show the module's version: Caddy looks a module's
# version up among the build's dependencies, never in the main module, so a plain
# `go build ./cmd/caddy` here lists the modules without one.
#
#   ./xcaddy.sh [OUTPUT]        default ./caddy
#
# The version is PARTNERGATE_VERSION when set (a semver tag such as v1.2.0, or a Go
# pseudo-version); else the checkout's tag when HEAD carries one (vX.Y.Z); else a Go
# pseudo-version of HEAD (v0.0.0-<commit time>-<commit>, or vX.Y.(Z+1)-0.<time>-<commit>
# after the last tag); else, outside a git checkout (a container build without .git),
# v0.0.0-00010101000000-000000000000, Go's zero pseudo-version, meaning "unknown". A
# major version of 2 or more would need the module path …/v2 (Go's rule), so tags stay
# v0.x or v1.x. Uncommitted changes are not part of a Go version: the script warns.
# Only the module cache is needed: the main module takes this repository's go.mod and go.sum.
set -euo pipefail
cd "$(dirname "$0")"
root=$(pwd)
out=${1:-./caddy}
case "$out" in /*) ;; *) out="$root/$out" ;; esac
module=$(go list -m)
caddy_version=$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)

version=${PARTNERGATE_VERSION:-}
if [ -z "$version" ] && git rev-parse --git-dir >/dev/null 2>&1; then
	tag_pattern='v[0-9]*.[0-9]*.[0-9]*'
	if tag=$(git describe --tags --exact-match --match "$tag_pattern" HEAD 2>/dev/null); then
		version=$tag
	else
		stamp=$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)
		commit=$(git rev-parse --short=12 HEAD)
		if last=$(git describe --tags --abbrev=0 --match "$tag_pattern" HEAD 2>/dev/null); then
			IFS=. read -r major minor patch <<<"${last%%-*}"
			version="$major.$minor.$((${patch%%+*} + 1))-0.$stamp-$commit"
		else
			version="v0.0.0-$stamp-$commit"
		fi
	fi
	[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] ||
		echo "xcaddy.sh: the checkout has uncommitted changes: the binary says $version but includes them" >&2
fi
version=${version:-v0.0.0-00010101000000-000000000000}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp cmd/caddy/main.go "$work/main.go"
# The profile-guided optimisation profile of the main package (docs/performance.md, "The
# profile-guided build"): go build uses a main package's default.pgo.
[ ! -f cmd/caddy/default.pgo ] || cp cmd/caddy/default.pgo "$work/default.pgo"
cp go.sum "$work/go.sum"
# This repository's requirements, so that the build resolves every dependency at the
# version the tests ran with, and no download but what the module cache lacks.
sed "s#^module .*#module caddy#" go.mod >"$work/go.mod"
(
	cd "$work"
	go mod edit -require="$module@$version" -replace="$module=$root"
	echo "xcaddy.sh: building Caddy $caddy_version with $module $version" >&2
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" go build -o "$out" .
)
echo "$out"
