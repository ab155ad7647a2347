package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"
)

// Account roles.
const (
	RoleInstructor = "instructor" // signs in with a password; employees link to it
	RoleMember     = "member"     // a contact's account for the Go client; signed in by links only
)

// Errors of the one-time code exchange and of sessions. The web application shows them as
// distinct messages and codes; none reveals whether some other code exists.
var (
	ErrCodeInvalid = errors.New("login code unknown")
	ErrCodeUsed    = errors.New("login code already used")
	ErrCodeExpired = errors.New("login code expired")
	ErrNoSession   = errors.New("no valid session")
)

// newSecret returns a random 256-bit token, base64url, and the hash under which the database
// keeps it: a stolen copy of the database holds no usable code or session.
func newSecret() (raw, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	raw = base64.RawURLEncoding.EncodeToString(b)
	return raw, hashSecret(raw), nil
}

func hashSecret(raw string) string {
	h := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(h[:])
}

// Account is a service account.
type Account struct {
	ID          int64
	Role        string
	Username    string
	Email       string
	DisplayName string
	// Language is the language the person chose in the application (an i18n code), or ""
	// for none: the browser's then.
	Language string
}

// Organization is a partner's organization.
type Organization struct {
	ID        int64
	Partner   string
	PartnerID string
	Name      string
}

// Employee is a partner's user of the main client.
type Employee struct {
	ID        int64
	Partner   string
	PartnerID string
	Username  string
	Firstname string
	Lastname  string
	Email     string
	AccountID int64
}

// Scope is which organizations a member's session sees the plans of. What a session may see
// follows what proved who holds it: a partner's link is one organization's word about who
// the holder is, and it is opened by whoever holds it (a desk, a shared tablet); the
// member's own national electronic ID proves the holder is the member.
type Scope string

const (
	// ScopeOrganization is the session's organization only: every link's session and every
	// instructor's. It is the default of the column, so a session that names no scope is
	// narrow.
	ScopeOrganization Scope = "organization"
	// ScopeMember is every organization of the member account: only a member who proved
	// who they are with a national electronic ID (NationalEIDSignIn).
	ScopeMember Scope = "member"
)

// Session is a server-side session as the pages use it.
type Session struct {
	// Pending is set when the session only waits for Employee to sign in; Account is nil.
	Pending bool
	// ConfirmLink is set when Account signed in from the sign-in page of a first-time
	// Employee that is not linked to it: the person must confirm the link (ConfirmLink)
	// before the session is used, so that a pending session planted in the browser by
	// someone else (login CSRF) cannot link a stranger's partner user to the account.
	ConfirmLink bool
	// Account is the signed-in account. For a member's session of ScopeOrganization its
	// DisplayName and Email are those of the organization's record of the member (Person),
	// not the ones another clinic's record gave the account: the session shows the holder
	// as the link's clinic knows them.
	Account      *Account
	Employee     *Employee
	Organization *Organization
	// Person is the person in focus, as the session's organization knows them.
	Person *Person
	// CaseID is the case exports are archived under: the link's caseId, or one set since.
	CaseID string
	// Scope is whose plans a member's session sees; instructors' sessions see their
	// organization whatever it says.
	Scope     Scope
	ExpiresAt time.Time
}

// Exchanged is the outcome of ExchangeCode.
type Exchanged struct {
	Token   string // the session token, in clear only here
	Session *Session
}

// ExchangeCode redeems a one-time login code for a new session. The code is marked used in
// the same statement that checks it is unused and unexpired, so two concurrent exchanges of
// one code cannot both succeed. A main-client link whose employee has no service account yet
// gives a pending session that SignIn completes.
func (s *Store) ExchangeCode(ctx context.Context, code string) (*Exchanged, error) {
	if code == "" || len(code) > 128 {
		return nil, ErrCodeInvalid
	}
	token, tokenHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	codeHash := hashSecret(code)
	var sess *Session
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, s.q(`UPDATE login_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?`), now, codeHash, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			var expires int64
			var used sql.NullInt64
			err := tx.QueryRowContext(ctx, s.q(`SELECT expires_at, used_at FROM login_codes WHERE code_hash = ?`), codeHash).Scan(&expires, &used)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return ErrCodeInvalid
			case err != nil:
				return err
			case used.Valid:
				return ErrCodeUsed
			default:
				return ErrCodeExpired
			}
		}
		var linkID, orgID, personID int64
		var employeeID, accountID sql.NullInt64
		var caseID string
		if err := tx.QueryRowContext(ctx, s.q(`SELECT l.id, l.organization_id, l.contact_id, l.employee_id, COALESCE(l.account_id, e.account_id), l.case_id
FROM login_codes c JOIN links l ON l.id = c.link_id LEFT JOIN employees e ON e.id = l.employee_id
WHERE c.code_hash = ?`), codeHash).Scan(&linkID, &orgID, &personID, &employeeID, &accountID, &caseID); err != nil {
			return err
		}
		ttl := s.opts.SessionTTL
		if !accountID.Valid {
			ttl = s.opts.PendingTTL
		}
		if _, err = tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, case_id, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), tokenHash, accountID, employeeID, orgID, personID, linkID, caseID, now, now+ttl.Milliseconds()); err != nil {
			return err
		}
		// Read back in the transaction: the answer is the session as committed, never one
		// that another request changed or ended in between.
		sess, err = s.readSession(ctx, tx, token)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Exchanged{Token: token, Session: sess}, nil
}

// NationalEIDSignIn starts a session of a member account for a holder who proved with a
// national electronic ID that they are the member: its scope is every organization of the
// member, and of every other partner's member with the member's number (ScopeMember),
// where a link's session sees its own organization's plans only. The
// session has no organization and no person in focus. A memberAccountID that names no
// member account with a member is ErrNotFound. The national eID sign-in calls it through
// SignInByNationalID, which matches the eID's number to the member first.
func (s *Store) NationalEIDSignIn(ctx context.Context, memberAccountID int64) (*SignedIn, error) {
	return s.newSession(ctx, func(tx *sql.Tx, token, tokenHash string, now int64) (*Session, error) {
		return s.startMemberSession(ctx, tx, token, tokenHash, memberAccountID, now)
	})
}

// startMemberSession starts the ScopeMember session of memberAccountID in tx
// (NationalEIDSignIn).
func (s *Store) startMemberSession(ctx context.Context, tx *sql.Tx, token, tokenHash string, memberAccountID, now int64) (*Session, error) {
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM accounts WHERE id = ? AND role = ? AND member_id IS NOT NULL`),
		memberAccountID, RoleMember).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, scope, case_id, created_at, expires_at)
VALUES (?, ?, ?, '', ?, ?)`), tokenHash, memberAccountID, string(ScopeMember), now, now+s.opts.SessionTTL.Milliseconds()); err != nil {
		return nil, err
	}
	return s.readSession(ctx, tx, token)
}

// LoginTarget is whom a login code would sign in, read without using the code.
type LoginTarget struct {
	// Account is the account the code signs in to; nil when the code leads to a pending
	// first-sight session that waits for Employee to sign in.
	Account *Account
	// Employee is the partner user of a main-client link; nil for a Go link.
	Employee *Employee
	// Organization is the link's organization, which the session will be in.
	Organization *Organization
}

// PeekCode reports whom code would sign in, with the errors ExchangeCode would give, but
// leaves the code unused: a request that is not a person's navigation (HEAD, a link
// preview) must not spend it, and a browser with another session is asked first.
func (s *Store) PeekCode(ctx context.Context, code string) (*LoginTarget, error) {
	if code == "" || len(code) > 128 {
		return nil, ErrCodeInvalid
	}
	var (
		expires, personID     int64
		used                  sql.NullInt64
		employeeID, accountID sql.NullInt64
		org                   Organization
	)
	err := s.db.QueryRowContext(ctx, s.q(`SELECT c.expires_at, c.used_at, l.employee_id, COALESCE(l.account_id, e.account_id), l.contact_id, o.id, o.partner, o.partner_org_id, o.name
FROM login_codes c JOIN links l ON l.id = c.link_id LEFT JOIN employees e ON e.id = l.employee_id JOIN organizations o ON o.id = l.organization_id
WHERE c.code_hash = ?`), hashSecret(code)).Scan(&expires, &used, &employeeID, &accountID, &personID, &org.ID, &org.Partner, &org.PartnerID, &org.Name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrCodeInvalid
	case err != nil:
		return nil, err
	case used.Valid:
		return nil, ErrCodeUsed
	case expires <= s.now():
		return nil, ErrCodeExpired
	}
	t := &LoginTarget{Organization: &org}
	if accountID.Valid {
		if t.Account, err = s.account(ctx, s.db, accountID.Int64); err != nil {
			return nil, err
		}
		if t.Account.Role == RoleMember {
			// The session the code starts is the link's organization's (ScopeOrganization).
			p, err := s.readPerson(ctx, s.db, org.ID, personID)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			t.Account.asKnownBy(p)
		}
	}
	if employeeID.Valid {
		if t.Employee, err = s.employee(ctx, s.db, employeeID.Int64); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// CancelCode spends code without signing anyone in: the person it was shown to said it was
// not for them, so it must not work later in this or another browser. A code that is
// unknown, used or expired gives the errors ExchangeCode would.
func (s *Store) CancelCode(ctx context.Context, code string) error {
	if code == "" || len(code) > 128 {
		return ErrCodeInvalid
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE login_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?`), now, hashSecret(code), now)
	if err := oneRow(res, err); !errors.Is(err, ErrNotFound) {
		return err
	}
	// Not spent now: say why, as an exchange would.
	if _, err := s.PeekCode(ctx, code); err != nil {
		return err
	}
	return ErrCodeUsed
}

// Session returns the unexpired session of token.
func (s *Store) Session(ctx context.Context, token string) (*Session, error) {
	return s.readSession(ctx, s.db, token)
}

// readSession reads the unexpired session of token with q, the database or a transaction.
func (s *Store) readSession(ctx context.Context, q queryer, token string) (*Session, error) {
	if token == "" || len(token) > 128 {
		return nil, ErrNoSession
	}
	var (
		accountID, employeeID, orgID, personID sql.NullInt64
		expires                                int64
		caseID, scope                          string
	)
	err := q.QueryRowContext(ctx, s.q(`SELECT account_id, employee_id, organization_id, contact_id, expires_at, case_id, scope
FROM sessions WHERE token_hash = ? AND expires_at > ?`),
		hashSecret(token), s.now()).Scan(&accountID, &employeeID, &orgID, &personID, &expires, &caseID, &scope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	sess := &Session{Pending: !accountID.Valid, CaseID: caseID, Scope: Scope(scope), ExpiresAt: time.UnixMilli(expires)}
	if accountID.Valid {
		if sess.Account, err = s.account(ctx, q, accountID.Int64); err != nil {
			return nil, err
		}
	}
	if employeeID.Valid {
		if sess.Employee, err = s.employee(ctx, q, employeeID.Int64); err != nil {
			return nil, err
		}
	}
	if orgID.Valid {
		o := &Organization{ID: orgID.Int64}
		if err := q.QueryRowContext(ctx, s.q(`SELECT partner, partner_org_id, name FROM organizations WHERE id = ?`), o.ID).
			Scan(&o.Partner, &o.PartnerID, &o.Name); err != nil {
			return nil, err
		}
		sess.Organization = o
	}
	if personID.Valid && orgID.Valid {
		// A person the organization does not know is no person in focus: never another
		// organization's view of them.
		if sess.Person, err = s.readPerson(ctx, q, orgID.Int64, personID.Int64); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	if a := sess.Account; a != nil && a.Role == RoleMember && sess.Scope != ScopeMember {
		a.asKnownBy(sess.Person)
	}
	sess.ConfirmLink = sess.Account != nil && sess.Employee != nil && sess.Employee.AccountID != sess.Account.ID
	return sess, nil
}

// asKnownBy gives a member account the name and e-mail of one organization's record of the
// member, or none without a record. The account's own came from the record of the clinic
// whose link made it: a session or a code of another clinic's link shows the holder as that
// clinic knows them, never by what another clinic's record says.
func (a *Account) asKnownBy(p *Person) {
	a.DisplayName, a.Email = "", ""
	if p != nil {
		a.DisplayName, a.Email = p.Name(), p.Email
	}
}

func (s *Store) account(ctx context.Context, q queryer, id int64) (*Account, error) {
	a := &Account{ID: id}
	var username sql.NullString
	err := q.QueryRowContext(ctx, s.q(`SELECT role, username, email, display_name, language FROM accounts WHERE id = ?`), id).
		Scan(&a.Role, &username, &a.Email, &a.DisplayName, &a.Language)
	a.Username = username.String
	return a, err
}

func (s *Store) employee(ctx context.Context, q queryer, id int64) (*Employee, error) {
	e := &Employee{ID: id}
	var acct sql.NullInt64
	err := q.QueryRowContext(ctx, s.q(`SELECT partner, partner_employee_id, username, firstname, lastname, email, account_id FROM employees WHERE id = ?`), id).
		Scan(&e.Partner, &e.PartnerID, &e.Username, &e.Firstname, &e.Lastname, &e.Email, &acct)
	e.AccountID = acct.Int64
	return e, err
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// DeleteSession ends the session of token; ending an unknown session is not an error.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), hashSecret(token))
	return err
}

// DeleteExpired removes expired sessions, device sign-ons, single-use request ids,
// directory states and sign-in counts, and login codes older than a day (kept that long so
// that a second use of a code is still reported as used rather than unknown).
func (s *Store) DeleteExpired(ctx context.Context) error {
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.deleteExpiredDevices(ctx, tx, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE expires_at <= ?`), now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM used_requests WHERE expires_at <= ?`), now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM signin_counts WHERE expires_at <= ?`), now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM used_directory_states WHERE expires_at <= ?`), now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM login_codes WHERE expires_at <= ?`), now-24*time.Hour.Milliseconds())
		return err
	})
}

// SetSessionPerson puts personID in focus of the session of token, which must be in orgID,
// as the record must be: ErrNotFound otherwise.
func (s *Store) SetSessionPerson(ctx context.Context, token string, orgID, personID int64) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE sessions SET contact_id = ? WHERE token_hash = ? AND organization_id = ? AND expires_at > ?
AND EXISTS (SELECT 1 FROM persons WHERE id = ? AND organization_id = ?)`),
		personID, hashSecret(token), orgID, s.now(), personID, orgID)
	return oneRow(res, err)
}

// SetSessionCase sets the case that exports of the session of token are archived under.
func (s *Store) SetSessionCase(ctx context.Context, token, caseID string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE sessions SET case_id = ? WHERE token_hash = ? AND expires_at > ?`),
		caseID, hashSecret(token), s.now())
	if err := oneRow(res, err); !errors.Is(err, ErrNotFound) {
		return err
	}
	return ErrNoSession
}

// oneRow turns an update that changed no row into ErrNotFound.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
