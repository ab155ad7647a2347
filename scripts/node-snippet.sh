#!/usr/bin/env bash
# Runs a Node.js example of the partner guide (docs/examples/node) with the node on PATH.
# jose 6 uses the Web Crypto global (globalThis.crypto): built in from Node 19, behind
# --experimental-global-webcrypto on Node 18 (Debian bookworm's nodejs); older Node has no
# usable Web Crypto at all.
set -euo pipefail
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
	echo "node-snippet: Node.js $(node --version) is too old for jose 6: install Node.js 18 or later" >&2
	exit 1
fi
flags=()
if [ "$major" -lt 19 ]; then
	flags=(--experimental-global-webcrypto)
fi
exec node "${flags[@]}" "$@"
