package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/partnergate/partnergate/nationalid"
)

// ErrNationalIDUnknown is a national identity number that no member of any partner has: a
// person for whom no clinic has prepared anything. The sign-in that meets it creates
// nothing and tells the person no more than that.
var ErrNationalIDUnknown = errors.New("national identity number unknown")

// NationalIDSignedIn is the outcome of SignInByNationalID.
type NationalIDSignedIn struct {
	SignedIn
	// AccountCreated is set when the member had no account yet (only main-client links,
	// never a Go link): the sign-in made the one a Go link would have made.
	AccountCreated bool
}

// SignInByNationalID signs in the holder of a national electronic ID whose identity number
// is n: the number's keyed hash, the same as a contact's ssn (ssnHash), is matched to the
// member it identifies, the human behind the records of a partner's organizations, and the
// member's account gets a session of ScopeMember (NationalEIDSignIn): the eID is the
// member's own proof, so the session sees the member's plans of every organization.
//
// A member without an account (known from main-client links only) gets the account a Go
// link would have made, named and mailed as the record the member was created with (or
// else its oldest record) says. Members are one per partner (resolveMemberOf); a number
// that several partners' members carry signs in to one of them, the one with an account,
// the oldest first, and the session sees the plans of all of them (sessionPlans). A number no member has is ErrNationalIDUnknown, and nothing is
// written. The number itself is never stored or returned; only its hash is read.
func (s *Store) SignInByNationalID(ctx context.Context, n nationalid.Number) (*NationalIDSignedIn, error) {
	if n.Digits() == "" {
		return nil, ErrNationalIDUnknown
	}
	hash := s.ssnHash(n)
	var created bool
	in, err := s.newSession(ctx, func(tx *sql.Tx, token, tokenHash string, now int64) (*Session, error) {
		created = false
		var member int64
		var account sql.NullInt64
		err := tx.QueryRowContext(ctx, s.q(`SELECT m.id, a.id FROM members m LEFT JOIN accounts a ON a.member_id = m.id
WHERE m.ssn_hash = ? ORDER BY CASE WHEN a.id IS NULL THEN 1 ELSE 0 END, m.id LIMIT 1`), hash).Scan(&member, &account)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, ErrNationalIDUnknown
		case err != nil:
			return nil, err
		}
		if !account.Valid {
			var first, middle, last, email string
			if err := tx.QueryRowContext(ctx, s.q(`SELECT p.firstname, p.middlename, p.lastname, p.email
FROM persons p JOIN members m ON m.id = p.member_id
LEFT JOIN person_partner_ids x ON x.person_id = p.id AND x.partner_person_id = m.partner_person_id
WHERE p.member_id = ? ORDER BY CASE WHEN x.person_id IS NULL THEN 1 ELSE 0 END, p.id LIMIT 1`), member).
				Scan(&first, &middle, &last, &email); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
			id, err := s.newMemberAccount(ctx, tx, member, email, displayName(first, middle, last), now)
			if err != nil {
				return nil, err
			}
			account = sql.NullInt64{Int64: id, Valid: true}
			created = true
		}
		return s.startMemberSession(ctx, tx, token, tokenHash, account.Int64, now)
	})
	if err != nil {
		return nil, err
	}
	return &NationalIDSignedIn{SignedIn: *in, AccountCreated: created}, nil
}
