package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
	"github.com/partnergate/partnergate/problem"
)

// cmdCheck explains rule by rule why the gateway would accept or reject a token. The
// verdict and its code are linktoken's, the gateway's own verification: offline, with the
// partner's key set and the rules given as flags; or, with --gateway and --partner, by the
// gateway's dry run, with its own rules, keys and clock.
func cmdCheck(ctx context.Context, args []string, e env) error {
	fs := newFlags("check", e)
	jwksFile := fs.String("jwks", "", "the partner's jwks.json")
	jwksURL := fs.String("jwks-url", "", "the URL the partner publishes its jwks.json at")
	iss := fs.String("iss", "", "the issuer agreed with the service")
	aud := fs.String("aud", "", "the audience agreed with the service")
	algs := fs.String("alg", "", "the algorithms the gateway allows for the partner, comma separated (default: RS256,PS256,ES256)")
	kinds := fs.String("kind", "", "the link kinds the gateway allows for the partner: main, go or main,go (default: both)")
	leeway := fs.Duration("leeway", linktoken.DefaultLeeway, "the gateway's clock leeway (0s: none, as leeway 0 in the Caddyfile)")
	maxLifetime := fs.Duration("max-lifetime", linktoken.DefaultMaxLifetime, "the gateway's max_lifetime for the partner")
	gateway := fs.String("gateway", "", "ask this gateway's dry run instead of checking offline: the base URL of the link endpoints ({sso_url}); with --partner")
	partner := fs.String("partner", "", "the partner's path segment, for --gateway")
	asJSON := fs.Bool("json", false, "print the report as JSON, the shape the gateway's dry run (POST /partner/NAME/check) answers")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one TOKEN, or - to read it from standard input")
	}
	dryRun := *gateway != "" || *partner != ""
	var rules linktoken.Rules
	if dryRun {
		// The gateway's own rules and keys decide: a flag that would set them here is a
		// mistake, not something to ignore in silence.
		var offline []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "gateway", "partner", "json":
			default:
				offline = append(offline, "--"+f.Name)
			}
		})
		switch {
		case *gateway == "" || *partner == "":
			return usagef("--gateway URL and --partner NAME go together")
		case len(offline) > 0:
			return usagef("%s: the gateway's dry run uses the gateway's own rules and keys; leave them out with --gateway", strings.Join(offline, ", "))
		}
	} else {
		switch {
		case (*jwksFile == "") == (*jwksURL == ""):
			return usagef("give exactly one of --jwks FILE and --jwks-url URL, or --gateway URL and --partner NAME")
		case *iss == "" || *aud == "":
			return usagef("--iss and --aud are required")
		}
		if *leeway == 0 {
			*leeway = -1 // linktoken.Rules reads 0 as its default and a negative leeway as none
		}
		rules = linktoken.Rules{Issuer: *iss, Audience: *aud, Algorithms: commaList(*algs), Leeway: *leeway, MaxLifetime: *maxLifetime}
		for _, k := range commaList(*kinds) {
			kind, ok := linkspec.ParseKind(k)
			if !ok {
				return usagef("--kind %q: use main or go", k)
			}
			rules.Kinds = append(rules.Kinds, kind)
		}
		if _, err := linktoken.NewVerifier(rules); err != nil {
			return usagef("%v", err)
		}
	}
	token := pos[0]
	if token == "-" {
		b, err := io.ReadAll(io.LimitReader(e.stdin, 1<<20))
		if err != nil {
			return err
		}
		token = string(b)
	}
	if dryRun {
		c := &partnerkit.Client{Gateway: *gateway, Partner: *partner, HTTPClient: e.http}
		r, err := c.DryRun(ctx, strings.TrimSpace(token))
		if err != nil {
			var rej *partnerkit.Rejection
			if errors.As(err, &rej) && rej.Code == string(problem.CodeNotFound) {
				return fmt.Errorf("%w (is dry_run on for partner %s at this gateway?)", err, *partner)
			}
			return err
		}
		return printCheck(e, r, *asJSON, false)
	}
	var jwks []byte
	if *jwksFile != "" {
		jwks, err = os.ReadFile(*jwksFile)
	} else {
		jwks, err = fetch(ctx, e.http, *jwksURL)
	}
	if err != nil {
		return err
	}
	return printCheck(e, partnerkit.Check(ctx, token, jwks, rules, e.now()), *asJSON, true)
}

// printCheck prints a report, as JSON or as text, and ends with exitFailed when it is a
// rejection. offline says the report is Check's rather than a gateway's dry run.
func printCheck(e env, r *partnerkit.Report, asJSON, offline bool) error {
	if asJSON {
		// partnerkit.Report's own encoding, the one the gateway's dry run answers with.
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		printReport(e, r, offline)
	}
	if !r.Accepted {
		return exitError(exitFailed)
	}
	return nil
}

var marks = map[partnerkit.Outcome]string{
	partnerkit.Passed:     "ok  ",
	partnerkit.Failed:     "FAIL",
	partnerkit.NotReached: " -- ",
	partnerkit.Unchecked:  " ?? ",
}

func printReport(e env, r *partnerkit.Report, offline bool) {
	w := e.stdout
	for _, s := range r.Steps {
		fmt.Fprintf(w, "%s %s", marks[s.Outcome], s.Rule)
		if s.RuleID != "" {
			fmt.Fprintf(w, " (%s)", s.RuleID)
		}
		switch {
		case s.Outcome == partnerkit.Failed:
			fmt.Fprintf(w, " [%s]", s.Code)
			if s.Detail != "" {
				fmt.Fprintf(w, ": %s", s.Detail)
			}
		case s.Outcome == partnerkit.Unchecked && offline:
			fmt.Fprintf(w, ": not checked offline; %s", s.Detail)
		case s.Outcome == partnerkit.Unchecked:
			fmt.Fprintf(w, ": %s", s.Detail)
		case s.Detail != "" && s.Outcome == partnerkit.Passed:
			fmt.Fprintf(w, " (%s)", s.Detail)
		}
		fmt.Fprintln(w)
		for _, f := range s.Fields {
			fmt.Fprintf(w, "       %s: %s\n", f.Field, f.Reason)
		}
	}
	if r.RequestID != "" {
		defer fmt.Fprintf(w, "request id: %s (the gateway's log line of this dry run)\n", r.RequestID)
	}
	if r.Accepted {
		fmt.Fprintf(w, "verdict: accepted (a %s link), unless the gateway has seen its nonce before\n", r.Kind)
		printDropped(w, r.Dropped)
		return
	}
	code := string(r.Code)
	if code == "" {
		code = "error"
	}
	fmt.Fprintf(w, "verdict: rejected: %s", code)
	if r.Detail != "" {
		fmt.Fprintf(w, ": %s", r.Detail)
	}
	fmt.Fprintln(w)
	for _, f := range r.Fields {
		fmt.Fprintf(w, "  %s: %s\n", f.Field, f.Reason)
	}
}

// printDropped lists the optional fields the gateway drops from an accepted link: the link
// works, but the service never sees those values, so the partner should fix them.
func printDropped(w io.Writer, dropped []linkspec.FieldError) {
	if len(dropped) == 0 {
		return
	}
	fmt.Fprintln(w, "dropped optional fields (the gateway accepts the link without them; fix them to have them used):")
	for _, f := range dropped {
		fmt.Fprintf(w, "  %s: %s\n", f.Field, f.Reason)
	}
}

// fetch reads a key set from url as the gateway would (it requires HTTPS; plain http is
// allowed here for a partner testing on its own machine).
func fetch(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return nil, usagef("--jwks-url %q is not an http(s) URL", url)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the key set: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the key set: %s answered %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}
