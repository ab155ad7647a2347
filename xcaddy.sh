#!/usr/bin/env bash
# Builds ./caddy with partnergate's modules at the pinned Caddy version: with xcaddy where it
# is installed, else from the main package in cmd/caddy (the one xcaddy would generate).
# Both give the same module set. Extra arguments go to the output path (default ./caddy).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-./caddy}
caddy_version=$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)
module=$(go list -m)
if command -v xcaddy >/dev/null 2>&1; then
	echo "xcaddy.sh: building with xcaddy, Caddy $caddy_version" >&2
	xcaddy build "$caddy_version" --output "$out" \
		--with "$module/caddymodule" --replace "$module=."
else
	echo "xcaddy.sh: xcaddy not installed; building cmd/caddy with go build, Caddy $caddy_version" >&2
	go build -o "$out" ./cmd/caddy
fi
echo "$out"
