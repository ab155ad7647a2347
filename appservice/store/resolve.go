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

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/nationalid"
	"github.com/partnergate/partnergate/personspec"
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
	PersonID       int64 // the organization's own record of the contact
	MemberID       int64 // the human behind the partner's records of the contact
	EmployeeID     int64 // main-client links
	AccountID      int64 // the account the code signs in; 0 when the employee must sign in first
	PersonCreated  bool  // the organization's record was created by this link
	MemberCreated  bool
	AccountCreated bool // Go links: the member account was created by this link
	// SSNConflict is set when the link's id and its identity number point at different
	// people: the record found by id has another number than the link's and another record
	// of the organization holds the link's, or the member's ids or number disagree with the
	// link's. What was found by id is kept; nothing is merged, moved or renumbered
	// (docs/appservice.md, identity resolution).
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
// Organization by (partner, organizationId), name kept current. The organization's own
// record of the contact as resolvePerson says, and the member behind it as resolveMemberOf
// says. Main client: the employee by (partner, employeeId), signed in as its linked service
// account when it has one, which becomes a member of the organization. Go: the member's
// account, created when missing, so that a human reached from two organizations has one.
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
		hash := s.contactSSN(p.Contact.SSN, now)
		if err := s.resolvePerson(ctx, tx, r, p.Contact, hash, now); err != nil {
			return err
		}
		if err := s.resolveMemberOf(ctx, tx, r, l.Partner, p.Contact, hash, now); err != nil {
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

// resolvePerson finds or creates the organization's record of the link's contact, in this
// order:
//
//  1. by the link's id among the organization's partner ids, (organization, contact.id);
//  2. else by the keyed ssn hash among the organization's records, adding the link's id to
//     the record found;
//  3. else a new record of the organization with that id (its custom id too).
//
// Only the organization's own record is read and changed: another organization's record of
// the same human is never found here. A record found by id whose stored hash differs from
// the link's keeps its hash when another record of the organization holds the link's
// (Resolved.SSNConflict); otherwise the link's hash is stored: the partner corrected the
// number or gave it for the first time. The record's fields follow the link, but an empty
// field does not clear a stored value.
func (s *Store) resolvePerson(ctx context.Context, tx *sql.Tx, r *Resolved, c *linkspec.Contact, hash sql.NullString, now int64) error {
	var stored sql.NullString
	err := tx.QueryRowContext(ctx, s.q(`SELECT p.id, p.ssn_hash FROM person_partner_ids x JOIN persons p ON p.id = x.person_id
WHERE x.organization_id = ? AND x.partner_person_id = ?`), r.OrganizationID, c.ID).Scan(&r.PersonID, &stored)
	switch {
	case err == nil:
		if hash.Valid && hash != stored {
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM persons WHERE organization_id = ? AND ssn_hash = ? AND id <> ?`),
				r.OrganizationID, hash.String, r.PersonID).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				r.SSNConflict = true
				hash = sql.NullString{}
			}
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	default:
		if hash.Valid {
			err = tx.QueryRowContext(ctx, s.q(`SELECT id FROM persons WHERE organization_id = ? AND ssn_hash = ? ORDER BY id LIMIT 1`),
				r.OrganizationID, hash.String).Scan(&r.PersonID)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if r.PersonID == 0 {
			r.PersonCreated = true
			if r.PersonID, err = s.newRecord(ctx, tx, r.OrganizationID, c.ID, hash, now); err != nil {
				return err
			}
		}
		if err := s.addPartnerID(ctx, tx, r, c.ID, now); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, s.q(`UPDATE persons SET ssn_hash = COALESCE(?, ssn_hash),
	firstname = COALESCE(NULLIF(?, ''), firstname), middlename = COALESCE(NULLIF(?, ''), middlename),
	lastname = COALESCE(NULLIF(?, ''), lastname), birthdate = COALESCE(NULLIF(?, ''), birthdate),
	gender = COALESCE(NULLIF(?, ''), gender), mobile = COALESCE(NULLIF(?, ''), mobile),
	email = COALESCE(NULLIF(?, ''), email), diagnosis = COALESCE(NULLIF(?, ''), diagnosis), updated_at = ?
WHERE id = ? AND organization_id = ?`), hash, c.Firstname, c.Middlename, c.Lastname, c.Birthdate, normalizeGender(c.Gender), c.Mobile, c.Email,
		c.Diagnosis, now, r.PersonID, r.OrganizationID)
	return err
}

// addPartnerID records the link's id as the organization's id of r.PersonID. On PostgreSQL
// a concurrent first link of the same id to the same organization may have recorded it
// since the lookup: the insert then waits for that transaction, finds the row, and this
// link takes that record instead of the one it made.
func (s *Store) addPartnerID(ctx context.Context, tx *sql.Tx, r *Resolved, id string, now int64) error {
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO person_partner_ids (organization_id, partner_person_id, person_id, created_at)
VALUES (?, ?, ?, ?) ON CONFLICT (organization_id, partner_person_id) DO NOTHING`), r.OrganizationID, id, r.PersonID, now)
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
	return tx.QueryRowContext(ctx, s.q(`SELECT person_id FROM person_partner_ids WHERE organization_id = ? AND partner_person_id = ?`),
		r.OrganizationID, id).Scan(&r.PersonID)
}

// resolveMemberOf finds or creates the member behind the organization's record r.PersonID,
// the human across the partner's organizations, in this order:
//
//  1. the record's member, once it has one: a record never moves to another member;
//  2. else by the link's id among the partner's member ids, (partner, contact.id);
//  3. else by the keyed ssn hash among the partner's members;
//  4. else a new member, created with the link's id (the member's own id).
//
// The record is linked to the member and the link's id added to the member's ids, unless
// another member holds it. The member's hash is set when it has none; only a link carrying
// the member's own id corrects it. A link whose id or number points at another member than
// the record's, or whose number differs from the member's without being its own, is a
// conflict (Resolved.SSNConflict): nothing moves, so one clinic's links cannot move another
// clinic's human or change what identifies them. Members are never matched across
// partners: a partner vouches for its own contacts, not for another partner's.
func (s *Store) resolveMemberOf(ctx context.Context, tx *sql.Tx, r *Resolved, partner string, c *linkspec.Contact, hash sql.NullString, now int64) error {
	var member sql.NullInt64
	var stored sql.NullString
	var own sql.NullString
	if err := tx.QueryRowContext(ctx, s.q(`SELECT p.member_id, m.ssn_hash, m.partner_person_id FROM persons p LEFT JOIN members m ON m.id = p.member_id
WHERE p.id = ?`), r.PersonID).Scan(&member, &stored, &own); err != nil {
		return err
	}
	linked := member.Valid
	if !member.Valid {
		err := tx.QueryRowContext(ctx, s.q(`SELECT m.id, m.ssn_hash, m.partner_person_id FROM member_identities i JOIN members m ON m.id = i.member_id
WHERE i.partner = ? AND i.partner_person_id = ?`), partner, c.ID).Scan(&member, &stored, &own)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	if !member.Valid && hash.Valid {
		// Two clinics' first links of one human, each with its own contact id, would each
		// find no member by the number and make one (PostgreSQL): the second waits here
		// until the first has made its member, and then finds it. The hash has a fixed
		// length, so the key names one partner and number.
		if err := s.lockKey(ctx, tx, "member-ssn:"+hash.String+":"+partner); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, s.q(`SELECT id, ssn_hash, partner_person_id FROM members WHERE partner = ? AND ssn_hash = ? ORDER BY id LIMIT 1`),
			partner, hash.String).Scan(&member, &stored, &own)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	if !member.Valid {
		r.MemberCreated = true
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO members (partner, partner_person_id, ssn_hash, created_at, updated_at)
VALUES (?, ?, ?, ?, ?) RETURNING id`), partner, c.ID, hash, now, now).Scan(&member); err != nil {
			return err
		}
		stored, own = hash, sql.NullString{String: c.ID, Valid: true}
	}
	r.MemberID = member.Int64
	taken, err := s.addMemberID(ctx, tx, r, partner, c.ID, now)
	if err != nil {
		return err
	}
	if taken {
		// A concurrent first link made the member (PostgreSQL): read it as it is.
		if err := tx.QueryRowContext(ctx, s.q(`SELECT ssn_hash, partner_person_id FROM members WHERE id = ?`), r.MemberID).Scan(&stored, &own); err != nil {
			return err
		}
	}
	if !linked {
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE persons SET member_id = ? WHERE id = ? AND member_id IS NULL`), r.MemberID, r.PersonID); err != nil {
			return err
		}
	}
	if !hash.Valid || stored == hash {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM members WHERE partner = ? AND ssn_hash = ? AND id <> ?`),
		partner, hash.String, r.MemberID).Scan(&n); err != nil {
		return err
	}
	if n > 0 || (stored.Valid && c.ID != own.String) {
		r.SSNConflict = true
		return nil
	}
	_, err = tx.ExecContext(ctx, s.q(`UPDATE members SET ssn_hash = ?, updated_at = ? WHERE id = ?`), hash.String, now, r.MemberID)
	return err
}

// addMemberID records (partner, id) as an id of r.MemberID unless it is one already. An id
// another member holds stays with it: on PostgreSQL that may be a concurrent first link of
// the same id from another organization, recorded since the lookup; when this link made its
// member, it takes that member instead and reports it taken. Otherwise the partner's ids and
// numbers disagree (Resolved.SSNConflict).
func (s *Store) addMemberID(ctx context.Context, tx *sql.Tx, r *Resolved, partner, id string, now int64) (taken bool, err error) {
	var holder int64
	err = tx.QueryRowContext(ctx, s.q(`SELECT member_id FROM member_identities WHERE partner = ? AND partner_person_id = ?`), partner, id).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, s.q(`INSERT INTO member_identities (partner, partner_person_id, member_id, created_at)
VALUES (?, ?, ?, ?) ON CONFLICT (partner, partner_person_id) DO NOTHING`), partner, id, r.MemberID, now); err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return false, err
		}
		err = tx.QueryRowContext(ctx, s.q(`SELECT member_id FROM member_identities WHERE partner = ? AND partner_person_id = ?`), partner, id).Scan(&holder)
	}
	if err != nil {
		return false, err
	}
	switch {
	case holder == r.MemberID:
	case r.MemberCreated:
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM members WHERE id = ?`), r.MemberID); err != nil {
			return false, err
		}
		r.MemberID, r.MemberCreated = holder, false
		return true, nil
	default:
		r.SSNConflict = true
	}
	return false, nil
}

// resolveMember finds or creates the member account of r.MemberID and signs the link in to
// it. A new account takes the name and e-mail of the organization's record; later, only a
// Go link carrying the member's own partner id (the one it was created with) keeps them
// current. A link that found the member by ssn alone, or by another of its ids, signs in
// without renaming or re-mailing the account: that is the human another clinic knows, and
// this clinic's record keeps this clinic's name for its plans.
func (s *Store) resolveMember(ctx context.Context, tx *sql.Tx, r *Resolved, c *linkspec.Contact, now int64) error {
	var first, middle, last, email, own string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT p.firstname, p.middlename, p.lastname, p.email, m.partner_person_id
FROM persons p JOIN members m ON m.id = ? WHERE p.id = ?`), r.MemberID, r.PersonID).Scan(&first, &middle, &last, &email, &own); err != nil {
		return err
	}
	name := displayName(first, middle, last)
	err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE member_id = ?`), r.MemberID).Scan(&r.AccountID)
	switch {
	case err == nil:
		if c.ID != own {
			return nil
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE accounts SET email = ?, display_name = ?, updated_at = ? WHERE id = ?`),
			email, name, now, r.AccountID)
		return err
	case errors.Is(err, sql.ErrNoRows):
		r.AccountCreated = true
		r.AccountID, err = s.newMemberAccount(ctx, tx, r.MemberID, email, name, now)
		return err
	default:
		return err
	}
}

// newMemberAccount creates the account of memberID with the name and e-mail of one of its
// records and returns its id. A concurrent first sign-in of the member (PostgreSQL) may
// have made the account since the caller looked: the insert then finds it, and leaves its
// name and e-mail as they are.
func (s *Store) newMemberAccount(ctx context.Context, tx *sql.Tx, memberID int64, email, name string, now int64) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, s.q(`INSERT INTO accounts (role, email, display_name, member_id, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (member_id) DO UPDATE SET updated_at = accounts.updated_at
RETURNING id`), RoleMember, email, name, memberID, now, now).Scan(&id)
	return id, err
}

// normalizeGender maps a link's or selectperson's gender to the stored values, "" for one
// personspec does not read: a link's gender is free text (linkspec), so an unknown one is
// not stored rather than refused.
func normalizeGender(g string) string {
	gender, _ := personspec.ParseGender(g)
	return gender
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

// contactSSN is the keyed hash of a contact's national identity number, NULL when it has
// none that passes its country's check (nationalid.ParseAny): only such a number is ever
// matched on, since a placeholder such as "N/A" would make one record and one member of
// every contact that carries it. (Validate refuses any other; the link endpoint drops it
// with a warning first, as the gateway does.)
func (s *Store) contactSSN(ssn string, now int64) sql.NullString {
	n, err := nationalid.ParseAny(ssn, time.UnixMilli(now))
	if err != nil {
		return sql.NullString{}
	}
	return sql.NullString{String: s.ssnHash(n), Valid: true}
}

// ssnHash is the keyed hash that stands in for the identity number, over its country's
// normal form (nationalid: Norway 11 digits, Sweden 12, Denmark 10, no separators), so that
// "170535-50088", "170535 50088" and "17053550088" match, and a Swedish number written
// with ten digits matches its twelve. It does not include the organization, so that the
// member behind the records is matched across the partner's organizations (why
// docs/interface.md A-PAY-CONTACT prefers ssn); the key keeps a copy of the database from
// being searched by number. Norwegian, Danish and twelve-digit Swedish numbers hash as
// before nationalid (the digits were the letters and digits then too); a ten-digit Swedish
// one hashes as its twelve now.
func (s *Store) ssnHash(n nationalid.Number) string {
	return hex.EncodeToString(s.keyedHash("partnergate-ssn-v1", n.Digits()))
}

// keyedHash is the HMAC-SHA256, under the store's key, of label, a zero byte and value:
// what stands in for a value the database must match but never hold in clear.
func (s *Store) keyedHash(label, value string) []byte {
	m := hmac.New(sha256.New, s.opts.SSNKey)
	m.Write([]byte(label + "\x00"))
	m.Write([]byte(value))
	return m.Sum(nil)
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
