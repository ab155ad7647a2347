package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// DirectoryPartner is the prefix of the partner column of a directory user's employees row:
// "directory:" and the issuer. A partner name is a Caddyfile word without a colon, so the
// two never meet.
const DirectoryPartner = "directory:"

// DirectoryUser is a person an OpenID Connect provider vouched for in a verified ID token.
type DirectoryUser struct {
	// Issuer and Subject (the ID token's iss and sub) name the person for good: the one
	// pair a provider promises never to reuse for someone else. Nothing else matches a
	// directory user to an account, never a name or an e-mail address.
	Issuer, Subject string
	// Username is the value of the directory's user claim, shown on the first-sight page.
	Username            string
	Firstname, Lastname string
	Email               string
	// Partner and PartnerOrgID name the organization the directory is configured for;
	// PartnerOrgID is "" for a directory of all of a partner's organizations.
	Partner, PartnerOrgID string
}

// DirectorySignIn starts a session for a directory user. A directory user is kept as an
// employee of the partner "directory:<issuer>" with the subject as its id, so first sight
// follows the partner user's rule to the letter: a directory user linked to an account
// signs in to it directly (and becomes a member of the directory's organization, when it
// is known here); one seen for the first time gets a pending session that the sign-in page
// completes, with the account's password and the link question, or with a new account. A
// partner link's employee and a directory user who are the same person end on the same
// account because both are linked to it, each after that account's password.
//
// When pendingToken names a pending first-sight session of a partner user (the directory
// button pressed on that user's first-sight page) and the directory user is linked
// already, the new session takes it over as SignIn does: the partner user's organization,
// person and case, and the link question for the partner user, so that both end on the
// one account only after the person confirms.
func (s *Store) DirectorySignIn(ctx context.Context, u DirectoryUser, pendingToken string) (*SignedIn, error) {
	if u.Issuer == "" || u.Subject == "" {
		return nil, errors.New("directory user needs an issuer and a subject")
	}
	return s.newSession(ctx, func(tx *sql.Tx, token, tokenHash string, now int64) (*Session, error) {
		var p pending
		if u.PartnerOrgID != "" {
			var org int64
			err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM organizations WHERE partner = ? AND partner_org_id = ?`), u.Partner, u.PartnerOrgID).Scan(&org)
			switch {
			case err == nil:
				p.org = sql.NullInt64{Int64: org, Valid: true}
			case !errors.Is(err, sql.ErrNoRows):
				return nil, err
			}
		}
		var account sql.NullInt64
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO employees (partner, partner_employee_id, username, firstname, lastname, email, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (partner, partner_employee_id) DO UPDATE SET username = excluded.username,
	firstname = excluded.firstname, lastname = excluded.lastname, email = excluded.email, updated_at = excluded.updated_at
RETURNING id, account_id`), DirectoryPartner+u.Issuer, u.Subject, strings.TrimSpace(u.Username), strings.TrimSpace(u.Firstname),
			strings.TrimSpace(u.Lastname), strings.TrimSpace(u.Email), now, now).Scan(&p.employee, &account); err != nil {
			return nil, err
		}
		if !account.Valid {
			// First sight: a pending session, as a first-time partner employee's.
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, created_at, expires_at)
VALUES (?, NULL, ?, ?, ?, ?)`), tokenHash, p.employee, p.org, now, now+s.opts.PendingTTL.Milliseconds())
			if err != nil {
				return nil, err
			}
		} else {
			pp, err := s.takePending(ctx, tx, pendingToken, now)
			if err != nil {
				return nil, err
			}
			if pp.employee.Valid && pp.employee != p.employee {
				// The organization's membership waits for the link's confirmation
				// (ConfirmLink), as after SignIn.
				p = pp
			} else if p.org.Valid {
				if err := s.addMembership(ctx, tx, account.Int64, p.org.Int64, now); err != nil {
					return nil, err
				}
			} else if p.org, err = s.lastMembership(ctx, tx, account.Int64); err != nil {
				return nil, err
			}
			return s.startSession(ctx, tx, token, account.Int64, p, now)
		}
		return s.readSession(ctx, tx, token)
	})
}

// DirectoryAccount returns the account the directory user (issuer, subject) is linked to,
// or nil when it is linked to none (a first sight): whom a directory sign-in would sign in.
func (s *Store) DirectoryAccount(ctx context.Context, issuer, subject string) (*Account, error) {
	var id sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT account_id FROM employees WHERE partner = ? AND partner_employee_id = ?`),
		DirectoryPartner+issuer, subject).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && !id.Valid):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return s.account(ctx, s.db, id.Int64)
}

// UseDirectoryState records the state of a directory sign-in whose callback came, until
// expires, and reports whether it was new: false for a state used before (a replayed
// callback). Only the state's hash is kept. A row whose time has passed is taken over, so
// DeleteExpired's schedule does not matter.
func (s *Store) UseDirectoryState(ctx context.Context, state string, expires time.Time) (bool, error) {
	if state == "" {
		return false, nil
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO used_directory_states (state_hash, expires_at) VALUES (?, ?)
ON CONFLICT (state_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE used_directory_states.expires_at <= ?`),
		hashSecret(state), expires.UnixMilli(), now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
