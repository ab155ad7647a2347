// Package nonce holds the nonce store interface of the jwt_partner handler and its
// implementations, the guest modules http.jwt_partner.nonce_stores.memory (the embedded
// default, one gateway) and http.jwt_partner.nonce_stores.redis (shared by every gateway).
package nonce

import (
	"context"
	"errors"
	"time"
)

// Entry is one nonce to claim.
type Entry struct {
	// Partner is the namespace: the same nonce from two partners is two entries.
	Partner string
	// Nonce is the token's nonce claim, partner-supplied text of 16..256 characters by
	// default. Stores keep a hash of it, never the text, and never log it.
	Nonce string
	// AcceptableFrom is the earliest time the gateway could have accepted the token: its nbf
	// less the leeway of its partner (the handler has a global leeway and per-partner
	// overrides, so only the handler knows it). A nonce recorded before a store lost its
	// memory was claimed at or after this time, which is what a store that refuses tokens
	// older than its own memory compares with the time that memory begins.
	AcceptableFrom time.Time
	// Until is when the entry may be forgotten: the token's exp plus the leeway, after which
	// the token is refused as expired anyway.
	Until time.Time
}

// Store records nonces so that each is accepted once.
//
// As with caddyauth.Authenticator, the two kinds of failure are kept apart: a nonce seen
// before is an ordinary (false, nil); a store that cannot answer returns an error, and the
// caller then refuses the token (fail closed).
type Store interface {
	// Claim records e if its nonce has not been seen in e.Partner's namespace and reports
	// whether it was fresh. The check and the record are one atomic step.
	Claim(ctx context.Context, e Entry) (fresh bool, err error)
}

// Pinger is a Store that can say cheaply whether it answers, without claiming anything:
// the gateway's readiness check (jwt_partner_ready) asks it so that a load balancer takes a
// gateway whose store is down out of rotation before its requests are refused.
type Pinger interface {
	// Ping returns nil when the store answers, an error when it cannot.
	Ping(ctx context.Context) error
}

// ErrFull is returned by a store that has no room left; it refuses rather than evicting
// a live nonce, which would let that nonce's token be replayed.
var ErrFull = errors.New("nonce store full")

// ErrTooOld is returned by a store that refuses a token acceptable (Entry.AcceptableFrom)
// before the earliest time it can vouch for, for example a Redis that came back empty
// after a restart. The refusal is final for that token, as a replay's is.
var ErrTooOld = errors.New("token acceptable before the nonce store's memory begins")
