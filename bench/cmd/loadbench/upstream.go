package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// upstreamBody is what the reference app service answers on /url: a small JSON object
// carrying the URL to open. Its size, not its content, is what matters here.
const upstreamBody = `{"url":"https://app.bench.example/signin/one-time/4f2c9a7be1d04c55"}` + "\n"

// leanBody is the -lean upstream's answer: the 35-byte text body of the outside
// measurement.
const leanBody = "https://app.bench.example/s/4f2c9a\n"

// upstreamMain serves until killed; it prints its address on the first line of stdout so
// that the suite can start it on a free port.
func upstreamMain(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	lean := fs.Bool("lean", false, "drain the request body and answer a 35-byte text body (the -operator run's upstream)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if *lean {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Write([]byte(leanBody))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(upstreamBody))
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	return srv.Serve(ln)
}
