#!/usr/bin/env bash
# staticcheck at a pinned version (installed into the Go bin folder on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.7.0
bin="$(go env GOPATH)/bin/staticcheck"
if ! "$bin" -version 2>/dev/null | grep -q "${version#v}"; then
	(cd "$(mktemp -d)" && go install "honnef.co/go/tools/cmd/staticcheck@$version")
fi
"$bin" ./...   # checks chosen in staticcheck.conf
