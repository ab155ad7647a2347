package nonce

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// redisPool shares Redis clients across config reloads, keyed by the resolved connection
// settings, so a reload reuses the connections and Cleanup closes them on the last release.
var redisPool = caddy.NewUsagePool()

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

// Ping checks that Redis answers: every master of a Cluster, or the one server.
func (r *Redis) Ping(ctx context.Context) error {
	if r.conn == nil {
		return errors.New("redis nonce store not provisioned")
	}
	return r.conn.ping(ctx)
}

// redisConn is one shared client with its reachability checker.
type redisConn struct {
	client   redis.UniversalClient
	batch    *batcher        // a single server's or Sentinel master's claims
	cluster  *clusterBatches // a Cluster's claims, batched per master
	target   string
	up       atomic.Bool
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newRedisConn(client redis.UniversalClient, target string, interval time.Duration) *redisConn {
	c := &redisConn{client: client, target: target, stop: make(chan struct{}), done: make(chan struct{})}
	switch cl := client.(type) {
	case *redis.Client:
		c.batch = newBatcher(cl)
	case *redis.ClusterClient:
		c.cluster = newClusterBatches(cl)
	}
	go c.watch(interval)
	return c
}

// send sends a claim's command on key once, batched with the claims made at the same
// moment for the same server (redis_batch.go, redis_cluster_batch.go). When it returns an
// error, cmd must not be read.
func (c *redisConn) send(ctx context.Context, key string, cmd redis.Cmder) error {
	switch {
	case c.batch != nil:
		return c.batch.do(ctx, cmd)
	case c.cluster != nil:
		return c.cluster.do(ctx, key, cmd)
	}
	_ = c.client.Process(ctx, cmd)
	return nil
}

func (c *redisConn) ping(ctx context.Context) error {
	_, err := c.pingMasters(ctx)
	return err
}

// pingMasters pings the one server, or every master of a Cluster and returns their
// clients.
func (c *redisConn) pingMasters(ctx context.Context) (masters map[*redis.Client]bool, err error) {
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		masters = make(map[*redis.Client]bool)
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			masters[n] = true
			mu.Unlock()
			return n.Ping(ctx).Err()
		})
	} else {
		err = c.client.Ping(ctx).Err()
	}
	c.up.Store(err == nil)
	if err != nil {
		return nil, fmt.Errorf("pinging redis: %v", err)
	}
	return masters, nil
}

// watch pings Redis until the last user of the client is cleaned up.
func (c *redisConn) watch(interval time.Duration) {
	defer close(c.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	var last time.Time
	for {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		masters, err := c.pingMasters(ctx)
		cancel()
		if c.cluster != nil && err == nil && !last.IsZero() {
			// a batcher unused since the last ping, of a node that is no longer a master
			c.cluster.retire(masters, last)
		}
		last = start
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
	if c.cluster != nil {
		c.cluster.close()
	}
	return c.client.Close()
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

// Interface guards
var _ caddy.Destructor = (*redisConn)(nil)
