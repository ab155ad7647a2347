package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/partnergate/partnergate/personspec"
)

// ErrNotFound is an id that does not exist in the caller's organization: ids of another
// organization are not found, never shown.
var ErrNotFound = errors.New("not found")

// Person is one organization's record of a person: only that organization's links,
// instructors and wrapper commands read or change it, and another organization's record of
// the same human is another Person with another id. The identity number is never readable.
type Person struct {
	ID         int64
	CustomID   string // the organization's own id for the person; not unique
	Firstname  string
	Middlename string
	Lastname   string
	BirthDate  string // yyyy-MM-dd or ""
	Gender     string // "", "female" or "male"
	Email      string
	Mobile     string
	PhoneHome  string
	PhoneWork  string
	Address    string
	Country    string
	Zipcode    string
	Location   string
	// Diagnosis is the diagnosis the organization's links gave (contact.diagnosis), as the
	// clinic wrote it: the instructor plans against it.
	Diagnosis string
	// PartnerIDs are the ids the organization's links gave the record.
	PartnerIDs []string
	Extra      map[string]json.RawMessage
	// UpdatedAt is when the record last changed.
	UpdatedAt time.Time
}

// Name is the person's full name.
func (p *Person) Name() string { return displayName(p.Firstname, p.Middlename, p.Lastname) }

// ProfileEntry is a stored profile data entry.
type ProfileEntry struct {
	personspec.ProfileEntry
	ID        int64
	UpdatedAt time.Time
}

const personColumns = `p.id, p.custom_id, p.firstname, p.middlename, p.lastname, p.birthdate, p.gender, p.email, p.mobile,
	p.phone_home, p.phone_work, p.address, p.country, p.zipcode, p.location, p.diagnosis, p.extra, p.updated_at`

// personRows reads records of orgID selected by where (on persons p), with their partner
// ids.
func (s *Store) personRows(ctx context.Context, q queryer, orgID int64, where string, args ...any) ([]Person, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT `+personColumns+`
FROM persons p WHERE p.organization_id = ? AND `+where), append([]any{orgID}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Person
	for rows.Next() {
		var p Person
		var extra string
		var updated int64
		if err := rows.Scan(&p.ID, &p.CustomID, &p.Firstname, &p.Middlename, &p.Lastname, &p.BirthDate, &p.Gender, &p.Email, &p.Mobile,
			&p.PhoneHome, &p.PhoneWork, &p.Address, &p.Country, &p.Zipcode, &p.Location, &p.Diagnosis, &extra, &updated); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(extra), &p.Extra); err != nil {
			return nil, err
		}
		p.UpdatedAt = time.UnixMilli(updated).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	for i := range out {
		if out[i].PartnerIDs, err = s.partnerIDs(ctx, q, orgID, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// partnerIDs are the ids orgID's links gave its record person, oldest first.
func (s *Store) partnerIDs(ctx context.Context, q queryer, orgID, person int64) ([]string, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT partner_person_id FROM person_partner_ids
WHERE person_id = ? AND organization_id = ? ORDER BY created_at, partner_person_id`), person, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (s *Store) readPerson(ctx context.Context, q queryer, orgID, id int64) (*Person, error) {
	ps, err := s.personRows(ctx, q, orgID, `p.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, ErrNotFound
	}
	return &ps[0], nil
}

// Person returns a record of orgID.
func (s *Store) Person(ctx context.Context, orgID, personID int64) (*Person, error) {
	return s.readPerson(ctx, s.db, orgID, personID)
}

// Persons lists the records of orgID, most recently changed first; with customID, only
// those with that custom id. limit is capped at 1000, and 100 when not positive.
func (s *Store) Persons(ctx context.Context, orgID int64, customID string, limit int) ([]Person, error) {
	where, args := `true`, []any{}
	if customID != "" {
		where, args = `p.custom_id = ?`, []any{customID}
	}
	return s.personRows(ctx, s.db, orgID, where+` ORDER BY p.updated_at DESC, p.id DESC LIMIT ?`, append(args, clampLimit(limit, 100, 1000))...)
}

func clampLimit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}

// SetCustomID sets the custom id of a record of orgID.
func (s *Store) SetCustomID(ctx context.Context, orgID, personID int64, customID string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE persons SET custom_id = ?, updated_at = ? WHERE id = ? AND organization_id = ?`),
		customID, s.now(), personID, orgID)
	return oneRow(res, err)
}

// SelectPerson is the wrapper's selectperson: the record of orgID with sel.UserID (another
// organization's id is ErrNotFound); else, with sel.CustomID, the most recently changed
// record of orgID with that custom id (matched tells how many share it); else a new record
// of orgID, which belongs to no member until a partner link finds it. The fields follow sel, but
// an empty field does not clear a stored value; unknown members are merged into the stored
// ones; profile entries are added, and re-sending an entry (same key, date and source)
// updates it. A new person's custom id is sel.CustomID; a person found by UserID takes
// sel.CustomID when it is given.
func (s *Store) SelectPerson(ctx context.Context, orgID int64, sel *personspec.Select) (p *Person, created bool, matched int, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		created, matched = false, 0
		now := s.now()
		id := sel.UserID
		switch {
		case id > 0:
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM persons WHERE id = ? AND organization_id = ?`), id, orgID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return ErrNotFound
			}
			matched = 1
		case sel.CustomID != "":
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM persons WHERE organization_id = ? AND custom_id = ?`), orgID, sel.CustomID).Scan(&matched); err != nil {
				return err
			}
			if matched > 0 {
				if err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM persons WHERE organization_id = ? AND custom_id = ?
ORDER BY updated_at DESC, id DESC LIMIT 1`), orgID, sel.CustomID).Scan(&id); err != nil {
					return err
				}
			}
		}
		if id == 0 {
			created = true
			var err error
			if id, err = s.newRecord(ctx, tx, orgID, sel.CustomID, sql.NullString{}, now); err != nil {
				return err
			}
		}
		if err := s.step("person"); err != nil {
			return err
		}
		extra, err := s.mergeExtra(ctx, tx, orgID, id, sel.Extra)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE persons SET
	firstname = COALESCE(NULLIF(?, ''), firstname), lastname = COALESCE(NULLIF(?, ''), lastname),
	email = COALESCE(NULLIF(?, ''), email), address = COALESCE(NULLIF(?, ''), address),
	phone_home = COALESCE(NULLIF(?, ''), phone_home), phone_work = COALESCE(NULLIF(?, ''), phone_work),
	mobile = COALESCE(NULLIF(?, ''), mobile), country = COALESCE(NULLIF(?, ''), country),
	zipcode = COALESCE(NULLIF(?, ''), zipcode), location = COALESCE(NULLIF(?, ''), location),
	gender = COALESCE(NULLIF(?, ''), gender), birthdate = COALESCE(NULLIF(?, ''), birthdate),
	custom_id = COALESCE(NULLIF(?, ''), custom_id), extra = ?, updated_at = ?
WHERE id = ? AND organization_id = ?`), sel.Firstname, sel.Lastname, sel.Email, sel.Address, sel.PhoneHome, sel.PhoneWork, sel.Mobile, sel.Country,
			sel.Zipcode, sel.Location, normalizeGender(sel.Gender), sel.DateOfBirth, sel.CustomID, extra, now, id, orgID); err != nil {
			return err
		}
		for _, e := range sel.Profile {
			if err := s.step("profile"); err != nil {
				return err
			}
			if err := s.upsertProfile(ctx, tx, orgID, id, e, now); err != nil {
				return err
			}
		}
		p, err = s.readPerson(ctx, tx, orgID, id)
		return err
	})
	if err != nil {
		return nil, false, 0, err
	}
	return p, created, matched, nil
}

// newRecord creates an empty record of orgID, which the caller then fills.
func (s *Store) newRecord(ctx context.Context, tx *sql.Tx, orgID int64, customID string, ssnHash sql.NullString, now int64) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, s.q(`INSERT INTO persons (organization_id, custom_id, ssn_hash, firstname, middlename, lastname, birthdate, gender,
	email, mobile, diagnosis, phone_home, phone_work, address, country, zipcode, location, extra, created_at, updated_at)
VALUES (?, ?, ?, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '{}', ?, ?) RETURNING id`), orgID, customID, ssnHash, now, now).Scan(&id)
	return id, err
}

// mergeExtra returns the record's stored unknown members with add laid over them, as JSON.
func (s *Store) mergeExtra(ctx context.Context, tx *sql.Tx, orgID, person int64, add map[string]json.RawMessage) (string, error) {
	var stored string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT extra FROM persons WHERE id = ? AND organization_id = ?`), person, orgID).Scan(&stored); err != nil {
		return "", err
	}
	if len(add) == 0 {
		return stored, nil
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(stored), &m); err != nil {
		return "", err
	}
	for k, v := range add {
		m[strings.ToLower(k)] = v
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func (s *Store) upsertProfile(ctx context.Context, tx *sql.Tx, orgID, person int64, e personspec.ProfileEntry, now int64) error {
	var measured int64
	if !e.Date.IsZero() {
		measured = e.Date.UnixMilli()
	}
	extra := []byte("{}")
	if len(e.Extra) > 0 {
		var err error
		if extra, err = json.Marshal(e.Extra); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO profile_entries (person_id, organization_id, key, name, value, unit, measured_at, source, description, extra, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (person_id, organization_id, key, measured_at, source) DO UPDATE SET name = excluded.name, value = excluded.value,
	unit = excluded.unit, description = excluded.description, extra = excluded.extra, updated_at = excluded.updated_at`),
		person, orgID, e.Key, e.Name, e.Value, e.Unit, measured, e.Source, e.Description, string(extra), now, now)
	return err
}

// Profile returns the profile entries of a record of orgID, the latest measurement first.
func (s *Store) Profile(ctx context.Context, orgID, personID int64) ([]ProfileEntry, error) {
	if _, err := s.readPerson(ctx, s.db, orgID, personID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, key, name, value, unit, measured_at, source, description, extra, updated_at
FROM profile_entries WHERE person_id = ? AND organization_id = ? ORDER BY measured_at DESC, key, id`), personID, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ProfileEntry{}
	for rows.Next() {
		var e ProfileEntry
		var measured, updated int64
		var extra string
		if err := rows.Scan(&e.ID, &e.Key, &e.Name, &e.Value, &e.Unit, &measured, &e.Source, &e.Description, &extra, &updated); err != nil {
			return nil, err
		}
		if measured != 0 {
			e.Date = time.UnixMilli(measured).UTC()
		}
		if extra != "{}" {
			if err := json.Unmarshal([]byte(extra), &e.Extra); err != nil {
				return nil, err
			}
		}
		e.UpdatedAt = time.UnixMilli(updated).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}
