package nonce

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UnmarshalCaddyfile sets up the store from Caddyfile tokens; the dispenser is positioned
// on the store name. The one-line form takes a single server's address.
//
// Syntax:
//
//	nonce_store redis [<address>] {
//		address             <host:port>
//		addresses           <host:port>...
//		master_name         <name>
//		db                  <n>
//		username            <user>
//		password            <password>
//		sentinel_password   <password>
//		tls {
//			ca_file     <path>
//			cert_file   <path>
//			key_file    <path>
//			server_name <name>
//		}
//		key_prefix          <prefix>
//		dial_timeout        <duration>
//		read_timeout        <duration>
//		write_timeout       <duration>
//		pool_size           <n>
//		ping_interval       <duration>
//		require_clean_start
//	}
func (r *Redis) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // store name
	if d.NextArg() {
		r.Address = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	seen := map[string]bool{}
	if r.Address != "" {
		seen["address"] = true
	}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] {
			return d.Errf("duplicate option %q", opt)
		}
		seen[opt] = true
		var err error
		switch opt {
		case "address":
			err = oneArg(d, &r.Address)
		case "addresses":
			r.Addresses = d.RemainingArgs()
			if len(r.Addresses) == 0 {
				return d.ArgErr()
			}
		case "master_name":
			err = oneArg(d, &r.MasterName)
		case "db":
			var v string
			if err = oneArg(d, &v); err != nil {
				return err
			}
			n, convErr := strconv.Atoi(v)
			if convErr != nil || n < 0 {
				return d.Errf("db: %q is not a database number", v)
			}
			r.DB = n
		case "username":
			err = oneArg(d, &r.Username)
		case "password":
			err = oneArg(d, &r.Password)
		case "sentinel_password":
			err = oneArg(d, &r.SentinelPassword)
		case "tls":
			err = r.unmarshalTLS(d)
		case "key_prefix":
			err = oneArg(d, &r.KeyPrefix)
		case "dial_timeout":
			r.DialTimeout, err = parsePositiveDuration(d)
		case "read_timeout":
			r.ReadTimeout, err = parsePositiveDuration(d)
		case "write_timeout":
			r.WriteTimeout, err = parsePositiveDuration(d)
		case "ping_interval":
			r.PingInterval, err = parsePositiveDuration(d)
		case "pool_size":
			var v string
			if err = oneArg(d, &v); err != nil {
				return err
			}
			n, convErr := parsePositiveInt(v)
			if convErr != nil {
				return d.Errf("pool_size: %v", convErr)
			}
			r.PoolSize = n
		case "require_clean_start":
			if d.NextArg() {
				return d.ArgErr()
			}
			r.RequireCleanStart = true
		default:
			return d.Errf("unknown redis nonce store option %q", opt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Redis) unmarshalTLS(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	r.TLS = new(RedisTLS)
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		if seen[opt] {
			return d.Errf("duplicate tls option %q", opt)
		}
		seen[opt] = true
		var err error
		switch opt {
		case "ca_file":
			err = oneArg(d, &r.TLS.CAFile)
		case "cert_file":
			err = oneArg(d, &r.TLS.CertFile)
		case "key_file":
			err = oneArg(d, &r.TLS.KeyFile)
		case "server_name":
			err = oneArg(d, &r.TLS.ServerName)
		case "insecure_skip_verify":
			return d.Err("tls insecure_skip_verify is not offered: an unverified store could be impersonated to accept replays; configure ca_file instead")
		default:
			return d.Errf("unknown tls option %q", opt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// oneArg reads exactly one argument of the current option.
func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.AllArgs(dst) {
		return d.ArgErr()
	}
	return nil
}

var _ caddyfile.Unmarshaler = (*Redis)(nil)
