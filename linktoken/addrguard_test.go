package linktoken

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestRemoteKeysRedirectToHTTP(t *testing.T) {
	redirect := httptest.NewServer(http.RedirectHandler("http://keys.example/jwks.json", http.StatusFound))
	t.Cleanup(redirect.Close)
	srv := &jwksServer{Server: redirect}
	_, _, events := startRemote(t, srv, RemoteConfig{})
	ev := nextEvent(t, events)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "https") {
		t.Errorf("fetch redirected to plain http = %v, want an https error", ev.Err)
	}
}

func TestCheckKeySetURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://acme.example/.well-known/jwks.json", true},
		{"https://10.0.0.1/jwks.json", true},
		{"http://127.0.0.1:8080/jwks.json", true},
		{"http://127.9.9.9/jwks.json", true},
		{"http://[::1]:9000/jwks.json", true},
		{"http://localhost/jwks.json", true},
		{"http://LOCALHOST:1/jwks.json", true},
		{"http://acme.example/jwks.json", false},
		{"http://10.0.0.1/jwks.json", false},
		{"http://localhost.acme.example/jwks.json", false},
		{"http://127.0.0.1.nip.io/jwks.json", false},
		{"http://[::ffff:10.0.0.1]/jwks.json", false},
		{"ftp://127.0.0.1/jwks.json", false},
		{"file:///etc/jwks.json", false},
		{"/jwks.json", false},
		{"", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckKeySetURL(tc.url)
			if (err == nil) != tc.ok {
				t.Errorf("CheckKeySetURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
			}
			if _, err := NewRemoteKeys(RemoteConfig{URL: tc.url}); (err == nil) != tc.ok {
				t.Errorf("NewRemoteKeys(%q) = %v, want ok %v", tc.url, err, tc.ok)
			}
		})
	}
}

// redirectTo serves a redirect to the URL in *to, read on each request.
func redirectTo(t *testing.T, tls bool, to *string) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, *to, http.StatusFound)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// TestRemoteKeysHTTPSChainStaysHTTPS: probe finding 5. An https key URL that redirects to
// http on a loopback address must not have its key set used: each hop on its own is
// allowed (http is accepted on loopback), the chain is not.
func TestRemoteKeysHTTPSChainStaysHTTPS(t *testing.T) {
	plain := newJWKSServer(t, setA(t))
	to := plain.URL + "/jwks.json"
	origin := redirectTo(t, true, &to)
	ev := fetchOnce(t, RemoteConfig{URL: origin.URL + "/jwks.json", Client: origin.Client()})
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "https") {
		t.Errorf("https key URL redirected to %s: fetch = %+v, want an https error", to, ev)
	}
	if got := plain.fetches.Load(); got != 0 {
		t.Errorf("the plain http server was asked %d times, want 0", got)
	}
}

// resolveTo is a resolver that answers every name with addr.
func resolveTo(addr string) func(context.Context, string, string) ([]netip.Addr, error) {
	return func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
}

// TestRemoteKeysPublicNameToLoopback: a key URL whose host is a public name is fetched only
// from a public address; a partner's DNS that answers 127.0.0.1 must not make the gateway
// fetch from its own host. httptest's certificate names example.com, so the TLS handshake
// would succeed: the refusal is the dial guard's.
func TestRemoteKeysPublicNameToLoopback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(setA(t))
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ev := fetchOnce(t, RemoteConfig{
		URL:     fmt.Sprintf("https://example.com:%d/jwks.json", port),
		Client:  srv.Client(),
		resolve: resolveTo("127.0.0.1"),
	})
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "not a public address") {
		t.Errorf("fetch from example.com resolving to 127.0.0.1 = %+v, want a not-a-public-address error", ev)
	}
}

// TestRemoteKeysRedirectToLoopback: a redirect from a public origin to a loopback address
// is refused on the address dialled, whether the target is written as an IP or as a name
// that resolves to one. A loopback origin (a sidecar the operator configured) may redirect
// to a public host; that host may not send the fetch back inside.
func TestRemoteKeysRedirectToLoopback(t *testing.T) {
	inside := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(setA(t))
	}))
	t.Cleanup(inside.Close)
	insidePort := inside.Listener.Addr().(*net.TCPAddr).Port
	for _, target := range []string{
		inside.URL + "/jwks.json",
		fmt.Sprintf("https://localhost:%d/jwks.json", insidePort),
	} {
		t.Run(target, func(t *testing.T) {
			// The public host: example.com, resolved to 127.0.0.1 for the first dial only,
			// reached from a loopback sidecar so that the first dial is allowed.
			public := redirectTo(t, true, &target)
			publicPort := public.Listener.Addr().(*net.TCPAddr).Port
			publicURL := fmt.Sprintf("https://example.com:%d/jwks.json", publicPort)
			sidecar := redirectTo(t, false, &publicURL)
			client := public.Client()
			ev := fetchOnce(t, RemoteConfig{URL: sidecar.URL + "/jwks.json", Client: client, resolve: resolveTo("127.0.0.1")})
			if ev.Err == nil || !strings.Contains(ev.Err.Error(), "not a public address") {
				t.Errorf("sidecar → %s → %s: fetch = %+v, want a not-a-public-address error", publicURL, target, ev)
			}
		})
	}
}

// TestRemoteKeysLoopbackOriginFetches: the guard does not stand in the way of a
// configured loopback URL, or of its redirect to another loopback port.
func TestRemoteKeysLoopbackOriginFetches(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	to := srv.URL + "/jwks.json"
	origin := redirectTo(t, false, &to)
	if ev := fetchOnce(t, RemoteConfig{URL: origin.URL + "/jwks.json"}); ev.Err != nil || ev.Keys != 1 {
		t.Errorf("loopback origin redirecting to loopback: fetch = %+v, want 1 key", ev)
	}
}

func TestPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"127.0.0.1", false},
		{"127.255.0.9", false},
		{"::1", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"172.16.0.1", false},
		{"172.31.255.254", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"::", false},
		{"100.64.0.1", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"8.8.8.8", true},
		{"172.32.0.1", true},
		{"172.15.255.255", true},
		{"192.169.0.1", true},
		{"2001:4860:4860::8888", true},
		{"::ffff:8.8.8.8", true},
	} {
		if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}
