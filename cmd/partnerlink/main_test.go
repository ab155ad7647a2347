package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
	"github.com/partnergate/partnergate/problem"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	iss = "https://acme.example"
	aud = "svc-link"
)

type result struct {
	code           int
	stdout, stderr string
	opened         []string
}

// partnerlink runs the command in-process, as a shell would, with a fixed clock.
func partnerlink(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	var opened []string
	e := env{
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
		now:    func() time.Time { return testNow },
		http:   http.DefaultClient,
		open:   func(u string) error { opened = append(opened, u); return nil },
	}
	code := run(context.Background(), args, e)
	return result{code, out.String(), errb.String(), opened}
}

func keygen(t *testing.T, alg, kid string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	r := partnerlink(t, "", "keygen", "--alg", alg, "--kid", kid, "--out", dir, "--bits", "2048")
	if r.code != 0 {
		t.Fatalf("keygen = %d: %s", r.code, r.stderr)
	}
	return dir
}

var goFlags = []string{
	"--organization-name", "Acme Clinic", "--organization-id", "org-1",
	"--contact-id", "c-1", "--contact-firstname", "Åsa", "--contact-lastname", "Lind", "--contact-email", "asa@example.org",
}

var mainFlags = append([]string{
	"--employee-id", "emp-1", "--employee-firstname", "Eva", "--employee-lastname", "Berg",
}, goFlags...)

// verify checks token with the gateway's verifier against the key set in jwksPath.
func verify(t *testing.T, jwksPath, token string) (*linktoken.Token, error) {
	t.Helper()
	doc, err := os.ReadFile(jwksPath)
	if err != nil {
		t.Fatal(err)
	}
	set, err := linktoken.ParseKeySet(doc)
	if err != nil {
		t.Fatalf("linktoken.ParseKeySet(%s) = %v", jwksPath, err)
	}
	v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: iss, Audience: aud}, linktoken.WithClock(func() time.Time { return testNow }))
	if err != nil {
		t.Fatal(err)
	}
	return v.Verify(context.Background(), []byte(strings.TrimSpace(token)), set)
}

func TestKeygen(t *testing.T) {
	for _, alg := range partnerkit.Algorithms {
		t.Run(alg, func(t *testing.T) {
			dir := keygen(t, alg, "k1")
			for name, mode := range map[string]os.FileMode{"private.pem": 0o600, "jwks.json": 0o644} {
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != mode {
					t.Errorf("mode of %s = %v, want %v", name, fi.Mode().Perm(), mode)
				}
			}
			pemBytes, _ := os.ReadFile(filepath.Join(dir, "private.pem"))
			if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN PRIVATE KEY-----")) {
				t.Errorf("private.pem starts %.30q, want PKCS#8", pemBytes)
			}
			doc, _ := os.ReadFile(filepath.Join(dir, "jwks.json"))
			keys, err := partnerkit.ParseJWKS(doc)
			if err != nil || len(keys) != 1 || keys[0].KeyID != "k1" || keys[0].Algorithm != alg {
				t.Errorf("jwks.json = %+v, %v, want one key k1 for %s", keys, err, alg)
			}
			if !strings.Contains(string(doc), `"use": "sig"`) {
				t.Errorf("jwks.json lacks use sig:\n%s", doc)
			}
		})
	}
}

func TestKeygenDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k")
	r := partnerlink(t, "", "keygen", "--alg", "RS256", "--out", dir)
	if r.code != 0 {
		t.Fatalf("keygen = %d: %s", r.code, r.stderr)
	}
	pemBytes, _ := os.ReadFile(filepath.Join(dir, "private.pem"))
	key, err := partnerkit.ParsePrivateKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := partnerkit.Thumbprint(key.Public())
	doc, _ := os.ReadFile(filepath.Join(dir, "jwks.json"))
	keys, _ := partnerkit.ParseJWKS(doc)
	if keys[0].KeyID != tp {
		t.Errorf("default kid = %q, want the thumbprint %q", keys[0].KeyID, tp)
	}
	if !strings.Contains(r.stdout, "kid "+tp) {
		t.Errorf("keygen output %q does not name the kid", r.stdout)
	}
	der, _ := partnerkit.MarshalPublicKey(key.Public())
	if n := len(der); n < 600 { // a 3072-bit SPKI PEM is ~625 bytes, a 2048-bit one ~450
		t.Errorf("default RSA key PEM is %d bytes, want a 3072-bit key", n)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("key folder mode = %v, want 0700", fi.Mode().Perm())
	}
}

func TestKeygenRefusesOverwrite(t *testing.T) {
	dir := keygen(t, "ES256", "k1")
	before, _ := os.ReadFile(filepath.Join(dir, "private.pem"))
	r := partnerlink(t, "", "keygen", "--alg", "ES256", "--kid", "k2", "--out", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "refusing to overwrite") {
		t.Errorf("keygen over existing = %d %q, want 1 and a refusal", r.code, r.stderr)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "private.pem"))
	if !bytes.Equal(before, after) {
		t.Error("keygen replaced private.pem without --force")
	}
	r = partnerlink(t, "", "keygen", "--alg", "ES256", "--kid", "k2", "--out", dir, "--force")
	after, _ = os.ReadFile(filepath.Join(dir, "private.pem"))
	if r.code != 0 || bytes.Equal(before, after) {
		t.Errorf("keygen --force = %d %q, want a new key", r.code, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "partnerlink keygen"},
		{"unknown command", []string{"frob"}, "unknown command"},
		{"keygen without out", []string{"keygen", "--alg", "ES256"}, "--out"},
		{"keygen HS256", []string{"keygen", "--alg", "HS256", "--out", dir}, "HS256"},
		{"keygen small RSA", []string{"keygen", "--alg", "RS256", "--bits", "1024", "--out", dir}, "--bits"},
		{"keygen unknown flag", []string{"keygen", "--size", "1"}, "flag provided but not defined"},
		{"jwks without subcommand", []string{"jwks"}, "add or remove"},
		{"jwks add both keys", []string{"jwks", "add", "--jwks", "x", "--key", "a", "--pub", "b"}, "exactly one"},
		{"jwks remove without kid", []string{"jwks", "remove", "--jwks", "x"}, "--kid"},
		{"mint without key", append([]string{"mint", "--iss", iss, "--aud", aud}, goFlags...), "--key"},
		{"mint lifetime too long", append([]string{"mint", "--key", "k", "--iss", iss, "--aud", aud, "--lifetime", "6m"}, goFlags...), "--lifetime"},
		{"send without gateway", append([]string{"send", "--partner", "acme"}, goFlags...), "--gateway"},
		{"check without token", []string{"check", "--jwks", "x", "--iss", iss, "--aud", aud}, "TOKEN"},
		{"check without keys", []string{"check", "tok", "--iss", iss, "--aud", aud}, "--jwks"},
		{"check HS256", []string{"check", "tok", "--jwks", "x", "--iss", iss, "--aud", aud, "--alg", "HS256"}, "HS256"},
		{"check bad kind", []string{"check", "tok", "--jwks", "x", "--iss", iss, "--aud", aud, "--kind", "desktop"}, "--kind"},
		{"check gateway without partner", []string{"check", "tok", "--gateway", "https://sso.example.com"}, "--partner NAME go together"},
		{"check partner without gateway", []string{"check", "tok", "--partner", "acme"}, "--gateway URL and --partner NAME go together"},
		{"check gateway with offline rules", []string{"check", "tok", "--gateway", "https://sso.example.com", "--partner", "acme", "--iss", iss, "--jwks", "x"},
			"--iss, --jwks: the gateway's dry run uses the gateway's own rules and keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := partnerlink(t, "", tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("partnerlink %q = %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestRotationCommands(t *testing.T) {
	oldDir := keygen(t, "RS256", "old")
	newDir := keygen(t, "ES256", "new")
	published := filepath.Join(oldDir, "jwks.json")

	r := partnerlink(t, "", "jwks", "add", "--jwks", published, "--key", filepath.Join(newDir, "private.pem"), "--kid", "new")
	if r.code != 0 || !strings.Contains(r.stdout, "keys now: old, new") {
		t.Fatalf("jwks add = %d %q %q", r.code, r.stdout, r.stderr)
	}
	doc, _ := os.ReadFile(published)
	if strings.Contains(string(doc), `"d"`) {
		t.Errorf("jwks add --key published private material:\n%s", doc)
	}
	// Both keys verify during the overlap.
	for _, dir := range []string{oldDir, newDir} {
		tok := partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...)
		if _, err := verify(t, published, tok.stdout); err != nil {
			t.Errorf("token of %s during the overlap: %v", filepath.Base(dir), err)
		}
	}
	r = partnerlink(t, "", "jwks", "add", "--jwks", published, "--key", filepath.Join(newDir, "private.pem"), "--kid", "again")
	if r.code != 1 || !strings.Contains(r.stderr, `already holds this key, as kid "new"`) {
		t.Errorf("jwks add (same key twice) = %d %q, want a refusal", r.code, r.stderr)
	}
	r = partnerlink(t, "", "jwks", "add", "--jwks", published, "--pub", filepath.Join(newDir, "private.pem"))
	if r.code != 1 || !strings.Contains(r.stderr, "private key") {
		t.Errorf("jwks add --pub PRIVATE = %d %q, want a refusal", r.code, r.stderr)
	}

	r = partnerlink(t, "", "jwks", "remove", "--jwks", published, "--kid", "old")
	if r.code != 0 || !strings.Contains(r.stdout, "keys now: new") {
		t.Fatalf("jwks remove = %d %q %q", r.code, r.stdout, r.stderr)
	}
	oldTok := partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(oldDir, "private.pem"), "--kid", "old", "--alg", "RS256", "--iss", iss, "--aud", aud}, goFlags...)...)
	if _, err := verify(t, published, oldTok.stdout); linktoken.CodeOf(err) != problem.CodeKeyUnknown {
		t.Errorf("old key's token after removal = %v, want key_unknown", err)
	}
	r = partnerlink(t, "", "jwks", "remove", "--jwks", published, "--kid", "new")
	if r.code != 1 || !strings.Contains(r.stderr, "last key") {
		t.Errorf("jwks remove (last key) = %d %q, want a refusal", r.code, r.stderr)
	}
	fi, _ := os.Stat(published)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("jwks.json mode after edits = %v, want 0644", fi.Mode().Perm())
	}
}

func TestJWKSAddPublicPEMToNewFile(t *testing.T) {
	dir := keygen(t, "PS256", "p")
	pemBytes, _ := os.ReadFile(filepath.Join(dir, "private.pem"))
	key, _ := partnerkit.ParsePrivateKey(pemBytes)
	pub, _ := partnerkit.MarshalPublicKey(key.Public())
	pubPath := filepath.Join(dir, "public.pem")
	os.WriteFile(pubPath, pub, 0o644)
	fresh := filepath.Join(dir, "fresh.json")
	r := partnerlink(t, "", "jwks", "add", "--jwks", fresh, "--pub", pubPath, "--kid", "p", "--alg", "PS256")
	if r.code != 0 {
		t.Fatalf("jwks add to a new file = %d %q", r.code, r.stderr)
	}
	tok := partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--jwks", fresh, "--iss", iss, "--aud", aud}, goFlags...)...)
	if got, err := verify(t, fresh, tok.stdout); err != nil || got.Alg != "PS256" {
		t.Errorf("token against the new file = %v, %v, want PS256 accepted", got, err)
	}
}

// TestMintRoundTrip: keygen, then mint, then the gateway's verifier, for every algorithm
// and both kinds.
func TestMintRoundTrip(t *testing.T) {
	for _, alg := range partnerkit.Algorithms {
		dir := keygen(t, alg, "k-"+alg)
		for kind, flags := range map[linkspec.Kind][]string{linkspec.KindMain: mainFlags, linkspec.KindGo: goFlags} {
			t.Run(alg+"/"+string(kind), func(t *testing.T) {
				// kid and alg come from the jwks.json beside the key.
				r := partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, flags...)...)
				if r.code != 0 {
					t.Fatalf("mint = %d: %s", r.code, r.stderr)
				}
				got, err := verify(t, filepath.Join(dir, "jwks.json"), r.stdout)
				if err != nil {
					t.Fatalf("gateway verifier: %v", err)
				}
				if got.Kind != kind || got.Alg != alg || got.KeyID != "k-"+alg || got.Payload.Contact.Firstname != "Åsa" {
					t.Errorf("verified %s %s %s %q, want %s %s k-%s Åsa", got.Kind, got.Alg, got.KeyID, got.Payload.Contact.Firstname, kind, alg, alg)
				}
				if got.Expiry.Sub(got.NotBefore) != 2*time.Minute || !got.NotBefore.Equal(testNow) {
					t.Errorf("nbf %v exp %v, want now and now+2m", got.NotBefore, got.Expiry)
				}
			})
		}
	}
}

func TestMintPayloadFile(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	p := partnerkit.GoPayload(partnerkit.Organization{Name: "Acme", ID: "o"}, partnerkit.Contact{ID: "c", Firstname: "A", Lastname: "B", Email: "a@b.example"})
	data, _ := json.Marshal(p)
	file := filepath.Join(dir, "payload.json")
	os.WriteFile(file, data, 0o600)
	base := []string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}

	r := partnerlink(t, "", append(base, "--payload", file, "--contact-firstname", "Override", "--lifetime", "5m")...)
	got, err := verify(t, filepath.Join(dir, "jwks.json"), r.stdout)
	if err != nil || got.Payload.Contact.Firstname != "Override" || got.Expiry.Sub(got.NotBefore) != 5*time.Minute {
		t.Errorf("mint --payload FILE with a flag = %v %v, want firstname Override and 5m", got, err)
	}
	r = partnerlink(t, string(data), append(base, "--payload", "-")...)
	if _, err := verify(t, filepath.Join(dir, "jwks.json"), r.stdout); err != nil {
		t.Errorf("mint --payload - = %v (%s)", err, r.stderr)
	}
	os.WriteFile(file, []byte(`{"organizationName":"A","employeeID":"typo"}`), 0o600)
	r = partnerlink(t, "", append(base, "--payload", file)...)
	if r.code != 1 || !strings.Contains(r.stderr, `unknown object member name "employeeID"`) {
		t.Errorf("mint with a misspelt field = %d %q, want a refusal naming it", r.code, r.stderr)
	}
}

func TestMintInvalidPayload(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	r := partnerlink(t, "", "mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud,
		"--organization-name", "Acme", "--contact-id", "c", "--contact-firstname", "A", "--contact-birthdate", "2001-02-29")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("mint (invalid) = %d, stdout %q; want 1 and no token", r.code, r.stdout)
	}
	for _, want := range []string{"organizationId: required", "contact.birthdate: not a calendar date", "contact.lastname: required", "contact.email: required"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("mint (invalid) stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "2001-02-29") {
		t.Error("mint echoes a payload value in its error")
	}
	r = partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--alg", "RS256", "--iss", iss, "--aud", aud}, goFlags...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "publishes the key for ES256") {
		t.Errorf("mint --alg RS256 against the published ES256 = %d %q, want a refusal", r.code, r.stderr)
	}
	r = partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--kid", "k", "--alg", "RS256", "--iss", iss, "--aud", aud}, goFlags...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "EC key cannot sign RS256") {
		t.Errorf("mint --alg RS256 with an EC key = %d %q, want a refusal", r.code, r.stderr)
	}
}

// gateway is a stand-in for the real gateway's /url endpoint: it verifies with linktoken
// and answers like the gateway (text URL or problem+json).
func gateway(t *testing.T, jwksPath string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/partner/acme/url" || r.Header.Get("Content-Type") != "text/plain" {
			http.Error(w, "wrong endpoint", 404)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if _, err := verify(t, jwksPath, string(b)); err != nil {
			le := err.(*linktoken.Error)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]any{"status": 400, "code": le.Code, "detail": le.Detail, "fields": le.Fields})
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "https://app.example/go?code=xyz")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSend(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	srv := gateway(t, filepath.Join(dir, "jwks.json"))
	base := []string{"send", "--gateway", srv.URL, "--partner", "acme", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}

	r := partnerlink(t, "", append(base, goFlags...)...)
	if r.code != 0 || r.stdout != "https://app.example/go?code=xyz\n" {
		t.Errorf("send = %d %q %q, want the URL", r.code, r.stdout, r.stderr)
	}
	r = partnerlink(t, "", append(append(base, "--open"), goFlags...)...)
	if r.code != 0 || len(r.opened) != 1 || r.opened[0] != "https://app.example/go?code=xyz" {
		t.Errorf("send --open opened %q, want the URL", r.opened)
	}
	r = partnerlink(t, "", append(base, "--organization-name", "A", "--organization-id", "o", "--contact-id", "c",
		"--contact-firstname", "A", "--contact-lastname", "B", "--contact-email", "a@b.example", "--iss", "https://other.example")...)
	if r.code != 1 || !strings.Contains(r.stderr, "rejected (400): issuer_invalid") {
		t.Errorf("send (wrong iss) = %d %q, want 1 and issuer_invalid", r.code, r.stderr)
	}
}

func TestSendRejectionWithFields(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(400)
		io.WriteString(w, `{"status":400,"code":"payload_invalid","detail":"the payload does not meet the interface","fields":[{"field":"contact.email","reason":"required"}],"request_id":"req-7"}`)
	}))
	defer srv.Close()
	dir := keygen(t, "ES256", "k")
	r := partnerlink(t, "", append([]string{"send", "--gateway", srv.URL, "--partner", "acme", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...)
	for _, want := range []string{"payload_invalid: the payload does not meet the interface", "contact.email: required", "req-7"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("send (rejected) = %d, stderr %q lacks %q", r.code, r.stderr, want)
		}
	}
}

func TestSendForm(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	page := filepath.Join(dir, "link.html")
	r := partnerlink(t, "", append([]string{"send", "--gateway", "https://sso.example.com", "--partner", "acme", "--form", page,
		"--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, mainFlags...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "expires at 2026-03-01T12:02:00Z") {
		t.Fatalf("send --form = %d %q %q", r.code, r.stdout, r.stderr)
	}
	html, _ := os.ReadFile(page)
	if !strings.Contains(string(html), `action="https://sso.example.com/partner/acme/payload"`) {
		t.Errorf("page does not post to /payload:\n%s", html)
	}
	i := strings.Index(string(html), `name="payload" value="`) + len(`name="payload" value="`)
	tok := string(html[i : i+bytes.IndexByte(html[i:], '"')])
	if got, err := verify(t, filepath.Join(dir, "jwks.json"), tok); err != nil || got.Kind != linkspec.KindMain {
		t.Errorf("the page's token = %v, %v, want an accepted main link", got, err)
	}
}

func TestCheck(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	jwks := filepath.Join(dir, "jwks.json")
	tok := strings.TrimSpace(partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...).stdout)
	keyServer := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer keyServer.Close()

	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []string
	}{
		{"valid", "", []string{"check", tok, "--jwks", jwks, "--iss", iss, "--aud", aud}, 0,
			[]string{"ok   header typ", "verdict: accepted (a go link)", "not checked offline"}},
		{"from stdin and url", tok + "\n", []string{"check", "-", "--jwks-url", keyServer.URL + "/jwks.json", "--iss", iss, "--aud", aud}, 0,
			[]string{"verdict: accepted"}},
		{"wrong aud", "", []string{"check", tok, "--jwks", jwks, "--iss", iss, "--aud", "other"}, 1,
			[]string{`FAIL aud is or contains "other" (A-AUTH-8) [audience_invalid]`, "verdict: rejected: audience_invalid"}},
		{"alg not allowed", "", []string{"check", tok, "--jwks", jwks, "--iss", iss, "--aud", aud, "--alg", "RS256,PS256"}, 1,
			[]string{"verdict: rejected: algorithm_not_allowed"}},
		{"main only", "", []string{"check", tok, "--jwks", jwks, "--iss", iss, "--aud", aud, "--kind", "main"}, 1,
			[]string{"verdict: rejected: kind_not_allowed"}},
		{"expired", "", []string{"check", tok, "--jwks", jwks, "--iss", iss, "--aud", aud, "--leeway", "0s", "--max-lifetime", "1m"}, 1,
			[]string{"[lifetime_too_long]", "verdict: rejected: lifetime_too_long"}},
		{"garbage", "", []string{"check", "garbage", "--jwks", jwks, "--iss", iss, "--aud", aud}, 1,
			[]string{"FAIL the token is a compact JWS", " --  the signature verifies", "verdict: rejected: token_malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := partnerlink(t, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Errorf("check = %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("check output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

// TestCheckSaysWhichOptionalFieldsAreDropped: a token (signed by a partner's own library,
// not the kit, whose signer refuses malformed values) with a malformed optional e-mail
// and a blank middle name is accepted, and check names both fields and why, never the
// values; a Go link carrying employeeEmail is a go link.
func TestCheckSaysWhichOptionalFieldsAreDropped(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	pemData, err := os.ReadFile(filepath.Join(dir, "private.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := partnerkit.ParsePrivateKey(pemData)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(claims map[string]any) string {
		t.Helper()
		nbf := testNow.Unix()
		for k, v := range map[string]any{"iss": iss, "aud": aud, "nbf": nbf, "iat": nbf, "exp": nbf + 120, "nonce": "n-0123456789abcdef0123"} {
			claims[k] = v
		}
		body, _ := json.Marshal(claims)
		hdrs := jws.NewHeaders()
		_ = hdrs.Set(jws.KeyIDKey, "k")
		_ = hdrs.Set(jws.TypeKey, "JWT")
		tok, err := jws.Sign(body, jws.WithKey(jwa.ES256, key, jws.WithProtectedHeaders(hdrs)))
		if err != nil {
			t.Fatal(err)
		}
		return string(tok)
	}
	contact := map[string]any{"id": "c-1", "firstname": "Åsa", "lastname": "Lind", "middlename": "   ", "email": "asa at example"}
	mainTok := sign(map[string]any{"employeeId": "emp-1", "employeeFirstname": "Eva", "employeeLastname": "Berg",
		"organizationName": "Acme", "organizationId": "org-1", "contact": contact})
	r := partnerlink(t, "", "check", mainTok, "--jwks", filepath.Join(dir, "jwks.json"), "--iss", iss, "--aud", aud)
	for _, w := range []string{"verdict: accepted (a main link)", "dropped optional fields",
		"  contact.middlename: blank", "  contact.email: not an e-mail address", "a main link: it carries employeeId"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("check output lacks %q:\n%s", w, r.stdout)
		}
	}
	if r.code != 0 || strings.Contains(r.stdout, "asa at example") {
		t.Errorf("check = %d, want 0 and no dropped value in the output:\n%s", r.code, r.stdout)
	}

	contact["email"], contact["middlename"] = "asa@example.org", ""
	goTok := sign(map[string]any{"employeeEmail": "eva@acme.example", "organizationName": "Acme", "organizationId": "org-1", "contact": contact})
	r = partnerlink(t, "", "check", goTok, "--jwks", filepath.Join(dir, "jwks.json"), "--iss", iss, "--aud", aud)
	if r.code != 0 || !strings.Contains(r.stdout, "verdict: accepted (a go link)") || strings.Contains(r.stdout, "dropped optional fields") ||
		!strings.Contains(r.stdout, "employeeEmail is extra user data") {
		t.Errorf("check of a go link with employeeEmail = %d:\n%s", r.code, r.stdout)
	}
}

// TestCheckLeewayZero: --leeway 0s is no leeway, as leeway 0 is in the Caddyfile, not
// the default 30 s: a token checked 10 s after its exp passes with the default and is
// expired with none.
func TestCheckLeewayZero(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	tok := strings.TrimSpace(partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...).stdout)
	check := func(extra ...string) (int, string) {
		var out bytes.Buffer
		e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, now: func() time.Time { return testNow.Add(partnerkit.DefaultLifetime + 10*time.Second) }, http: http.DefaultClient}
		code := run(context.Background(), append([]string{"check", tok, "--jwks", filepath.Join(dir, "jwks.json"), "--iss", iss, "--aud", aud}, extra...), e)
		return code, out.String()
	}
	if code, out := check(); code != 0 || !strings.Contains(out, "verdict: accepted") {
		t.Errorf("check 10s after exp with the default leeway = %d, want accepted:\n%s", code, out)
	}
	if code, out := check("--leeway", "0s"); code != 1 || !strings.Contains(out, "verdict: rejected: token_expired") {
		t.Errorf("check 10s after exp with --leeway 0s = %d, want token_expired:\n%s", code, out)
	}
}

func TestCheckLaterClock(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	tok := strings.TrimSpace(partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...).stdout)
	var out bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, now: func() time.Time { return testNow.Add(3 * time.Minute) }, http: http.DefaultClient}
	code := run(context.Background(), []string{"check", tok, "--jwks", filepath.Join(dir, "jwks.json"), "--iss", iss, "--aud", aud}, e)
	if code != 1 || !strings.Contains(out.String(), "verdict: rejected: token_expired") {
		t.Errorf("check (3 minutes later) = %d:\n%s", code, out.String())
	}
}

// TestCheckJSON: check --json prints partnerkit.Report's JSON, the shape the gateway's dry
// run answers: the verdict, the code and status the link endpoint would answer, and every
// rule with its id, text, result and code, the nonce rule last and not checked. The exit
// status is the text report's.
func TestCheckJSON(t *testing.T) {
	dir := keygen(t, "ES256", "k")
	jwks := filepath.Join(dir, "jwks.json")
	tok := strings.TrimSpace(partnerlink(t, "", append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", iss, "--aud", aud}, goFlags...)...).stdout)
	set, err := os.ReadFile(jwks)
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		ID     string `json:"id"`
		Text   string `json:"text"`
		Result string `json:"result"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	type report struct {
		Verdict string `json:"verdict"`
		Code    string `json:"code"`
		Status  int    `json:"status"`
		Kind    string `json:"kind"`
		Rules   []rule `json:"rules"`
	}
	tests := []struct {
		name, aud     string
		exit          int
		verdict, code string
		status        int
		kind          string
	}{
		{"accepted", aud, 0, "accepted", "", 0, "go"},
		{"rejected", "other", 1, "rejected", "audience_invalid", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := partnerlink(t, "", "check", "--json", tok, "--jwks", jwks, "--iss", iss, "--aud", tt.aud)
			if r.code != tt.exit {
				t.Errorf("check --json = %d, want %d\n%s%s", r.code, tt.exit, r.stdout, r.stderr)
			}
			want, err := json.Marshal(partnerkit.Check(context.Background(), tok, set, linktoken.Rules{Issuer: iss, Audience: tt.aud}, testNow))
			if err != nil {
				t.Fatal(err)
			}
			if r.stdout != string(want)+"\n" {
				t.Errorf("check --json printed\n%s\nwant partnerkit.Report's encoding\n%s", r.stdout, want)
			}
			var got report
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("decoding %q: %v", r.stdout, err)
			}
			if got.Verdict != tt.verdict || got.Code != tt.code || got.Status != tt.status || got.Kind != tt.kind {
				t.Errorf("verdict, code, status, kind = %q %q %d %q, want %q %q %d %q", got.Verdict, got.Code, got.Status, got.Kind, tt.verdict, tt.code, tt.status, tt.kind)
			}
			if len(got.Rules) < 2 {
				t.Fatalf("rules = %+v, want the gateway's rules and the nonce rule", got.Rules)
			}
			typ := got.Rules[2]
			if typ.ID != "A-AUTH-5" || !strings.HasPrefix(typ.Text, "header typ is") || typ.Result != "passed" || typ.Code != "header_invalid" {
				t.Errorf("rules[2] = %+v, want the typ rule A-AUTH-5, passed, header_invalid", typ)
			}
			if last := got.Rules[len(got.Rules)-1]; last.ID != "LIM-2" || last.Result != "not_checked" || last.Code != "token_replayed" {
				t.Errorf("last rule = %+v, want LIM-2 not_checked token_replayed", last)
			}
		})
	}
}
