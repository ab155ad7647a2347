package partnerkit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// decode verifies tok with the signer's public key (jwx) and returns header and claims.
func decode(t *testing.T, s *Signer, tok string) (map[string]any, map[string]any) {
	t.Helper()
	body, err := jws.Verify([]byte(tok), jws.WithKey(jwa.SignatureAlgorithm(s.alg), s.key.Public()))
	if err != nil {
		t.Fatalf("jws.Verify = %v", err)
	}
	msg, err := jws.Parse([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := json.Marshal(msg.Signatures()[0].ProtectedHeaders())
	if err != nil {
		t.Fatal(err)
	}
	var h, c map[string]any
	if err := json.Unmarshal(hdr, &h); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return h, c
}

func TestSignSetsEveryHeaderMemberAndClaim(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			s := testSigner(t, alg)
			tok, err := s.Sign(mainPayload())
			if err != nil {
				t.Fatal(err)
			}
			h, c := decode(t, s, tok)
			for name, want := range map[string]any{"typ": "JWT", "alg": alg, "kid": "k-" + alg} {
				if h[name] != want {
					t.Errorf("header %s = %v, want %v", name, h[name], want)
				}
			}
			if len(h) != 3 {
				t.Errorf("header = %v, want exactly typ, alg, kid", h)
			}
			now := float64(testNow.Unix())
			for name, want := range map[string]any{
				"iss": testIss, "aud": testAud, "nbf": now, "iat": now, "exp": now + 120,
				"employeeId": "emp-1", "organizationName": "Acme Clinic",
			} {
				if c[name] != want {
					t.Errorf("claim %s = %v, want %v", name, c[name], want)
				}
			}
			contact, _ := c["contact"].(map[string]any)
			if contact["firstname"] != "Åsa" || contact["birthdate"] != "1980-02-29" {
				t.Errorf("claim contact = %v, want the payload's contact", contact)
			}
			nonce, _ := c["nonce"].(string)
			if len(nonce) != 43 {
				t.Errorf("nonce has %d characters, want 43 (32 random bytes, base64url)", len(nonce))
			}
		})
	}
}

func TestSignNonceIsFresh(t *testing.T) {
	s := testSigner(t, "ES256")
	seen := map[any]bool{}
	for i := 0; i < 50; i++ {
		tok, err := s.Sign(goPayload())
		if err != nil {
			t.Fatal(err)
		}
		_, c := decode(t, s, tok)
		if seen[c["nonce"]] {
			t.Fatalf("nonce repeated after %d tokens", i)
		}
		seen[c["nonce"]] = true
	}
}

func TestSignRefuses(t *testing.T) {
	s := testSigner(t, "ES256")
	bad := goPayload()
	bad.Contact.Email = ""
	tests := []struct {
		name string
		p    *Payload
		opts []SignOption
		want string
	}{
		{"invalid payload", bad, nil, "contact.email: required"},
		{"no payload", nil, nil, "no payload"},
		{"lifetime over 5 minutes", goPayload(), []SignOption{WithLifetime(5*time.Minute + time.Second)}, "lifetime"},
		{"lifetime under a second", goPayload(), []SignOption{WithLifetime(0)}, "lifetime"},
		{"extra claim replaces nonce", goPayload(), []SignOption{WithClaims(map[string]any{"nonce": "x"})}, `"nonce"`},
		{"extra claim replaces a payload field", goPayload(), []SignOption{WithClaims(map[string]any{"employeeId": "x"})}, `"employeeId"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := s.Sign(tt.p, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Sign = %q, %v; want an error containing %q", tok, err, tt.want)
			}
		})
	}
	var le *linkspec.Error
	if _, err := s.Sign(bad); !errors.As(err, &le) {
		t.Errorf("Sign(invalid payload) error %T, want *linkspec.Error", err)
	}
}

func TestSignExtraClaimsAndLifetime(t *testing.T) {
	s := testSigner(t, "RS256")
	tok, err := s.Sign(goPayload(), WithLifetime(5*time.Minute), WithClaims(map[string]any{"locale": "sv-SE"}))
	if err != nil {
		t.Fatal(err)
	}
	_, c := decode(t, s, tok)
	if c["locale"] != "sv-SE" {
		t.Errorf("claim locale = %v, want sv-SE", c["locale"])
	}
	if got := c["exp"].(float64) - c["nbf"].(float64); got != 300 {
		t.Errorf("exp - nbf = %v, want 300", got)
	}
}

func TestNewSignerRefuses(t *testing.T) {
	ec, rsaKey := keyFor(t, "ES256"), keyFor(t, "RS256")
	tests := []struct {
		name, kid, alg, iss, aud string
		rsa                      bool
		want                     string
	}{
		{"no kid", "", "ES256", testIss, testAud, false, "kid"},
		{"no iss", "k", "ES256", "", testAud, false, "issuer"},
		{"no aud", "k", "ES256", testIss, "", false, "audience"},
		{"HS256", "k", "HS256", testIss, testAud, false, "not accepted"},
		{"EC key for PS256", "k", "PS256", testIss, testAud, false, "EC key cannot sign PS256"},
		{"RSA key for ES256", "k", "ES256", testIss, testAud, true, "RSA key cannot sign ES256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ec
			if tt.rsa {
				key = rsaKey
			}
			_, err := NewSigner(key, tt.kid, tt.alg, tt.iss, tt.aud)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSigner(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
	s, err := NewSigner(rsaKey, "k", "", testIss, testAud)
	if err != nil || s.Algorithm() != "RS256" {
		t.Errorf("NewSigner(RSA, alg \"\") = %v, %v, want RS256", s, err)
	}
}

// TestGatewayAcceptsSignedTokens is the round trip of the kit and the gateway's verifier:
// every algorithm, both kinds.
func TestGatewayAcceptsSignedTokens(t *testing.T) {
	for _, alg := range Algorithms {
		for kind, p := range map[linkspec.Kind]*Payload{linkspec.KindMain: mainPayload(), linkspec.KindGo: goPayload()} {
			t.Run(alg+"/"+string(kind), func(t *testing.T) {
				s := testSigner(t, alg)
				tok, err := s.Sign(p)
				if err != nil {
					t.Fatal(err)
				}
				doc, err := MarshalJWKS(s.PublicKey())
				if err != nil {
					t.Fatal(err)
				}
				set, err := linktoken.ParseKeySet(doc)
				if err != nil {
					t.Fatalf("linktoken.ParseKeySet = %v", err)
				}
				v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: testIss, Audience: testAud},
					linktoken.WithClock(func() time.Time { return testNow.Add(time.Minute) }))
				if err != nil {
					t.Fatal(err)
				}
				got, err := v.Verify(context.Background(), []byte(tok), set)
				if err != nil {
					t.Fatalf("linktoken Verify = %v, want the token accepted", err)
				}
				if got.Kind != kind || got.Alg != alg || got.KeyID != s.KeyID() {
					t.Errorf("Verify = kind %s alg %s kid %s, want %s %s %s", got.Kind, got.Alg, got.KeyID, kind, alg, s.KeyID())
				}
				if got.Payload.Contact == nil || got.Payload.Contact.Firstname != "Åsa" {
					t.Errorf("verified payload contact = %+v, want Åsa", got.Payload.Contact)
				}
			})
		}
	}
}
