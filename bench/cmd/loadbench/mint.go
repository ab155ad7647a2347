package main

import (
	"cmp"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
)

// The partner of the benchmark. RSA 2048 is the key size the reference numbers
// (27 µs per RS256 verification) are for, and what most partners publish.
const (
	benchPartner  = "acme"
	benchIssuer   = "https://partner.bench.example"
	benchAudience = "partnergate-bench"
	benchKeyID    = "bench-2026-11"
	benchRSABits  = 2048
	tokenLifetime = 5 * time.Minute // LIM-1's maximum, so a minted batch lives longest
)

// partner is the signing side: a private key and its published set.
type partner struct {
	key  crypto.Signer
	mix  mix // the key's algorithm and the links' kind
	jwks []byte
	// short mints the -operator run's tokens: ten payload fields with short values (about
	// 850 bytes signed) instead of every field a partner usually fills (1,252 bytes).
	short bool
	// issuer is the tokens' iss: benchIssuer when "" (the other -partners have their own).
	issuer string
}

func newPartner(m mix) (*partner, error) {
	key, err := m.newKey()
	if err != nil {
		return nil, err
	}
	return partnerFor(key, m)
}

// partnerFor returns the partner that signs with key, of m's algorithm, and publishes it
// as benchKeyID.
func partnerFor(key crypto.Signer, m mix) (*partner, error) {
	pub, err := jwk.FromRaw(key.Public())
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]any{jwk.KeyIDKey: benchKeyID, jwk.AlgorithmKey: m.alg, jwk.KeyUsageKey: jwk.ForSignature} {
		if err := pub.Set(k, v); err != nil {
			return nil, err
		}
	}
	set := jwk.NewSet()
	if err := set.AddKey(pub); err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return &partner{key: key, mix: m, jwks: jwks}, nil
}

// claims is a main-client link of typical size: the registered claims the gateway checks
// and every payload field a partner usually fills, so that the token (about 1 KiB) is as
// long as a real one and the gateway's decoding and header mapping do their full work.
// With -link go its payload is a Go link (goPayload) instead.
type claims struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"`
	NotBefore int64  `json:"nbf"`
	IssuedAt  int64  `json:"iat"`
	Expiry    int64  `json:"exp"`
	Nonce     string `json:"nonce"`
	linkspec.Payload
}

func (p *partner) mintOne(now time.Time, seq int) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	c := claims{
		Issuer: cmp.Or(p.issuer, benchIssuer), Audience: benchAudience,
		NotBefore: now.Unix(), IssuedAt: now.Unix(), Expiry: now.Add(tokenLifetime).Unix(),
		Nonce: base64.RawURLEncoding.EncodeToString(nonce[:]),
	}
	if p.mix.kind == linkspec.KindGo {
		c.Payload = goPayload(seq, p.short)
	} else if p.short {
		c.Payload = shortPayload(seq)
	} else {
		c.Payload = linkspec.Payload{
			EmployeeID:        fmt.Sprintf("emp-%06d", seq%50000),
			EmployeeUsername:  "kari.nordmann",
			EmployeeFirstname: "Kari",
			EmployeeLastname:  "Nordmann",
			EmployeeEmail:     "kari.nordmann@clinic.bench.example",
			OrganizationName:  "Bench Physiotherapy Clinic",
			OrganizationID:    "org-0042",
			CaseID:            fmt.Sprintf("case-%08d", seq),
			Contact: &linkspec.Contact{
				ID:        fmt.Sprintf("contact-%08d", seq),
				Birthdate: "1984-03-17",
				Gender:    "female",
				Firstname: "Ola",
				Lastname:  "Hansen",
				Mobile:    "+4791234567",
				Email:     "ola.hansen@mail.bench.example",
				Diagnosis: "M54.5",
			},
		}
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	hdr := jws.NewHeaders()
	for k, v := range map[string]any{jws.TypeKey: "JWT", jws.KeyIDKey: benchKeyID} {
		if err := hdr.Set(k, v); err != nil {
			return nil, err
		}
	}
	return jws.Sign(payload, jws.WithKey(p.mix.alg, p.key, jws.WithProtectedHeaders(hdr)))
}

// shortPayload is a main-client link with ten payload fields (seven of the employee,
// organization and case, three of the contact) and short values: the token the issue's
// outside measurement used.
func shortPayload(seq int) linkspec.Payload {
	return linkspec.Payload{
		EmployeeID:        fmt.Sprintf("e%d", seq%50000),
		EmployeeUsername:  "kari",
		EmployeeFirstname: "Kari",
		EmployeeLastname:  "Nordmann",
		OrganizationName:  "Bench Clinic",
		OrganizationID:    "org-42",
		CaseID:            fmt.Sprintf("c%d", seq),
		Contact: &linkspec.Contact{
			ID:        fmt.Sprintf("p%d", seq),
			Firstname: "Ola",
			Lastname:  "Hansen",
		},
	}
}

// mint signs n fresh tokens on every core, each with its own nonce, valid from now for the
// interface's maximum lifetime (docs/interface.md LIM-1). An RSA-2048 signature costs about
// 0.8 ms, so the suite mints each phase's tokens right before it rather than all at once: a
// token lives 5 minutes.
func (p *partner) mint(n int) ([][]byte, error) {
	now := time.Now()
	out := make([][]byte, n)
	err := onEveryCore(n, func(i int) (err error) {
		out[i], err = p.mintOne(now, i)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("minting tokens: %v", err)
	}
	return out, nil
}

// floodTokens returns n tokens like valid, each with its header replaced by one naming a
// random kid that no key set holds: what a partner rotating keys badly, or an attacker,
// sends. The signature no longer matches, which is the point: the gateway must turn these
// away at the kid lookup, before any signature check, and without a key fetch each.
// Signing them would cost 0.8 ms apiece and prove nothing more. They keep valid's alg, so
// that only the kid is wrong whatever the -alg.
func floodTokens(valid []byte, n int) ([][]byte, error) {
	parts := strings.SplitN(string(valid), ".", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("flood template is not a compact JWS")
	}
	alg, err := headerAlg(parts[0])
	if err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	var kid [16]byte
	for i := range out {
		if _, err := rand.Read(kid[:]); err != nil {
			return nil, err
		}
		hdr := fmt.Sprintf(`{"alg":"%s","kid":"rotated-%s","typ":"JWT"}`, alg, hex.EncodeToString(kid[:]))
		out[i] = []byte(base64.RawURLEncoding.EncodeToString([]byte(hdr)) + "." + parts[1] + "." + parts[2])
	}
	return out, nil
}

// onEveryCore runs f for 0 to n-1 spread over the machine's cores (RSA signing and key
// generation are what the suite waits for) and returns the errors; a core stops at its first.
func onEveryCore(n int, f func(i int) error) error {
	errs := make([]error, runtime.NumCPU())
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && errs[w] == nil; i += len(errs) {
				errs[w] = f(i)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
