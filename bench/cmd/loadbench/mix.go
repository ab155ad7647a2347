package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/partnergate/partnergate/linkspec"
)

// mix is what the gateway phases' tokens are: the partner's signing algorithm and the link
// kind. Issue 29's profile-guided build wants a profile of the realistic mix, not of one
// path, so scripts/pgo.sh runs the suite with several.
type mix struct {
	alg  jwa.SignatureAlgorithm // RS256, PS256 or ES256 (docs/interface.md A-AUTH-2)
	kind linkspec.Kind
}

// defaultMix is the suite's path before issue 29: RS256 main-client links.
var defaultMix = mix{alg: jwa.RS256, kind: linkspec.KindMain}

// parseMix reads the -alg and -link flags.
func parseMix(alg, link string) (mix, error) {
	m := mix{alg: jwa.SignatureAlgorithm(alg)}
	switch m.alg {
	case jwa.RS256, jwa.PS256, jwa.ES256:
	default:
		return mix{}, fmt.Errorf("-alg %q: want RS256, PS256 or ES256", alg)
	}
	kind, ok := linkspec.ParseKind(link)
	if !ok {
		return mix{}, fmt.Errorf("-link %q: want %s or %s", link, linkspec.KindMain, linkspec.KindGo)
	}
	m.kind = kind
	return m, nil
}

// keyName names the partner's key: "RSA-2048" or "P-256".
func (m mix) keyName() string {
	if m.alg == jwa.ES256 {
		return "P-256"
	}
	return fmt.Sprintf("RSA-%d", benchRSABits)
}

// String is how the report names the tokens: "RS256 (RSA-2048) main-client link".
func (m mix) String() string {
	link := "main-client link"
	if m.kind == linkspec.KindGo {
		link = "Go link"
	}
	return fmt.Sprintf("%s (%s) %s", m.alg, m.keyName(), link)
}

// newKey generates the partner's private key: RSA for RS256 and PS256, of the size the
// issue's reference numbers are for, and P-256 for ES256 (the only curve ES256 allows).
func (m mix) newKey() (crypto.Signer, error) {
	if m.alg == jwa.ES256 {
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return rsa.GenerateKey(rand.Reader, benchRSABits)
}

// goPayload is a Go link (docs/interface.md A-PAY-GO): no employee fields, so the link
// signs the contact in, with the contact's email that the Go client needs for the account.
// The short one has the six required fields with short values, as -operator's main links
// have ten; the full one adds what a partner usually fills.
func goPayload(seq int, short bool) linkspec.Payload {
	if short {
		return linkspec.Payload{
			OrganizationName: "Bench Clinic",
			OrganizationID:   "org-42",
			Contact: &linkspec.Contact{
				ID:        fmt.Sprintf("p%d", seq),
				Firstname: "Ola",
				Lastname:  "Hansen",
				Email:     fmt.Sprintf("p%d@m.example", seq),
			},
		}
	}
	return linkspec.Payload{
		OrganizationName: "Bench Physiotherapy Clinic",
		OrganizationID:   "org-0042",
		Contact: &linkspec.Contact{
			ID:        fmt.Sprintf("contact-%08d", seq),
			Birthdate: "1984-03-17",
			Gender:    "female",
			Firstname: "Ola",
			Lastname:  "Hansen",
			Mobile:    "+4791234567",
			Email:     fmt.Sprintf("ola.hansen.%d@mail.bench.example", seq),
			Diagnosis: "M54.5",
		},
	}
}

// headerAlg returns the alg of a compact JWS's protected header segment.
func headerAlg(segment string) (string, error) {
	data, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil {
		return "", fmt.Errorf("decoding the flood template's header: %v", err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(data, &h); err != nil || h.Alg == "" {
		return "", fmt.Errorf("flood template's header has no alg")
	}
	return h.Alg, nil
}
