package partnerkit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
)

// A partner makes a key once, publishes the jwks.json at an HTTPS URL and keeps the private
// key secret.
func ExampleMarshalJWKS() {
	key, err := partnerkit.GenerateKey("ES256", 0)
	if err != nil {
		panic(err)
	}
	jwks, err := partnerkit.MarshalJWKS(partnerkit.PublicKey{KeyID: "acme-2026-03", Algorithm: "ES256", Key: key.Public()})
	if err != nil {
		panic(err)
	}
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	_ = json.Unmarshal(jwks, &doc)
	k := doc.Keys[0]
	fmt.Println(k["kty"], k["crv"], k["kid"], k["alg"], k["use"], k["d"] == nil)
	// Output: EC P-256 acme-2026-03 ES256 sig true
}

// Sign sets every header member and claim the gateway checks; the payload fields are
// top-level claims.
func ExampleSigner_Sign() {
	key, _ := partnerkit.GenerateKey("ES256", 0)
	issued := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	signer, err := partnerkit.NewSigner(key, "acme-2026-03", "ES256", "https://acme.example", "svc-link",
		partnerkit.WithClock(func() time.Time { return issued }))
	if err != nil {
		panic(err)
	}
	payload := partnerkit.MainPayload(
		partnerkit.Employee{ID: "emp-1", Firstname: "Eva", Lastname: "Berg"},
		partnerkit.Organization{Name: "Acme Clinic", ID: "org-1"},
		partnerkit.Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind"},
	)
	token, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	parts := strings.Split(token, ".")
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(body, &claims)
	fmt.Println(string(header))
	fmt.Println(claims["iss"], claims["aud"], claims["employeeId"])
	fmt.Println("lifetime", claims["exp"].(float64)-claims["nbf"].(float64), "iat = nbf", claims["iat"] == claims["nbf"])
	fmt.Println("nonce length", len(claims["nonce"].(string)))
	// Output:
	// {"alg":"ES256","kid":"acme-2026-03","typ":"JWT"}
	// https://acme.example svc-link emp-1
	// lifetime 120 iat = nbf true
	// nonce length 43
}

// URL posts the token to /url and returns the address to open; a refusal is a *Rejection
// with the gateway's code.
func ExampleClient_URL() {
	// A stand-in for the gateway: it answers one URL, then refuses with a problem document.
	calls := 0
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if calls++; calls == 1 {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintln(w, "https://sso.example.com/app/login?code=one-time")
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"status":409,"code":"token_replayed","detail":"the token was used before"}`)
	}))
	defer gateway.Close()

	key, _ := partnerkit.GenerateKey("ES256", 0)
	signer, _ := partnerkit.NewSigner(key, "acme-2026-03", "ES256", "https://acme.example", "svc-link")
	client := &partnerkit.Client{Gateway: gateway.URL, Partner: "acme", Signer: signer}
	payload := partnerkit.GoPayload(
		partnerkit.Organization{Name: "Acme Clinic", ID: "org-1"},
		partnerkit.Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind", Email: "asa@example.org"},
	)
	u, err := client.URL(context.Background(), payload)
	fmt.Println(u, err)
	_, err = client.URL(context.Background(), payload)
	if rej, ok := err.(*partnerkit.Rejection); ok {
		fmt.Println(rej.Status, rej.Code)
	}
	// Output:
	// https://sso.example.com/app/login?code=one-time <nil>
	// 409 token_replayed
}

// openLink is the guide's Go snippet: docs/partners.md includes this function verbatim
// (partnerkit's guide test compares them), and Example_guide runs it.
func openLink(ctx context.Context, gateway string, privatePEM []byte) (string, error) {
	signer, err := partnerkit.NewSignerPEM(privatePEM, "acme-2026-03", "ES256", "https://acme.example", "svc-link")
	if err != nil {
		return "", err
	}
	client := &partnerkit.Client{Gateway: gateway, Partner: "acme", Signer: signer}
	loginURL, err := client.URL(ctx, partnerkit.GoPayload(
		partnerkit.Organization{Name: "Acme Clinic", ID: "org-17"},
		partnerkit.Contact{ID: "c-4711", Firstname: "Åsa", Lastname: "Lind", Email: "asa@example.org"},
	))
	var rej *partnerkit.Rejection
	if errors.As(err, &rej) {
		// The gateway refused the link: match on rej.Code (section 4), quote rej.RequestID.
		return "", fmt.Errorf("link refused: %s (request %s)", rej.Code, rej.RequestID)
	}
	return loginURL, err // open it in the user's browser at once: its code works once
}

// The guide's Go snippet, against a stand-in for the gateway that verifies the token with
// the gateway's own verifier and answers as the reference app service does.
func Example_guide() {
	key, _ := partnerkit.GenerateKey("ES256", 0)
	privatePEM, _ := partnerkit.MarshalPrivateKey(key)
	jwks, _ := partnerkit.MarshalJWKS(partnerkit.PublicKey{KeyID: "acme-2026-03", Algorithm: "ES256", Key: key.Public()})
	set, _ := linktoken.ParseKeySet(jwks)
	verifier, _ := linktoken.NewVerifier(linktoken.Rules{Issuer: "https://acme.example", Audience: "svc-link"})
	var gateway *httptest.Server
	gateway = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := io.ReadAll(r.Body)
		if _, err := verifier.Verify(r.Context(), token, set); err != nil || r.URL.Path != "/partner/acme/url" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"status":401,"code":%q,"request_id":"r-1"}`, linktoken.CodeOf(err))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, gateway.URL+"/app/login?code=one-time")
	}))
	defer gateway.Close()

	loginURL, err := openLink(context.Background(), gateway.URL, privatePEM)
	fmt.Println(strings.TrimPrefix(loginURL, gateway.URL), err)
	// Output: /app/login?code=one-time <nil>
}

// FormPage makes the page for the /payload endpoint: serve it in the tab, iframe or web
// control that should show the web application.
func ExampleClient_FormPage() {
	key, _ := partnerkit.GenerateKey("ES256", 0)
	signer, _ := partnerkit.NewSigner(key, "acme-2026-03", "ES256", "https://acme.example", "svc-link")
	client := &partnerkit.Client{Gateway: "https://sso.example.com", Partner: "acme", Signer: signer}
	page, err := client.FormPage(partnerkit.GoPayload(
		partnerkit.Organization{Name: "Acme Clinic", ID: "org-1"},
		partnerkit.Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind", Email: "asa@example.org"},
	))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Contains(string(page), `action="https://sso.example.com/partner/acme/payload"`))
	fmt.Println(strings.Contains(string(page), `<input type="hidden" name="payload" value="ey`))
	// Output:
	// true
	// true
}

// Check explains a token rule by rule, with the gateway's verdict.
func ExampleCheck() {
	key, _ := partnerkit.GenerateKey("ES256", 0)
	signer, _ := partnerkit.NewSigner(key, "k1", "ES256", "https://acme.example", "svc-link")
	jwks, _ := partnerkit.MarshalJWKS(signer.PublicKey())
	token, _ := signer.Sign(partnerkit.GoPayload(
		partnerkit.Organization{Name: "Acme Clinic", ID: "org-1"},
		partnerkit.Contact{ID: "c-1", Firstname: "Åsa", Lastname: "Lind", Email: "asa@example.org"},
	))
	rules := linktoken.Rules{Issuer: "https://acme.example", Audience: "another-audience"}
	report := partnerkit.Check(context.Background(), token, jwks, rules, time.Now())
	for _, s := range report.Steps {
		if s.Outcome == partnerkit.Failed {
			fmt.Println("failed:", s.Rule)
		}
	}
	fmt.Println("verdict:", report.Accepted, report.Code)
	// Output:
	// failed: aud is or contains "another-audience"
	// verdict: false audience_invalid
}
