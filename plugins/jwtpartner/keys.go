package jwtpartner

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/partnergate/partnergate/linktoken"
)

// keySource returns the partner's key source: a checked key set read from jwks_file now,
// or linktoken's remote source for jwks_url, started with ctx so its fetcher stops when
// this configuration is unloaded. Partner.check has made sure there is exactly one.
func (h *Handler) keySource(ctx caddy.Context, name string, p *Partner) (linktoken.KeySource, error) {
	if p.JWKSURL != "" {
		return h.remoteKeySource(ctx, name, p)
	}
	set, err := loadKeyFile(p.JWKSFile)
	if err != nil {
		return nil, err
	}
	h.metrics.keys(name, set.Len())
	return set, nil
}

// loadKeyFile reads and checks a jwks_file, at provisioning (caddy run, reload and
// validate); the Caddyfile adapter only records the path. A relative path is read from the
// working directory of the process that provisions.
func loadKeyFile(path string) (*linktoken.KeySet, error) {
	set, err := linktoken.LoadKeySetFile(path)
	if err != nil {
		return nil, fmt.Errorf("jwks_file: %v", err)
	}
	return set, nil
}

// remoteKeySource starts linktoken's remote key source for jwks_url. The first fetch runs
// in the background: Caddy starts while the URL is down, and requests are answered 503
// keys_unavailable until a set has loaded.
func (h *Handler) remoteKeySource(ctx caddy.Context, name string, p *Partner) (linktoken.KeySource, error) {
	logger := h.logger.With(zap.String("partner", name))
	rk, err := linktoken.NewRemoteKeys(linktoken.RemoteConfig{
		URL:        p.JWKSURL,
		MinRefresh: time.Duration(p.RefreshMin),
		MaxRefresh: time.Duration(p.RefreshMax),
		Cooldown:   time.Duration(p.RefreshCooldown),
		MaxStale:   time.Duration(p.MaxStale),
		Now:        h.now,
		OnFetch: func(ev linktoken.FetchEvent) {
			h.metrics.keyRefresh(name, ev.Err)
			h.metrics.keys(name, ev.Keys)
			// A failed fetch is a broken dependency (error); the last good set stays in use
			// until max_stale. FetchEvent.Err never carries key material.
			lvl := zapcore.DebugLevel
			if ev.Err != nil {
				lvl = zapcore.ErrorLevel
			}
			if c := logger.Check(lvl, "fetching partner key set"); c != nil {
				c.Write(
					zap.String("reason", string(ev.Reason)),
					zap.Int("keys", ev.Keys),
					zap.Bool("not_modified", ev.NotModified),
					zap.Duration("duration", ev.Duration),
					zap.Duration("next", ev.Next),
					zap.Error(ev.Err),
				)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jwks_url: %v", err)
	}
	// The caddy.Context is cancelled when this configuration is unloaded, which stops the
	// fetcher: a reload never leaves an old partner's fetcher running.
	rk.Start(ctx)
	return rk, nil
}
