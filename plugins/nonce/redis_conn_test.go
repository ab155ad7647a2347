package nonce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

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
