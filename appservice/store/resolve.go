package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/partnergate/partnergate/linkspec"
)

// Link is one verified link request as the gateway forwarded it.
type Link struct {
	Partner   string
	Endpoint  string
	RequestID string
	Kind      linkspec.Kind
	Payload   *linkspec.Payload
	// OnceUntil, when set, makes RequestID single-use until then: ResolveLink records it in
	// the transaction that resolves the link, and refuses it again with ErrRequestReplayed.
	// The app service sets it to the end of the gateway assertion's validity, since the
	// assertion binds the request id: a replayed assertion mints no second login code.
	OnceUntil time.Time
}

// Resolved is the outcome of ResolveLink.
type Resolved struct {
	// Code is the one-time login code, in clear only here: the database keeps its hash.
	Code           string
	LinkID         int64
	OrganizationID int64
	ContactID      int64
	EmployeeID     int64 // main-client links
	AccountID      int64 // the account the code signs in; 0 when the employee must sign in first
	ContactCreated bool
	AccountCreated bool // Go links: the member account was created by this link
}

// errLinkInvalid is a link whose payload does not fit its kind; the gateway validated it, so
// this means a broken or bypassed gateway.
var errLinkInvalid = errors.New("link payload does not fit its kind")

// ErrRequestReplayed is a link whose single-use request id was resolved before (Link's
// OnceUntil): a replayed gateway assertion.
var ErrRequestReplayed = errors.New("link request resolved before")

// ResolveLink resolves the link's organization, contact and user, records the link and
// issues a one-time login code for it, all in one transaction.
//
// Organization by (partner, organizationId), name kept current. Contact by (organization,
// contact.id), else by the keyed hash of contact.ssn within the organization, else created;
// its fields follow the latest link. Main client: the employee by (partner, employeeId),
// signed in as its linked service account when it has one. Go: the contact's member
// account, created when missing.
func (s *Store) ResolveLink(ctx context.Context, l Link) (*Resolved, error) {
	p := l.Payload
	if p == nil || p.Contact == nil || (l.Kind != linkspec.KindMain && l.Kind != linkspec.KindGo) {
		return nil, errLinkInvalid
	}
	if kind, err := p.Validate(l.Kind); err != nil || kind != l.Kind {
		return nil, errLinkInvalid
	}
	code, codeHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	r := &Resolved{Code: code}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if !l.OnceUntil.IsZero() {
			if err := s.useRequestID(ctx, tx, l.RequestID, l.OnceUntil.UnixMilli(), now); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO organizations (partner, partner_org_id, name, created_at, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (partner, partner_org_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at
RETURNING id`), l.Partner, p.OrganizationID, p.OrganizationName, now, now).Scan(&r.OrganizationID); err != nil {
			return err
		}
		if err := s.step("organization"); err != nil {
			return err
		}
		if err := s.resolveContact(ctx, tx, r, p.Contact, now); err != nil {
			return err
		}
		if err := s.step("contact"); err != nil {
			return err
		}
		var employeeID, accountID sql.NullInt64
		switch l.Kind {
		case linkspec.KindMain:
			if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO employees (partner, partner_employee_id, username, firstname, lastname, email, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (partner, partner_employee_id) DO UPDATE SET username = excluded.username,
	firstname = excluded.firstname, lastname = excluded.lastname, email = excluded.email, updated_at = excluded.updated_at
RETURNING id, account_id`), l.Partner, p.EmployeeID, p.EmployeeUsername, p.EmployeeFirstname, p.EmployeeLastname, p.EmployeeEmail, now, now).Scan(&employeeID, &accountID); err != nil {
				return err
			}
		case linkspec.KindGo:
			if err := s.resolveMember(ctx, tx, r, p.Contact, now); err != nil {
				return err
			}
			accountID = sql.NullInt64{Int64: r.AccountID, Valid: true}
		}
		r.EmployeeID, r.AccountID = employeeID.Int64, accountID.Int64
		if err := s.step("user"); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO links (partner, kind, endpoint, request_id, organization_id, contact_id, employee_id, account_id, case_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), l.Partner, string(l.Kind), l.Endpoint, l.RequestID, r.OrganizationID, r.ContactID, employeeID, accountID, p.CaseID, now).Scan(&r.LinkID); err != nil {
			return err
		}
		if err := s.step("link"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO login_codes (code_hash, link_id, expires_at) VALUES (?, ?, ?)`),
			codeHash, r.LinkID, now+s.opts.CodeTTL.Milliseconds())
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// useRequestID records a single-use request id until expires, first in the resolving
// transaction: on PostgreSQL a concurrent replay waits on the key and then finds it; on
// SQLite the IMMEDIATE transactions run one after the other. A row left from an id whose
// time has passed is taken over, so DeleteExpired's schedule does not matter.
func (s *Store) useRequestID(ctx context.Context, tx *sql.Tx, id string, expires, now int64) error {
	if id == "" {
		return errLinkInvalid
	}
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO used_requests (request_id, expires_at) VALUES (?, ?)
ON CONFLICT (request_id) DO UPDATE SET expires_at = excluded.expires_at WHERE used_requests.expires_at <= ?`), id, expires, now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return ErrRequestReplayed
	}
	return nil
}

func (s *Store) resolveContact(ctx context.Context, tx *sql.Tx, r *Resolved, c *linkspec.Contact, now int64) error {
	ssnHash := sql.NullString{}
	if n := normalizeSSN(c.SSN); n != "" {
		ssnHash = sql.NullString{String: s.ssnHash(n), Valid: true}
	}
	var id int64
	err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM contacts WHERE organization_id = ? AND partner_contact_id = ?`),
		r.OrganizationID, c.ID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) && ssnHash.Valid {
		// The partner knows this person under another id (a merged or re-created record):
		// the identity number finds them, and the latest link's id replaces the old one.
		err = tx.QueryRowContext(ctx, s.q(`SELECT id FROM contacts WHERE organization_id = ? AND ssn_hash = ? ORDER BY id LIMIT 1`),
			r.OrganizationID, ssnHash.String).Scan(&id)
	}
	switch {
	case err == nil:
		r.ContactID = id
		// A link without ssn keeps the hash already known: absence is not a correction.
		_, err = tx.ExecContext(ctx, s.q(`UPDATE contacts SET partner_contact_id = ?, ssn_hash = COALESCE(?, ssn_hash),
	firstname = ?, middlename = ?, lastname = ?, birthdate = ?, gender = ?, mobile = ?, email = ?, diagnosis = ?, updated_at = ?
WHERE id = ?`), c.ID, ssnHash, c.Firstname, c.Middlename, c.Lastname, c.Birthdate, c.Gender, c.Mobile, c.Email, c.Diagnosis, now, id)
		return err
	case errors.Is(err, sql.ErrNoRows):
		// ON CONFLICT: on PostgreSQL a concurrent first link for the same contact may have
		// inserted it since the SELECT; this link then updates it instead of failing.
		r.ContactCreated = true
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO contacts (organization_id, partner_contact_id, ssn_hash,
	firstname, middlename, lastname, birthdate, gender, mobile, email, diagnosis, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (organization_id, partner_contact_id) DO UPDATE SET ssn_hash = COALESCE(excluded.ssn_hash, contacts.ssn_hash),
	firstname = excluded.firstname, middlename = excluded.middlename, lastname = excluded.lastname,
	birthdate = excluded.birthdate, gender = excluded.gender, mobile = excluded.mobile, email = excluded.email,
	diagnosis = excluded.diagnosis, updated_at = excluded.updated_at
RETURNING id`), r.OrganizationID, c.ID, ssnHash,
			c.Firstname, c.Middlename, c.Lastname, c.Birthdate, c.Gender, c.Mobile, c.Email, c.Diagnosis, now, now).Scan(&r.ContactID)
	default:
		return err
	}
}

// resolveMember finds or creates the contact's member account and keeps its name and e-mail
// current.
func (s *Store) resolveMember(ctx context.Context, tx *sql.Tx, r *Resolved, c *linkspec.Contact, now int64) error {
	name := displayName(c.Firstname, c.Middlename, c.Lastname)
	err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE contact_id = ?`), r.ContactID).Scan(&r.AccountID)
	switch {
	case err == nil:
		_, err = tx.ExecContext(ctx, s.q(`UPDATE accounts SET email = ?, display_name = ?, updated_at = ? WHERE id = ?`),
			c.Email, name, now, r.AccountID)
		return err
	case errors.Is(err, sql.ErrNoRows):
		r.AccountCreated = true
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO accounts (role, email, display_name, contact_id, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (contact_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, updated_at = excluded.updated_at
RETURNING id`), RoleMember, c.Email, name, r.ContactID, now, now).Scan(&r.AccountID)
	default:
		return err
	}
}

func displayName(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// normalizeSSN reduces a national identity number to its letters and digits, upper case, so
// that "010190-12345", "010190 12345" and "01019012345" match. Partners write separators
// differently; no country's number depends on them.
func normalizeSSN(ssn string) string {
	var b strings.Builder
	for _, r := range ssn {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// ssnHash is the keyed hash that stands in for the identity number. It does not include the
// organization, so a future sign-in with a national electronic ID can find the person's
// contacts in every organization (why docs/interface.md A-PAY-CONTACT prefers ssn); the key
// keeps a copy of the database from being searched by number.
func (s *Store) ssnHash(normalized string) string {
	m := hmac.New(sha256.New, s.opts.SSNKey)
	m.Write([]byte("partnergate-ssn-v1\x00"))
	m.Write([]byte(normalized))
	return hex.EncodeToString(m.Sum(nil))
}
