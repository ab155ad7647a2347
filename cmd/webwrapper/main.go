// Command webwrapper is the desktop wrapper (interface part B): it shows the service's web
// application in a browser window and lets desktop programs drive it through command-line
// arguments, an input.xml file and the pipe svcpipe.<pid> (docs/webwrapper.md). The
// wrapper's life from start to exit is package webwrapper/lifecycle; this command parses
// its flags and runs it.
//
// Usage:
//
//	webwrapper [-app-url U] [-browser P] [-profile D] [-browser-flag F]... [PROTOCOL ARGUMENTS]
//
// The flags are for tests and trials and come first; the rest is the protocol's: an
// input.xml path (the default provider) or key=value arguments (provider="Svc.Desktop.
// Arguments.Component, Svc.Desktop"). Exit status: 0 after close, or after handing the
// arguments to the running instance; 1 when the wrapper cannot start; 2 for an unknown
// provider or a bad flag.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/partnergate/partnergate/webwrapper/lifecycle"
)

// version is the wrapper's four-part version, at least 2.1.4.19787 since the pipe needs
// that (VER-1); a release build sets the last part: -ldflags "-X main.version=2.1.5.<build>".
var version = "2.1.5.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], lifecycle.Options{Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// run parses argv's flags into o and runs the wrapper; o carries the log's writer and how
// a person is told of a failure (lifecycle.Options.Alert).
func run(ctx context.Context, argv []string, o lifecycle.Options) int {
	o.Version = version
	fs := flag.NewFlagSet("webwrapper", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	fs.StringVar(&o.AppURL, "app-url", "", "the first page, instead of the AppUrl setting")
	fs.StringVar(&o.Browser, "browser", "", "the browser's executable, instead of searching for one")
	fs.StringVar(&o.Profile, "profile", "", "the browser profile folder, instead of the user's")
	fs.Var((*multiFlag)(&o.BrowserFlags), "browser-flag", "a further browser flag, --name or --name=value (repeatable)")
	if err := fs.Parse(argv); err != nil {
		return lifecycle.ExitUsage
	}
	return lifecycle.Run(ctx, fs.Args(), o)
}
