package nonce

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
	DefaultKeyPrefix    = "partnergate:nonce:"
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = 500 * time.Millisecond
	DefaultWriteTimeout = 500 * time.Millisecond
	DefaultPingInterval = 2 * time.Second
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

// redisBuckets is the number of hash-tag buckets a key falls in (the first byte of its
// hash). Keys of one bucket live in one Cluster slot, so the clean-start guard's script can
// read the bucket's marker and write the nonce atomically, while 256 buckets still spread
// the load over the masters of a Cluster.
const redisBuckets = 256

// redisPool shares Redis clients across config reloads, keyed by the resolved connection
// settings, so a reload reuses the connections and Cleanup closes them on the last release.
var redisPool = caddy.NewUsagePool()

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
		r.KeyPrefix = DefaultKeyPrefix
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = caddy.Duration(DefaultDialTimeout)
	}
	if r.ReadTimeout == 0 {
		r.ReadTimeout = caddy.Duration(DefaultReadTimeout)
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = caddy.Duration(DefaultWriteTimeout)
	}
	if r.PingInterval == 0 {
		r.PingInterval = caddy.Duration(DefaultPingInterval)
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

// redisLoggerOnce routes go-redis's own messages (failed dials, cluster and sentinel
// events) into Caddy's structured log instead of bare stderr lines. go-redis's logger is
// process-wide, as is Caddy's default logger.
var redisLoggerOnce sync.Once

// redisLogInterval is the least time between two go-redis messages of one kind in the log.
// While Redis is down go-redis reports a failed dial for every request that tries to
// connect, and the handler already logs one error line per refused request: one line per
// interval, with the count of those held back, shows the cause without flooding the log.
const redisLogInterval = 30 * time.Second

// caddyRedisLogger writes go-redis's messages at warn, at most one per redisLogInterval for
// each format string (go-redis's formats are constants, so the maps stay small). It looks
// up the logger on every message, so that it follows the logging configuration of the
// config that is running now, not of the first one.
type caddyRedisLogger struct {
	now    func() time.Time
	logger func() *zap.Logger

	mu         sync.Mutex
	next       map[string]time.Time // format → when it may be logged again
	suppressed map[string]int       // format → messages held back since it was logged
}

func newCaddyRedisLogger(now func() time.Time, logger func() *zap.Logger) *caddyRedisLogger {
	return &caddyRedisLogger{now: now, logger: logger, next: map[string]time.Time{}, suppressed: map[string]int{}}
}

func (l *caddyRedisLogger) Printf(_ context.Context, format string, v ...any) {
	now := l.now()
	l.mu.Lock()
	if now.Before(l.next[format]) {
		l.suppressed[format]++
		l.mu.Unlock()
		return
	}
	held := l.suppressed[format]
	delete(l.suppressed, format)
	l.next[format] = now.Add(redisLogInterval)
	l.mu.Unlock()
	var fields []zap.Field
	if held > 0 {
		fields = append(fields, zap.Int("suppressed", held))
	}
	l.logger().Warn(fmt.Sprintf(format, v...), fields...)
}

// keepMarkers writes the clean-start marker of every bucket that has none, at start and
// every interval until the config is unloaded. The claim script writes a missing marker
// too, but only for its own bucket; writing them all at once means that after a new or
// wiped Redis every bucket starts remembering at the same moment, so the guard refuses new
// tokens for one partner leeway (plus ClockSkewMargin) after that moment rather than after
// the first use of each bucket.
func (r *Redis) keepMarkers(ctx context.Context, client redis.UniversalClient, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.writeMarkers(ctx, client, interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Redis) writeMarkers(ctx context.Context, client redis.UniversalClient, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := r.now().UnixMilli()
	// pipelined: go-redis splits the pipeline by slot on a Cluster
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range redisBuckets {
			p.SetNX(ctx, r.KeyPrefix+bucketTags[b]+"epoch", now, 0)
		}
		return nil
	})
}

// connectionKey identifies the settings that make a client: two configs with the same
// settings (as before and after a reload) share one client and its connections.
func (r *Redis) connectionKey() (string, error) {
	b, err := json.Marshal(struct {
		Address                     string
		Addresses                   []string
		MasterName                  string
		DB                          int
		Username, Password, SPass   string
		TLS                         *RedisTLS
		Dial, Read, Write, PoolSize int64
		Ping                        int64
	}{r.Address, r.Addresses, r.MasterName, r.DB, r.Username, r.Password, r.SentinelPassword, r.TLS,
		int64(r.DialTimeout), int64(r.ReadTimeout), int64(r.WriteTimeout), int64(r.PoolSize), int64(r.PingInterval)})
	if err != nil {
		return "", err
	}
	// hashed so that the password is not kept in the pool's key
	sum := sha256.Sum256(b)
	return "redis/" + hex.EncodeToString(sum[:]), nil
}

func (r *Redis) clientOptions() (*redis.UniversalOptions, error) {
	opts := &redis.UniversalOptions{
		DB:               r.DB,
		Username:         r.Username,
		Password:         r.Password,
		SentinelPassword: r.SentinelPassword,
		MasterName:       r.MasterName,
		DialTimeout:      time.Duration(r.DialTimeout),
		ReadTimeout:      time.Duration(r.ReadTimeout),
		WriteTimeout:     time.Duration(r.WriteTimeout),
		PoolSize:         r.PoolSize,
		// A retried SET NX whose first attempt was applied but whose reply was lost
		// would answer "replayed" for a fresh token; without retries the request fails
		// with 503 and Retry-After instead, which is the honest answer.
		MaxRetries: -1,
		// One dial attempt per command: a down Redis must fail the request within
		// dial_timeout, not after go-redis's five attempts with backoff. go-redis keeps
		// probing in the background and the pool recovers by itself.
		DialerRetries: 1,
		// Honour the request's deadline as well as ReadTimeout.
		ContextTimeoutEnabled: true,
		// Keep the handshake to what is needed: no CLIENT SETINFO round trip.
		DisableIdentity: true,
	}
	if r.Address != "" {
		opts.Addrs = []string{r.Address}
	} else {
		opts.Addrs = append([]string(nil), r.Addresses...)
		// a Cluster even when only one seed node is listed
		opts.IsClusterMode = r.MasterName == ""
	}
	if r.TLS != nil {
		cfg, err := r.TLS.config()
		if err != nil {
			return nil, err
		}
		opts.TLSConfig = cfg
	}
	return opts, nil
}

func (t *RedisTLS) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading tls ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s: no PEM certificate found", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading tls client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
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

// claimScriptSource is the claim with the clean-start guard, one atomic step on the key's
// slot: KEYS[1] the nonce key, KEYS[2] its bucket's marker; ARGV[1] the expiry (Unix ms),
// ARGV[2] the earliest time the token was acceptable less ClockSkewMargin (Unix ms), ARGV[3]
// now (Unix ms). It answers 1 fresh, 0 replayed, -1 acceptable before the marker.
const claimScriptSource = `
local epoch = redis.call('GET', KEYS[2])
if not epoch then
	epoch = ARGV[3]
	redis.call('SET', KEYS[2], epoch)
end
if tonumber(ARGV[2]) < tonumber(epoch) then
	return -1
end
if redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', ARGV[1]) then
	return 1
end
return 0
`

// claimScriptSHA is the SHA-1 that EVALSHA runs the script by.
var claimScriptSHA = redis.NewScript(claimScriptSource).Hash()

// The claim's commands are sent at most once. MaxRetries -1 stops a single server's or
// Sentinel client's retries, but a ClusterClient re-sends a command after a timeout or a
// dropped connection within its MaxRedirects loop, and only the command's NoRetry stops
// that. A claim whose reply was lost may have been applied: sent again, SET NX finds the
// key its first attempt wrote and answers nil, so a fresh token would be refused as a
// replay (409) instead of 503, after up to four read timeouts. go-redis still follows
// MOVED and ASK (and READONLY) for a NoRetry command: there the command was not run.
type (
	onceStatusCmd struct{ *redis.StatusCmd }
	onceCmd       struct{ *redis.Cmd }
)

func (onceStatusCmd) NoRetry() bool { return true }
func (onceCmd) NoRetry() bool       { return true }

// evalOnce sends name (evalsha or eval) with script, keys and args once and returns the
// command with its reply, or the error that kept it from one.
func evalOnce(ctx context.Context, c *redisConn, name, script string, keys []string, args ...any) (*redis.Cmd, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	cmd.SetFirstKeyPos(3) // the Cluster slot is the first key's
	if err := c.send(ctx, onceCmd{cmd}); err != nil {
		return nil, err
	}
	return cmd, nil
}

// Claim implements Store.
func (r *Redis) Claim(ctx context.Context, e Entry) (bool, error) {
	if r.conn == nil {
		return false, errors.New("redis nonce store not provisioned")
	}
	start := time.Now()
	fresh, err := r.claim(ctx, e)
	r.metrics.observe(r.target, time.Since(start), fresh, err)
	return fresh, err
}

func (r *Redis) claim(ctx context.Context, e Entry) (bool, error) {
	bucket, hash := redisKeyParts(e.Partner, e.Nonce)
	key := r.KeyPrefix + bucket + hash
	// Rounded up to the millisecond, and ClockSkewMargin later by Redis's clock: the key
	// must not vanish while any gateway still accepts the token.
	untilMS := (e.Until.Add(ClockSkewMargin).UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	c := r.conn
	if !r.RequireCleanStart {
		cmd := redis.NewStatusCmd(ctx, "set", key, "1", "nx", "pxat", untilMS)
		if err := c.send(ctx, onceStatusCmd{cmd}); err != nil {
			return false, fmt.Errorf("claiming nonce in redis: %w", err)
		}
		v, err := cmd.Result()
		switch {
		case errors.Is(err, redis.Nil):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("claiming nonce in redis: %w", err)
		case v == "OK":
			return true, nil
		default:
			return false, fmt.Errorf("claiming nonce in redis: unexpected reply %.40q", v)
		}
	}
	from := e.AcceptableFrom.Add(-ClockSkewMargin).UnixMilli()
	keys := []string{key, r.KeyPrefix + bucket + "epoch"}
	cmd, err := evalOnce(ctx, c, "evalsha", claimScriptSHA, keys, untilMS, from, r.now().UnixMilli())
	if err == nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// the script was not run (a new or restarted server): sending it is no retry
		cmd, err = evalOnce(ctx, c, "eval", claimScriptSource, keys, untilMS, from, r.now().UnixMilli())
	}
	var v int64
	if err == nil {
		v, err = cmd.Int64()
	}
	switch {
	case err != nil:
		return false, fmt.Errorf("claiming nonce in redis: %w", err)
	case v == 1:
		return true, nil
	case v == 0:
		return false, nil
	case v == -1:
		return false, ErrTooOld
	default:
		return false, fmt.Errorf("claiming nonce in redis: unexpected reply %d", v)
	}
}

// redisKeyParts returns the hash-tag bucket "{bb}" and the base64url 128-bit hash of a
// partner's nonce. The partner is length-prefixed so that no (partner, nonce) pair can be
// spelled as another.
func redisKeyParts(partner, nonce string) (bucket, hash string) {
	var buf [512]byte
	b := buf[:0]
	if n := binary.MaxVarintLen64 + len(partner) + len(nonce); n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = binary.AppendUvarint(b, uint64(len(partner)))
	b = append(b, partner...)
	b = append(b, nonce...)
	sum := sha256.Sum256(b)
	return bucketTags[sum[0]], base64.RawURLEncoding.EncodeToString(sum[:16])
}

// bucketTags are the 256 hash tags "{00}" … "{ff}", made once.
var bucketTags = func() (tags [redisBuckets]string) {
	for i := range tags {
		tags[i] = "{" + hex.EncodeToString([]byte{byte(i)}) + "}"
	}
	return tags
}()

// Ping implements Pinger: it checks every master of a Cluster, or the one server.
func (r *Redis) Ping(ctx context.Context) error {
	if r.conn == nil {
		return errors.New("redis nonce store not provisioned")
	}
	return r.conn.ping(ctx)
}

// redisConn is one shared client with its reachability checker.
type redisConn struct {
	client   redis.UniversalClient
	batch    *batcher // nil for a Cluster, whose claims go one by one
	target   string
	up       atomic.Bool
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newRedisConn(client redis.UniversalClient, target string, interval time.Duration) *redisConn {
	c := &redisConn{client: client, target: target, stop: make(chan struct{}), done: make(chan struct{})}
	if single, ok := client.(*redis.Client); ok {
		c.batch = newBatcher(single)
	}
	go c.watch(interval)
	return c
}

// send sends a claim's command once, batched with the claims made at the same moment
// where the client allows it (redis_batch.go). When it returns an error, cmd must not be
// read.
func (c *redisConn) send(ctx context.Context, cmd redis.Cmder) error {
	if c.batch == nil {
		_ = c.client.Process(ctx, cmd)
		return nil
	}
	return c.batch.do(ctx, cmd)
}

func (c *redisConn) ping(ctx context.Context) error {
	var err error
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		})
	} else {
		err = c.client.Ping(ctx).Err()
	}
	c.up.Store(err == nil)
	if err != nil {
		return fmt.Errorf("pinging redis: %v", err)
	}
	return nil
}

// watch pings Redis until the last user of the client is cleaned up.
func (c *redisConn) watch(interval time.Duration) {
	defer close(c.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		_ = c.ping(ctx)
		cancel()
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// Destruct stops the checker and closes the client; the usage pool calls it when the last
// user is cleaned up.
func (c *redisConn) Destruct() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	if c.batch != nil {
		c.batch.close()
	}
	return c.client.Close()
}

// Interface guards
var (
	_ Store              = (*Redis)(nil)
	_ Pinger             = (*Redis)(nil)
	_ caddy.Provisioner  = (*Redis)(nil)
	_ caddy.Validator    = (*Redis)(nil)
	_ caddy.CleanerUpper = (*Redis)(nil)
	_ caddy.Destructor   = (*redisConn)(nil)
)
