// Command svcpipe sends one command to a running desktop wrapper over its pipe
// svcpipe.<pid> and prints the reply: a small client for integrators checking their
// setup, and for the wrapper's tests. It speaks the same framing as the original's
// clients (docs/webwrapper.md).
//
// Usage:
//
//	svcpipe (-pid N | -path P) [-timeout D] METHOD [key=value ...]
//	svcpipe (-pid N | -path P) [-timeout D] METHOD '{"key": value, ...}'
//
// key=value arguments are sent as strings, as the original's sample client does; a JSON
// object is sent as it is (for profiledata). Exit status: 0 a reply or none, 1 an
// {"error": …} reply or no connection, 2 usage error.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/partnergate/partnergate/webwrapper/pipe"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `svcpipe: send one command to the desktop wrapper's pipe and print the reply

  svcpipe (-pid N | -path P) [-timeout D] METHOD [key=value ...]
  svcpipe (-pid N | -path P) [-timeout D] METHOD '{"key": value, ...}'

Methods: version, show, hide, close, log, getworkoutsforclient, openworkout, getlistofusers,
setcustomid, selectperson. Exit status: 0 success, 1 an error reply or no connection,
2 usage error.
`

func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("svcpipe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pid := fs.Int("pid", 0, "the wrapper's process id")
	path := fs.String("path", "", "the pipe's path (instead of -pid)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the reply (the wrapper may wait for a sign-in)")
	if err := fs.Parse(argv); err != nil {
		return exitUsage
	}
	if (*pid == 0) == (*path == "") || fs.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	args, err := parseArgs(fs.Args()[1:])
	if err != nil {
		fmt.Fprintf(stderr, "svcpipe: %v\n", err)
		return exitUsage
	}
	if *path == "" {
		if *path, err = pipe.Path(*pid); err != nil {
			fmt.Fprintf(stderr, "svcpipe: %v\n", err)
			return exitFailed
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	reply, err := pipe.Call(ctx, *path, fs.Arg(0), args)
	if err != nil {
		fmt.Fprintf(stderr, "svcpipe: calling %s: %v\n", *path, err)
		return exitFailed
	}
	if len(reply) > 0 {
		stdout.Write(reply)
		fmt.Fprintln(stdout)
	}
	if msg, ok := pipe.ReplyError(reply); ok {
		fmt.Fprintf(stderr, "svcpipe: the wrapper answered an error: %s\n", msg)
		return exitFailed
	}
	return exitOK
}

// parseArgs reads key=value pairs as strings, or one JSON object.
func parseArgs(list []string) (map[string]any, error) {
	args := map[string]any{}
	if len(list) == 1 && strings.HasPrefix(strings.TrimSpace(list[0]), "{") {
		dec := json.NewDecoder(bytes.NewReader([]byte(list[0])))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, fmt.Errorf("reading the JSON arguments: %v", err)
		}
		return args, nil
	}
	for _, a := range list {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, errors.New("arguments are key=value or one JSON object")
		}
		args[k] = v
	}
	return args, nil
}
