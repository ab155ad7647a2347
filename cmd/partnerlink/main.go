// Command partnerlink is the partner kit's command line: it makes keys and the jwks.json to
// publish, rotates them, mints link tokens, sends them to the gateway and explains, rule by
// rule, why the gateway would accept or reject a token. It is the reference implementation
// of docs/partners.md.
//
// Usage:
//
//	partnerlink keygen --alg ES256 --kid K --out DIR
//	partnerlink jwks add --jwks FILE (--key PRIVATE.pem | --pub PUBLIC.pem) [--kid K] [--alg A]
//	partnerlink jwks remove --jwks FILE --kid K
//	partnerlink mint --key PRIVATE.pem --iss ISS --aud AUD (--payload FILE | field flags)
//	partnerlink send --gateway URL --partner NAME [--form FILE.html] [--open] (mint flags)
//	partnerlink check TOKEN|- (--jwks FILE | --jwks-url URL) --iss ISS --aud AUD
//	partnerlink check TOKEN|- --gateway URL --partner NAME
//
// Exit status: 0 success (check: the gateway would accept), 1 failure or rejection, 2 usage
// error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // a rejection, a refused token, an I/O error
	exitUsage  = 2
)

// env is everything a command reads from the outside world, so tests run commands
// in-process with their own clock, streams and HTTP client.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
	http   *http.Client
	open   func(url string) error
}

func main() {
	e := env{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		now:    time.Now,
		http:   &http.Client{Timeout: 30 * time.Second},
		open:   openBrowser,
	}
	os.Exit(run(context.Background(), os.Args[1:], e))
}

const usage = `partnerlink: the partner kit's command line (docs/partners.md)

  partnerlink keygen --alg RS256|PS256|ES256 [--kid K] --out DIR [--bits N] [--force]
  partnerlink jwks add --jwks FILE (--key PRIVATE.pem | --pub PUBLIC.pem) [--kid K] [--alg A]
  partnerlink jwks remove --jwks FILE --kid K
  partnerlink mint --key PRIVATE.pem --iss ISS --aud AUD (--payload FILE.json | field flags)
  partnerlink send --gateway URL --partner NAME [--form FILE.html] [--open] (mint flags)
  partnerlink check TOKEN|- (--jwks FILE | --jwks-url URL) --iss ISS --aud AUD [--alg A,...]
  partnerlink check TOKEN|- --gateway URL --partner NAME   (the gateway's dry run)

Run "partnerlink COMMAND -h" for a command's flags.
Exit status: 0 success, 1 failure or rejection, 2 usage error.
`

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "keygen":
		err = cmdKeygen(args[1:], e)
	case "jwks":
		err = cmdJWKS(args[1:], e)
	case "mint":
		err = cmdMint(args[1:], e)
	case "send":
		err = cmdSend(ctx, args[1:], e)
	case "check":
		err = cmdCheck(ctx, args[1:], e)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(e.stderr, "partnerlink: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	var ue *usageError
	var ex exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "partnerlink %s: %v\n", args[0], err)
		return exitUsage
	case errors.As(err, &ex):
		return int(ex) // the command has said why
	default:
		fmt.Fprintf(e.stderr, "partnerlink %s: %v\n", args[0], err)
		return exitFailed
	}
}

// exitError ends a command with a status after it printed its own explanation.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// newFlags returns a flag set that reports errors instead of exiting, writing help to
// stderr.
func newFlags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet("partnerlink "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parse parses args allowing positional arguments between flags ("check TOKEN --jwks F"),
// which the flag package alone stops at, and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// openBrowser opens url with the desktop's handler.
func openBrowser(url string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	}
	return exec.Command(name, url).Start()
}

// commaList splits "RS256, ES256" into its items.
func commaList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
