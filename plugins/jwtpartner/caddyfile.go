package jwtpartner

import (
	"fmt"
	"math"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("jwt_partner", parseCaddyfile)
	// Before reverse_proxy, so that a site needs no global order option: the handler must
	// run before the request is proxied.
	httpcaddyfile.RegisterDirectiveOrder("jwt_partner", httpcaddyfile.Before, "reverse_proxy")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	jwt_partner [<matcher>] {
//		partner <name> {
//			issuer           <iss>
//			audience         <aud>
//			algorithms       <RS256|PS256|ES256...>
//			jwks_file        <path>
//			jwks_url         <url>
//			jwks_ca_file     <pem>
//			refresh_min      <duration>
//			refresh_max      <duration>
//			refresh_cooldown <duration>
//			max_stale        <duration>
//			kinds            <main|go...>
//			max_lifetime     <duration>
//			leeway           <duration>|0
//			nonce_min_length <n>
//			nonce_max_length <n>
//			origins          <origin|null...>
//			dry_run          [<events>/<window>]
//		}
//		leeway          <duration>|0
//		max_lifetime    <duration>
//		max_body_size   <size>
//		read_timeout    <duration>|off
//		header_prefix   <prefix>
//		field_headers   all|<path...>
//		nonce_store     <module> { ... }
//		upstream_secret <secret>
//		errors          respond|handle_errors
//	}
//
// partner may repeat, once per name, and field_headers may repeat, each line adding paths
// (JSON paths of payload fields, such as contact.id; or all, alone); every other
// subdirective may appear once. Each partner needs issuer, audience and exactly one of
// jwks_file and jwks_url; jwks_ca_file only with jwks_url. A jwks_file and a jwks_ca_file
// are read at provisioning, not here: caddy validate reports one that does not load with
// the partner and the path. Durations are positive, except that leeway 0 asks for no
// leeway at all (JSON -1: a zero there is the default). origins lists the origins of the
// partner's pages whose forms post to /payload, as browsers send them (Origins). dry_run,
// for test environments only, turns on the partner's POST /partner/<name>/check (DryRun),
// 10/1m unless a rate is given.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	issuers := map[issuerAudience]string{} // the partner that has each
	for d.NextBlock(0) {
		opt := d.Val()
		if opt != "partner" && opt != "field_headers" {
			if seen[opt] {
				return d.Errf("%s: given more than once", opt)
			}
			seen[opt] = true
		}
		switch opt {
		case "partner":
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			if err := checkPartnerName(name); err != nil {
				return d.WrapErr(err)
			}
			if _, dup := h.Partners[name]; dup {
				return d.Errf("partner %s: configured more than once", name)
			}
			if d.NextArg() {
				return d.ArgErr()
			}
			file, line := d.File(), d.Line()
			p, err := unmarshalPartner(d, name)
			if err != nil {
				return err
			}
			if other, ok := issuers[issuerAudience{p.Issuer, p.Audience}]; ok {
				return fmt.Errorf("%s, at %s:%d", sharedIssuerAudienceError(other, name, p), file, line)
			}
			issuers[issuerAudience{p.Issuer, p.Audience}] = name
			if h.Partners == nil {
				h.Partners = make(map[string]*Partner)
			}
			h.Partners[name] = p

		case "leeway":
			if err := leewayArg(d, &h.Leeway); err != nil {
				return err
			}
		case "max_lifetime":
			if err := durationArg(d, &h.MaxLifetime); err != nil {
				return err
			}
			if err := checkMaxLifetime(h.MaxLifetime); err != nil {
				return d.Errf("max_lifetime: %v", err)
			}
		case "max_body_size":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n == 0 {
				// Zero would silently mean the default; a Caddyfile that writes it means none.
				return d.Errf("max_body_size %q: %s", s, wantBodySize)
			}
			h.MaxBodySize = int64(min(n, math.MaxInt64))
			if err := checkMaxBodySize(h.MaxBodySize); err != nil {
				return d.Errf("max_body_size %q: %v", s, err)
			}
		case "read_timeout":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			if s == "off" {
				// For a gateway behind something that already bounds slow bodies (Caddy's
				// read_body timeout, a load balancer): JSON's negative duration.
				h.ReadTimeout = -1
				break
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("read_timeout %q: want a positive duration such as 30s, or off", s)
			}
			h.ReadTimeout = caddy.Duration(dur)
		case "header_prefix":
			if !d.AllArgs(&h.HeaderPrefix) {
				return d.ArgErr()
			}
			if err := checkHeaderPrefix(h.HeaderPrefix); err != nil {
				return d.Errf("%v", err)
			}
		case "field_headers":
			paths := d.RemainingArgs()
			if len(paths) == 0 {
				return d.ArgErr()
			}
			// Checked as a whole, so that all on a line of its own next to a line of paths
			// is refused too, at the line that makes the mix.
			h.FieldHeaders = append(h.FieldHeaders, paths...)
			if _, err := fieldHeaderMask(h.FieldHeaders); err != nil {
				return d.Errf("%v", err)
			}
		case "nonce_store":
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			unm, err := caddyfile.UnmarshalModule(d, "http.jwt_partner.nonce_stores."+name)
			if err != nil {
				return err
			}
			h.NonceStoreRaw = caddyconfig.JSONModuleObject(unm, "store", name, nil)
		case "upstream_secret":
			if !d.AllArgs(&h.UpstreamSecret) {
				return d.ArgErr()
			}
		case "errors":
			if !d.AllArgs(&h.Errors) {
				return d.ArgErr()
			}
			if err := checkErrorsMode(h.Errors); err != nil {
				return d.Errf("%v", err)
			}
		default:
			return d.Errf("unrecognized subdirective %q", opt)
		}
	}
	if len(h.Partners) == 0 {
		return d.Err("jwt_partner: at least one partner block is required")
	}
	return nil
}

// unmarshalPartner reads a partner block; the dispenser is on the partner's name.
func unmarshalPartner(d *caddyfile.Dispenser, name string) (*Partner, error) {
	file, line := d.File(), d.Line()
	p := new(Partner)
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		if seen[opt] {
			return nil, d.Errf("partner %s: %s given more than once", name, opt)
		}
		seen[opt] = true
		// err is the dispenser's, which names the line already; rule is an option's rule
		// (partners.go), named here with the partner and the line.
		var err, rule error
		switch opt {
		case "issuer":
			err = oneArg(d, &p.Issuer)
		case "audience":
			err = oneArg(d, &p.Audience)
		case "jwks_file":
			// Only the path: an adapter turns text into JSON, and Provision, which caddy
			// validate runs too, loads the file.
			err = oneArg(d, &p.JWKSFile)
		case "jwks_url":
			err = oneArg(d, &p.JWKSURL)
			if err == nil {
				rule = checkJWKSURL(p.JWKSURL)
			}
		case "jwks_ca_file":
			// Only the path, like jwks_file: Provision reads the file.
			err = oneArg(d, &p.JWKSCAFile)
		case "algorithms":
			p.Algorithms = d.RemainingArgs()
			if len(p.Algorithms) == 0 {
				return nil, d.ArgErr()
			}
			rule = checkAlgorithms(p.Algorithms)
		case "kinds":
			p.Kinds = d.RemainingArgs()
			if len(p.Kinds) == 0 {
				return nil, d.ArgErr()
			}
			rule = checkKinds(p.Kinds)
		case "refresh_min":
			err = durationArg(d, &p.RefreshMin)
		case "refresh_max":
			err = durationArg(d, &p.RefreshMax)
		case "refresh_cooldown":
			err = durationArg(d, &p.RefreshCooldown)
		case "max_stale":
			err = durationArg(d, &p.MaxStale)
		case "max_lifetime":
			err = durationArg(d, &p.MaxLifetime)
			if err == nil {
				if lerr := checkMaxLifetime(p.MaxLifetime); lerr != nil {
					rule = fmt.Errorf("max_lifetime: %v", lerr)
				}
			}
		case "leeway":
			err = leewayArg(d, &p.Leeway)
		case "nonce_min_length":
			err = intArg(d, &p.NonceMinLength)
		case "nonce_max_length":
			err = intArg(d, &p.NonceMaxLength)
		case "origins":
			p.Origins = d.RemainingArgs()
			if len(p.Origins) == 0 {
				return nil, d.ArgErr()
			}
			rule = checkOrigins(p.Origins)
		case "dry_run":
			p.DryRun, err = unmarshalDryRun(d, name)
		default:
			return nil, d.Errf("partner %s: unrecognized subdirective %q", name, opt)
		}
		if err != nil {
			return nil, err
		}
		if rule != nil {
			return nil, d.Errf("partner %s: %v", name, rule)
		}
	}
	// What the block as a whole must have is named at the partner's line.
	if err := p.checkRequired(); err != nil {
		return nil, fmt.Errorf("partner %s: %v, at %s:%d", name, err, file, line)
	}
	if err := checkJWKSCAFile(p); err != nil {
		return nil, fmt.Errorf("partner %s: %v, at %s:%d", name, err, file, line)
	}
	return p, nil
}

func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.AllArgs(dst) {
		return d.ArgErr()
	}
	return nil
}

func durationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	opt := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return d.Errf("%s %q: want a positive duration such as 30s", opt, s)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// noLeeway is the JSON leeway that the Caddyfile's "leeway 0" writes: in JSON a zero (or an
// absent value) takes the default, and a negative duration means none, as Caddy's own
// durations say "off" (reverse_proxy's flush_interval -1, the servers' timeouts).
const noLeeway = caddy.Duration(-1)

// leewayArg reads a leeway: a positive duration, or 0 for none.
func leewayArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur < 0 {
		return d.Errf("leeway %q: want a duration such as 30s, or 0 for none", s)
	}
	if err := checkLeeway(caddy.Duration(dur)); err != nil {
		return d.Errf("leeway %q: %v", s, err)
	}
	if dur == 0 {
		*dst = noLeeway
	} else {
		*dst = caddy.Duration(dur)
	}
	return nil
}

func intArg(d *caddyfile.Dispenser, dst *int) error {
	opt := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return d.Errf("%s %q: want a positive whole number", opt, s)
	}
	*dst = n
	return nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*Handler)(nil)
