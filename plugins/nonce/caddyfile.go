package nonce

import (
	"fmt"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parsePositiveInt reads a decimal integer greater than zero.
func parsePositiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("must be positive, got %d", n)
	}
	return n, nil
}

// parsePositiveDuration reads the single argument of the current option as a Caddy
// duration greater than zero; errors carry the Caddyfile position.
func parsePositiveDuration(d *caddyfile.Dispenser) (caddy.Duration, error) {
	opt := d.Val()
	var v string
	if !d.AllArgs(&v) {
		return 0, d.ArgErr()
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil {
		return 0, d.Errf("%s: parsing duration %q: %v", opt, v, err)
	}
	if dur <= 0 {
		return 0, d.Errf("%s: must be positive, got %q", opt, v)
	}
	return caddy.Duration(dur), nil
}
