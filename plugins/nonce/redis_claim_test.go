package nonce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

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
			if !strings.HasPrefix(k, defaultKeyPrefix+"{") {
				t.Errorf("key %q does not start with %q", k, defaultKeyPrefix+"{")
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
		key := defaultKeyPrefix + bucket + hash
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
		key := defaultKeyPrefix + bucket + hash
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
		if n := len(srv.Client().Keys(context.Background(), defaultKeyPrefix+"{*}epoch").Val()); n != redisBuckets {
			return fmt.Errorf("%d markers, want %d", n, redisBuckets)
		}
		return nil
	})
	if fresh, err := claimCtx(t, r, at(start.Add(-time.Minute), "nonce-guard-000001")); !errors.Is(err, ErrTooOld) || fresh {
		t.Fatalf("Claim of a token acceptable before the start = %v, %v, want false, ErrTooOld", fresh, err)
	}
	bucket, _ := redisKeyParts("acme", "nonce-guard-000001")
	if got := srv.Client().Get(context.Background(), defaultKeyPrefix+bucket+"epoch").Val(); got != fmt.Sprint(start.UnixMilli()) {
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
