package partnerkit

import (
	"crypto"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Keys are made once per test binary: RSA generation is the slow part of these tests.
var (
	keysOnce sync.Once
	testKeys map[string]crypto.Signer
)

func keyFor(t testing.TB, alg string) crypto.Signer {
	t.Helper()
	keysOnce.Do(func() {
		testKeys = map[string]crypto.Signer{}
		for _, a := range Algorithms {
			k, err := GenerateKey(a, MinRSABits)
			if err != nil {
				panic(err)
			}
			testKeys[a] = k
		}
	})
	return testKeys[alg]
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testIss = "https://acme.example"
	testAud = "svc-link"
)

func testSigner(t testing.TB, alg string) *Signer {
	t.Helper()
	s, err := NewSigner(keyFor(t, alg), "k-"+alg, alg, testIss, testAud, WithClock(func() time.Time { return testNow }))
	if err != nil {
		t.Fatalf("NewSigner(%s) = %v", alg, err)
	}
	return s
}

func mainPayload() *Payload {
	return MainPayload(
		Employee{ID: "emp-1", Firstname: "Eva", Lastname: "Berg", Email: "eva@acme.example"},
		Organization{Name: "Acme Clinic", ID: "org-1"},
		Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind", Birthdate: "1980-02-29"},
	)
}

func goPayload() *Payload {
	return GoPayload(
		Organization{Name: "Acme Clinic", ID: "org-1"},
		Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind", Email: "asa@example.org"},
	)
}

// signWith signs claims with any header, for the broken tokens a Signer refuses to make.
func signWith(t testing.TB, key crypto.Signer, alg string, header map[string]any, claims map[string]any) string {
	t.Helper()
	h := jws.NewHeaders()
	for k, v := range header {
		if err := h.Set(k, v); err != nil {
			t.Fatalf("header %s: %v", k, err)
		}
	}
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.Sign(body, jws.WithKey(jwa.SignatureAlgorithm(alg), key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	return string(tok)
}

// validClaims are the claims a Signer makes for p at testNow, as a map to break.
func validClaims(p *Payload) map[string]any {
	c, _ := payloadClaims(p)
	c["iss"] = testIss
	c["aud"] = testAud
	c["nbf"] = testNow.Unix()
	c["iat"] = testNow.Unix()
	c["exp"] = testNow.Unix() + 120
	c["nonce"] = "Zm9vYmFyYmF6cXV4cXV1eHh5enp5"
	return c
}
