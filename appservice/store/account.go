package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// ErrBadCredentials is a failed sign-in: unknown user and wrong password are not told apart.
var ErrBadCredentials = errors.New("wrong username or password")

// Argon2id parameters: OWASP's password storage recommendation (19 MiB, 2 passes, 1 lane).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// hashPassword returns password's argon2id hash in the PHC string format, which carries its
// own parameters so they can be raised later without invalidating stored hashes.
func hashPassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// checkPassword reports whether password matches a hash made by hashPassword.
func checkPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 16 || p == 0 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when the user is unknown, so that a sign-in for an unknown
// user costs as much as one for a known user and timing does not tell them apart.
var dummyHash, _ = hashPassword("partnergate-dummy")

// EnsureInstructor creates an instructor account with username (stored lower case), unless
// one with that username exists; an existing account's password is never overwritten. It
// reports whether it created the account.
func (s *Store) EnsureInstructor(ctx context.Context, username, email, displayName, password string) (bool, error) {
	username = strings.ToLower(strings.TrimSpace(username))
	if username == "" || password == "" {
		return false, errors.New("instructor needs a username and a password")
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM accounts WHERE username = ?`), username).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	hash, err := hashPassword(password)
	if err != nil {
		return false, err
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO accounts (role, username, email, display_name, password_hash, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING`), RoleInstructor, username, strings.TrimSpace(email), displayName, hash, now, now)
	if err != nil {
		return false, err
	}
	created, err := res.RowsAffected()
	return created == 1, err
}

// SignedIn is the outcome of SignIn.
type SignedIn struct {
	Token   string // the new session token, in clear only here
	Session *Session
}

// SignIn checks an instructor's credentials (login is the username or the e-mail address,
// any case) and starts a new session. When pendingToken names a pending session, the new
// session takes over its employee, organization and contact in focus, and the pending
// session ends; the employee is not linked yet: the session's ConfirmLink is set until the
// person confirms the link with ConfirmLink. A new token is always issued, so a token
// planted before sign-in is worth nothing after it.
func (s *Store) SignIn(ctx context.Context, login, password, pendingToken string) (*SignedIn, error) {
	login = strings.ToLower(strings.TrimSpace(login))
	var id int64
	var hash sql.NullString
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, password_hash FROM accounts
WHERE role = ? AND (username = ? OR LOWER(email) = ?) ORDER BY id LIMIT 1`), RoleInstructor, login, login).Scan(&id, &hash)
	if errors.Is(err, sql.ErrNoRows) || login == "" {
		checkPassword(dummyHash, password)
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, err
	}
	if !hash.Valid || !checkPassword(hash.String, password) {
		return nil, ErrBadCredentials
	}
	token, tokenHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	out := &SignedIn{Token: token}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		var employeeID, orgID, contactID, linkID sql.NullInt64
		if pendingToken != "" {
			err := tx.QueryRowContext(ctx, s.q(`SELECT employee_id, organization_id, contact_id, link_id FROM sessions
WHERE token_hash = ? AND account_id IS NULL AND expires_at > ?`), hashSecret(pendingToken), now).Scan(&employeeID, &orgID, &contactID, &linkID)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), hashSecret(pendingToken)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), tokenHash, id, employeeID, orgID, contactID, linkID, now, now+s.opts.SessionTTL.Milliseconds()); err != nil {
			return err
		}
		out.Session, err = s.readSession(ctx, tx, token)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ConfirmLink settles the link that a session's ConfirmLink asks for. With accept, the
// session's employee is linked to the signed-in account, unless another account has it
// already (the first link wins, so no sign-in can take over an employee). Declined, or
// taken by another account, the session drops the employee with the link's organization and
// contact in focus: they came from a partner user the person said is not them. It reports
// whether the employee is now linked to the account, and returns ErrNoSession when token
// names no signed-in session waiting for a confirmation.
func (s *Store) ConfirmLink(ctx context.Context, token string, accept bool) (linked bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.readSession(ctx, tx, token)
		if err != nil {
			return err
		}
		if !sess.ConfirmLink {
			return ErrNoSession
		}
		now := s.now()
		if accept {
			res, err := tx.ExecContext(ctx, s.q(`UPDATE employees SET account_id = ?, updated_at = ? WHERE id = ? AND account_id IS NULL`),
				sess.Account.ID, now, sess.Employee.ID)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if linked = n == 1; linked {
				return nil
			}
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE sessions SET employee_id = NULL, organization_id = NULL, contact_id = NULL, link_id = NULL
WHERE token_hash = ?`), hashSecret(token))
		return err
	})
	if err != nil {
		return false, err
	}
	return linked, nil
}
