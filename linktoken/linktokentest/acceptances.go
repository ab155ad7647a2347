package linktokentest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// Acceptance is one token that the gateway's verifier must accept although it carries
// something an earlier gateway refused: a certificate hint in the header, a malformed
// optional payload value (dropped), extra user data in a Go link.
type Acceptance struct {
	Name string
	// Token builds the token; it signs with the keys of jwttest.StandardSetJSON.
	Token func(tb testing.TB) string
	// Rules are the partner's rules, issuer and audience included.
	Rules linktoken.Rules
	// Now is the instant the token is verified at.
	Now time.Time
	// Kind is the kind the verifier must read.
	Kind linkspec.Kind
	// Dropped are the optional fields the verifier must drop, in table order.
	Dropped []string
	// Gone are values of the token that must not be in the verified payload or claims
	// (the dropped ones).
	Gone []string
}

// Acceptances returns the accepted cases. Each call builds a fresh table; tokens are made
// only when Token is called.
func Acceptances() []Acceptance { return AcceptancesAt(jwttest.Now) }

// AcceptancesAt is Acceptances with the tokens issued at another instant.
func AcceptancesAt(at time.Time) []Acceptance {
	mainWith := func(f func(c map[string]any)) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			return jwttest.Token(tb, linktoken.RS256, "rsa-1", jwttest.WithClaimsAt(at, f))
		}
	}
	goWith := func(f func(c map[string]any)) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			c := jwttest.GoClaimsAt(at)
			f(c)
			return jwttest.Token(tb, linktoken.ES256, "ec-1", c)
		}
	}
	contact := func(c map[string]any) map[string]any { return c["contact"].(map[string]any) }
	// withHints signs a main link with kid's key under a header with the hints' members.
	withHints := func(alg, kid string, hints func(tb testing.TB) string) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			h := `{"alg":"` + alg + `","typ":"JWT","kid":"` + kid + `",` + hints(tb) + `}`
			return jwttest.Resign(tb, h, jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)), alg, kid)
		}
	}
	partnerKey := func(tb testing.TB) crypto.Signer { return jwttest.Keys(tb).RSA }
	cases := []Acceptance{
		// Certificate hints (Microsoft's .NET libraries, nimbus-jose-jwt): ignored.
		{Name: "x5t of the partner's certificate", Kind: linkspec.KindMain, Token: withHints(linktoken.RS256, "rsa-1", func(tb testing.TB) string {
			return `"x5t":"` + CertHints(tb, partnerKey(tb)).X5t + `"`
		})},
		{Name: "x5t#S256 of the partner's certificate", Kind: linkspec.KindMain, Token: withHints(linktoken.RS256, "rsa-1", func(tb testing.TB) string {
			return `"x5t#S256":"` + CertHints(tb, partnerKey(tb)).X5tS256 + `"`
		})},
		{Name: "x5c, x5t and x5t#S256 of the partner's certificate", Kind: linkspec.KindMain, Token: withHints(linktoken.RS256, "rsa-1", func(tb testing.TB) string {
			h := CertHints(tb, partnerKey(tb))
			return `"x5t":"` + h.X5t + `","x5t#S256":"` + h.X5tS256 + `","x5c":["` + h.X5c + `"]`
		})},
		{Name: "x5t on an ES256 token", Kind: linkspec.KindMain, Token: withHints(linktoken.ES256, "ec-1", func(tb testing.TB) string {
			return `"x5t":"` + CertHints(tb, jwttest.Keys(tb).EC).X5t + `"`
		})},
		// The hints are never read for the key: one naming another key changes nothing
		// when the partner's key of the kid signed.
		{Name: "x5c of another key, signed by the partner's key", Kind: linkspec.KindMain, Token: withHints(linktoken.RS256, "rsa-1", func(tb testing.TB) string {
			h := CertHints(tb, AttackerKey(tb))
			return `"x5t":"` + h.X5t + `","x5c":["` + h.X5c + `"]`
		})},
		{Name: "x5t that is no thumbprint", Kind: linkspec.KindMain, Token: withHints(linktoken.RS256, "rsa-1", func(tb testing.TB) string {
			return `"x5t":"not-a-thumbprint"`
		})},

		// Malformed or blank optional values: dropped, not refused.
		{Name: "main link, contact email malformed", Kind: linkspec.KindMain, Dropped: []string{"contact.email"}, Gone: []string{"ola at example"},
			Token: mainWith(func(c map[string]any) { contact(c)["email"] = "ola at example.org" })},
		{Name: "main link, employeeEmail malformed", Kind: linkspec.KindMain, Dropped: []string{"employeeEmail"}, Gone: []string{"ase(at)acme"},
			Token: mainWith(func(c map[string]any) { c["employeeEmail"] = "ase(at)acme" })},
		{Name: "main link, middlename only white space", Kind: linkspec.KindMain, Dropped: []string{"contact.middlename"},
			Token: mainWith(func(c map[string]any) { contact(c)["middlename"] = " \t " })},
		{Name: "main link, middlename empty (not dropped: absent)", Kind: linkspec.KindMain,
			Token: mainWith(func(c map[string]any) { contact(c)["middlename"] = "" })},
		{Name: "main link, birthdate not a date", Kind: linkspec.KindMain, Dropped: []string{"contact.birthdate"}, Gone: []string{"1981-02-29"},
			Token: mainWith(func(c map[string]any) { contact(c)["birthdate"] = "1981-02-29" })},
		{Name: "main link, several optional values malformed", Kind: linkspec.KindMain,
			Dropped: []string{"employeeUsername", "employeeEmail", "contact.mobile", "contact.email"}, Gone: []string{"kari\nnordmann", "+47 12\r\n"},
			Token: mainWith(func(c map[string]any) {
				c["employeeUsername"] = "kari\nnordmann"
				c["employeeEmail"] = " "
				contact(c)["mobile"] = "+47 12\r\n"
				contact(c)["email"] = "@"
			})},

		// The ssn is a national identity number of Norway, Sweden or Denmark, checked by its
		// form, date and check digits (nationalid); any other value is dropped, so that a
		// placeholder or a mistyped number never matches one contact to another.
		{Name: "main link, ssn in another spelling (kept)", Kind: linkspec.KindMain,
			Token: mainWith(func(c map[string]any) { contact(c)["ssn"] = "170535 50088" })},
		{Name: "main link, ssn a placeholder", Kind: linkspec.KindMain, Dropped: []string{"contact.ssn"}, Gone: []string{"N/A"},
			Token: mainWith(func(c map[string]any) { contact(c)["ssn"] = "N/A" })},
		{Name: "main link, ssn check digits wrong", Kind: linkspec.KindMain, Dropped: []string{"contact.ssn"}, Gone: []string{"170485 12345"},
			Token: mainWith(func(c map[string]any) { contact(c)["ssn"] = "170485 12345" })},
		{Name: "go link, ssn of another country", Kind: linkspec.KindGo, Dropped: []string{"contact.ssn"}, Gone: []string{"131052-308T"},
			Token: goWith(func(c map[string]any) { contact(c)["ssn"] = "131052-308T" })},

		// Extra user data in a Go link (docs/interface.md A-PAY-GO).
		{Name: "go link with employeeEmail", Kind: linkspec.KindGo,
			Token: goWith(func(c map[string]any) { c["employeeEmail"] = "ase@acme.example" })},
		{Name: "go link with employeeUsername and employeeEmail", Kind: linkspec.KindGo,
			Token: goWith(func(c map[string]any) {
				c["employeeUsername"] = "kari.nordmann"
				c["employeeEmail"] = "ase@acme.example"
			})},
		{Name: "go link with a malformed employeeEmail", Kind: linkspec.KindGo, Dropped: []string{"employeeEmail"}, Gone: []string{"not-an-address"},
			Token: goWith(func(c map[string]any) { c["employeeEmail"] = "not-an-address" })},
		{Name: "go link with employeeEmail to a go-only partner", Kind: linkspec.KindGo, Rules: linktoken.Rules{Kinds: []linkspec.Kind{linkspec.KindGo}},
			Token: goWith(func(c map[string]any) { c["employeeEmail"] = "ase@acme.example" })},
	}
	for i := range cases {
		c := &cases[i]
		c.Rules.Issuer, c.Rules.Audience = jwttest.Issuer, jwttest.Audience
		if c.Now.IsZero() {
			c.Now = at
		}
	}
	return cases
}

var (
	attackerOnce sync.Once
	attackerKey  *rsa.PrivateKey
)

// AttackerKey is an RSA key in no partner's set, made once per test binary.
func AttackerKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	attackerOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		attackerKey = k
	})
	return attackerKey
}

// certificate returns a self-signed DER certificate for key, as a partner's .NET
// credential would carry.
func certificate(tb testing.TB, key crypto.Signer) []byte {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "partner signing key"},
		NotBefore:    jwttest.Now.Add(-time.Hour),
		NotAfter:     jwttest.Now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatalf("x509.CreateCertificate: %v", err)
	}
	return der
}

// Hints are the certificate hints of one self-signed certificate of a key, as header
// member values: X5c the one-certificate chain (standard base64 DER, RFC 7515 §4.1.6),
// X5t and X5tS256 its SHA-1 and SHA-256 thumbprints (base64url, §4.1.7 and §4.1.8).
type Hints struct {
	Cert              []byte
	X5c, X5t, X5tS256 string
}

// CertHints makes a self-signed certificate for key and returns its hints.
func CertHints(tb testing.TB, key crypto.Signer) Hints {
	tb.Helper()
	cert := certificate(tb, key)
	s1, s256 := sha1.Sum(cert), sha256.Sum256(cert)
	return Hints{Cert: cert, X5c: base64.StdEncoding.EncodeToString(cert), X5t: jwttest.B64u(s1[:]), X5tS256: jwttest.B64u(s256[:])}
}
