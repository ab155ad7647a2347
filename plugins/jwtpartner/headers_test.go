package jwtpartner

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linkspec"
)

func TestInNamespace(t *testing.T) {
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
			var got []string
			for _, k := range tt.in {
				if !inNamespace(k, tt.prefix) {
					got = append(got, k)
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.keep, ",") {
				t.Errorf("outside %q of %q: %q, want %q", tt.prefix, tt.in, got, tt.keep)
			}
		})
	}
}

// TestForwardStripsNamespace: every client header in the namespace, in any spelling, is
// gone from the forwarded request, the verified ones are set once, and the headers of the
// unforwarded body are gone too.
func TestForwardStripsNamespace(t *testing.T) {
	f := newFixture(t, nil)
	r := urlRequest("demo", f.token(t, "RS256", harness.Token{}))
	for _, k := range []string{"X-Partner-Employee-Id", "X-Partner-Name", "X-Partner-Admin", "x-partner-kind", "X_Partner_Claims"} {
		r.Header[k] = []string{"spoofed"} // raw keys, as a non-canonicalizing client stack might leave them
	}
	r.Header.Set("Accept-Language", "sv")
	r.Header.Set("Trailer", "X-Partner-Name")
	_, next, _, _ := f.serve(r)
	if !next.called {
		t.Fatal("not forwarded")
	}
	for k, v := range next.header {
		if inNamespace(k, "X-Partner-") && (len(v) != 1 || v[0] == "spoofed") {
			t.Errorf("forwarded %s = %q, want one verified value", k, v)
		}
	}
	for _, k := range []string{"X-Partner-Admin", "Content-Type", "Content-Length", "Trailer"} {
		if v, ok := next.header[k]; ok {
			t.Errorf("forwarded %s = %q, want it gone", k, v)
		}
	}
	if got := next.header.Get("Accept-Language"); got != "sv" {
		t.Errorf("forwarded Accept-Language = %q, want the client's sv", got)
	}
	if got := next.header.Get("X-Partner-Name"); got != "demo" {
		t.Errorf("forwarded X-Partner-Name = %q, want demo", got)
	}
}

func TestForwardEncodesValues(t *testing.T) {
	f := newFixture(t, func(h *Handler) {
		h.HeaderPrefix = "X-Link-"
		h.FieldHeaders = []string{"all"} // the fields' values are what needs encoding
	})
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

// TestPlaceholders: every placeholder of the handler's doc comment resolves to the verified
// value on success, a payload field's too although field_headers (off by default) forwards
// no header for it; on rejection only the request's own ones do.
func TestPlaceholders(t *testing.T) {
	f := newFixture(t, nil)
	payload := testpayload.Main()
	tok := f.token(t, "ES256", harness.Token{Payload: payload})
	_, next, repl, _ := f.serve(urlRequest("demo", tok))
	if !next.called {
		t.Fatal("not forwarded")
	}
	claims := strings.Split(tok, ".")[1]
	for name, want := range map[string]string{
		"partner": "demo", "endpoint": "url", "kind": "main", "issuer": testIssuer,
		"kid": f.keys["ES256"].Kid, "alg": "ES256", "claims": claims,
		"employeeId": payload["employeeId"].(string), "contact.id": payload["contact"].(map[string]any)["id"].(string),
		"contact.firstname": payload["contact"].(map[string]any)["firstname"].(string),
	} {
		if got, ok := repl.GetString(placeholderPrefix + name); !ok || got != want || want == "" {
			t.Errorf("{%s%s} = %q (set: %v), want %q", placeholderPrefix, name, got, ok, want)
		}
	}
	if id, _ := repl.GetString(placeholderPrefix + "request_id"); id == "" || id != next.header.Get("X-Partner-Request-Id") {
		t.Errorf("{http.jwt_partner.request_id} = %q, want the forwarded request id", id)
	}
	for _, name := range []string{"error_code", "caseId.x", "nothing"} {
		if got, ok := repl.GetString(placeholderPrefix + name); ok {
			t.Errorf("{%s%s} = %q, want it unset", placeholderPrefix, name, got)
		}
	}

	_, _, repl, _ = f.serve(urlRequest("demo", tok)) // a replay
	if got, _ := repl.GetString(placeholderPrefix + "error_code"); got != "token_replayed" {
		t.Errorf("{http.jwt_partner.error_code} = %q, want token_replayed", got)
	}
	for _, name := range []string{"kind", "issuer", "claims", "employeeId"} {
		if got, ok := repl.GetString(placeholderPrefix + name); ok {
			t.Errorf("rejected: {%s%s} = %q, want it unset", placeholderPrefix, name, got)
		}
	}
}

// TestForwardFieldHeaders: a payload field gets a header of its own only when field_headers
// names it (or says all) and it has a value; the fixed headers and the claims are forwarded
// in every mode, and a client's header in the namespace is gone in every mode, a field's
// header included whether that field is forwarded or not.
func TestForwardFieldHeaders(t *testing.T) {
	payload := testpayload.Main()
	raw, _ := json.Marshal(payload)
	var p linkspec.Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	values := p.Values()
	fixed := []string{"Name", "Endpoint", "Kind", "Issuer", "Key-Id", "Request-Id", "Claims", "Assertion"}
	tests := []struct {
		name   string
		fields []string
		want   []string // the field headers forwarded, by suffix
	}{
		{"default", nil, nil},
		{"none", []string{}, nil},
		{"all", []string{"all"}, []string{
			"Employee-Id", "Employee-Username", "Employee-Firstname", "Employee-Lastname", "Employee-Email",
			"Organization-Name", "Organization-Id", "Contact-Id", "Contact-Birthdate", "Contact-Ssn",
			"Contact-Firstname", "Contact-Lastname", "Contact-Email", "Case-Id",
		}},
		// contact.middlename is named but empty: no header for it.
		{"subset", []string{"contact.id", "caseId", "contact.middlename"}, []string{"Contact-Id", "Case-Id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(h *Handler) { h.FieldHeaders = tt.fields })
			tok := f.token(t, "ES256", harness.Token{Payload: payload})
			r := urlRequest("demo", tok)
			for _, k := range []string{"X-Partner-Contact-Id", "X-Partner-Contact-Ssn", "x-partner-employee-email", "X_Partner_Case_Id", "X-Partner-Contact-Middlename"} {
				r.Header[k] = []string{"spoofed"} // raw keys, as a non-canonicalizing client stack might leave them
			}
			_, next, _, _ := f.serve(r)
			if !next.called {
				t.Fatal("not forwarded")
			}
			want := map[string]string{}
			for _, suffix := range tt.want {
				for i, field := range linkspec.Fields {
					if field.Header == suffix {
						want["X-Partner-"+suffix] = linkspec.EncodeHeaderValue(values[i])
					}
				}
			}
			for k, v := range next.header {
				if !inNamespace(k, "X-Partner-") {
					continue
				}
				if len(v) != 1 || v[0] == "spoofed" {
					t.Errorf("forwarded %s = %q, want one verified value", k, v)
				}
				suffix := strings.TrimPrefix(k, "X-Partner-")
				if w, ok := want[k]; ok {
					if v[0] != w {
						t.Errorf("forwarded %s = %q, want %q", k, v[0], w)
					}
				} else if !slices.Contains(fixed, suffix) {
					t.Errorf("forwarded %s = %q, want no such header with field_headers %q", k, v, tt.fields)
				}
			}
			for k := range want {
				if _, ok := next.header[k]; !ok {
					t.Errorf("%s not forwarded, want it with field_headers %q", k, tt.fields)
				}
			}
			for _, suffix := range fixed {
				if next.header.Get("X-Partner-"+suffix) == "" {
					t.Errorf("X-Partner-%s not forwarded, want it with field_headers %q", suffix, tt.fields)
				}
			}
			if got := next.header.Get("X-Partner-Claims"); got != strings.Split(tok, ".")[1] {
				t.Errorf("X-Partner-Claims = %q, want the token's payload segment, every field in it", got)
			}
		})
	}
}
