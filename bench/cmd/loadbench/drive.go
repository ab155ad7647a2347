package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"time"

	"github.com/partnergate/partnergate/bench/loadgen"
)

// Request shape of every phase: the /url endpoint's, so that the baseline and the gateway
// read the same bytes.
const (
	benchPath        = "/partner/acme/url"
	benchContentType = "text/plain"
)

// windowLine is what drive prints on stdout when the measured window opens, before the
// JSON result.
const windowLine = "window"

// driveMain runs one load from a file of tokens (one per line) and prints the
// loadgen.Result as JSON on stdout, after a line "window" the moment its measured window
// opens. It is its own process so that the suite can pin it and sample the CPU time of
// everything under test when that line arrives.
func driveMain(args []string) error {
	fs := flag.NewFlagSet("drive", flag.ContinueOnError)
	addr := fs.String("addr", "", "gateway host:port")
	tokens := fs.String("tokens", "", "file with one token per line")
	conns := fs.Int("conns", 16, "connections")
	warmup := fs.Duration("warmup", 2*time.Second, "warmup, not counted")
	duration := fs.Duration("duration", 10*time.Second, "measured window (0: until the tokens are used up)")
	repeat := fs.Bool("repeat", false, "cycle through the tokens")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *tokens == "" {
		return errors.New("-addr and -tokens are required")
	}
	reqs, err := readRequests(*tokens, *addr)
	if err != nil {
		return err
	}
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		Addr: *addr, Requests: reqs, Repeat: *repeat, Conns: *conns,
		Warmup: *warmup, Duration: *duration,
		OnWindow: func() { os.Stdout.WriteString(windowLine + "\n") },
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func readRequests(path, host string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reqs [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			reqs = append(reqs, loadgen.BuildRequest(host, benchPath, benchContentType, sc.Bytes()))
		}
	}
	return reqs, sc.Err()
}
