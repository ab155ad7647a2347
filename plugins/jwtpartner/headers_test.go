package jwtpartner

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/integration/harness"
)

func TestStripPrefixed(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		in     []string
		keep   []string
	}{
		{"canonical", "X-Partner-", []string{"X-Partner-Name", "X-Partner-Contact-Id", "Accept"}, []string{"Accept"}},
		{"any case", "X-Partner-", []string{"x-partner-name", "X-PARTNER-KIND", "X-Partnerx"}, []string{"X-Partnerx"}},
		{"underscores", "X-Partner-", []string{"X_Partner_Name", "X-Partner_Kind", "X_Partner-Issuer"}, nil},
		{"prefix alone", "X-Partner-", []string{"X-Partner-", "X-Partner"}, []string{"X-Partner"}},
		{"custom prefix", "X-Link-", []string{"X-Link-Name", "X-Partner-Name"}, []string{"X-Partner-Name"}},
		{"custom prefix lower case", "x-link-", []string{"X-Link-Name", "x_link_kind"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, k := range tt.in {
				h[k] = []string{"v"} // raw keys, as a non-canonicalizing client stack might leave them
			}
			stripPrefixed(h, tt.prefix)
			var got []string
			for k := range h {
				got = append(got, k)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.keep, ",") {
				t.Errorf("stripPrefixed(%q, %q) kept %q, want %q", tt.in, tt.prefix, got, tt.keep)
			}
		})
	}
}

func TestValidHeaderPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"X-Partner-": true, "X-Link-": true, "Gw": true,
		"": false, "X Partner": false, "X:Partner-": false, "X-Pärtner-": false, "X\r\nEvil: 1": false,
	} {
		if got := validHeaderPrefix(p); got != want {
			t.Errorf("validHeaderPrefix(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestForwardEncodesValues(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.HeaderPrefix = "X-Link-" })
	payload := map[string]any{
		"organizationName": "Ö & Co group",
		"organizationId":   "org/1?x=y",
		"contact": map[string]any{
			"id": "c 1", "firstname": "Ünïcödé 名前", "lastname": "O'Brien%20", "email": "a+b@example.org",
		},
	}
	tok := f.token(t, "ES256", tokenWith(payload))
	_, next, _, _ := f.serve(urlRequest("demo", tok))
	if !next.called {
		t.Fatal("not forwarded")
	}
	for name, want := range map[string]string{
		"X-Link-Contact-Firstname": "%C3%9Cn%C3%AFc%C3%B6d%C3%A9%20%E5%90%8D%E5%89%8D",
		"X-Link-Contact-Lastname":  "O%27Brien%2520",
		"X-Link-Contact-Id":        "c%201",
		"X-Link-Organization-Id":   "org%2F1%3Fx%3Dy",
		"X-Link-Contact-Email":     "a%2Bb%40example.org",
	} {
		if got := next.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for k := range next.header {
		if strings.HasPrefix(k, "X-Partner-") {
			t.Errorf("header %s set although the prefix is X-Link-", k)
		}
	}
}

func TestStripConnectionTokens(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"keep-alive"}, []string{"keep-alive"}},
		{[]string{"X-Partner-Name, keep-alive"}, []string{"keep-alive"}},
		{[]string{"x-partner-assertion", "X_Partner_Kind,close"}, []string{"close"}},
		{[]string{"X-Partner-Claims"}, nil},
	}
	for _, tt := range tests {
		h := http.Header{"Connection": tt.in}
		stripConnectionTokens(h, "X-Partner-")
		if got := h.Values("Connection"); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("stripConnectionTokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestForwardDropsBodyFraming: the forwarded request has no body, so nothing that framed
// the client's body may go with it, trailers included (a proxy would wait for or forward
// trailers of a body it no longer sends).
func TestForwardDropsBodyFraming(t *testing.T) {
	f := newFixture(t, nil)
	r := urlRequest("demo", f.token(t, "ES256", harness.Token{}))
	r.TransferEncoding = []string{"chunked"}
	r.ContentLength = -1
	r.Header.Set("Trailer", "X-Checksum")
	r.Header.Set("Content-Encoding", "identity")
	r.Header.Set("Expect", "100-continue")
	r.Trailer = http.Header{"X-Checksum": nil}
	_, next, _, err := f.serve(r)
	if err != nil || !next.called {
		t.Fatalf("ServeHTTP = %v, next called %v", err, next.called)
	}
	if next.trailer != nil {
		t.Errorf("upstream Trailer = %q, want none", next.trailer)
	}
	if next.length != 0 {
		t.Errorf("upstream ContentLength = %d, want 0", next.length)
	}
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Expect", "Trailer"} {
		if v := next.header.Get(h); v != "" {
			t.Errorf("upstream %s = %q, want none", h, v)
		}
	}
}
