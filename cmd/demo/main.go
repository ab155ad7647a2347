// Command demo is ./run.sh: the whole link flow on this machine in one command. It builds
// the gateway (./caddy with the jwt_partner module), the reference app service and the
// partner kit's command line, makes the demo partner's keys once, starts the app service
// (SQLite in the data folder) behind the gateway (Caddyfile.example as it is, its ports
// and data folder from environment placeholders) and prints what to do next; Ctrl-C stops
// both. With --check it walks the flow instead (internal/linkflow, which the end-to-end
// tests walk too) and stops.
//
// run.sh builds it into bin/ and runs it from the repository's root; `go run ./cmd/demo`
// there does the same. Its messages name run.sh, the command a person types.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

const usage = `./run.sh: the whole link flow on this machine, in one command. It builds the gateway
(./caddy with the jwt_partner module), the reference app service and the partner kit's
command line, creates the demo partner's keys once, starts the app service (SQLite in
./data) behind the gateway (Caddyfile.example, memory nonce store) and prints what to do
next. Ctrl-C stops both. Needs only Go.

  ./run.sh           start and keep running
  ./run.sh --check   start, send a main-client link (signing in and linking the first
                     time), give its contact a plan through the JSON API, send the
                     contact's Go link and see the plan as the member, stop; exit status
                     0 when the whole flow works

Before building, run.sh stops if one of its ports is in use (it names the port, what
holds it and the variable that moves it) or if another run.sh uses the same data folder.
It reports only answers from the processes it started.

Environment (all optional):
  PARTNERGATE_UPSTREAM_SECRET   shared by gateway and app service; random per run when unset
  PARTNERGATE_DEMO_DATA         data folder (default ./data)
  PARTNERGATE_DEMO_PORT, PARTNERGATE_DEMO_APP_PORT, PARTNERGATE_DEMO_ADMIN_PORT
                                gateway, app service and Caddy admin ports (8080, 9080, 2019)
  PARTNERGATE_CADDYFILE         your own Caddyfile, used as it is and never written to. It
                                must serve http://localhost:<gateway port> and proxy to the
                                app service at 127.0.0.1:<app service port>; its own admin
                                address counts, not PARTNERGATE_DEMO_ADMIN_PORT. --check
                                needs its jwt_partner route for the partner demo. A relative
                                path is taken from the folder run.sh was started in.
                                Unset, run.sh runs Caddyfile.example as it is: caddy fills
                                its placeholders from the variables above.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exit is an end of the command with a status, its message already printed.
type exit int

func (e exit) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	check := false
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "--check":
		check = true
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help"):
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "run.sh: unknown argument %s (use --check or --help)\n", args[0])
		return 2
	}
	d, err := configure(check, stdout, stderr)
	if err != nil {
		return status(err, stderr)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = d.run(ctx)
	d.stop()
	if ctx.Err() != nil {
		// Ctrl-C, or SIGTERM: what it started is stopped.
		return 130
	}
	return status(err, stderr)
}

// status prints err (unless it is an exit, printed already) and returns its status.
func status(err error, stderr io.Writer) int {
	var e exit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return int(e)
	default:
		fmt.Fprintf(stderr, "run.sh: %v\n", err)
		return 1
	}
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
