#!/usr/bin/env bash
# The whole link flow on this machine, in one command: builds the gateway (./caddy with the
# jwt_partner module), the reference app service and the partner kit's command line,
# creates the demo partner's keys once, starts the app service (SQLite in ./data) behind the
# gateway (a copy of Caddyfile.example, memory nonce store) and prints what to do next.
# Ctrl-C stops both. Needs only Go.
#
#   ./run.sh           start and keep running
#   ./run.sh --check   start, send a main-client link (signing in and linking the first
#                      time), give its contact a plan through the JSON API, send the
#                      contact's Go link and see the plan as the member, stop; exit status
#                      0 when the whole flow works
#
# Before building, run.sh stops if one of its ports is in use (it names the port, what
# holds it and the variable that moves it) or if another run.sh uses the same data folder.
# It reports only answers from the processes it started.
#
# Environment (all optional):
#   PARTNERGATE_UPSTREAM_SECRET   shared by gateway and app service; random per run when unset
#   PARTNERGATE_DEMO_DATA         data folder (default ./data)
#   PARTNERGATE_DEMO_PORT, PARTNERGATE_DEMO_APP_PORT, PARTNERGATE_DEMO_ADMIN_PORT
#                                 gateway, app service and Caddy admin ports (8080, 9080, 2019)
#   PARTNERGATE_CADDYFILE         your own Caddyfile, used as it is and never written to. It
#                                 must serve http://localhost:<gateway port> and proxy to the
#                                 app service at 127.0.0.1:<app service port>; its own admin
#                                 address counts, not PARTNERGATE_DEMO_ADMIN_PORT. --check
#                                 needs its jwt_partner route for the partner demo. A relative
#                                 path is taken from the folder run.sh was started in.
#                                 Unset, run.sh writes <data>/demo/Caddyfile from
#                                 Caddyfile.example at every start (ports, admin address, key
#                                 path and the run's identifier replaced): edit a copy of it.
set -euo pipefail
start_dir=$PWD
cd "$(dirname "$0")"

mode=run
case "${1:-}" in
"") ;;
--check) mode=check ;;
-h | --help)
	sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0"
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
logs="$demo/logs"
for port in "$gw_port" "$app_port" "$admin_port"; do
	case "$port" in
	"" | *[!0-9]*)
		echo "run.sh: port '$port' is not a number (PARTNERGATE_DEMO_PORT, PARTNERGATE_DEMO_APP_PORT, PARTNERGATE_DEMO_ADMIN_PORT)" >&2
		exit 2
		;;
	esac
done

caddyfile=${PARTNERGATE_CADDYFILE:-}
if [ -n "$caddyfile" ]; then
	case "$caddyfile" in /*) ;; *) caddyfile="$start_dir/$caddyfile" ;; esac
	[ -f "$caddyfile" ] && [ -r "$caddyfile" ] || {
		echo "run.sh: PARTNERGATE_CADDYFILE=$PARTNERGATE_CADDYFILE: no readable file at $caddyfile" >&2
		exit 1
	}
fi

# port_pids PORT: the processes listening on TCP PORT on any address, one "pid name" a
# line, as ss or lsof see them (only this user's processes show their pid).
port_pids() {
	if command -v ss >/dev/null 2>&1; then
		ss -Hltnp "sport = :$1" 2>/dev/null | grep -o '("[^"]*",pid=[0-9]*' | sed 's/("\(.*\)",pid=\([0-9]*\)/\2 \1/' | sort -u
	elif command -v lsof >/dev/null 2>&1; then
		lsof -nP -iTCP:"$1" -sTCP:LISTEN -Fpc 2>/dev/null | awk '/^p/ { pid = substr($0, 2) } /^c/ { print pid, substr($0, 2) }' | sort -u
	fi
}

# port_busy PORT: something listens on PORT: ss or lsof lists it, or a connection to
# 127.0.0.1:PORT is accepted (which also covers a machine without either tool).
port_busy() {
	if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; then
		return 0
	fi
	if command -v lsof >/dev/null 2>&1 && lsof -nP -iTCP:"$1" -sTCP:LISTEN >/dev/null 2>&1; then
		return 0
	fi
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# port_holder PORT: what holds PORT, for a person: "caddy (pid 123)", or why it is unknown.
port_holder() {
	local holders
	holders=$(port_pids "$1" | sed 's/^\([0-9]*\) \(.*\)$/\2 (pid \1)/' | paste -sd, - | sed 's/,/, /g')
	if [ -n "$holders" ]; then
		echo "$holders"
	elif command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1; then
		echo "a process of another user"
	else
		echo "a process that neither ss nor lsof is installed to name"
	fi
}

# check_ports (PORT WHAT MOVE)...: stops run.sh, before it starts anything, when one of the
# ports is in use, naming each busy one, what it is for, its holder and how to move it.
check_ports() {
	local busy=""
	while [ $# -ge 3 ]; do
		if port_busy "$1"; then
			echo "run.sh: port $1 ($2) is in use by $(port_holder "$1"): stop it, or choose another port with $3" >&2
			busy=1
		fi
		shift 3
	done
	if [ -n "$busy" ]; then
		echo "run.sh: nothing was started" >&2
		exit 1
	fi
}

# The data folder holds the SQLite database, the keys, the logs and the generated
# Caddyfile: two copies on one folder would answer for each other. run.pid names the
# run.sh that uses it; a pid that is no longer a run.sh is a leftover.
lock="$data/run.pid"
lock_holder() {
	local pid args
	pid=$(cat "$lock" 2>/dev/null) || return 1
	case "$pid" in "" | *[!0-9]*) return 1 ;; esac
	[ "$pid" != $$ ] && kill -0 "$pid" 2>/dev/null || return 1
	# A live pid whose command line cannot be read is taken to be a run.sh.
	if [ -r "/proc/$pid/cmdline" ]; then
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
	else
		args=$(ps -p "$pid" -o args= 2>/dev/null) || args=""
	fi
	[ -z "$args" ] || grep -q 'run\.sh' <<<"$args" || return 1
	echo "$pid"
}
refuse_shared_data() {
	echo "run.sh: the data folder $data is in use by another run.sh (pid $1): stop it, or give this run its own folder with PARTNERGATE_DEMO_DATA=<folder>" >&2
	echo "run.sh: nothing was started" >&2
	exit 1
}

if other=$(lock_holder); then refuse_shared_data "$other"; fi
if [ -n "$caddyfile" ]; then
	# The file's admin address is known once caddy can read the file (after the build).
	check_ports "$gw_port" "the gateway" PARTNERGATE_DEMO_PORT=\<port\> "$app_port" "the app service" PARTNERGATE_DEMO_APP_PORT=\<port\>
else
	check_ports "$gw_port" "the gateway" PARTNERGATE_DEMO_PORT=\<port\> "$app_port" "the app service" PARTNERGATE_DEMO_APP_PORT=\<port\> \
		"$admin_port" "Caddy's admin API" PARTNERGATE_DEMO_ADMIN_PORT=\<port\>
fi

mkdir -p "$demo"
chmod 700 "$data" "$demo"
if ! (set -C && echo $$ >"$lock") 2>/dev/null; then
	if other=$(lock_holder); then refuse_shared_data "$other"; fi
	echo $$ >"$lock"
fi

pids=()
stop() {
	trap - INT TERM EXIT
	for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
	for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
	[ "$(cat "$lock" 2>/dev/null)" != $$ ] || rm -f "$lock"
}
trap stop EXIT
trap 'exit 130' INT TERM

echo "== building ./caddy, bin/appservice, bin/partnerlink" >&2
./xcaddy.sh ./caddy >/dev/null
go build -o bin/appservice ./cmd/appservice
go build -o bin/partnerlink ./cmd/partnerlink

mkdir -p "$logs"
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
    "ssn": "17043550098",
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

# The gateway's configuration: the operator's own file as it is, or a copy of
# Caddyfile.example for this run's ports and data folder. The copy's gateway sets the run's
# identifier on every answer (X-Partnergate-Run), so that an answer from any other gateway
# on the port is told apart from its own.
run_id=""
if [ -n "$caddyfile" ]; then
	config=$caddyfile
	echo "== using the Caddyfile $config as it is (PARTNERGATE_CADDYFILE)" >&2
	adapted=$(./caddy adapt --config "$config" --adapter caddyfile 2>"$logs/adapt.log") || {
		echo "run.sh: caddy cannot load $config (PARTNERGATE_CADDYFILE):" >&2
		tail -n 5 "$logs/adapt.log" >&2
		exit 1
	}
	grep -q "\"listen\":\[[^]]*:$gw_port\"" <<<"$adapted" || {
		echo "run.sh: $config serves nothing on port $gw_port, where run.sh sends its requests: serve http://localhost:$gw_port in it, or set PARTNERGATE_DEMO_PORT to its port" >&2
		exit 1
	}
	grep -q "\"dial\":\"[^\"]*:$app_port\"" <<<"$adapted" ||
		echo "run.sh: note: $config proxies to nothing on port $app_port, where this run's app service listens (PARTNERGATE_DEMO_APP_PORT)" >&2
	# Caddy's default admin address unless the file sets one or turns it off.
	admin=localhost:2019
	case "$adapted" in *'"admin":{"disabled":true'*) admin="" ;; esac
	set_admin=$(sed -n 's/.*"admin":{[^}]*"listen":"\([^"]*\)".*/\1/p' <<<"$adapted")
	[ -z "$set_admin" ] || admin=$set_admin
	admin_port=${admin##*:}
	case "$admin_port" in "" | *[!0-9]*) ;; *) check_ports "$admin_port" "Caddy's admin API" "the admin option in $config" ;; esac
	if ! grep -o '"handler":"jwt_partner".*' <<<"$adapted" | grep -q '"demo":{'; then
		if [ "$mode" = check ]; then
			echo "run.sh --check: cannot check: $config has no jwt_partner route for the partner demo, which --check sends its links as (issuer https://partner.example, audience partnergate-demo, keys $demo/jwks.json): add one as Caddyfile.example does" >&2
			exit 1
		fi
		echo "run.sh: note: $config has no jwt_partner route for the partner demo: the demo links below will be refused" >&2
	fi
else
	run_id=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	config="$demo/Caddyfile"
	demo_sed=$(printf '%s' "$demo" | sed 's/[#&\\]/\\&/g')
	data_sed=$(printf '%s' "$data" | sed 's/[#&\\]/\\&/g')
	{
		echo "# Written by run.sh from Caddyfile.example at every start, for this run's ports and data"
		echo "# folder: changes here are lost. For your own, edit a copy elsewhere and start"
		echo "# PARTNERGATE_CADDYFILE=<copy> ./run.sh"
		sed -e "s#localhost:8080#localhost:$gw_port#g" -e "s#http://:8080#http://:$gw_port#g" -e "s#127.0.0.1:9080#127.0.0.1:$app_port#g" \
			-e "s#localhost:2019#127.0.0.1:$admin_port#g" -e "s#\./data/demo/#$demo_sed/#g" \
			-e "s#\./data/webwrapper#$data_sed/webwrapper#g" Caddyfile.example |
			awk -v site="http://localhost:$gw_port {" -v id="$run_id" '{ print } $0 == site {
				print "\t# This run'\''s identifier: run.sh reports only answers that carry it."
				print "\theader X-Partnergate-Run " id
			}'
	} >"$config"
	grep -q "X-Partnergate-Run $run_id" "$config" || {
		echo "run.sh: Caddyfile.example has no line 'http://localhost:8080 {': update run.sh with it" >&2
		exit 1
	}
fi

logs_tail() { tail -n 20 "$logs/appservice.log" "$logs/caddy.log" >&2; }
# Ola, the demo links' contact, has a plan when a newcomer opens the Go link; --check leaves
# him without one, since it makes his plan through the JSON API.
demo_member=()
[ "$mode" = check ] || demo_member=(-demo-member "$demo/go-link.json")
bin/appservice -listen "127.0.0.1:$app_port" -db "$data/appservice.db" -secret-file "$data/app.secret" \
	-public-url "$gateway" -frame-ancestors "'self' http://localhost:* http://127.0.0.1:*" \
	-instructor instructor -instructor-email ida@partner.example -instructor-name "Ida Berg" -demo-data -demo-org "demo:org-1:North Clinic" \
	${demo_member[@]+"${demo_member[@]}"} 2>>"$logs/appservice.log" &
app_pid=$!
pids+=("$app_pid")
./caddy run --config "$config" --adapter caddyfile 2>>"$logs/caddy.log" &
caddy_pid=$!
pids+=("$caddy_pid")

# http_get PATH: prints the status line and headers of GET $gateway$PATH (bash only, so a
# fresh machine needs no curl). A listener that never answers ends it after 5 s a line.
http_get() {
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$gw_port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' "$1" "$gw_port" >&3
	while IFS= read -r -t 5 line <&3; do
		line=${line%$'\r'}
		[ -n "$line" ] || break
		echo "$line"
	done
	exec 3<&-
}

# The --check client, bash only like http_get: a cookie jar, one request at a time.
jar=""    # the cookies a browser keeps for the gateway's origin, one name=value a line
answer="" # the last answer: status line, headers, a blank line, the body (no CR)

# request METHOD PATH [CONTENT-TYPE BODY [HEADER...]]: sends one request with the jar's
# cookies, keeps the cookies the answer sets and leaves the answer in $answer. Bodies are
# ASCII (form fields, JSON of numbers), so their length in characters is their length.
request() {
	local method=$1 path=$2 type=${3:-} body=${4:-} cookies="" line
	shift $(($# < 4 ? $# : 4))
	while IFS= read -r line; do [ -z "$line" ] || cookies+="${cookies:+; }$line"; done <<<"$jar"
	exec 3<>"/dev/tcp/127.0.0.1/$gw_port" || return 1
	{
		printf '%s %s HTTP/1.0\r\nHost: localhost:%s\r\nConnection: close\r\n' "$method" "$path" "$gw_port"
		[ -z "$cookies" ] || printf 'Cookie: %s\r\n' "$cookies"
		[ -z "$type" ] || printf 'Content-Type: %s\r\nContent-Length: %s\r\n' "$type" "${#body}"
		for line in "$@"; do printf '%s\r\n' "$line"; done
		printf '\r\n%s' "$body"
	} >&3
	answer=$(tr -d '\r' <&3)
	exec 3<&-
	while IFS= read -r line && [ -n "$line" ]; do
		case "$line" in
		[Ss]et-[Cc]ookie:*)
			line=${line#*: }
			line=${line%%;*}
			jar=$(grep -v "^${line%%=*}=" <<<"$jar"; echo "$line")
			;;
		esac
	done <<<"$answer"
}

# status_line, location, body and form_csrf read $answer.
status_line() { head -1 <<<"$answer"; }
location() { sed -n '1,/^$/s/^Location: //Ip' <<<"$answer"; }
body() { sed '1,/^$/d' <<<"$answer"; }
form_csrf() { sed -n '/name="csrf"/{s/.*name="csrf" value="\([^"]*\)".*/\1/p;q;}' <<<"$answer"; }

# follow_login URL: opens a login URL in a fresh browser as a person does (its page, then
# the page's post of the one-time code with the CSRF cookie and field; a fresh browser is
# new to the link's account, so the page asks "Continue as …?" and the person answers
# Continue). $answer is the answer that ends it: a redirect into the application, or the
# refusal page.
follow_login() {
	local csrf answered=""
	jar=""
	request GET "${1#"$gateway"}"
	csrf=$(form_csrf)
	[ -n "$csrf" ] || return 0
	case "$answer" in *'id="ask-continue"'*) answered="&action=continue" ;; esac
	request POST /app/login application/x-www-form-urlencoded "code=${1#*code=}&csrf=$csrf$answered"
}

# post_form PATH FIELDS: posts FIELDS with the CSRF field of the page at PATH, as its form.
post_form() {
	local csrf
	request GET "$1"
	csrf=$(form_csrf)
	request POST "$1" application/x-www-form-urlencoded "csrf=$csrf&$2"
}

# api METHOD PATH [JSON]: calls the JSON API as the application's page does, with its
# CSRF token and origin on a change.
api() {
	if [ "$1" = GET ]; then
		request GET "/app/api/$2" "" "" "Accept: application/json"
	else
		request "$1" "/app/api/$2" application/json "${3:-}" "Accept: application/json" "Origin: $gateway" "X-CSRF-Token: $api_csrf"
	fi
}

# ours_alive: both processes this run started are still running; otherwise stop with
# their logs (a port taken after the check above ends here: the process cannot bind it).
ours_alive() {
	local pid
	for pid in ${pids[@]+"${pids[@]}"}; do
		kill -0 "$pid" 2>/dev/null || {
			echo "run.sh: a process it started exited (pid $pid); its log:" >&2
			logs_tail
			exit 1
		}
	done
}

# owns PORT PID WHAT: when ss or lsof can name the listeners, PORT is held by PID.
owns() {
	local holders
	holders=$(port_pids "$1")
	[ -n "$holders" ] || return 0
	grep -q "^$2 " <<<"$holders" || {
		echo "run.sh: port $1 is held by $(port_holder "$1"), not by this run's $3 (pid $2): stop that process, or choose other ports" >&2
		exit 1
	}
}

# Wait for this run's processes, not for any listener: an answer counts when both are
# alive and it carries this run's identifier (with an operator's Caddyfile, which cannot
# carry it, when the listeners are this run's processes).
for i in $(seq 1 150); do
	ours_alive
	reply=$(http_get /healthz 2>/dev/null) || reply=""
	if [ -n "$reply" ]; then
		got=$(sed -n 's/^X-Partnergate-Run: *//Ip' <<<"$reply")
		if [ -n "$run_id" ] && [ -n "$got" ] && [ "$got" != "$run_id" ]; then
			echo "run.sh: the gateway on port $gw_port is another run's (identifier $got), held by $(port_holder "$gw_port"): stop it, or choose another port with PARTNERGATE_DEMO_PORT=<port>" >&2
			exit 1
		fi
		if head -1 <<<"$reply" | grep -q ' 200 '; then
			if [ -n "$run_id" ] && [ "$got" != "$run_id" ]; then
				echo "run.sh: port $gw_port answers without this run's identifier: it is not this run's gateway but $(port_holder "$gw_port"); stop it, or choose another port with PARTNERGATE_DEMO_PORT=<port>" >&2
				exit 1
			fi
			break
		fi
	fi
	[ "$i" -lt 150 ] || {
		echo "run.sh: the gateway did not answer on $gateway within 30s; logs in $logs" >&2
		exit 1
	}
	sleep 0.2
done
ours_alive
owns "$gw_port" "$caddy_pid" gateway
owns "$app_port" "$app_pid" "app service"

send="bin/partnerlink send --gateway $gateway --partner demo --key $demo/private.pem --iss https://partner.example --aud partnergate-demo"

if [ "$mode" = check ]; then
	fail() {
		echo "run.sh --check: FAILED: $*" >&2
		logs_tail
		exit 1
	}
	# once KIND URL: the login URL refused on second use, in another browser.
	once() {
		follow_login "$2"
		case "$(status_line)" in
		*" 410 "*) echo "run.sh --check: $1 login URL refused on second use ok" ;;
		*) fail "the $1 login URL answered '$(status_line)' on second use, want 410" ;;
		esac
	}

	# The instructor's main-client link. The first one for employee emp-1001 asks for a
	# service account: sign in as the first instructor and link the partner user, as step 2
	# below tells a person to do.
	url=$($send --payload "$demo/main-link.json") || fail "sending the main link"
	case "$url" in "$gateway/app/login?code="*) ;; *) fail "the main link answered $url, not a login URL" ;; esac
	follow_login "$url"
	case "$(location)" in
	/app) ;;
	/app/signin)
		post_form /app/signin "login=instructor&password=$PARTNERGATE_APP_INSTRUCTOR_PASSWORD"
		[ "$(location)" = /app/link ] || fail "signing in as the instructor answered '$(status_line)' → '$(location)'"
		post_form /app/link "action=link"
		[ "$(location)" = /app ] || fail "linking the partner user answered '$(status_line)' → '$(location)'"
		;;
	*) fail "the main login URL answered '$(status_line)' → '$(location)'" ;;
	esac
	echo "run.sh --check: main link → /app ok"

	# The contact in focus gets a plan from a template, through the JSON API, unless a
	# plan for them exists already (an earlier --check on the same data).
	api GET status
	api_csrf=$(body | sed -n 's/.*"csrfToken":"\([^"]*\)".*/\1/p')
	person=$(body | sed -n 's/.*"person":{"id":\([0-9][0-9]*\).*/\1/p')
	[ -n "$api_csrf" ] && [ -n "$person" ] || fail "the application's status has no contact in focus: $(body)"
	api GET "workouts?personId=$person"
	case "$(body)" in
	*'"workouts":[{"id":'*) ;;
	*)
		api GET "workouts?template=true&limit=1"
		template=$(body | sed -n 's/^{"workouts":\[{"id":\([0-9][0-9]*\).*/\1/p')
		[ -n "$template" ] || fail "no workout template: $(status_line) $(body)"
		api POST workouts "{\"personId\":$person,\"templateId\":$template}"
		case "$(status_line)" in *" 201 "*) ;; *) fail "creating a plan answered '$(status_line)' $(body)" ;; esac
		;;
	esac
	echo "run.sh --check: the contact in focus has a plan ok"
	once main "$url"

	# The contact's Go link: the member sees the plan.
	url=$($send --payload "$demo/go-link.json") || fail "sending the Go link"
	case "$url" in "$gateway/app/login?code="*) ;; *) fail "the Go link answered $url, not a login URL" ;; esac
	follow_login "$url"
	[ "$(location)" = /go ] || fail "the Go login URL answered '$(status_line)' → '$(location)'"
	echo "run.sh --check: Go link → /go ok"
	api GET me/workouts
	plans=$(($(body | { grep -o '"exerciseCount":[1-9]' || true; } | wc -l)))
	[ "$plans" -gt 0 ] || fail "the Go member sees no plan: $(status_line) $(body)"
	echo "run.sh --check: the Go member sees $plans plan(s) ok"
	once go "$url"

	ours_alive
	echo "run.sh --check: passed"
	exit 0
fi

cat <<EOF

partnergate is running.
  gateway      $gateway  (Caddy, pid $caddy_pid, $config; log $logs/caddy.log)
  app service  http://127.0.0.1:$app_port  (pid $app_pid, SQLite $data/appservice.db; log $logs/appservice.log)

1. Send a main-client link as the demo partner and open the URL it prints:

   $send --payload $demo/main-link.json --open

   (without a desktop browser, drop --open and paste the URL into a browser within a minute)

2. The first link for employee emp-1001 asks for a service account. Sign in with
     username  instructor   (or ida@partner.example)
     password  $PARTNERGATE_APP_INSTRUCTOR_PASSWORD
   The application shows Ola Nordmann in focus and the link's case, case-1, with his plan
   "Knee rehabilitation, week 1": change it, save it and export it to the case, or give
   him another (New plan, from a template); the exercise catalogue and the template
   library are under Exercises and Templates. Send the link again: it signs in directly.

3. The form variant (/payload), as a partner page that posts the hidden field:

   $send --payload $demo/main-link.json --form $demo/partner-page.html

   then open $demo/partner-page.html in a browser.

4. A Go link for Ola (creates the member account and signs it in): it shows the plans
   made for him, "Knee rehabilitation, week 1" from the start, each exercise with its
   instructions. A browser where Ola has never signed in asks "Continue as Ola Nordmann,
   North Clinic?" once first (one signed in as the instructor asks to switch accounts).

   $send --payload $demo/go-link.json --open

Demo persons and plans (Åse Ødegård, Jonas Lindqvist, Mia Virtanen) are seeded at start
into North Clinic, where the demo links land, and into the organization where the
instructor's password sign-in lands ($gateway/app/signin): "Demo clinic" at first.

The desktop wrapper's download and update site, $gateway/webwrapper/, serves
$data/webwrapper/: empty until a build is published there (docs/operations.md,
"Publishing the desktop wrapper").

Ctrl-C stops the gateway and the app service.
EOF
wait -n "${pids[@]}" || true
echo "run.sh: stopped; logs in $logs" >&2
