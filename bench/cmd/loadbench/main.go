// Command loadbench measures the whole gateway over HTTP: Caddy with plain reverse_proxy
// (the baseline), Caddy with jwt_partner and the memory nonce store, the same with the
// Redis store, and the memory store under an unknown-kid flood (with, as the floor, the
// same flood answered by a fixed 401), all against one upstream in one invocation, with the
// same request size, path, method and content type. With -operator it runs the
// configuration of an operator's first try (issue 19) instead: the baseline and the memory
// store only, against a lean upstream, with shorter tokens and 32 connections.
//
// scripts/loadbench.sh is the documented way to run it. Its subcommands:
//
//	loadbench suite    [flags]  run every phase and print the table (the orchestrator)
//	loadbench upstream [flags]  the upstream: 200 with a small body to every request (-lean: drains the body, 35 bytes of text)
//
// The load is Debian's wrk with bench/wrk/partner.lua, one thread per run. The suite pins
// Caddy to one core and wrk, the upstream and Redis to the other with taskset (the Go
// processes with GOMAXPROCS=1), so that the gateway's share of the machine is one core and
// known; it mints between phases on every core, while nothing is measured.
//
// How the cost grows (issue 29), suite flags besides the pinning above:
//
//	-partners N        N partners in the handler, each with its own key set; the tokens are dealt over them
//	-gomaxprocs N      Caddy's GOMAXPROCS (default 1), with -gateway-cpu a taskset list such as 0,1
//	-redis-cluster     phases c and C against a three-master Redis Cluster started by the suite
//	-redis-cli PATH    the redis-cli that creates that cluster
//
// Each phase also reports Caddy's provisioning time and memory, and c Redis's CPU per request.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "suite":
		err = suiteMain(os.Args[2:])
	case "upstream":
		err = upstreamMain(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: loadbench suite|upstream [flags] (see scripts/loadbench.sh)")
	os.Exit(2)
}
