#!/usr/bin/env bash
# Builds the desktop wrapper for Windows and its installer:
#
#   scripts/build-windows.sh OUTDIR [BUILD]
#
# OUTDIR/files/ gets Svc.Client.WebWrapper.exe (version 2.1.5.BUILD in its version
# resource and in `version`, the icon, a GUI program: no console window), its
# Svc.Client.WebWrapper.exe.config (deploy/windows/), the pipe client svcpipe.exe and
# LICENSES.txt (the licences of Go and of every module compiled in); OUTDIR gets the MSI
# SvcWebwrapper-2.1.5.BUILD.msi, built from deploy/windows/webwrapper.wxs with wixl
# (msitools). BUILD defaults to 0. The resources are made with go-winres, pinned in go.mod
# as a tool; its .syso file lives in cmd/webwrapper only during the build.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/build-windows.sh OUTDIR [BUILD]}"
build="${2:-0}"
case "$build" in '' | *[!0-9]*) echo "build-windows: BUILD must be a number" >&2; exit 2 ;; esac
version="2.1.5.$build"
files="$out/files"
mkdir -p "$files"

syso=cmd/webwrapper/rsrc_windows_amd64.syso
trap 'rm -f "$syso"' EXIT
(cd cmd/webwrapper && go tool go-winres make --in winres/winres.json --out rsrc --arch amd64 \
	--product-version "$version" --file-version "$version")
export CGO_ENABLED=0 GOOS=windows GOARCH=amd64
go build -ldflags "-X main.version=$version -H windowsgui" -o "$files/Svc.Client.WebWrapper.exe" ./cmd/webwrapper
rm -f "$syso"
go build -o "$files/svcpipe.exe" ./cmd/svcpipe
cp deploy/windows/Svc.Client.WebWrapper.exe.config "$files/"

# The licences of what the programs are made of: Go's own, then each module's.
{
	echo "Svc Webwrapper $version is built with Go and these modules; their licences follow."
	echo
	echo "==== Go $(go env GOVERSION) (the standard library and runtime)"
	cat "$(go env GOROOT)/LICENSE"
	go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/webwrapper ./cmd/svcpipe |
		sort -u | while read -r path ver dir; do
			lic=$(find "$dir" -maxdepth 1 -type f \( -iname 'LICENSE*' -o -iname 'COPYING*' -o -iname 'LICENCE*' \) | sort | head -1)
			if [ -z "$lic" ]; then
				echo "build-windows: module $path $ver has no licence file" >&2
				exit 1
			fi
			echo
			echo "==== $path $ver"
			cat "$lic"
		done
} >"$files/LICENSES.txt"

# wixl reads Source paths relative to the .wxs file, and refuses absolute ones.
cp deploy/windows/webwrapper.wxs "$out/"
(cd "$out" && wixl -a x64 -D Version="$version" -D NextVersion=2.1.6 -D SourceDir=files -o "SvcWebwrapper-$version.msi" webwrapper.wxs)
rm "$out/webwrapper.wxs"
echo "$out/SvcWebwrapper-$version.msi"
