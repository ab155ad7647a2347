#!/usr/bin/env bash
# The whole link flow on this machine, in one command: builds the gateway (./caddy with the
# jwt_partner module), the reference app service and the partner kit's command line,
# creates the demo partner's keys once, starts the app service (SQLite in ./data) behind the
# gateway (Caddyfile.example, memory nonce store) and prints what to do next. Ctrl-C stops
# both. Needs only Go.
#
#   ./run.sh           start and keep running
#   ./run.sh --check   start, send a main-client and a Go link, follow both login URLs, stop;
#                      exit status 0 when the whole flow works
#
# Environment (all optional):
#   PARTNERGATE_UPSTREAM_SECRET   shared by gateway and app service; random per run when unset
#   PARTNERGATE_DEMO_DATA         data folder (default ./data)
#   PARTNERGATE_DEMO_PORT, PARTNERGATE_DEMO_APP_PORT, PARTNERGATE_DEMO_ADMIN_PORT
#                                 gateway, app service and Caddy admin ports (8080, 9080, 2019);
#                                 other values run a copy of Caddyfile.example with them
set -euo pipefail
cd "$(dirname "$0")"

mode=run
case "${1:-}" in
"") ;;
--check) mode=check ;;
-h | --help)
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "run.sh: unknown argument $1 (use --check or --help)" >&2
	exit 2
	;;
esac

command -v go >/dev/null 2>&1 || {
	echo "run.sh: Go is not installed: see https://go.dev/doc/install" >&2
	exit 1
}

data=${PARTNERGATE_DEMO_DATA:-./data}
gw_port=${PARTNERGATE_DEMO_PORT:-8080}
app_port=${PARTNERGATE_DEMO_APP_PORT:-9080}
admin_port=${PARTNERGATE_DEMO_ADMIN_PORT:-2019}
gateway="http://localhost:$gw_port"
demo="$data/demo"

echo "== building ./caddy, bin/appservice, bin/partnerlink" >&2
./xcaddy.sh ./caddy >/dev/null
go build -o bin/appservice ./cmd/appservice
go build -o bin/partnerlink ./cmd/partnerlink

mkdir -p "$demo"
chmod 700 "$data" "$demo"
if [ ! -f "$demo/private.pem" ]; then
	echo "== creating the demo partner's ES256 key in $demo" >&2
	bin/partnerlink keygen --alg ES256 --kid demo-1 --out "$demo" >&2
fi

# The first instructor's password: made once, kept beside the keys, so every start can
# print it; the app service creates the account only when it does not exist.
if [ ! -f "$demo/instructor.password" ]; then
	(umask 077 && head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$demo/instructor.password")
fi
export PARTNERGATE_APP_INSTRUCTOR_PASSWORD
PARTNERGATE_APP_INSTRUCTOR_PASSWORD=$(cat "$demo/instructor.password")

if [ -z "${PARTNERGATE_UPSTREAM_SECRET:-}" ]; then
	PARTNERGATE_UPSTREAM_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
fi
export PARTNERGATE_UPSTREAM_SECRET

# The demo payloads: a main-client link (instructor Ida Berg, contact Ola Nordmann) and a
# Go link for the same contact.
[ -f "$demo/main-link.json" ] || cat >"$demo/main-link.json" <<'EOF'
{
  "employeeId": "emp-1001",
  "employeeUsername": "ida.berg",
  "employeeFirstname": "Ida",
  "employeeLastname": "Berg",
  "employeeEmail": "ida@partner.example",
  "organizationName": "North Clinic",
  "organizationId": "org-1",
  "contact": {
    "id": "contact-1",
    "firstname": "Ola",
    "lastname": "Nordmann",
    "birthdate": "1985-04-17",
    "ssn": "17048512345",
    "email": "ola@example.org"
  },
  "caseId": "case-1"
}
EOF
[ -f "$demo/go-link.json" ] || cat >"$demo/go-link.json" <<'EOF'
{
  "organizationName": "North Clinic",
  "organizationId": "org-1",
  "contact": {
    "id": "contact-1",
    "firstname": "Ola",
    "lastname": "Nordmann",
    "birthdate": "1985-04-17",
    "email": "ola@example.org"
  }
}
EOF

# Caddyfile.example as it is for the default ports and data folder; otherwise a copy with
# the ports, the admin address and the key path replaced.
config=Caddyfile.example
if [ "$gw_port$app_port$admin_port$data" != "808090802019./data" ]; then
	config="$demo/Caddyfile"
	sed -e "s#localhost:8080#localhost:$gw_port#g" -e "s#http://:8080#http://:$gw_port#g" -e "s#127.0.0.1:9080#127.0.0.1:$app_port#g" \
		-e "s#localhost:2019#127.0.0.1:$admin_port#g" -e "s#\./data/demo/#$demo/#g" \
		Caddyfile.example >"$config"
fi

pids=()
stop() {
	trap - INT TERM EXIT
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM

logs="$demo/logs"
mkdir -p "$logs"
bin/appservice -listen "127.0.0.1:$app_port" -db "$data/appservice.db" -secret-file "$data/app.secret" \
	-public-url "$gateway" -frame-ancestors "'self' http://localhost:* http://127.0.0.1:*" \
	-instructor instructor -instructor-email ida@partner.example -instructor-name "Ida Berg" -demo-data \
	2>>"$logs/appservice.log" &
pids+=($!)
./caddy run --config "$config" --adapter caddyfile 2>>"$logs/caddy.log" &
pids+=($!)

# http_get PATH: prints the status line and headers of GET $gateway$PATH (bash only, so a
# fresh machine needs no curl).
http_get() {
	exec 3<>"/dev/tcp/127.0.0.1/$gw_port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' "$1" "$gw_port" >&3
	sed -n '1,/^\r$/p' <&3 | tr -d '\r'
	exec 3<&-
}

# http_login PATH: opens a login URL as a browser does (its page, then the page's post of
# the one-time code with the CSRF cookie and field) and prints the status line and headers
# of the answer that ends it. A page without the form (a refusal) is printed as it is.
http_login() {
	local page cookie csrf body
	exec 3<>"/dev/tcp/127.0.0.1/$gw_port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' "$1" "$gw_port" >&3
	page=$(tr -d '\r' <&3)
	exec 3<&-
	cookie=$(printf '%s\n' "$page" | sed -n 's/^Set-Cookie: \(pg_csrf=[^;]*\).*/\1/Ip')
	csrf=$(printf '%s\n' "$page" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p')
	if [ -z "$cookie" ] || [ -z "$csrf" ]; then
		printf '%s\n' "$page" | sed -n '1,/^$/p'
		return 0
	fi
	body="code=${1#*code=}&csrf=$csrf"
	exec 3<>"/dev/tcp/127.0.0.1/$gw_port" || return 1
	printf 'POST /app/login HTTP/1.0\r\nHost: localhost:%s\r\nCookie: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
		"$gw_port" "$cookie" "${#body}" "$body" >&3
	sed -n '1,/^\r$/p' <&3 | tr -d '\r'
	exec 3<&-
}

for i in $(seq 1 150); do
	if http_get /healthz 2>/dev/null | head -1 | grep -q ' 200 '; then break; fi
	for pid in "${pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || {
			echo "run.sh: a process exited during start; its log:" >&2
			tail -n 20 "$logs/appservice.log" "$logs/caddy.log" >&2
			exit 1
		}
	done
	[ "$i" -lt 150 ] || {
		echo "run.sh: the gateway did not answer on $gateway within 30s; logs in $logs" >&2
		exit 1
	}
	sleep 0.2
done

send="bin/partnerlink send --gateway $gateway --partner demo --key $demo/private.pem --iss https://partner.example --aud partnergate-demo"

if [ "$mode" = check ]; then
	fail() {
		echo "run.sh --check: FAILED: $*" >&2
		tail -n 20 "$logs/appservice.log" "$logs/caddy.log" >&2
		exit 1
	}
	for kind in main go; do
		url=$($send --payload "$demo/$kind-link.json") || fail "sending the $kind link"
		case "$url" in
		"$gateway/app/login?code="*) ;;
		*) fail "the $kind link answered $url, not a login URL" ;;
		esac
		headers=$(http_login "${url#"$gateway"}")
		location=$(printf '%s\n' "$headers" | sed -n 's/^Location: //Ip')
		status=$(printf '%s\n' "$headers" | head -1)
		case "$kind:$location" in
		main:/app/signin | main:/app | go:/go) echo "run.sh --check: $kind link → $location ok" ;;
		*) fail "the $kind login URL answered '$status' → '$location'" ;;
		esac
		again=$(http_login "${url#"$gateway"}" | head -1)
		case "$again" in
		*" 410 "*) echo "run.sh --check: $kind login URL refused on second use ok" ;;
		*) fail "the $kind login URL answered '$again' on second use, want 410" ;;
		esac
	done
	echo "run.sh --check: passed"
	exit 0
fi

cat <<EOF

partnergate is running.
  gateway      $gateway  (Caddy, $config; log $logs/caddy.log)
  app service  http://127.0.0.1:$app_port  (SQLite $data/appservice.db; log $logs/appservice.log)

1. Send a main-client link as the demo partner and open the URL it prints:

   $send --payload $demo/main-link.json --open

   (without a desktop browser, drop --open and paste the URL into a browser within a minute)

2. The first link for employee emp-1001 asks for a service account. Sign in with
     username  instructor   (or ida@partner.example)
     password  $PARTNERGATE_APP_INSTRUCTOR_PASSWORD
   The application shows Ola Nordmann in focus. Send the link again: it signs in directly.

3. The form variant (/payload), as a partner page that posts the hidden field:

   $send --payload $demo/main-link.json --form $demo/partner-page.html

   then open $demo/partner-page.html in a browser.

4. A Go link for the contact (creates the member account and signs it in):

   $send --payload $demo/go-link.json --open

Ctrl-C stops the gateway and the app service.
EOF
wait -n "${pids[@]}" || true
echo "run.sh: stopped; logs in $logs" >&2
