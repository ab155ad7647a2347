package nonce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Redis{})
}

// Defaults of the redis store. The timeouts are short because every claim is on the
// request path: a Redis slower than this fails the request closed (503) rather than
// holding a connection for seconds.
const (
	defaultKeyPrefix    = "partnergate:nonce:"
	defaultDialTimeout  = time.Second
	defaultReadTimeout  = 500 * time.Millisecond
	defaultWriteTimeout = 500 * time.Millisecond
	defaultPingInterval = 2 * time.Second
)

// ClockSkewMargin is how far apart the clocks of the hosts sharing a Redis store (the
// gateways and the Redis servers, all kept by NTP) may be without weakening the store:
//   - A key's expiry (PXAT) is read by Redis's clock: it is set ClockSkewMargin after the
//     entry's Until, so that a Redis clock running ahead of a gateway's does not drop a
//     nonce whose token that gateway still accepts, which would let the token be replayed.
//     It costs that much more memory per key (under 2% at the default 5m30s token window).
//   - The clean-start guard refuses tokens acceptable before the bucket's marker plus
//     ClockSkewMargin: the marker is written by one gateway's clock, and a claim it must
//     catch may have been made by another's.
const ClockSkewMargin = 5 * time.Second

// Redis is the shared nonce store, module http.jwt_partner.nonce_stores.redis: every
// gateway instance that points at the same Redis (single node, Sentinel or Cluster) sees
// every other's nonces, so a token replayed at any of them is refused.
//
// A claim is one atomic round trip, SET key 1 NX PXAT <Until + ClockSkewMargin>: the key is
// set only if absent and expires when the token can no longer be accepted anyway. The key is
// key_prefix + "{bb}" + base64url of the first 128 bits of SHA-256(len(partner) ‖ partner ‖
// nonce), where bb is the hash's first byte in hex: no partner-supplied text appears in a
// key, and because the partner is length-prefixed inside the hash two partners' keys cannot
// collide. Any failure (unreachable, timeout, OOM, READONLY, an unexpected reply) is an
// error, which the gateway turns into 503 nonce_store_unavailable.
//
// Caddy starts while Redis is down: Provision does not connect, and go-redis reconnects by
// itself when Redis is back. See docs/redis.md for topologies, durability and the
// require_clean_start guard.
type Redis struct {
	// Address is host:port of a single Redis server. Exclusive with Addresses.
	Address string `json:"address,omitempty"`

	// Addresses lists the seed nodes of a Redis Cluster or, with MasterName, the
	// Sentinels. Exclusive with Address.
	Addresses []string `json:"addresses,omitempty"`

	// MasterName is the Sentinel master name; it makes Addresses the Sentinels.
	MasterName string `json:"master_name,omitempty"`

	// DB is the database number (single node and Sentinel only; Cluster has only 0).
	DB int `json:"db,omitempty"`

	// Username is the ACL user name. Placeholders such as {env.REDIS_USER} are expanded.
	Username string `json:"username,omitempty"`

	// Password is the password. Placeholders such as {env.REDIS_PASSWORD} are expanded,
	// so the secret stays out of the config file; a placeholder that expands to nothing is
	// a configuration error.
	Password string `json:"password,omitempty"`

	// SentinelPassword is the password of the Sentinels, when they require one.
	// Placeholders are expanded.
	SentinelPassword string `json:"sentinel_password,omitempty"`

	// TLS enables TLS to Redis (and the Sentinels) when present.
	TLS *RedisTLS `json:"tls,omitempty"`

	// KeyPrefix starts every key the store writes. Default "partnergate:nonce:". It must
	// not contain braces, which would change the Cluster hash tag.
	KeyPrefix string `json:"key_prefix,omitempty"`

	// DialTimeout bounds connecting to a server. Default 1s.
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`

	// ReadTimeout bounds waiting for a reply; a slower Redis fails the claim. Default 500ms.
	ReadTimeout caddy.Duration `json:"read_timeout,omitempty"`

	// WriteTimeout bounds sending a command. Default 500ms.
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`

	// PoolSize is the number of connections per server. Default: go-redis's, 10 per CPU.
	PoolSize int `json:"pool_size,omitempty"`

	// PingInterval is how often the store checks that Redis answers, for the reachability
	// metric. Default 2s.
	PingInterval caddy.Duration `json:"ping_interval,omitempty"`

	// RequireCleanStart turns on the durability guard: each key bucket carries a marker
	// with the time the store began remembering nonces there, written when the bucket was
	// found without one (a new or wiped Redis); a token that the gateway could have
	// accepted before that time (Entry.AcceptableFrom, its nbf less its partner's leeway)
	// plus ClockSkewMargin is refused with ErrTooOld, since its nonce may have been claimed
	// and forgotten. Default off. See docs/redis.md.
	RequireCleanStart bool `json:"require_clean_start,omitempty"`

	now         func() time.Time
	stopMarkers func()
	poolKey     string
	conn        *redisConn
	metrics     *redisMetrics
	target      string
}

// RedisTLS configures TLS to Redis. The server certificate is always verified: there is no
// switch to skip verification, because a store reached through an unverified connection
// could be impersonated to accept every replay.
type RedisTLS struct {
	// CAFile is a PEM file of the CAs that sign the server certificates. Default: the
	// system roots.
	CAFile string `json:"ca_file,omitempty"`

	// CertFile is the PEM client certificate, for servers that require one. Needs KeyFile.
	CertFile string `json:"cert_file,omitempty"`

	// KeyFile is the PEM private key of CertFile.
	KeyFile string `json:"key_file,omitempty"`

	// ServerName is the name to verify in the server certificate. Default: the host of the
	// address dialled.
	ServerName string `json:"server_name,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Redis) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.jwt_partner.nonce_stores.redis",
		New: func() caddy.Module { return new(Redis) },
	}
}

// Provision expands placeholders, applies the defaults and attaches to a shared client for
// these connection settings. It does not connect: Caddy starts while Redis is down.
func (r *Redis) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	expand := func(field, s string) (string, error) {
		if s == "" {
			return "", nil
		}
		// unknown placeholders stay as they are, so that a password may contain braces
		out, err := repl.ReplaceOrErr(s, false, false)
		if err != nil {
			return "", fmt.Errorf("%s: %v", field, err)
		}
		if out == "" {
			return "", fmt.Errorf("%s: placeholders expanded to an empty value", field)
		}
		return out, nil
	}
	var err error
	if r.Address, err = expand("address", r.Address); err != nil {
		return err
	}
	for i := range r.Addresses {
		if r.Addresses[i], err = expand("addresses", r.Addresses[i]); err != nil {
			return err
		}
	}
	if r.Username, err = expand("username", r.Username); err != nil {
		return err
	}
	if r.Password, err = expand("password", r.Password); err != nil {
		return err
	}
	if r.SentinelPassword, err = expand("sentinel_password", r.SentinelPassword); err != nil {
		return err
	}
	if r.KeyPrefix == "" {
		r.KeyPrefix = defaultKeyPrefix
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = caddy.Duration(defaultDialTimeout)
	}
	if r.ReadTimeout == 0 {
		r.ReadTimeout = caddy.Duration(defaultReadTimeout)
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = caddy.Duration(defaultWriteTimeout)
	}
	if r.PingInterval == 0 {
		r.PingInterval = caddy.Duration(defaultPingInterval)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if r.now == nil {
		r.now = time.Now
	}

	opts, err := r.clientOptions()
	if err != nil {
		return err
	}
	r.target = r.Address
	if r.MasterName != "" {
		r.target = "sentinel:" + r.MasterName
	} else if r.Address == "" {
		r.target = "cluster:" + strings.Join(r.Addresses, ",")
	}
	r.poolKey, err = r.connectionKey()
	if err != nil {
		return err
	}
	target, interval := r.target, time.Duration(r.PingInterval)
	v, _, err := redisPool.LoadOrNew(r.poolKey, func() (caddy.Destructor, error) {
		return newRedisConn(redis.NewUniversalClient(opts), target, interval), nil
	})
	if err != nil {
		r.poolKey = ""
		return fmt.Errorf("creating redis client: %v", err)
	}
	r.conn = v.(*redisConn)
	r.metrics = registerRedisMetrics(ctx.GetMetricsRegistry())
	r.metrics.up.add(r.conn)
	redisLoggerOnce.Do(func() {
		redis.SetLogger(newCaddyRedisLogger(time.Now, func() *zap.Logger { return caddy.Log().Named("nonce.redis") }))
	})
	if r.RequireCleanStart {
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		r.stopMarkers = func() { cancel(); <-done }
		go func() {
			defer close(done)
			r.keepMarkers(mctx, r.conn.client, time.Duration(r.PingInterval))
		}()
	}
	return nil
}

// Validate rejects contradictory or impossible settings.
func (r *Redis) Validate() error {
	switch {
	case r.Address == "" && len(r.Addresses) == 0:
		return errors.New("redis nonce store: one of address (single server) or addresses (cluster or sentinels) is required")
	case r.Address != "" && len(r.Addresses) > 0:
		return errors.New("redis nonce store: address and addresses are exclusive: address is one server, addresses a cluster or the sentinels")
	case r.MasterName != "" && len(r.Addresses) == 0:
		return errors.New("redis nonce store: master_name needs the sentinels in addresses")
	case r.SentinelPassword != "" && r.MasterName == "":
		return errors.New("redis nonce store: sentinel_password needs master_name")
	case r.Username != "" && r.Password == "":
		return errors.New("redis nonce store: username needs password")
	case r.DB < 0:
		return fmt.Errorf("redis nonce store: db must not be negative, got %d", r.DB)
	case r.DB != 0 && len(r.Addresses) > 0 && r.MasterName == "":
		return errors.New("redis nonce store: db must be 0 with a cluster (addresses without master_name)")
	case r.DialTimeout < 0, r.ReadTimeout < 0, r.WriteTimeout < 0, r.PingInterval < 0:
		return errors.New("redis nonce store: timeouts and intervals must not be negative")
	case r.PoolSize < 0:
		return fmt.Errorf("redis nonce store: pool_size must not be negative, got %d", r.PoolSize)
	case strings.ContainsAny(r.KeyPrefix, "{}"):
		return errors.New("redis nonce store: key_prefix must not contain braces, which would change the cluster hash slot")
	}
	for _, a := range append([]string{r.Address}, r.Addresses...) {
		if strings.TrimSpace(a) != a {
			return fmt.Errorf("redis nonce store: address %q has surrounding spaces", a)
		}
	}
	for _, a := range r.Addresses {
		if a == "" {
			return errors.New("redis nonce store: empty entry in addresses")
		}
	}
	if t := r.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("redis nonce store: tls cert_file and key_file go together")
	}
	return nil
}

// Cleanup releases this instance's client; the last release closes the connections and
// stops the reachability checks. It is safe after a failed or partial Provision.
//
// r.conn stays set: on a reload Caddy cleans up the old config while requests it admitted
// may still be claiming, so Cleanup must not write what Claim reads. Once the last user has
// released the client it is closed, and those claims fail closed.
func (r *Redis) Cleanup() error {
	if r.stopMarkers != nil {
		r.stopMarkers()
		r.stopMarkers = nil
	}
	if r.poolKey == "" {
		return nil
	}
	if r.metrics != nil {
		r.metrics.up.remove(r.conn)
	}
	_, err := redisPool.Delete(r.poolKey)
	r.poolKey = ""
	return err
}

// Interface guards
var (
	_ Pinger             = (*Redis)(nil)
	_ caddy.Provisioner  = (*Redis)(nil)
	_ caddy.Validator    = (*Redis)(nil)
	_ caddy.CleanerUpper = (*Redis)(nil)
)
