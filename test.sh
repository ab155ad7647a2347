#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, vet, the linter, the race detector over
# every package (unit, integration with a real Caddy, real redis-server processes, the app
# service on SQLite and PostgreSQL, a real headless Chromium). The fuzz targets' seeds and
# committed corpora run as ordinary tests; the open-ended search is a separate script, never
# part of this gate (SECURITY.md, "Native fuzz targets"). The whole go test output is kept
# in integration/artifacts/go-test.log.
set -euo pipefail
cd "$(dirname "$0")"

scripts/test-deps.sh

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi

echo "== go vet"
go vet ./...

# The desktop wrapper ships for Windows too, where nothing here can run it: vet it, build its
# test binaries and its programs for Windows, so that at least every Windows-only file compiles.
echo "== windows: vet and build the wrapper"
win="$(mktemp -d)"
CGO_ENABLED=0 GOOS=windows go vet ./webwrapper/... ./cmd/svcpipe/ ./cmd/webwrapper/
for pkg in $(go list ./webwrapper/... ./cmd/svcpipe/ ./cmd/webwrapper/); do
	CGO_ENABLED=0 GOOS=windows go test -c -o "$win/" "$pkg"
done
CGO_ENABLED=0 GOOS=windows go build -o "$win/" ./cmd/svcpipe/ ./cmd/webwrapper/
rm -rf "$win"

if [ -x scripts/lint.sh ]; then
	echo "== lint"
	scripts/lint.sh
fi

# The README's build step, to prove xcaddy.sh works; into a temporary folder, so that the
# tree stays clean (the integration tests build their own race-enabled caddy).
echo "== build caddy with xcaddy.sh"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
./xcaddy.sh "$build/caddy" >/dev/null

echo "== go test -race"
catalogue=integration/artifacts/attack-catalogue.txt # written by integration/attack's TestCatalogue
rm -f "$catalogue"
mkdir -p integration/artifacts
go test -race -timeout 40m -count=1 ./... 2>&1 | tee integration/artifacts/go-test.log | grep -vE '^(=== RUN|=== PAUSE|=== CONT|--- PASS)' || { echo "go test failed"; exit 1; }

echo "== attack catalogue"
cat "$catalogue"

echo "== all tests passed"
