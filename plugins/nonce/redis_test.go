package nonce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

// provisionRedis provisions r in a fresh Caddy context and cleans it up when the test ends.
func provisionRedis(t *testing.T, r *Redis) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := r.Provision(ctx); err != nil {
		cancel()
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
		cancel()
	})
	return ctx
}

func liveEntry(partner, nonce string) Entry {
	now := time.Now()
	return Entry{Partner: partner, Nonce: nonce, AcceptableFrom: now, Until: now.Add(time.Minute)}
}

// pastGuardStart makes e acceptable only after the markers the guard writes when the store
// starts (with the current time), so that the guard lets its claim reach the write.
func pastGuardStart(e Entry) Entry {
	e.AcceptableFrom = e.AcceptableFrom.Add(2 * ClockSkewMargin)
	return e
}

// claimCtx claims e with a request deadline long enough never to be what ends a claim in a
// test on a loaded machine: the store's read timeout, or the test, does.
func claimCtx(t *testing.T, s Store, e Entry) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Claim(ctx, e)
}

// eventually retries f until it succeeds or the deadline passes; recovery tests use it
// because reconnecting takes an unknown number of attempts.
func eventually(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRedisClaim(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr()}
	provisionRedis(t, r)
	steps := []struct {
		name, partner, nonce string
		want                 bool
	}{
		{"first use is fresh", "acme", "nonce-redis-000001", true},
		{"same partner and nonce is a replay", "acme", "nonce-redis-000001", false},
		{"same nonce from another partner is fresh", "globex", "nonce-redis-000001", true},
		{"and is then a replay there too", "globex", "nonce-redis-000001", false},
		{"partner/nonce boundary ab|c", "ab", "cnonce-redis-00001", true},
		{"partner/nonce boundary a|bc", "a", "bcnonce-redis-00001", true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := claimCtx(t, r, liveEntry(st.partner, st.nonce))
			if err != nil {
				t.Fatalf("Claim(%q, %q) error = %v", st.partner, st.nonce, err)
			}
			if got != st.want {
				t.Errorf("Claim(%q, %q) = %v, want %v", st.partner, st.nonce, got, st.want)
			}
		})
	}

	t.Run("keys hold no partner or nonce text", func(t *testing.T) {
		keys := srv.Client().Keys(context.Background(), "*").Val()
		if len(keys) != 4 {
			t.Fatalf("keys = %q, want 4", keys)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, DefaultKeyPrefix+"{") {
				t.Errorf("key %q does not start with %q", k, DefaultKeyPrefix+"{")
			}
			for _, text := range []string{"acme", "globex", "nonce-redis"} {
				if strings.Contains(k, text) {
					t.Errorf("key %q contains %q", k, text)
				}
			}
		}
	})
}

func TestRedisKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr(), KeyPrefix: "gw-test:"}
	provisionRedis(t, r)
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-prefix-00001")); err != nil || !fresh {
		t.Fatalf("Claim = %v, %v, want true, nil", fresh, err)
	}
	keys := srv.Client().Keys(context.Background(), "gw-test:{*}*").Val()
	if len(keys) != 1 {
		t.Errorf("keys under the prefix = %q, want 1", keys)
	}
}

// TestRedisKeysExpire: a claim's key lives until Until plus ClockSkewMargin, and is gone
// after it. The expiry time is read from Redis (PEXPIRETIME), never measured, so the test
// does not depend on how fast it runs.
func TestRedisKeysExpire(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr()}
	provisionRedis(t, r)
	ctx := context.Background()

	t.Run("expiry set to Until plus the margin", func(t *testing.T) {
		e := liveEntry("acme", "nonce-expire-000001") // Until a minute from now
		if fresh, err := claimCtx(t, r, e); err != nil || !fresh {
			t.Fatalf("Claim = %v, %v, want true, nil", fresh, err)
		}
		bucket, hash := redisKeyParts(e.Partner, e.Nonce)
		key := DefaultKeyPrefix + bucket + hash
		// The key must survive until Until (when the token can still be accepted), plus
		// the margin for a Redis clock ahead of the gateway's.
		want := e.Until.Add(ClockSkewMargin + time.Millisecond - 1).UnixMilli()
		if at := srv.Client().Do(ctx, "PEXPIRETIME", key).Val(); at != want {
			t.Errorf("PEXPIRETIME(key) = %v, want %d (Until + ClockSkewMargin, rounded up to the millisecond)", at, want)
		}
		if ttl, err := srv.Client().PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute+ClockSkewMargin+time.Millisecond {
			t.Errorf("PTTL(key) = %v, %v, want in (0, %s]", ttl, err, time.Minute+ClockSkewMargin)
		}
		if _, err := srv.Client().Del(ctx, key).Result(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("gone after it", func(t *testing.T) {
		// Until so close that the key lives about one second
		e := Entry{Partner: "acme", Nonce: "nonce-expire-000002", AcceptableFrom: time.Now(), Until: time.Now().Add(time.Second - ClockSkewMargin)}
		if fresh, err := claimCtx(t, r, e); err != nil || !fresh {
			t.Fatalf("Claim = %v, %v, want true, nil", fresh, err)
		}
		bucket, hash := redisKeyParts(e.Partner, e.Nonce)
		key := DefaultKeyPrefix + bucket + hash
		// no unbounded growth
		eventually(t, 30*time.Second, "key still exists after Until", func() error {
			if n := srv.Client().Exists(ctx, key).Val(); n != 0 {
				return fmt.Errorf("EXISTS = %d", n)
			}
			return nil
		})
		if n := srv.Client().DBSize(ctx).Val(); n != 0 {
			t.Errorf("DBSIZE after expiry = %d, want 0", n)
		}
	})
}

func TestRedisConcurrentSameNonce(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr()}
	provisionRedis(t, r)
	var fresh atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	e := liveEntry("acme", "nonce-concurrent-redis")
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := r.Claim(context.Background(), e)
			if err != nil {
				t.Errorf("Claim error = %v", err)
			}
			if ok {
				fresh.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := fresh.Load(); got != 1 {
		t.Errorf("fresh claims of one nonce from 50 goroutines = %d, want 1", got)
	}
}

func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	// Caddy starts while Redis is down: Provision does not connect.
	r := &Redis{Address: srv.Addr(), DialTimeout: caddy.Duration(200 * time.Millisecond), PingInterval: caddy.Duration(100 * time.Millisecond)}
	provisionRedis(t, r)

	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-down-00000001")); err == nil || fresh {
		t.Fatalf("Claim with Redis down = %v, %v, want false and an error", fresh, err)
	}
	if err := r.Ping(context.Background()); err == nil {
		t.Error("Ping with Redis down = nil, want an error")
	}

	srv.Restart()
	eventually(t, 30*time.Second, "claim after Redis came up", func() error {
		fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-down-00000002"))
		if err == nil && !fresh {
			t.Fatal("first successful claim of a new nonce was not fresh")
		}
		return err
	})

	// killed while in use, with pooled connections: errors, then recovery by itself
	srv.Kill()
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-down-00000003")); err == nil || fresh {
		t.Fatalf("Claim after Redis was killed = %v, %v, want false and an error", fresh, err)
	}
	srv.Restart()
	eventually(t, 30*time.Second, "claim after Redis restarted", func() error {
		_, err := claimCtx(t, r, liveEntry("acme", "nonce-down-00000004"))
		return err
	})
	if err := r.Ping(context.Background()); err != nil {
		t.Errorf("Ping after restart = %v, want nil", err)
	}
}

func TestRedisSlow(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr(), ReadTimeout: caddy.Duration(200 * time.Millisecond)}
	provisionRedis(t, r)
	if _, err := claimCtx(t, r, liveEntry("acme", "nonce-slow-00000001")); err != nil {
		t.Fatalf("Claim before pause: %v", err)
	}
	// SET waits until the unpause (the server's own end of the pause is only a backstop);
	// UNPAUSE itself still runs
	srv.Do("CLIENT", "PAUSE", 120000, "WRITE")
	t.Cleanup(func() { srv.Do("CLIENT", "UNPAUSE") })
	start := time.Now()
	fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-slow-00000002"))
	srv.Do("CLIENT", "UNPAUSE")
	if err == nil || fresh {
		t.Fatalf("Claim against a paused Redis = %v, %v, want false and a timeout error", fresh, err)
	}
	if !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Claim error = %q, want a timeout", err)
	}
	t.Logf("failed after %s", time.Since(start))
}

func TestRedisOOM(t *testing.T) {
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("require_clean_start=%v", guard), func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
			r := &Redis{Address: srv.Addr(), RequireCleanStart: guard}
			provisionRedis(t, r)
			srv.Do("CONFIG", "SET", "maxmemory", "1")
			e := pastGuardStart(liveEntry("acme", "nonce-oom-000000001"))
			fresh, err := claimCtx(t, r, e)
			if err == nil || fresh {
				t.Fatalf("Claim on an out-of-memory Redis = %v, %v, want false and an error", fresh, err)
			}
			if !strings.Contains(err.Error(), "OOM") {
				t.Errorf("Claim error = %q, want the OOM error", err)
			}
		})
	}
}

func TestRedisReadOnlyReplica(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.Port()))
	r := &Redis{Address: replica.Addr()}
	provisionRedis(t, r)
	fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-readonly-0001"))
	if err == nil || fresh {
		t.Fatalf("Claim on a read-only replica = %v, %v, want false and an error", fresh, err)
	}
	if !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("Claim error = %q, want the READONLY error", err)
	}
}

// fakeRedis answers the connection handshake and then every command with reply.
func fakeRedis(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					cmd, err := readCommand(rd)
					if err != nil {
						return
					}
					out := reply
					if strings.EqualFold(cmd, "hello") {
						out = "-ERR unknown command 'HELLO'\r\n"
					}
					if _, err := c.Write([]byte(out)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// readCommand reads one RESP array of bulk strings and returns its first element.
func readCommand(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d\r\n", &n); err != nil {
		return "", err
	}
	var first string
	for i := range n {
		if _, err := rd.ReadString('\n'); err != nil { // $len
			return "", err
		}
		arg, err := rd.ReadString('\n')
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = strings.TrimSuffix(arg, "\r\n")
		}
	}
	return first, nil
}

func TestRedisGarbageReplies(t *testing.T) {
	// guard: whether the reply is garbage to the clean-start script too (":1" is its
	// ordinary "fresh" answer)
	tests := []struct {
		name, reply string
		guard       bool
	}{
		{"unexpected status", "+QUEUED\r\n", true},
		{"unexpected bulk string", "$3\r\nfoo\r\n", true},
		{"integer", ":1\r\n", false},
		{"integer out of range", ":7\r\n", true},
		{"not RESP at all", "HTTP/1.1 400 Bad Request\r\n\r\n", true},
		{"error reply", "-ERR something broke\r\n", true},
	}
	for _, tt := range tests {
		for _, guard := range []bool{false, true} {
			if guard && !tt.guard {
				continue
			}
			t.Run(fmt.Sprintf("%s/require_clean_start=%v", tt.name, guard), func(t *testing.T) {
				r := &Redis{Address: fakeRedis(t, tt.reply), RequireCleanStart: guard}
				provisionRedis(t, r)
				fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-garbage-00001"))
				if err == nil || fresh {
					t.Errorf("Claim with reply %q = %v, %v, want false and an error", tt.reply, fresh, err)
				}
			})
		}
	}
}

func TestRedisCleanStartGuard(t *testing.T) {
	srv := redistest.Start(t)
	clk := newFakeClock()
	r := &Redis{Address: srv.Addr(), RequireCleanStart: true, now: clk.Now}
	provisionRedis(t, r)
	margin := ClockSkewMargin
	// from is the entry's AcceptableFrom: the token's nbf less its partner's leeway
	at := func(from time.Time, nonce string) Entry {
		return Entry{Partner: "acme", Nonce: nonce, AcceptableFrom: from, Until: time.Now().Add(time.Minute)}
	}

	// A new (empty) Redis: the store records its start in every bucket's marker; tokens
	// acceptable before it (plus the clock margin) may have been claimed in a Redis that
	// forgot them.
	start := clk.Now()
	eventually(t, 30*time.Second, "markers written", func() error {
		if n := len(srv.Client().Keys(context.Background(), DefaultKeyPrefix+"{*}epoch").Val()); n != redisBuckets {
			return fmt.Errorf("%d markers, want %d", n, redisBuckets)
		}
		return nil
	})
	if fresh, err := claimCtx(t, r, at(start.Add(-time.Minute), "nonce-guard-000001")); !errors.Is(err, ErrTooOld) || fresh {
		t.Fatalf("Claim of a token acceptable before the start = %v, %v, want false, ErrTooOld", fresh, err)
	}
	bucket, _ := redisKeyParts("acme", "nonce-guard-000001")
	if got := srv.Client().Get(context.Background(), DefaultKeyPrefix+bucket+"epoch").Val(); got != fmt.Sprint(start.UnixMilli()) {
		t.Fatalf("marker = %q, want %d", got, start.UnixMilli())
	}
	if fresh, err := claimCtx(t, r, at(start.Add(margin-time.Millisecond), "nonce-guard-000001")); !errors.Is(err, ErrTooOld) || fresh {
		t.Errorf("Claim of a token acceptable within the clock margin after the start = %v, %v, want false, ErrTooOld", fresh, err)
	}
	from := start.Add(margin)
	if fresh, err := claimCtx(t, r, at(from, "nonce-guard-000001")); err != nil || !fresh {
		t.Fatalf("Claim of a token acceptable from start + margin = %v, %v, want true, nil", fresh, err)
	}
	if fresh, err := claimCtx(t, r, at(from, "nonce-guard-000001")); err != nil || fresh {
		t.Fatalf("replay = %v, %v, want false, nil", fresh, err)
	}

	// The marker outlives the gateway's clock moving on: later tokens are accepted. This
	// one is of a partner whose leeway (2m) is longer than the handler's default: its nbf
	// is 2m ahead, and it was acceptable from now.
	clk.Advance(time.Hour)
	longLeeway := at(clk.Now(), "nonce-guard-000002")
	if fresh, err := claimCtx(t, r, longLeeway); err != nil || !fresh {
		t.Fatalf("Claim of a later token = %v, %v, want true, nil", fresh, err)
	}

	// Redis restarts without persistence and forgets everything. The replays of the tokens
	// claimed above are refused as too old instead of being accepted as fresh, whatever
	// their partner's leeway: the entry carries the time each became acceptable.
	srv.Restart()
	for _, e := range []Entry{at(from, "nonce-guard-000001"), longLeeway} {
		eventually(t, 30*time.Second, "claim after restart", func() error {
			fresh, err := claimCtx(t, r, e)
			if err == nil {
				t.Fatalf("replay after an empty restart = %v, nil, want ErrTooOld", fresh)
			}
			if errors.Is(err, ErrTooOld) {
				return nil
			}
			return err
		})
	}
	// Tokens acceptable after the restart (plus the margin) are accepted.
	if fresh, err := claimCtx(t, r, at(clk.Now().Add(margin), "nonce-guard-000003")); err != nil || !fresh {
		t.Fatalf("Claim of a token acceptable after the restart = %v, %v, want true, nil", fresh, err)
	}

	t.Run("without the guard the replay after a restart is accepted", func(t *testing.T) {
		plain := &Redis{Address: srv.Addr()}
		provisionRedis(t, plain)
		e := liveEntry("acme", "nonce-guard-unsafe-1")
		if fresh, err := claimCtx(t, plain, e); err != nil || !fresh {
			t.Fatalf("Claim = %v, %v", fresh, err)
		}
		srv.Restart()
		eventually(t, 30*time.Second, "claim after restart", func() error {
			fresh, err := claimCtx(t, plain, e)
			if err == nil && !fresh {
				t.Fatal("replay after restart refused: Redis was expected to have forgotten it")
			}
			return err
		})
	})
}

func TestRedisReloadSharesClientWithoutLeaks(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	connected := func() int {
		info := srv.Client().Info(ctx, "clients").Val()
		var n int
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
				fmt.Sscan(v, &n)
			}
		}
		return n
	}
	baseClients := connected()
	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()

	const cycles = 30
	old := &Redis{Address: srv.Addr()}
	oldCtx, oldCancel := caddy.NewContext(caddy.Context{Context: ctx})
	if err := old.Provision(oldCtx); err != nil {
		t.Fatal(err)
	}
	first := old.conn
	for i := range cycles {
		// a reload: the new config is provisioned, then the old one cleaned up
		next := &Redis{Address: srv.Addr()}
		nextCtx, nextCancel := caddy.NewContext(caddy.Context{Context: ctx})
		if err := next.Provision(nextCtx); err != nil {
			t.Fatal(err)
		}
		if next.conn != first {
			t.Fatalf("reload %d created a new client, want the shared one", i)
		}
		if err := old.Cleanup(); err != nil {
			t.Fatal(err)
		}
		oldCancel()
		if fresh, err := next.Claim(ctx, liveEntry("acme", fmt.Sprintf("nonce-reload-%08d", i))); err != nil || !fresh {
			t.Fatalf("Claim after reload %d = %v, %v", i, fresh, err)
		}
		old, oldCancel = next, nextCancel
	}
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	oldCancel()

	// every cycle with a new client (different settings), to count leaks per client
	for i := range cycles {
		r := &Redis{Address: srv.Addr(), PoolSize: i + 1, RequireCleanStart: i%2 == 0}
		c, cancel := caddy.NewContext(caddy.Context{Context: ctx})
		if err := r.Provision(c); err != nil {
			t.Fatal(err)
		}
		e := pastGuardStart(liveEntry("acme", fmt.Sprintf("nonce-leak-%08d", i)))
		if _, err := r.Claim(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := r.Cleanup(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}

	eventually(t, 30*time.Second, "connections left open", func() error {
		if n := connected(); n > baseClients {
			return fmt.Errorf("connected_clients = %d, want %d", n, baseClients)
		}
		return nil
	})
	eventually(t, 30*time.Second, "goroutines left running", func() error {
		runtime.GC()
		// a small tolerance for runtime and test goroutines unrelated to the store
		if n := runtime.NumGoroutine(); n > baseGoroutines+3 {
			return fmt.Errorf("goroutines = %d, want at most %d", n, baseGoroutines+3)
		}
		return nil
	})
}

func TestRedisMetrics(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr(), PingInterval: caddy.Duration(50 * time.Millisecond), DialTimeout: caddy.Duration(200 * time.Millisecond)}
	ctx := provisionRedis(t, r)
	e := liveEntry("acme", "nonce-metrics-00001")
	claimCtx(t, r, e)
	claimCtx(t, r, e)

	// a second store in the same config (same registry) must not fail to register
	second := &Redis{Address: srv.Addr(), KeyPrefix: "other:"}
	if err := second.Provision(ctx); err != nil {
		t.Fatalf("second Provision in the same context: %v", err)
	}
	defer second.Cleanup()
	if second.metrics.claims != r.metrics.claims {
		t.Error("second store registered its own claims counter, want the existing one")
	}

	reg := ctx.GetMetricsRegistry()
	counter := func(outcome string) float64 {
		return metricValue(t, r.metrics.claims.WithLabelValues(srv.Addr(), outcome))
	}
	if counter("fresh") != 1 || counter("replayed") != 1 || counter("error") != 0 {
		t.Errorf("claims fresh, replayed, error = %v, %v, %v, want 1, 1, 0", counter("fresh"), counter("replayed"), counter("error"))
	}
	gaugeUp := func() (float64, error) { return gatherUp(reg, srv.Addr()) }
	eventually(t, 30*time.Second, "up gauge", func() error {
		if v, err := gaugeUp(); err != nil || v != 1 {
			return fmt.Errorf("up = %v, %v, want 1", v, err)
		}
		return nil
	})
	var h dto.Metric
	if err := r.metrics.duration.WithLabelValues(srv.Addr()).(prometheus.Metric).Write(&h); err != nil || h.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("duration samples = %d, %v, want 2", h.GetHistogram().GetSampleCount(), err)
	}

	srv.Kill()
	claimCtx(t, r, liveEntry("acme", "nonce-metrics-00002"))
	if counter("error") != 1 {
		t.Errorf("claims error = %v, want 1", counter("error"))
	}
	eventually(t, 30*time.Second, "up gauge after Redis went down", func() error {
		if v, err := gaugeUp(); err != nil || v != 0 {
			return fmt.Errorf("up = %v, %v, want 0", v, err)
		}
		return nil
	})
}

func TestRedisProvisionPlaceholders(t *testing.T) {
	t.Setenv("PARTNERGATE_TEST_REDIS_PASSWORD", "s3cret-from-env")
	t.Setenv("PARTNERGATE_TEST_REDIS_EMPTY", "")
	srv := redistest.Start(t, "--requirepass", "s3cret-from-env")
	r := &Redis{Address: srv.Addr(), Password: "{env.PARTNERGATE_TEST_REDIS_PASSWORD}"}
	provisionRedis(t, r)
	if r.Password != "s3cret-from-env" {
		t.Errorf("Password after Provision = %q, want the environment's value", r.Password)
	}
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-password-0001")); err != nil || !fresh {
		t.Fatalf("Claim with the password from the environment = %v, %v, want true, nil", fresh, err)
	}

	braces := &Redis{Address: srv.Addr(), Password: "{not-a-placeholder}"}
	provisionRedis(t, braces)
	if braces.Password != "{not-a-placeholder}" {
		t.Errorf("Password with braces after Provision = %q, want it unchanged", braces.Password)
	}

	wrong := &Redis{Address: srv.Addr(), Password: "not-it"}
	provisionRedis(t, wrong)
	if fresh, err := claimCtx(t, wrong, liveEntry("acme", "nonce-password-0002")); err == nil || fresh || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("Claim with a wrong password = %v, %v, want the WRONGPASS error", fresh, err)
	}

	empty := &Redis{Address: srv.Addr(), Password: "{env.PARTNERGATE_TEST_REDIS_EMPTY}"}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := empty.Provision(ctx); err == nil || !strings.Contains(err.Error(), "password") {
		empty.Cleanup()
		t.Errorf("Provision with a password placeholder that expands to nothing = %v, want a password error", err)
	}
}

func TestRedisTLSFilesMissing(t *testing.T) {
	tests := []struct {
		name string
		tls  RedisTLS
		want string
	}{
		{"ca_file missing", RedisTLS{CAFile: "/nonexistent/ca.pem"}, "reading tls ca_file"},
		{"client certificate missing", RedisTLS{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}, "loading tls client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Redis{Address: "127.0.0.1:1", TLS: &tt.tls}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := r.Provision(ctx)
			if err == nil {
				r.Cleanup()
				t.Fatalf("Provision succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Provision error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRedisValidate(t *testing.T) {
	tests := []struct {
		name string
		r    Redis
		want string // "" for valid
	}{
		{"single", Redis{Address: "127.0.0.1:6379"}, ""},
		{"cluster", Redis{Addresses: []string{"a:1", "b:1"}}, ""},
		{"sentinel", Redis{Addresses: []string{"a:26379"}, MasterName: "m", DB: 2, SentinelPassword: "x"}, ""},
		{"guard", Redis{Address: "a:1", RequireCleanStart: true}, ""},
		{"nothing", Redis{}, "one of address"},
		{"both", Redis{Address: "a:1", Addresses: []string{"b:1"}}, "address and addresses are exclusive"},
		{"master_name without sentinels", Redis{Address: "a:1", MasterName: "m"}, "master_name needs the sentinels in addresses"},
		{"master_name alone", Redis{MasterName: "m"}, "one of address"},
		{"sentinel_password without master_name", Redis{Address: "a:1", SentinelPassword: "x"}, "sentinel_password needs master_name"},
		{"username and password", Redis{Address: "a:1", Username: "gw", Password: "x"}, ""},
		{"username without password", Redis{Address: "a:1", Username: "gw"}, "username needs password"},
		{"db on cluster", Redis{Addresses: []string{"a:1"}, DB: 1}, "db must be 0 with a cluster"},
		{"negative db", Redis{Address: "a:1", DB: -1}, "db must not be negative"},
		{"negative dial_timeout", Redis{Address: "a:1", DialTimeout: -1}, "must not be negative"},
		{"negative read_timeout", Redis{Address: "a:1", ReadTimeout: -1}, "must not be negative"},
		{"negative write_timeout", Redis{Address: "a:1", WriteTimeout: -1}, "must not be negative"},
		{"negative ping_interval", Redis{Address: "a:1", PingInterval: -1}, "must not be negative"},
		{"negative pool_size", Redis{Address: "a:1", PoolSize: -1}, "pool_size must not be negative"},
		{"braces in key_prefix", Redis{Address: "a:1", KeyPrefix: "x{y}"}, "key_prefix must not contain braces"},
		{"empty address in list", Redis{Addresses: []string{"a:1", ""}}, "empty entry in addresses"},
		{"address with spaces", Redis{Address: " a:1"}, "surrounding spaces"},
		{"cert without key", Redis{Address: "a:1", TLS: &RedisTLS{CertFile: "c"}}, "cert_file and key_file go together"},
		{"key without cert", Redis{Address: "a:1", TLS: &RedisTLS{KeyFile: "k"}}, "cert_file and key_file go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Errorf("Validate() = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRedisUnmarshalCaddyfile(t *testing.T) {
	dur := func(d time.Duration) caddy.Duration { return caddy.Duration(d) }
	tests := []struct {
		name    string
		input   string
		want    Redis
		wantErr string
	}{
		{"one-line address", `redis 127.0.0.1:6380`, Redis{Address: "127.0.0.1:6380"}, ""},
		{"address option", "redis {\n address 127.0.0.1:6380\n}", Redis{Address: "127.0.0.1:6380"}, ""},
		{"cluster", "redis {\n addresses a:7000 b:7001 c:7002\n}", Redis{Addresses: []string{"a:7000", "b:7001", "c:7002"}}, ""},
		{"everything", `redis {
			addresses s1:26379 s2:26379
			master_name mymaster
			db 3
			username gw
			password {env.REDIS_PASSWORD}
			sentinel_password {env.SENTINEL_PASSWORD}
			tls {
				ca_file /etc/ca.pem
				cert_file /etc/c.pem
				key_file /etc/k.pem
				server_name redis.internal
			}
			key_prefix gw:
			dial_timeout 2s
			read_timeout 300ms
			write_timeout 400ms
			pool_size 32
			ping_interval 5s
			require_clean_start
		}`, Redis{
			Addresses: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", DB: 3, Username: "gw",
			Password: "{env.REDIS_PASSWORD}", SentinelPassword: "{env.SENTINEL_PASSWORD}",
			TLS:       &RedisTLS{CAFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", ServerName: "redis.internal"},
			KeyPrefix: "gw:", DialTimeout: dur(2 * time.Second), ReadTimeout: dur(300 * time.Millisecond),
			WriteTimeout: dur(400 * time.Millisecond), PoolSize: 32, PingInterval: dur(5 * time.Second),
			RequireCleanStart: true,
		}, ""},
		{"tls without block", "redis {\n address a:1\n tls\n}", Redis{Address: "a:1", TLS: &RedisTLS{}}, ""},
		{"two one-line args", `redis a:1 b:2`, Redis{}, "wrong argument count"},
		{"one-line and address option", "redis a:1 {\n address b:2\n}", Redis{}, `duplicate option "address"`},
		{"duplicate option", "redis {\n db 1\n db 2\n}", Redis{}, `duplicate option "db"`},
		{"unknown option", "redis {\n host a\n}", Redis{}, `unknown redis nonce store option "host"`},
		{"address missing", "redis {\n address\n}", Redis{}, "wrong argument count"},
		{"address two args", "redis {\n address a:1 b:2\n}", Redis{}, "wrong argument count"},
		{"addresses missing", "redis {\n addresses\n}", Redis{}, "wrong argument count"},
		{"master_name missing", "redis {\n master_name\n}", Redis{}, "wrong argument count"},
		{"db missing", "redis {\n db\n}", Redis{}, "wrong argument count"},
		{"db not a number", "redis {\n db one\n}", Redis{}, `db: "one" is not a database number`},
		{"db negative", "redis {\n db -1\n}", Redis{}, `db: "-1" is not a database number`},
		{"username missing", "redis {\n username\n}", Redis{}, "wrong argument count"},
		{"password missing", "redis {\n password\n}", Redis{}, "wrong argument count"},
		{"sentinel_password missing", "redis {\n sentinel_password\n}", Redis{}, "wrong argument count"},
		{"key_prefix missing", "redis {\n key_prefix\n}", Redis{}, "wrong argument count"},
		{"dial_timeout bad", "redis {\n dial_timeout fast\n}", Redis{}, `dial_timeout: parsing duration "fast"`},
		{"read_timeout zero", "redis {\n read_timeout 0s\n}", Redis{}, "read_timeout: must be positive"},
		{"write_timeout missing", "redis {\n write_timeout\n}", Redis{}, "wrong argument count"},
		{"ping_interval bad", "redis {\n ping_interval x\n}", Redis{}, `ping_interval: parsing duration "x"`},
		{"clean_start_leeway is gone", "redis {\n clean_start_leeway 30s\n}", Redis{}, `unknown redis nonce store option "clean_start_leeway"`},
		{"pool_size missing", "redis {\n pool_size\n}", Redis{}, "wrong argument count"},
		{"pool_size zero", "redis {\n pool_size 0\n}", Redis{}, "pool_size: must be positive"},
		{"pool_size not a number", "redis {\n pool_size many\n}", Redis{}, `pool_size: "many" is not an integer`},
		{"require_clean_start with argument", "redis {\n require_clean_start yes\n}", Redis{}, "wrong argument count"},
		{"tls argument", "redis {\n tls on\n}", Redis{}, "wrong argument count"},
		{"tls unknown option", "redis {\n tls {\n ca x\n }\n}", Redis{}, `unknown tls option "ca"`},
		{"tls duplicate option", "redis {\n tls {\n ca_file x\n ca_file y\n }\n}", Redis{}, `duplicate tls option "ca_file"`},
		{"tls ca_file missing", "redis {\n tls {\n ca_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls cert_file missing", "redis {\n tls {\n cert_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls key_file missing", "redis {\n tls {\n key_file\n }\n}", Redis{}, "wrong argument count"},
		{"tls server_name missing", "redis {\n tls {\n server_name\n }\n}", Redis{}, "wrong argument count"},
		{"tls insecure_skip_verify refused", "redis {\n tls {\n insecure_skip_verify\n }\n}", Redis{}, "insecure_skip_verify is not offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Redis
			err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			checkUnmarshal(t, tt.input, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			gotTLS, wantTLS := got.TLS, tt.want.TLS
			got.TLS, tt.want.TLS = nil, nil
			if g, w := fmt.Sprintf("%+v %+v", got, gotTLS), fmt.Sprintf("%+v %+v", tt.want, wantTLS); g != w {
				t.Errorf("UnmarshalCaddyfile(%q) =\n%s\nwant\n%s", tt.input, g, w)
			}
		})
	}
}

func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

func TestRedisTLS(t *testing.T) {
	pki := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, pki)
	other := redistest.NewPKI(t) // a CA the server does not know
	tests := []struct {
		name string
		tls  *RedisTLS
		ok   bool
	}{
		{"CA and client certificate", &RedisTLS{CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile}, true},
		{"server name given", &RedisTLS{CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile, ServerName: "127.0.0.1"}, true},
		{"no TLS to a TLS-only server", nil, false},
		{"no client certificate", &RedisTLS{CAFile: pki.CAFile}, false},
		{"server certificate from an unknown CA", &RedisTLS{CAFile: other.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile}, false},
		{"client certificate from an unknown CA", &RedisTLS{CAFile: pki.CAFile, CertFile: other.ClientCertFile, KeyFile: other.ClientKeyFile}, false},
		{"wrong server name", &RedisTLS{CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile, ServerName: "redis.example"}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Redis{Address: srv.Addr(), TLS: tt.tls, DialTimeout: caddy.Duration(2 * time.Second), ReadTimeout: caddy.Duration(2 * time.Second)}
			provisionRedis(t, r)
			fresh, err := claimCtx(t, r, liveEntry("acme", fmt.Sprintf("nonce-tls-%08d", i)))
			if tt.ok && (err != nil || !fresh) {
				t.Errorf("Claim = %v, %v, want true, nil", fresh, err)
			}
			if !tt.ok && (err == nil || fresh) {
				t.Errorf("Claim = %v, %v, want false and an error", fresh, err)
			}
		})
	}
}

// TestRedisACL checks that the least privileges docs/redis.md lists are enough: the
// store's commands on its own key prefix, nothing else.
func TestRedisACL(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do("ACL", "SETUSER", "gateway", "on", ">gw-password", "resetkeys", "~partnergate:nonce:*",
		"-@all", "+set", "+get", "+eval", "+evalsha", "+ping", "+hello", "+auth")
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("require_clean_start=%v", guard), func(t *testing.T) {
			r := &Redis{Address: srv.Addr(), Username: "gateway", Password: "gw-password", RequireCleanStart: guard}
			provisionRedis(t, r)
			e := pastGuardStart(liveEntry("acme", fmt.Sprintf("nonce-acl-%v-000001", guard)))
			if fresh, err := claimCtx(t, r, e); err != nil || !fresh {
				t.Fatalf("Claim = %v, %v, want true, nil", fresh, err)
			}
			if fresh, err := claimCtx(t, r, e); err != nil || fresh {
				t.Fatalf("replay = %v, %v, want false, nil", fresh, err)
			}
			if err := r.Ping(context.Background()); err != nil {
				t.Errorf("Ping = %v, want nil", err)
			}
		})
	}
	t.Run("outside the prefix is refused", func(t *testing.T) {
		r := &Redis{Address: srv.Addr(), Username: "gateway", Password: "gw-password", KeyPrefix: "elsewhere:"}
		provisionRedis(t, r)
		if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-acl-elsewhere1")); err == nil || fresh || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("Claim outside the permitted keys = %v, %v, want the NOPERM error", fresh, err)
		}
	})
}

// TestRedisCleanupDuringClaims: on a reload Caddy cleans up the old config while requests it
// admitted may still be claiming. Those claims must not race with Cleanup (run with -race),
// and once the client is closed they fail closed.
func TestRedisCleanupDuringClaims(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr()}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := r.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	var claims atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = r.Claim(context.Background(), liveEntry("acme", fmt.Sprintf("nonce-cleanup-%d-%08d", w, i)))
				claims.Add(1)
			}
		}()
	}
	eventually(t, 30*time.Second, "claims running", func() error {
		if claims.Load() < 20 {
			return errors.New("fewer than 20 claims")
		}
		return nil
	})
	if err := r.Cleanup(); err != nil {
		t.Errorf("Cleanup: %v", err)
	}
	at := claims.Load()
	eventually(t, 30*time.Second, "claims after Cleanup", func() error {
		if claims.Load() < at+20 {
			return errors.New("fewer than 20 claims")
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-cleanup-after1")); err == nil || fresh {
		t.Errorf("Claim after Cleanup = %v, %v, want false and an error", fresh, err)
	}
}

// gatherUp returns the value of partnergate_nonce_store_redis_up for target in reg.
func gatherUp(reg prometheus.Gatherer, target string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "partnergate_nonce_store_redis_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					return m.GetGauge().GetValue(), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("partnergate_nonce_store_redis_up{target=%q} not gathered", target)
}

// TestRedisUpPerClient: two stores reach the same target with different settings, and only
// one of them can (the other has a wrong password). Each client keeps its own state, and
// the target's gauge is 0 while either fails: requests through that store get 503.
func TestRedisUpPerClient(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "right")
	good := &Redis{Address: srv.Addr(), Password: "right", PingInterval: caddy.Duration(20 * time.Millisecond)}
	ctx := provisionRedis(t, good)
	reg := ctx.GetMetricsRegistry()
	eventually(t, 30*time.Second, "up with the good client", func() error {
		if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 1 {
			return fmt.Errorf("up = %v, %v, want 1", v, err)
		}
		return nil
	})

	// pings once at start, and fails
	bad := &Redis{Address: srv.Addr(), Password: "wrong", PingInterval: caddy.Duration(time.Hour)}
	if err := bad.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the bad client's ping", func() error {
		if bad.Ping(context.Background()) == nil {
			t.Fatal("Ping with a wrong password succeeded")
		}
		if bad.conn.up.Load() {
			return errors.New("bad client up")
		}
		return nil
	})
	// The good client keeps pinging successfully; its state must not hide the bad one's.
	// Check across ten of its pings, counted where they arrive.
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "right"})
	defer admin.Close()
	pings := func() int {
		info := admin.Info(context.Background(), "commandstats").Val()
		m := regexp.MustCompile(`cmdstat_ping:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	from := pings()
	eventually(t, 30*time.Second, "ten pings of the good client", func() error {
		if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 0 {
			t.Fatalf("up with one client failing = %v, %v, want 0", v, err)
		}
		if !good.conn.up.Load() {
			t.Fatal("the good client is down: its state was overwritten by the other's")
		}
		if n := pings() - from; n < 10 {
			return fmt.Errorf("%d pings", n)
		}
		return nil
	})

	if err := bad.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 1 {
		t.Errorf("up once the failing store is gone = %v, %v, want 1", v, err)
	}
}

// TestRedisLoggerRateLimited: while Redis is down go-redis reports a failed dial for every
// request; the log gets one line per kind and interval, with the count held back.
func TestRedisLoggerRateLimited(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	clk := newFakeClock()
	l := newCaddyRedisLogger(clk.Now, func() *zap.Logger { return zap.New(core) })
	ctx := context.Background()
	const dial = "redis: connection pool: failed to dial after %d attempts: %v"
	for range 100 {
		l.Printf(ctx, dial, 1, errors.New("connect: connection refused"))
	}
	l.Printf(ctx, "sentinel: new master=%q addr=%q", "m", "127.0.0.1:6380") // another kind
	if n := logs.Len(); n != 2 {
		t.Fatalf("log lines after 100 failed dials and one other message = %d, want 2", n)
	}
	clk.Advance(redisLogInterval)
	l.Printf(ctx, dial, 1, errors.New("connect: connection refused"))
	entries := logs.All()
	if len(entries) != 3 {
		t.Fatalf("log lines after the interval = %d, want 3", len(entries))
	}
	last := entries[2]
	if last.Level != zapcore.WarnLevel || last.ContextMap()["suppressed"] != int64(99) {
		t.Errorf("line after the interval = %s %v, want warn with suppressed=99", last.Level, last.ContextMap())
	}
}
