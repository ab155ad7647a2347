package jwtpartner

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/plugins/nonce"
)

func init() {
	caddy.RegisterModule(Ready{})
	httpcaddyfile.RegisterHandlerDirective("jwt_partner_ready", parseReadyCaddyfile)
	// Before reverse_proxy, so that with forward the check runs before the proxy to the
	// app service's /healthz.
	httpcaddyfile.RegisterDirectiveOrder("jwt_partner_ready", httpcaddyfile.Before, "reverse_proxy")
}

// The names of the checks in a readiness answer.
const (
	// checkKeys fails for a partner with no usable key set: none loaded from its jwks_url
	// yet, or the last one older than max_stale. Its links are answered keys_unavailable.
	checkKeys = "keys"
	// checkNonceStore fails for a partner whose handler's nonce store does not answer. Its
	// links are answered nonce_store_unavailable.
	checkNonceStore = "nonce_store"
	// checkConfigured fails for a partner named by the check that no jwt_partner handler
	// of the configuration serves.
	checkConfigured = "configured"
	// checkHandler fails, with no partner, when the configuration has no jwt_partner
	// handler at all: a readiness route without a gateway behind it is not ready.
	checkHandler = "jwt_partner"
)

// The nonce store is asked at most once per readyPingTTL for each handler, within
// readyPingTimeout: load balancers ask every few seconds, from several places at once, and
// a check must neither load Redis nor hang when it is down.
const (
	readyPingTTL     = time.Second
	readyPingTimeout = time.Second
)

// Ready is the HTTP handler http.handlers.jwt_partner_ready, the gateway's readiness check
// for a load balancer. It answers 200 {"ready":true} only when every jwt_partner handler of
// the same configuration has, for every partner, a usable key set (loaded, and fetched
// within max_stale for a jwks_url) and a nonce store that answers (a Redis PING; the memory
// store always answers). Otherwise it answers 503 with what is not ready:
//
//	{"ready":false,"not_ready":[{"partner":"acme","check":"keys"},{"partner":"acme","check":"nonce_store"}]}
//
// check is keys, nonce_store, configured (a partner named in Partners that no handler
// serves) or jwt_partner (no jwt_partner handler in the configuration, without a partner).
// Entries are sorted by partner, then check. Both answers carry Cache-Control: no-store.
// The body names partners and checks only, never an address or an error text: put the
// route on a listener only the load balancer reaches all the same.
type Ready struct {
	// Partners limits the check to these partners. Default: every partner of every
	// jwt_partner handler in the configuration.
	Partners []string `json:"partners,omitempty"`

	// Forward, when set, hands a request to the next handler when the gateway is ready,
	// instead of answering 200 itself: with a reverse_proxy to the app service's /healthz
	// after it, one check answers for the gateway and the app's database. A gateway that
	// is not ready answers 503 itself and the app is not asked.
	Forward bool `json:"forward,omitempty"`

	config any
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Ready) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.jwt_partner_ready",
		New: func() caddy.Module { return new(Ready) },
	}
}

// Provision records which configuration the check belongs to. The jwt_partner handlers
// it checks are found at request time: they may be provisioned after it.
func (r *Ready) Provision(ctx caddy.Context) error {
	r.config = configKey(ctx)
	r.logger = ctx.Logger()
	return nil
}

// Validate checks the partner names.
func (r *Ready) Validate() error {
	for _, name := range r.Partners {
		if err := checkPartnerName(name); err != nil {
			return err
		}
	}
	return nil
}

// ServeHTTP answers the readiness check, or passes a ready request on with Forward.
func (r *Ready) ServeHTTP(w http.ResponseWriter, req *http.Request, next caddyhttp.Handler) error {
	ans := r.check(req.Context())
	if ans.Ready && r.Forward {
		return next.ServeHTTP(w, req)
	}
	status := http.StatusOK
	if !ans.Ready {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(ans)
}

// readiness is the body of the answer.
type readiness struct {
	Ready    bool       `json:"ready"`
	NotReady []notReady `json:"not_ready,omitempty"`
}

// notReady is one failing check.
type notReady struct {
	Partner string `json:"partner,omitempty"`
	Check   string `json:"check"`
}

func (r *Ready) check(ctx context.Context) readiness {
	entries := readyEntries(r.config)
	if len(entries) == 0 {
		return readiness{NotReady: []notReady{{Check: checkHandler}}}
	}
	var want map[string]bool
	if len(r.Partners) > 0 {
		want = make(map[string]bool, len(r.Partners))
		for _, name := range r.Partners {
			want[name] = true
		}
	}
	served := map[string]bool{}
	failing := map[notReady]bool{}
	for _, e := range entries {
		var names []string
		for name := range e.h.partners {
			if want == nil || want[name] {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		storeErr := e.ping(ctx)
		if storeErr != nil {
			// Debug only: a load balancer asks every few seconds, and the store's
			// failure is logged where requests meet it.
			if c := r.logger.Check(zap.DebugLevel, "nonce store not answering"); c != nil {
				c.Write(zap.Error(storeErr))
			}
		}
		for _, name := range names {
			served[name] = true
			if !e.h.keysUsable(name) {
				failing[notReady{name, checkKeys}] = true
			}
			if storeErr != nil {
				failing[notReady{name, checkNonceStore}] = true
			}
		}
	}
	for _, name := range r.Partners {
		if !served[name] {
			failing[notReady{name, checkConfigured}] = true
		}
	}
	if len(failing) == 0 {
		return readiness{Ready: true}
	}
	ans := readiness{NotReady: make([]notReady, 0, len(failing))}
	for f := range failing {
		ans.NotReady = append(ans.NotReady, f)
	}
	slices.SortFunc(ans.NotReady, func(a, b notReady) int {
		return cmp.Or(cmp.Compare(a.Partner, b.Partner), cmp.Compare(a.Check, b.Check))
	})
	return ans
}

// currentKeySet is a key source that can say which set it uses and since when
// (linktoken.RemoteKeys).
type currentKeySet interface {
	Current() (*linktoken.KeySet, time.Time)
}

// keysUsable reports whether the partner's key source can verify a token now: a jwks_file
// set always can; a jwks_url set once one has loaded and until max_stale after the last
// successful fetch, as the request path decides. Any other source is taken as unusable, so
// that a new kind of source fails the check until it is taught here.
func (h *Handler) keysUsable(name string) bool {
	ps := h.partners[name]
	if ps == nil {
		return false
	}
	switch ks := ps.keys.(type) {
	case *linktoken.KeySet:
		return ks != nil
	case currentKeySet:
		set, fetched := ks.Current()
		if set == nil {
			return false
		}
		maxStale := linktoken.DefaultMaxStale
		if p := h.Partners[name]; p != nil && p.MaxStale > 0 {
			maxStale = time.Duration(p.MaxStale)
		}
		return h.now().Sub(fetched) <= maxStale
	}
	return false
}

// The registry of provisioned jwt_partner handlers, which the readiness check reads. A
// handler registers at the end of a successful Provision and leaves at Cleanup. During a
// reload the old and the new configuration's handlers are both registered for a moment, so
// each entry carries its configuration and a check reads only its own.
var readyRegistry = struct {
	sync.Mutex
	entries map[*Handler]*readyEntry
}{entries: map[*Handler]*readyEntry{}}

// readyEntry is a registered handler with its cached nonce store answer.
type readyEntry struct {
	h      *Handler
	config any

	mu       sync.Mutex
	pingedAt time.Time
	pingErr  error
}

// configKey identifies the configuration ctx belongs to. Caddy gives each loaded
// configuration one metrics registry, shared by every module it provisions, whatever the
// server (each server gets its own context.Context, so that cannot serve); a check and
// the handlers of one configuration therefore find each other by it.
func configKey(ctx caddy.Context) any {
	return ctx.GetMetricsRegistry()
}

// registerReady makes the handler visible to the readiness checks of its configuration.
func (h *Handler) registerReady(ctx caddy.Context) {
	readyRegistry.Lock()
	defer readyRegistry.Unlock()
	readyRegistry.entries[h] = &readyEntry{h: h, config: configKey(ctx)}
}

// unregisterReady removes the handler; safe for one never registered.
func (h *Handler) unregisterReady() {
	readyRegistry.Lock()
	defer readyRegistry.Unlock()
	delete(readyRegistry.entries, h)
}

// readyEntries returns the registered handlers of a configuration.
func readyEntries(config any) []*readyEntry {
	readyRegistry.Lock()
	defer readyRegistry.Unlock()
	var out []*readyEntry
	for _, e := range readyRegistry.entries {
		if e.config == config {
			out = append(out, e)
		}
	}
	return out
}

// ping asks the handler's nonce store whether it answers, at most once per readyPingTTL;
// concurrent checks wait for the one under way. A store that is not a nonce.Pinger is taken
// as answering: its claims still fail closed on the request path. The request's
// cancellation is not passed on, so that a load balancer hanging up does not leave a false
// "not answering" in the cache.
func (e *readyEntry) ping(ctx context.Context) error {
	p, ok := e.h.store.(nonce.Pinger)
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if age := e.h.now().Sub(e.pingedAt); !e.pingedAt.IsZero() && age >= 0 && age < readyPingTTL {
		return e.pingErr
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyPingTimeout)
	defer cancel()
	e.pingErr = p.Ping(ctx)
	e.pingedAt = e.h.now()
	return e.pingErr
}

func parseReadyCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	r := new(Ready)
	err := r.UnmarshalCaddyfile(h.Dispenser)
	return r, err
}

// UnmarshalCaddyfile sets up the readiness check from Caddyfile tokens. Syntax:
//
//	jwt_partner_ready [<matcher>] [<partner>...] {
//		forward
//	}
//
// The partners, when given, limit the check to them; forward passes a ready request to
// the next handler (Forward).
func (r *Ready) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the directive name
	for d.NextArg() {
		name := d.Val()
		if err := checkPartnerName(name); err != nil {
			return d.Err(err.Error())
		}
		if slices.Contains(r.Partners, name) {
			return d.Errf("partner %s: given more than once", name)
		}
		r.Partners = append(r.Partners, name)
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "forward":
			if r.Forward {
				return d.Err("forward: given more than once")
			}
			if d.NextArg() {
				return d.ArgErr()
			}
			r.Forward = true
		default:
			return d.Errf("unknown subdirective %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Ready)(nil)
	_ caddy.Validator             = (*Ready)(nil)
	_ caddyhttp.MiddlewareHandler = (*Ready)(nil)
	_ caddyfile.Unmarshaler       = (*Ready)(nil)
)
