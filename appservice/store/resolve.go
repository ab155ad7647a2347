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
	PersonID       int64
	EmployeeID     int64 // main-client links
	AccountID      int64 // the account the code signs in; 0 when the employee must sign in first
	PersonCreated  bool
	AccountCreated bool // Go links: the member account was created by this link
	// SSNConflict is set when the person found by the link's id has another identity number
	// than the link's, and another person of the partner holds the link's: the id match is
	// kept, nothing is merged and no hash moves (docs/appservice.md, identity resolution).
	SSNConflict bool
}

// errLinkInvalid is a link whose payload does not fit its kind; the gateway validated it, so
// this means a broken or bypassed gateway.
var errLinkInvalid = errors.New("link payload does not fit its kind")

// ErrRequestReplayed is a link whose single-use request id was resolved before (Link's
// OnceUntil): a replayed gateway assertion.
var ErrRequestReplayed = errors.New("link request resolved before")

// ResolveLink resolves the link's organization, person and user, records the link and
// issues a one-time login code for it, all in one transaction.
//
// Organization by (partner, organizationId), name kept current. Person as resolvePerson
// says, linked to the organization. Main client: the employee by (partner, employeeId),
// signed in as its linked service account when it has one, which becomes a member of the
// organization. Go: the person's member account, created when missing, so that a person
// reached from two organizations has one.
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
	var r *Resolved
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		r = &Resolved{Code: code}
		now := s.now()
		if !l.OnceUntil.IsZero() {
			if err := s.useRequestID(ctx, tx, l.RequestID, l.OnceUntil.UnixMilli(), now); err != nil {
				return err
			}
		}
		org, err := s.upsertOrganization(ctx, tx, l.Partner, p.OrganizationID, p.OrganizationName, now)
		if err != nil {
			return err
		}
		r.OrganizationID = org
		if err := s.step("organization"); err != nil {
			return err
		}
		if err := s.resolvePerson(ctx, tx, r, l.Partner, p.Contact, now); err != nil {
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
			if accountID.Valid {
				if err := s.addMembership(ctx, tx, accountID.Int64, r.OrganizationID, now); err != nil {
					return err
				}
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
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), l.Partner, string(l.Kind), l.Endpoint, l.RequestID, r.OrganizationID, r.PersonID, employeeID, accountID, p.CaseID, now).Scan(&r.LinkID); err != nil {
			return err
		}
		if err := s.step("link"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO login_codes (code_hash, link_id, expires_at) VALUES (?, ?, ?)`),
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

// resolvePerson finds or creates the link's person, in this order:
//
//  1. by the partner's id (partner, contact.id) in person_identities;
//  2. else by the keyed ssn hash among the persons that have an identity of the same
//     partner, in any organization, adding the link's id to the person found;
//  3. else a new person with that identity.
//
// A person found by id whose stored hash differs from the link's keeps its hash when another
// person of the partner holds the link's (Resolved.SSNConflict); otherwise the link's hash
// is stored: the partner corrected the number or gave it for the first time. The person's
// fields follow the link, but an empty field does not clear a stored value. The person is
// linked to the organization, with the partner's id as custom id when new.
func (s *Store) resolvePerson(ctx context.Context, tx *sql.Tx, r *Resolved, partner string, c *linkspec.Contact, now int64) error {
	var hash sql.NullString
	if n := normalizeSSN(c.SSN); n != "" {
		hash = sql.NullString{String: s.ssnHash(n), Valid: true}
	}
	var stored sql.NullString
	err := tx.QueryRowContext(ctx, s.q(`SELECT p.id, p.ssn_hash FROM person_identities i JOIN persons p ON p.id = i.person_id
WHERE i.partner = ? AND i.partner_person_id = ?`), partner, c.ID).Scan(&r.PersonID, &stored)
	switch {
	case err == nil:
		if hash.Valid && hash != stored {
			held, err := s.partnerHoldsHash(ctx, tx, partner, hash.String, r.PersonID)
			if err != nil {
				return err
			}
			if held {
				r.SSNConflict = true
				hash = sql.NullString{}
			}
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	default:
		if hash.Valid {
			err = tx.QueryRowContext(ctx, s.q(`SELECT p.id FROM persons p WHERE p.ssn_hash = ?
AND EXISTS (SELECT 1 FROM person_identities i WHERE i.person_id = p.id AND i.partner = ?) ORDER BY p.id LIMIT 1`),
				hash.String, partner).Scan(&r.PersonID)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if r.PersonID == 0 {
			r.PersonCreated = true
			if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO persons (ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis, created_at, updated_at)
VALUES (?, '', '', '', '', '', '', '', '', ?, ?) RETURNING id`), hash, now, now).Scan(&r.PersonID); err != nil {
				return err
			}
		}
		if err := s.addIdentity(ctx, tx, r, partner, c.ID, now); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE persons SET ssn_hash = COALESCE(?, ssn_hash),
	firstname = COALESCE(NULLIF(?, ''), firstname), middlename = COALESCE(NULLIF(?, ''), middlename),
	lastname = COALESCE(NULLIF(?, ''), lastname), birthdate = COALESCE(NULLIF(?, ''), birthdate),
	gender = COALESCE(NULLIF(?, ''), gender), mobile = COALESCE(NULLIF(?, ''), mobile),
	email = COALESCE(NULLIF(?, ''), email), diagnosis = COALESCE(NULLIF(?, ''), diagnosis), updated_at = ?
WHERE id = ?`), hash, c.Firstname, c.Middlename, c.Lastname, c.Birthdate, normalizeGender(c.Gender), c.Mobile, c.Email, c.Diagnosis, now, r.PersonID); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO person_organizations (person_id, organization_id, custom_id, created_at, updated_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (person_id, organization_id) DO UPDATE SET updated_at = excluded.updated_at`),
		r.PersonID, r.OrganizationID, c.ID, now, now)
	return err
}

// addIdentity records (partner, id) for r.PersonID. On PostgreSQL a concurrent first link
// of the same id may have recorded it since the lookup: the insert then waits for that
// transaction, finds the row, and this link takes that person instead of the one it made.
func (s *Store) addIdentity(ctx context.Context, tx *sql.Tx, r *Resolved, partner, id string, now int64) error {
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO person_identities (partner, partner_person_id, person_id, created_at)
VALUES (?, ?, ?, ?) ON CONFLICT (partner, partner_person_id) DO NOTHING`), partner, id, r.PersonID, now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if r.PersonCreated {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM persons WHERE id = ?`), r.PersonID); err != nil {
			return err
		}
		r.PersonCreated = false
	}
	return tx.QueryRowContext(ctx, s.q(`SELECT person_id FROM person_identities WHERE partner = ? AND partner_person_id = ?`),
		partner, id).Scan(&r.PersonID)
}

// partnerHoldsHash reports whether a person other than except, with an identity of partner,
// has the ssn hash.
func (s *Store) partnerHoldsHash(ctx context.Context, tx *sql.Tx, partner, hash string, except int64) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM persons p WHERE p.ssn_hash = ? AND p.id <> ?
AND EXISTS (SELECT 1 FROM person_identities i WHERE i.person_id = p.id AND i.partner = ?)`), hash, except, partner).Scan(&n)
	return n > 0, err
}

// resolveMember finds or creates the person's member account and keeps its name and e-mail
// current (an empty e-mail keeps the stored one).
func (s *Store) resolveMember(ctx context.Context, tx *sql.Tx, r *Resolved, c *linkspec.Contact, now int64) error {
	var first, middle, last, email string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT firstname, middlename, lastname, email FROM persons WHERE id = ?`), r.PersonID).
		Scan(&first, &middle, &last, &email); err != nil {
		return err
	}
	name := displayName(first, middle, last)
	err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE contact_id = ?`), r.PersonID).Scan(&r.AccountID)
	switch {
	case err == nil:
		_, err = tx.ExecContext(ctx, s.q(`UPDATE accounts SET email = ?, display_name = ?, updated_at = ? WHERE id = ?`),
			email, name, now, r.AccountID)
		return err
	case errors.Is(err, sql.ErrNoRows):
		r.AccountCreated = true
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO accounts (role, email, display_name, contact_id, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (contact_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, updated_at = excluded.updated_at
RETURNING id`), RoleMember, email, name, r.PersonID, now, now).Scan(&r.AccountID)
	default:
		return err
	}
}

// normalizeGender maps a link's or selectperson's gender to the stored values: "female"
// (female, F, and K, the Scandinavian initial of kvinne/kvinna), "male" (male, M), else "".
func normalizeGender(g string) string {
	switch strings.ToLower(strings.TrimSpace(g)) {
	case "female", "f", "k":
		return "female"
	case "male", "m":
		return "male"
	}
	return ""
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
// organization, so that a person is matched across the partner's organizations (why
// docs/interface.md A-PAY-CONTACT prefers ssn); the key keeps a copy of the database from
// being searched by number.
func (s *Store) ssnHash(normalized string) string {
	m := hmac.New(sha256.New, s.opts.SSNKey)
	m.Write([]byte("partnergate-ssn-v1\x00"))
	m.Write([]byte(normalized))
	return hex.EncodeToString(m.Sum(nil))
}

// upsertOrganization returns the id of the partner's organization partnerOrgID, created when
// new; its name follows the latest caller.
func (s *Store) upsertOrganization(ctx context.Context, tx *sql.Tx, partner, partnerOrgID, name string, now int64) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, s.q(`INSERT INTO organizations (partner, partner_org_id, name, created_at, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (partner, partner_org_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at
RETURNING id`), partner, partnerOrgID, name, now, now).Scan(&id)
	return id, err
}
