#!/usr/bin/env bash
# Builds the desktop wrapper for Windows and its installer, for one service:
#
#   scripts/build-windows.sh --app-url URL [--update-site URL] OUTDIR [BUILD]
#
# --app-url is the service's sign-in page, the window's first page (the AppUrl setting:
# https://gateway.example.com/app/signin); --update-site its download and update site
# ({webwrapper_site}, the UpdateSite setting), by default /webwrapper/ on the same host.
# Both must be https addresses, or http ones on this computer (localhost, 127.0.0.1) for
# trials: a password or a download link never travels in the clear. An install may
# override them (the MSI's APPURL and UPDATESITE, docs/webwrapper.md).
#
# OUTDIR/files/ gets Svc.Client.WebWrapper.exe (version 2.1.5.BUILD in its version
# resource and in `version`, the icon, a GUI program: no console window), its
# Svc.Client.WebWrapper.exe.config (deploy/windows/, with the two addresses), the pipe
# client svcpipe.exe and LICENSES.txt (the licences of Go and of every module compiled
# in); OUTDIR gets the MSI SvcWebwrapper-2.1.5.BUILD.msi, built from
# deploy/windows/webwrapper.wxs with wixl (msitools), and OUTDIR/site/ the download and
# update site to publish (the MSI, stable.json, index.html: cmd/webwrappersite). BUILD
# defaults to 0. The resources are made with go-winres, pinned in go.mod as a tool; its
# .syso file lives in cmd/webwrapper only during the build.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/build-windows.sh --app-url URL [--update-site URL] OUTDIR [BUILD]"
app_url="" update_site=""
while [ $# -gt 0 ]; do
	case "$1" in
	--app-url) app_url="${2:-}"; shift 2 || shift ;;
	--app-url=*) app_url="${1#*=}"; shift ;;
	--update-site) update_site="${2:-}"; shift 2 || shift ;;
	--update-site=*) update_site="${1#*=}"; shift ;;
	-h | --help) echo "$usage"; exit 0 ;;
	--) shift; break ;;
	-*) echo "build-windows: unknown option $1; $usage" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] && [ $# -le 2 ] && [ -n "$app_url" ] || { echo "build-windows: $usage" >&2; exit 2; }
out="$1"
build="${2:-0}"
case "$build" in '' | *[!0-9]*) echo "build-windows: BUILD must be a number" >&2; exit 2 ;; esac
version="2.1.5.$build"

# An address the wrapper may be given: https, or http on this computer; no user name,
# nothing that is not part of a URL's path or query.
address() {
	local path='(/[^[:space:]"<>\|^`{}]*)?'
	if ! [[ $2 =~ ^https://[A-Za-z0-9.-]+(:[0-9]+)?$path$ || $2 =~ ^http://(localhost|127\.0\.0\.1)(:[0-9]+)?$path$ ]]; then
		echo "build-windows: $1 $2: must be an https:// address (http:// only for localhost or 127.0.0.1)" >&2
		exit 2
	fi
}
address --app-url "$app_url"
if [ -z "$update_site" ]; then
	[[ $app_url =~ ^(https?://[^/?#]+) ]]
	update_site="${BASH_REMATCH[1]}/webwrapper/"
fi
address --update-site "$update_site"

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
# The application config with this service's addresses, in place of ./run.sh's.
setting() {
	local xml sed
	xml=$(printf '%s' "$2" | sed 's/&/\&amp;/g')
	sed=$(printf '%s' "$xml" | sed 's/[\\&|]/\\&/g')
	sed -i "/<setting name=\"$1\" /,/<\/setting>/ s|<value>.*</value>|<value>$sed</value>|" "$files/Svc.Client.WebWrapper.exe.config"
	grep -qF "<value>$xml</value>" "$files/Svc.Client.WebWrapper.exe.config" || {
		echo "build-windows: deploy/windows/Svc.Client.WebWrapper.exe.config has no setting $1 with a value to replace" >&2
		exit 1
	}
}
cp deploy/windows/Svc.Client.WebWrapper.exe.config "$files/"
setting AppUrl "$app_url"
setting UpdateSite "$update_site"

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

# The download and update site: the MSI, the stable channel's feed and the page, to
# publish on the update site (docs/operations.md, "Publishing the desktop wrapper").
GOOS=$(go env GOHOSTOS) GOARCH=$(go env GOHOSTARCH) go run ./cmd/webwrappersite \
	-msi "$out/SvcWebwrapper-$version.msi" -version "$version" -out "$out/site"
echo "$out/SvcWebwrapper-$version.msi"
