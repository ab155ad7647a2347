#!/usr/bin/env bash
# staticcheck at a pinned version (installed into the Go bin folder on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.7.0
bin="$(go env GOPATH)/bin/staticcheck"
if ! "$bin" -version 2>/dev/null | grep -q "${version#v}"; then
	tmp=$(mktemp -d)
	(cd "$tmp" && go install "honnef.co/go/tools/cmd/staticcheck@$version")
	rm -rf "$tmp"
fi
"$bin" ./...   # checks chosen in staticcheck.conf
