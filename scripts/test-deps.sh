#!/usr/bin/env bash
# Installs or checks every program the test suite needs beyond Go, so that a fresh machine
# runs ./test.sh with nothing done by hand. Debian packages need root (or sudo); when they
# cannot be installed, it says exactly what is missing and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The end-to-end suite's HTTPS lane makes the browser trust Caddy's local root in an NSS
# database of its own, with NSS's certutil.
command -v certutil >/dev/null 2>&1 || need_apt+=(libnss3-tools)
# The partner guide's Python example runs on Debian's python3 with PyJWT and cryptography.
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jwt, cryptography' 2>/dev/null || need_apt+=(python3 python3-jwt python3-cryptography)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
# The partner guide's keys without Go: its OpenSSL commands (docs/examples/keys.sh) run in the tests.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# wrk drives the load benchmark (scripts/loadbench.sh); bench/wrk's tests run its script.
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
# The case PDF's test reads the PDF back with pdftotext and keeps a PNG from pdftoppm.
command -v pdftotext >/dev/null 2>&1 && command -v pdftoppm >/dev/null 2>&1 || need_apt+=(poppler-utils)
# The desktop wrapper's engine shows a real --app window under Xvfb (with openbox as the
# window manager for the window-state tests).
command -v Xvfb >/dev/null 2>&1 || need_apt+=(xvfb)
command -v xauth >/dev/null 2>&1 || need_apt+=(xauth)
command -v openbox >/dev/null 2>&1 || need_apt+=(openbox)
# The wrapper's integration test reads the window's state (minimised, active) with xprop.
command -v xprop >/dev/null 2>&1 || need_apt+=(x11-utils)
# The wrapper tells a person why it cannot start with a desktop notification; its test
# reads what dunst, a notification daemon, showed (dunstctl) on a private session bus.
command -v dunst >/dev/null 2>&1 && command -v dunstctl >/dev/null 2>&1 || need_apt+=(dunst)
command -v dbus-daemon >/dev/null 2>&1 || need_apt+=(dbus)
command -v dbus-send >/dev/null 2>&1 || need_apt+=(dbus-bin)
# The desktop wrapper's Windows tests run under Wine (scripts/wine.sh), which needs a small
# DLL built with MinGW; its MSI is built with wixl and read with msiinfo (msitools).
command -v wine >/dev/null 2>&1 || need_apt+=(wine wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need_apt+=(gcc-mingw-w64-x86-64)
command -v wixl >/dev/null 2>&1 && command -v msiinfo >/dev/null 2>&1 || need_apt+=(wixl msitools)
# The app service's store tests start their own throwaway PostgreSQL cluster
# (internal/pgtest) from the server programs, which Debian keeps off PATH.
pg_bin() {
	local d
	for d in "$(dirname "$(command -v initdb || echo /nonexistent/initdb)")" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		if [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then echo "$d"; return; fi
	done
}
[ -n "$(pg_bin)" ] || need_apt+=(postgresql)

if [ ${#need_apt[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test-deps: installing Debian packages: ${need_apt[*]}"
	if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null; }; then
		echo "test-deps: could not install ${need_apt[*]}; install them (Debian package names) and run again" >&2
		exit 1
	fi
fi

# jose 6 needs Node 18 or later (18 with --experimental-global-webcrypto, which
# scripts/node-snippet.sh passes); Debian bookworm's nodejs is 18.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 18 ]; then
	echo "test-deps: Node.js $(node --version) is too old for the guide's jose snippet: install Node.js 18 or later" >&2
	exit 1
fi

# Node's jose for the partner guide's examples, pinned by the lock file.
if [ -f docs/examples/node/package.json ] && [ ! -d docs/examples/node/node_modules/jose ]; then
	(cd docs/examples/node && npm ci --no-audit --no-fund --silent)
fi
echo "test-deps: redis-server $(redis-server --version | awk '{print $3}'), $("$(pg_bin)/postgres" --version) (private clusters), node $(node --version), $(openssl version | awk '{print "OpenSSL " $2}'), $(chromium --version 2>/dev/null | head -1), $(pdftotext -v 2>&1 | head -1), Xvfb, openbox and xprop, $(wine --version 2>/dev/null), wixl $(wixl --version)"
