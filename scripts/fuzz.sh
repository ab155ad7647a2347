#!/usr/bin/env bash
# Runs every native fuzz target of the module for a bounded time each (default 10s; the
# first argument overrides it, e.g. `scripts/fuzz.sh 10m` for a long run). A crash fails the
# run and leaves its input under the package's testdata/fuzz, where it becomes a regression
# test of the ordinary `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
status=0
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	echo "fuzz $pkg $name ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/partnergate-fuzz.log 2>&1; then
		tail -30 /tmp/partnergate-fuzz.log
		status=1
	fi
done < <(git grep -E -o '^func (Fuzz[A-Za-z0-9_]+)' -- '*_test.go' | sed -E 's/func //' | sort -u)
exit $status
