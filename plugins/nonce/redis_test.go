package nonce

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

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
