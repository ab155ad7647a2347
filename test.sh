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

# The desktop wrapper ships for Windows too: vet its packages for Windows, then run their
# Windows test binaries as Windows programs under Wine (scripts/wine.sh: a prefix of our
# own, go test -exec). Engine tests that open a browser window cannot run there (Wine
# cannot start Linux chromium for a Windows program; docs/webwrapper.md, "Under Wine"):
# they run on Linux below. The program and its MSI are built and installed under Wine by
# integration/msi in the go test run.
echo "== windows: vet the wrapper, run its tests under wine"
CGO_ENABLED=0 GOOS=windows go vet ./webwrapper/... ./cmd/svcpipe/ ./cmd/webwrapper/ ./internal/wintest/
# The window calls (webwrapper/engine's TestNativeWindow: hide, show, to the front) and the
# message boxes (webwrapper/alert, cmd/webwrapper) need a display under Wine: a private
# Xvfb for this step, started before the prefix, whose desktop process (explorer, started by
# wineboot) takes the display it is started with for every later window: a prefix made
# without one gives every window Wine's null driver ("no driver could be loaded").
exec 9< <(Xvfb -displayfd 1 -screen 0 1024x768x24 -nolisten tcp 2>/dev/null & echo "pid $!")
read -r winxvfb <&9; read -r winxdisplay <&9
winxvfb=${winxvfb#pid }
winprefix="$(mktemp -d)"
DISPLAY=":$winxdisplay" scripts/wine.sh prefix "$winprefix"
set +e
DISPLAY=":$winxdisplay" WINEPREFIX="$winprefix" CGO_ENABLED=0 GOOS=windows go test -count=1 -p 1 -exec "$PWD/scripts/wine.sh exec" \
	-skip '^TestChrome' ./webwrapper/... ./cmd/svcpipe/ ./cmd/webwrapper/ ./internal/wintest/ 2>&1 | grep -v 'no test files'
wine_status=${PIPESTATUS[0]}
set -e
WINEPREFIX="$winprefix" wineserver -k || true
WINEPREFIX="$winprefix" wineserver -w || true
kill "$winxvfb" 2>/dev/null || true
exec 9<&-
rm -rf "$winprefix"
if [ "$wine_status" -ne 0 ]; then echo "windows tests under wine failed"; exit 1; fi

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
