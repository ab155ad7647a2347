package linktoken

// The address guard of a jwks_url fetch: which URLs a key set may be fetched from, which
// redirects are followed, and which addresses are dialled. A partner's key URL, its DNS and
// its redirects are outside the operator's hands; the guard keeps them from pointing the
// gateway at its own host or its network (probe finding 5). remote.go's fetcher uses it.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partnergate/partnergate/linkspec"
)

// guardTransport makes tr dial only through the guard. The guard judges the address it
// dials, so nothing may dial in its place: no proxy (which would connect on its own, so
// HTTPS_PROXY and HTTP_PROXY are not used for key sets), no TLS dialer of the caller's,
// and no kept-alive connection that a later hop could reuse without a dial. A key set is
// fetched at most once a minute; a fresh connection each time costs nothing that matters.
func guardTransport(tr *http.Transport, resolve func(ctx context.Context, network, host string) ([]netip.Addr, error), timeout time.Duration) {
	g := &dialGuard{resolve: resolve, dialer: &net.Dialer{Timeout: timeout}}
	tr.Proxy = nil
	tr.DialContext = g.dial
	tr.DialTLSContext = nil
	tr.DisableKeepAlives = true
}

// checkRedirect is the key set client's redirect policy (probe finding 5). Each hop must
// pass CheckKeySetURL; once the chain has used https, every later hop must too, or an
// https key URL could hand the gateway a set served in the clear by a loopback service;
// and a redirect from a host that is not loopback turns the dial guard on for the rest of
// the chain, so that a partner's server cannot point the gateway at its own host or its
// network. Redirects to another host are followed: only the configured host (over https,
// or the operator's loopback service) can issue them, and partners' key URLs that
// redirect to a CDN or an identity provider's host are common.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("too many redirects")
	}
	if err := CheckKeySetURL(req.URL.String()); err != nil {
		return err
	}
	if req.URL.Scheme != "https" {
		for _, v := range via {
			if v.URL.Scheme == "https" {
				return errors.New("key set URL redirected from https to http: every hop after https must use https")
			}
		}
	}
	if c, ok := req.Context().Value(fetchChainKey{}).(*fetchChain); ok && !isLoopback(via[len(via)-1].URL.Hostname()) {
		c.guarded.Store(true)
	}
	return nil
}

// fetchChain is the state of one fetch's redirect chain that the dialler reads from the
// request context.
type fetchChain struct {
	// guarded is set when the configured URL's host is not loopback, or once a hop from a
	// host that is not loopback has redirected: from then on only public addresses are
	// dialled.
	guarded atomic.Bool
}

type fetchChainKey struct{}

// dialGuard dials the key set's host after checking each address it resolves to. It
// checks the address it connects to, not the name: a name can resolve anywhere.
type dialGuard struct {
	resolve func(ctx context.Context, network, host string) ([]netip.Addr, error)
	dialer  *net.Dialer
}

func (g *dialGuard) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	// A dial outside a fetch (none is expected) is guarded: fail closed.
	guarded := true
	if c, ok := ctx.Value(fetchChainKey{}).(*fetchChain); ok {
		guarded = c.guarded.Load()
	}
	addrs, err := g.lookup(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		if guarded && !publicAddr(a) {
			errs = append(errs, fmt.Errorf("key set host %s resolves to %s, not a public address", linkspec.Clip(host), a))
			continue
		}
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("key set host %s has no address", linkspec.Clip(host))
	}
	return nil, errors.Join(errs...)
}

func (g *dialGuard) lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ipNet := "ip"
	switch network {
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	}
	if g.resolve != nil {
		return g.resolve(ctx, ipNet, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, ipNet, host)
}

// Address ranges a key set is never fetched from once the dial guard is on, beyond those
// netip classifies: RFC 6890's "this network" and RFC 6598's shared address space
// (carrier-grade NAT, often an internal network too).
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
}

// publicAddr reports whether a may be dialled for a key set whose URL is not on loopback:
// not loopback (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7),
// link-local (169.254/16 with the cloud metadata services, fe80::/10), unspecified,
// multicast, or in nonPublicPrefixes. An IPv4-mapped IPv6 address is judged as its IPv4
// address.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() ||
		a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// CheckKeySetURL accepts an https URL, or an http URL whose host is a loopback address
// or localhost: a key set fetched in the clear could be replaced on the way, and with it
// every partner identity.
func CheckKeySetURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("parsing key set URL: %v", err)
	}
	if u.Host == "" {
		return errors.New("key set URL has no host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("key set URL must use https (http is accepted for loopback hosts only)")
	}
	return fmt.Errorf("key set URL scheme %q is not https", linkspec.Clip(u.Scheme))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
