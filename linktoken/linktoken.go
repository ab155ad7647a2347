// Package linktoken verifies partner link tokens: compact JWS, signed with RS256, PS256 or
// ES256 by a key the partner published with a kid, carrying the registered claims and the
// link payload of the partner integration interface.
//
// jwx does the cryptography and the key handling. The framing, header and claim rules are
// this package's own, explicit and typed, one function per rule, because jwx's generic
// parsing is more lenient than the interface allows (JSON serialization, crit ignored, the
// key choosing the algorithm) and slower than a gateway's hot path affords.
//
// The package imports no web server: the gateway and the partner kit's "check" command
// share it, so both give the same verdict and code for every token.
package linktoken

import (
	"context"
	"errors"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// Error is a rejected token. Detail is safe to show to the client and to log: it never
// contains a token, a claim value or a key. It may name what the partner agreed to (its
// issuer, audience and limits) and, for a refused key set, the partner's published set's
// fault; the problem document carries Expected, MaxLifetime, Kind and KindFrom as members.
type Error struct {
	Code   problem.Code
	Detail string
	// Fields lists the failing payload fields (problem.CodePayloadInvalid).
	Fields []linkspec.FieldError
	// Hints are the problem document's members of the refusal: the agreed issuer or
	// audience, the lifetime limit, the kind the payload was read as.
	problem.Hints
	// Err is the underlying cause, for logs at debug level; it never carries a value either.
	Err error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Detail }

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the code of a *Error in err's chain, or "" if there is none.
func CodeOf(err error) problem.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Algorithms the interface accepts (docs/interface.md A-AUTH-2). Nothing else can be
// configured: symmetric algorithms and "none" are refused by NewVerifier.
const (
	RS256 = "RS256"
	PS256 = "PS256"
	ES256 = "ES256"
)

// Defaults of Rules.
const (
	DefaultMaxLifetime    = MaxLifetime      // the interface's bound (docs/interface.md A-AUTH-6, LIM-1)
	DefaultLeeway         = 30 * time.Second // clock skew between partner and gateway
	DefaultNonceMinLength = 16               // 96 bits of base64url, the least a CSPRNG nonce should carry
	DefaultNonceMaxLength = 256
)

// Rules are one partner's verification rules. Zero durations and lengths take the defaults;
// a negative Leeway means none (Verifier.Rules then reports 0).
type Rules struct {
	Issuer         string
	Audience       string
	Algorithms     []string // subset of RS256, PS256, ES256; empty means all three
	MaxLifetime    time.Duration
	Leeway         time.Duration
	NonceMinLength int
	NonceMaxLength int
	// Kinds limits the link kinds accepted; empty accepts both.
	Kinds []linkspec.Kind
}

// KeySource finds a partner's verification key by kid. It returns an *Error with
// problem.CodeKeyUnknown when the set has no such kid and problem.CodeKeysUnavailable when no set is
// loaded; a source backed by a URL may refetch before answering problem.CodeKeyUnknown.
type KeySource interface {
	Key(ctx context.Context, kid string) (*Key, error)
}

// Token is a verified token.
type Token struct {
	Alg       string
	KeyID     string
	Issuer    string
	NotBefore time.Time
	Expiry    time.Time
	Nonce     string
	Kind      linkspec.Kind
	// Payload is the verified payload, without the Dropped fields.
	Payload linkspec.Payload
	// Dropped lists the optional payload fields whose values were malformed or blank and
	// were dropped rather than refused (linkspec.Payload.DropMalformed), with the reason;
	// nil when none. It names fields, never values.
	Dropped []linkspec.FieldError
	// Claims is the token's payload segment, base64url JSON, exactly as signed; when
	// fields were dropped, the claim set without them (linkspec.WithoutFields), re-encoded.
	Claims string
}
