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
// one with that username exists; an existing account's password is never overwritten. An
// instructor without any organization becomes a member of the local "Demo clinic", so that
// a password sign-in lands somewhere without a partner link. It reports whether it created
// the account.
func (s *Store) EnsureInstructor(ctx context.Context, username, email, displayName, password string) (bool, error) {
	username = strings.ToLower(strings.TrimSpace(username))
	if username == "" || password == "" {
		return false, errors.New("instructor needs a username and a password")
	}
	hash, err := hashPassword(password)
	if err != nil {
		return false, err
	}
	created := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		var id int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE username = ?`), username).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			created = true
			err = tx.QueryRowContext(ctx, s.q(`INSERT INTO accounts (role, username, email, display_name, password_hash, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`), RoleInstructor, username, strings.TrimSpace(email), displayName, hash, now, now).Scan(&id)
		}
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM memberships WHERE account_id = ?`), id).Scan(&n); err != nil || n > 0 {
			return err
		}
		var org int64
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO organizations (partner, partner_org_id, name, created_at, updated_at)
VALUES ('', 'local', 'Demo clinic', ?, ?)
ON CONFLICT (partner, partner_org_id) DO UPDATE SET updated_at = organizations.updated_at
RETURNING id`), now, now).Scan(&org); err != nil {
			return err
		}
		return s.addMembership(ctx, tx, id, org, now)
	})
	return created, err
}

// InstructorHome returns the instructor account with username and the organization of its
// most recent membership, where a password sign-in lands; ErrNotFound when there is none.
func (s *Store) InstructorHome(ctx context.Context, username string) (accountID, orgID int64, err error) {
	err = s.db.QueryRowContext(ctx, s.q(`SELECT a.id, m.organization_id FROM accounts a JOIN memberships m ON m.account_id = a.id
WHERE a.username = ? AND a.role = ? ORDER BY m.created_at DESC, m.organization_id DESC LIMIT 1`),
		strings.ToLower(strings.TrimSpace(username)), RoleInstructor).Scan(&accountID, &orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, ErrNotFound
	}
	return accountID, orgID, err
}

// addMembership makes account an instructor of org; an existing membership stays as it is.
func (s *Store) addMembership(ctx context.Context, tx *sql.Tx, account, org, now int64) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO memberships (account_id, organization_id, role, created_at)
VALUES (?, ?, ?, ?) ON CONFLICT (account_id, organization_id) DO NOTHING`), account, org, RoleInstructor, now)
	return err
}

// lastMembership is the organization of account's most recent membership, NULL when none.
func (s *Store) lastMembership(ctx context.Context, tx *sql.Tx, account int64) (sql.NullInt64, error) {
	var org sql.NullInt64
	err := tx.QueryRowContext(ctx, s.q(`SELECT organization_id FROM memberships WHERE account_id = ?
ORDER BY created_at DESC, organization_id DESC LIMIT 1`), account).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return org, err
}

// SignedIn is the outcome of SignIn.
type SignedIn struct {
	Token   string // the new session token, in clear only here
	Session *Session
}

// SignIn checks an instructor's credentials (login is the username or the e-mail address,
// any case) and starts a new session in the account's most recent organization. When
// pendingToken names a pending session, the new session takes over its employee,
// organization, person in focus and case instead, and the pending session ends; the employee is not linked yet: the session's ConfirmLink is set until the
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
	return s.newSession(ctx, func(tx *sql.Tx, token, _ string, now int64) (*Session, error) {
		p, err := s.takePending(ctx, tx, pendingToken, now)
		if err != nil {
			return nil, err
		}
		if !p.org.Valid {
			if p.org, err = s.lastMembership(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		return s.startSession(ctx, tx, token, id, p, now)
	})
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
				if sess.Organization == nil {
					return nil
				}
				return s.addMembership(ctx, tx, sess.Account.ID, sess.Organization.ID, now)
			}
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE sessions SET employee_id = NULL, organization_id = NULL, contact_id = NULL, link_id = NULL,
	case_id = '' WHERE token_hash = ?`), hashSecret(token))
		return err
	})
	if err != nil {
		return false, err
	}
	return linked, nil
}

// pending is what a pending first-sight session hands to the session that replaces it.
type pending struct {
	employee, org, person, link sql.NullInt64
	caseID                      string
}

// takePending reads and ends the pending session of token, if there is one.
func (s *Store) takePending(ctx context.Context, tx *sql.Tx, token string, now int64) (pending, error) {
	var p pending
	if token == "" {
		return p, nil
	}
	err := tx.QueryRowContext(ctx, s.q(`SELECT employee_id, organization_id, contact_id, link_id, case_id FROM sessions
WHERE token_hash = ? AND account_id IS NULL AND expires_at > ?`), hashSecret(token), now).Scan(&p.employee, &p.org, &p.person, &p.link, &p.caseID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return p, err
	}
	_, err = tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), hashSecret(token))
	return p, err
}

// startSession signs account in under token, with what p hands over, and reads the new
// session back as the caller's answer.
func (s *Store) startSession(ctx context.Context, tx *sql.Tx, token string, account int64, p pending, now int64) (*Session, error) {
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, case_id, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), hashSecret(token), account, p.employee, p.org, p.person, p.link, p.caseID, now, now+s.opts.SessionTTL.Milliseconds()); err != nil {
		return nil, err
	}
	return s.readSession(ctx, tx, token)
}

// newSession starts a session under a fresh token, in one transaction: start writes it
// (startSession, startMemberSession, or a pending session of its own) and reads it back.
// Every sign-in is one, and they differ only in start: what the session takes over and
// which organization it is in.
func (s *Store) newSession(ctx context.Context, start func(tx *sql.Tx, token, tokenHash string, now int64) (*Session, error)) (*SignedIn, error) {
	token, tokenHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	out := &SignedIn{Token: token}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		out.Session, err = start(tx, token, tokenHash, s.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ErrConflict is a name or link already taken: a username or e-mail address of another
// account, or an employee linked to another account. ErrUsernameTaken and ErrEmailTaken
// are ErrConflict, telling which name, so that a form can point at the field to change.
var (
	ErrConflict      = errors.New("already taken")
	ErrUsernameTaken = fmt.Errorf("username %w", ErrConflict)
	ErrEmailTaken    = fmt.Errorf("e-mail address %w", ErrConflict)
)

// CreateInstructorForPending lets a first-time employee without a service account create
// one from the first-sight page: it creates an instructor account with the password, links
// the pending session's employee to it, makes it a member of the link's organization and
// signs it in, taking over the pending session as SignIn does. No confirmation is asked:
// the person creating the account is the one the first-sight page greeted. It returns
// ErrNoSession when pendingToken names no pending session, ErrUsernameTaken or ErrEmailTaken
// when the name is another instructor's username or e-mail address (either way round, since
// SignIn takes both as the login), and ErrConflict when the employee is linked already.
// Members never sign in with a password, so their addresses take nothing: a refusal must
// not tell whether an address is a member's.
func (s *Store) CreateInstructorForPending(ctx context.Context, pendingToken, username, email, displayName, password string) (*SignedIn, error) {
	username = strings.ToLower(strings.TrimSpace(username))
	email = strings.TrimSpace(email)
	if username == "" || password == "" {
		return nil, errors.New("instructor needs a username and a password")
	}
	hash, err := hashPassword(password)
	if err != nil {
		return nil, err
	}
	return s.newSession(ctx, func(tx *sql.Tx, token, _ string, now int64) (*Session, error) {
		p, err := s.takePending(ctx, tx, pendingToken, now)
		if err != nil {
			return nil, err
		}
		if !p.employee.Valid {
			return nil, ErrNoSession
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM accounts WHERE role = ? AND (username = ? OR LOWER(email) = ?)`),
			RoleInstructor, username, username).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, ErrUsernameTaken
		}
		if email != "" {
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM accounts WHERE role = ? AND (username = LOWER(?) OR LOWER(email) = LOWER(?))`),
				RoleInstructor, email, email).Scan(&n); err != nil {
				return nil, err
			}
			if n > 0 {
				return nil, ErrEmailTaken
			}
		}
		var id int64
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO accounts (role, username, email, display_name, password_hash, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`), RoleInstructor, username, email, strings.TrimSpace(displayName), hash, now, now).Scan(&id); err != nil {
			return nil, err
		}
		if err := s.step("account"); err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE employees SET account_id = ?, updated_at = ? WHERE id = ? AND account_id IS NULL`), id, now, p.employee.Int64)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n != 1 {
			return nil, ErrConflict
		}
		if p.org.Valid {
			if err := s.addMembership(ctx, tx, id, p.org.Int64, now); err != nil {
				return nil, err
			}
		}
		return s.startSession(ctx, tx, token, id, p, now)
	})
}

// ChangePassword sets a new password for the instructor signed in with token, after
// checking the current one (ErrBadCredentials), and ends what the old password had
// started elsewhere: the account's other sessions and every device sign-on, whose stamp
// of the old password no longer matches anyway. The session of token stays signed in.
func (s *Store) ChangePassword(ctx context.Context, token, current, next string) error {
	if next == "" {
		return errors.New("instructor needs a password")
	}
	sess, err := s.Session(ctx, token)
	if err != nil {
		return err
	}
	if sess.Pending || sess.Account == nil || sess.Account.Role != RoleInstructor {
		return ErrNoSession
	}
	var hash sql.NullString
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT password_hash FROM accounts WHERE id = ?`), sess.Account.ID).Scan(&hash); err != nil {
		return err
	}
	if !hash.Valid || !checkPassword(hash.String, current) {
		return ErrBadCredentials
	}
	newHash, err := hashPassword(next)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// Changed only if it is still the hash checked: of two changes at once, one wins.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE accounts SET password_hash = ?, updated_at = ? WHERE id = ? AND password_hash = ?`),
			newHash, s.now(), sess.Account.ID, hash.String)
		if err := oneRow(res, err); errors.Is(err, ErrNotFound) {
			return ErrBadCredentials
		} else if err != nil {
			return err
		}
		if err := s.endDevices(ctx, tx, `account_id = ?`, sess.Account.ID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE account_id = ? AND token_hash <> ?`), sess.Account.ID, hashSecret(token))
		return err
	})
}
