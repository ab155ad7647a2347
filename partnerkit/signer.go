package partnerkit

import (
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// Token lifetimes. The gateway refuses a token whose exp is more than MaxLifetime after its
// nbf (docs/interface.md A-AUTH-6); two minutes leave room for a slow network and a
// partner's clock running a little behind without keeping a stolen token useful for long.
const (
	DefaultLifetime = 2 * time.Minute
	MaxLifetime     = linktoken.DefaultMaxLifetime
)

// NonceBytes is the number of random bytes in a nonce: 256 bits from crypto/rand, 43
// base64url characters, well within the gateway's 16..256 characters.
const NonceBytes = 32

// registeredClaims are set by the Signer and cannot be given as extra claims.
var registeredClaims = map[string]bool{
	"iss": true, "sub": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true, "nonce": true,
}

// Signer signs link tokens for one partner: a private key published under kid, the
// algorithm the key is published for, and the agreed issuer and audience.
type Signer struct {
	key      crypto.Signer
	kid      string
	alg      string
	issuer   string
	audience string
	now      func() time.Time
	random   io.Reader
}

// SignerOption configures a Signer.
type SignerOption func(*Signer)

// WithClock makes the signer read the time from now (tests, or a partner with a better
// clock than the system's).
func WithClock(now func() time.Time) SignerOption { return func(s *Signer) { s.now = now } }

// NewSigner returns a signer for key, published in the partner's jwks.json under kid with
// alg (RS256 or PS256 for an RSA key of 2048..8192 bits, ES256 for an EC P-256 key); an
// empty alg takes DefaultAlgorithm. issuer and audience are the values agreed with the
// service. A key that the gateway would refuse is refused here.
func NewSigner(key crypto.Signer, kid, alg, issuer, audience string, opts ...SignerOption) (*Signer, error) {
	if key == nil {
		return nil, errors.New("no signing key")
	}
	if alg == "" {
		alg = DefaultAlgorithm(key.Public())
	}
	if err := checkKeyForAlg(key.Public(), alg); err != nil {
		return nil, err
	}
	switch {
	case kid == "":
		return nil, errors.New("kid is required: the gateway finds the key by it")
	case issuer == "":
		return nil, errors.New("issuer is required: use the value agreed with the service")
	case audience == "":
		return nil, errors.New("audience is required: use the value agreed with the service")
	}
	s := &Signer{key: key, kid: kid, alg: alg, issuer: issuer, audience: audience, now: time.Now, random: rand.Reader}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// NewSignerPEM is NewSigner with the private key read from PEM (PKCS#8, PKCS#1 or SEC 1).
func NewSignerPEM(privateKeyPEM []byte, kid, alg, issuer, audience string, opts ...SignerOption) (*Signer, error) {
	key, err := ParsePrivateKey(privateKeyPEM)
	if err != nil {
		return nil, err
	}
	return NewSigner(key, kid, alg, issuer, audience, opts...)
}

// KeyID returns the kid the signer puts in every header.
func (s *Signer) KeyID() string { return s.kid }

// Algorithm returns the signature algorithm.
func (s *Signer) Algorithm() string { return s.alg }

// Issuer returns the iss claim.
func (s *Signer) Issuer() string { return s.issuer }

// Audience returns the aud claim.
func (s *Signer) Audience() string { return s.audience }

// PublicKey returns the key set entry to publish for this signer.
func (s *Signer) PublicKey() PublicKey {
	return PublicKey{KeyID: s.kid, Algorithm: s.alg, Key: s.key.Public()}
}

type signConfig struct {
	lifetime time.Duration
	extra    map[string]any
}

// SignOption configures one token.
type SignOption func(*signConfig)

// WithLifetime sets the time from nbf to exp (default DefaultLifetime, at most MaxLifetime;
// whole seconds, since the claims are NumericDate seconds).
func WithLifetime(d time.Duration) SignOption { return func(c *signConfig) { c.lifetime = d } }

// WithClaims adds claims beside the payload. The gateway passes them on to the app service
// untouched; they cannot replace a payload field or a registered claim.
func WithClaims(claims map[string]any) SignOption {
	return func(c *signConfig) { c.extra = claims }
}

// Sign validates p (the rules of linkspec, the gateway's) and returns a compact token: header
// typ JWT, alg and kid; claims the payload fields at the top level, iss, aud, nbf = iat =
// now, exp = now + lifetime and a fresh 256-bit nonce.
func (s *Signer) Sign(p *Payload, opts ...SignOption) (string, error) {
	cfg := signConfig{lifetime: DefaultLifetime}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lifetime < time.Second || cfg.lifetime > MaxLifetime {
		return "", fmt.Errorf("lifetime %v outside 1s..%v (docs/interface.md A-AUTH-6)", cfg.lifetime, MaxLifetime)
	}
	if p == nil {
		return "", errors.New("no payload")
	}
	if _, err := p.Validate(); err != nil {
		return "", err
	}
	claims, err := payloadClaims(p)
	if err != nil {
		return "", err
	}
	for name, v := range cfg.extra {
		if _, taken := claims[name]; taken || registeredClaims[name] || isPayloadField(name) {
			return "", fmt.Errorf("extra claim %q would replace a payload field or a registered claim", name)
		}
		claims[name] = v
	}
	nonce, err := s.nonce()
	if err != nil {
		return "", err
	}
	// nbf is the issued time (A-AUTH-7) and iat repeats it, which the gateway checks; both are
	// whole seconds so that exp - nbf is exactly the lifetime.
	now := s.now().Unix()
	claims["iss"] = s.issuer
	claims["aud"] = s.audience
	claims["nbf"] = now
	claims["iat"] = now
	claims["exp"] = now + int64(cfg.lifetime/time.Second)
	claims["nonce"] = nonce
	body, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %v", err)
	}
	return s.signRaw(body)
}

// signRaw signs claims as they are, with the header every link token carries.
func (s *Signer) signRaw(claims []byte) (string, error) {
	h := jws.NewHeaders()
	if err := h.Set(jws.TypeKey, "JWT"); err != nil {
		return "", err
	}
	if err := h.Set(jws.KeyIDKey, s.kid); err != nil {
		return "", err
	}
	tok, err := jws.Sign(claims, jws.WithKey(jwa.SignatureAlgorithm(s.alg), s.key, jws.WithProtectedHeaders(h)))
	if err != nil {
		return "", fmt.Errorf("signing: %v", err)
	}
	return string(tok), nil
}

func (s *Signer) nonce() (string, error) {
	b := make([]byte, NonceBytes)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", fmt.Errorf("reading random nonce: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// payloadClaims turns p into top-level claims (linkspec.Payload).
func payloadClaims(p *Payload) (map[string]any, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding payload: %v", err)
	}
	claims := map[string]any{}
	if err := json.Unmarshal(b, &claims); err != nil {
		return nil, fmt.Errorf("encoding payload: %v", err)
	}
	return claims, nil
}

func isPayloadField(name string) bool {
	for _, f := range linkspec.Fields {
		if f.Path == name {
			return true
		}
	}
	return name == "contact"
}
