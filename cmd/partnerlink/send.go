package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/partnergate/partnergate/partnerkit"
)

// cmdSend mints a token and posts it to /url, printing (or opening) the answer, or writes
// the page that posts it to /payload.
func cmdSend(ctx context.Context, args []string, e env) error {
	fs := newFlags("send", e)
	gateway := fs.String("gateway", "", "the base URL of the link endpoints ({sso_url}), e.g. https://sso.example.com")
	partner := fs.String("partner", "", "the partner's path segment agreed with the service")
	form := fs.String("form", "", "write an HTML page that posts the token to /payload to this file, instead of posting to /url")
	open := fs.Bool("open", false, "open the URL the gateway answers in the browser")
	t := addTokenFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *gateway == "" || *partner == "":
		return usagef("--gateway URL and --partner NAME are required")
	case *form != "" && *open:
		return usagef("--open goes with /url: serve the --form page instead")
	}
	s, _, token, err := t.mint(fs, e)
	if err != nil {
		return err
	}
	c := &partnerkit.Client{Gateway: *gateway, Partner: *partner, Signer: s, HTTPClient: e.http}
	if *form != "" {
		action, err := c.Endpoint("payload")
		if err != nil {
			return usagef("%v", err)
		}
		expires := e.now().Add(*t.lifetime).UTC().Format(time.RFC3339)
		page, err := partnerkit.FormPageFor(action, token, expires)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*form, page, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: it posts to %s; the token in it works once and expires at %s, so serve it now\n", *form, action, expires)
		return nil
	}
	endpoint, err := c.Endpoint("url")
	if err != nil {
		return usagef("%v", err)
	}
	u, err := c.PostToken(ctx, endpoint, token)
	var rej *partnerkit.Rejection
	if errors.As(err, &rej) {
		printRejection(e, rej)
		return exitError(exitFailed)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, u)
	if *open {
		if err := e.open(u); err != nil {
			return fmt.Errorf("opening the browser: %v", err)
		}
	}
	return nil
}

func printRejection(e env, r *partnerkit.Rejection) {
	fmt.Fprintf(e.stderr, "rejected (%d): %s", r.Status, r.Code)
	if r.Detail != "" {
		fmt.Fprintf(e.stderr, ": %s", r.Detail)
	}
	fmt.Fprintln(e.stderr)
	for _, f := range r.Fields {
		fmt.Fprintf(e.stderr, "  %s: %s\n", f.Field, f.Reason)
	}
	if r.RetryAfter > 0 {
		fmt.Fprintf(e.stderr, "retry after %v, with a new token\n", r.RetryAfter)
	}
	if r.RequestID != "" {
		fmt.Fprintf(e.stderr, "request id %s (quote it to the service)\n", r.RequestID)
	}
}
