package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
)

// todaysShape makes the database of an app service before migration 0005: the schema at
// version 4 (the embedded migrations up to it), with persons shared by organizations and
// what hangs off them.
//
//   - Kari (person 7) is one shared person of Clinic A (org 1, first, partner id contact-1)
//     and Clinic B (org 2, since matched by ssn with c-999; B's custom id 4711). Each clinic
//     has a plan for her with an export, a profile entry, a link, a session with her in
//     focus; B's link has an unused login code; her member account has a session.
//   - Ola (8, org 1, c-8) and his 0003 stray (9): org 2's contact of c-8, which migration
//     0003 left without the id (custom id c-8, a link of org 2, a member account of its
//     own with a session, a profile entry and a plan).
//   - 11, a stray whose custom id was changed since; 10, a person of the local Demo clinic
//     made by the wrapper.
//   - Per, two contacts of one partner with one ssn hash but two ids (12 in org 1, 13 in
//     org 2, from before 0003), each with a member account; 13's has a session.
func todaysShape(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	s, err := connect(ctx, dsn, Options{SSNKey: testKey, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 4); err != nil {
		t.Fatalf("migrating to version 4: %v", err)
	}
	exec := func(stmt string, args ...any) {
		t.Helper()
		if _, err := s.db.Exec(s.q(stmt), args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	future := newClock().Now().UnixMilli() + 3600_000
	for _, stmt := range []string{
		`INSERT INTO organizations (id, partner, partner_org_id, name, created_at, updated_at) VALUES
			(1, 'demo', 'org-a', 'Clinic A', 1, 1), (2, 'demo', 'org-b', 'Clinic B', 1, 1), (3, '', 'local', 'Demo clinic', 1, 1)`,
		`INSERT INTO persons (id, ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis, created_at, updated_at,
			phone_home, phone_work, address, country, zipcode, location, extra) VALUES
			(7, 'hash-kari', 'Kari', '', 'Nordmann', '1975-05-17', 'female', 'kari@b.example', '+47 1', 'M54', 100, 300, '', '', 'Storgata 1', 'NO', '', '', '{"insurance":"A-1"}'),
			(8, 'hash-ola', 'Ola', '', 'Hansen', '', 'male', '', '', '', 50, 50, '', '', '', '', '', '', '{}'),
			(9, NULL, 'Ola', '', 'Hansen', '', 'male', '', '', '', 40, 40, '', '', '', '', '', '', '{}'),
			(10, NULL, 'Åse', '', 'Ødegård', '', '', '', '', '', 80, 80, '', '', '', '', '', '', '{}'),
			(11, NULL, 'Eva', '', 'Lund', '', '', '', '', '', 45, 45, '', '', '', '', '', '', '{}'),
			(12, 'hash-per', 'Per', '', 'Berg', '', '', 'per@a.example', '', '', 60, 60, '', '', '', '', '', '', '{}'),
			(13, 'hash-per', 'Per', '', 'Berg', '', '', 'per@b.example', '', '', 70, 70, '', '', '', '', '', '', '{}')`,
		`INSERT INTO person_identities (partner, partner_person_id, person_id, created_at) VALUES
			('demo', 'contact-1', 7, 100), ('demo', 'c-999', 7, 200), ('demo', 'c-8', 8, 50), ('demo', 'c-12', 12, 60), ('demo', 'c-13', 13, 70)`,
		`INSERT INTO person_organizations (person_id, organization_id, custom_id, created_at, updated_at) VALUES
			(7, 1, 'contact-1', 100, 150), (7, 2, '4711', 200, 300), (8, 1, 'c-8', 50, 50), (9, 2, 'c-8', 40, 40),
			(10, 3, '4711', 80, 80), (11, 2, 'renamed', 45, 45), (12, 1, 'c-12', 60, 60), (13, 2, 'c-13', 70, 70)`,
		`INSERT INTO accounts (id, role, username, email, display_name, password_hash, contact_id, created_at, updated_at) VALUES
			(1, 'instructor', 'coach', 'coach@a.example', 'Coach A', NULL, NULL, 1, 1),
			(2, 'member', NULL, 'kari@b.example', 'Kari Nordmann', NULL, 7, 1, 1),
			(3, 'member', NULL, 'ola@a.example', 'Ola Hansen', NULL, 8, 1, 1),
			(4, 'member', NULL, 'ola@b.example', 'Ola Hansen', NULL, 9, 1, 1),
			(5, 'member', NULL, 'per@a.example', 'Per Berg', NULL, 12, 1, 1),
			(6, 'member', NULL, 'per@b.example', 'Per Berg', NULL, 13, 1, 1),
			(7, 'instructor', 'bea', 'bea@b.example', 'Coach B', NULL, NULL, 1, 1)`,
		`INSERT INTO memberships (account_id, organization_id, role, created_at) VALUES (1, 1, 'instructor', 1), (1, 3, 'instructor', 1), (7, 2, 'instructor', 1)`,
		`INSERT INTO employees (id, partner, partner_employee_id, username, firstname, lastname, email, account_id, created_at, updated_at) VALUES
			(1, 'demo', 'emp-a', 'ida', 'Ida', 'A', 'ida@a.example', 1, 1, 1), (2, 'demo', 'emp-b', 'bea', 'Bea', 'B', 'bea@b.example', 7, 1, 1)`,
		`INSERT INTO links (id, partner, kind, endpoint, request_id, organization_id, contact_id, employee_id, account_id, case_id, created_at) VALUES
			(1, 'demo', 'main', 'url', 'r1', 1, 7, 1, NULL, 'case-a', 100),
			(2, 'demo', 'main', 'url', 'r2', 2, 7, 2, NULL, 'case-b', 200),
			(3, 'demo', 'go', 'url', 'r3', 1, 7, NULL, 2, '', 210),
			(4, 'demo', 'go', 'url', 'r4', 2, 9, NULL, 4, '', 40),
			(5, 'demo', 'main', 'url', 'r5', 1, 8, 1, NULL, '', 50),
			(6, 'demo', 'main', 'url', 'r6', 2, 11, 2, NULL, '', 45),
			(7, 'demo', 'go', 'url', 'r7', 2, 13, NULL, 6, '', 70)`,
		`INSERT INTO profile_entries (person_id, organization_id, key, name, value, unit, measured_at, source, description, extra, created_at, updated_at) VALUES
			(7, 1, 'weight', 'Weight', '64', 'kg', 0, 'a', '', '{}', 1, 1),
			(7, 2, 'tug', 'Timed up and go', '11.5', 's', 0, 'b', '', '{}', 1, 1),
			(9, 2, 'weight', 'Weight', '80', 'kg', 0, 'b', '', '{}', 1, 1)`,
		`INSERT INTO workouts (id, organization_id, person_id, owner_account_id, title, notes, is_template, created_at, updated_at) VALUES
			(100, 1, 7, 1, 'Plan A', '', 0, 1, 110), (101, 2, 7, 7, 'Plan B', '', 0, 1, 120), (102, 2, 9, 7, 'Plan stray', '', 0, 1, 90),
			(103, 1, 8, 1, 'Plan Ola', '', 0, 1, 80), (104, 1, NULL, 1, 'Template A', '', 1, 1, 1)`,
		`INSERT INTO workout_items (workout_id, position, exercise_id, sets, reps, hold_seconds, load, rest_seconds, note) VALUES
			(100, 1, 1, 3, 10, 0, '', 60, 'A'), (101, 1, 2, 2, 8, 0, '5 kg', 30, 'B'), (101, 2, 3, 1, 1, 30, '', 0, '')`,
		`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, case_id, created_at, expires_at) VALUES
			('` + hashSecret("session-a") + `', 1, 1, 1, 7, 1, 'case-a', 1, ` + itoa(future) + `),
			('` + hashSecret("session-b") + `', 7, 2, 2, 7, 2, 'case-b', 1, ` + itoa(future) + `),
			('` + hashSecret("member-kari") + `', 2, NULL, 2, 7, NULL, '', 1, ` + itoa(future) + `),
			('` + hashSecret("member-ola-b") + `', 4, NULL, 2, 9, 4, '', 1, ` + itoa(future) + `),
			('` + hashSecret("member-per-b") + `', 6, NULL, 2, 13, 7, '', 1, ` + itoa(future) + `)`,
		`INSERT INTO login_codes (code_hash, link_id, expires_at) VALUES ('` + hashSecret("code-b") + `', 2, ` + itoa(future) + `)`,
	} {
		exec(stmt)
	}
	exec(`INSERT INTO case_exports (organization_id, case_id, workout_id, person_id, filename, sha256, size, pdf, created_by_account_id, created_at) VALUES
		(2, 'case-b', 101, 7, 'plan-b.pdf', 'sum-b', 5, ?, 7, 1), (1, 'case-a', 100, 7, 'plan-a.pdf', 'sum-a', 5, ?, 1, 2)`,
		[]byte("%PDFb"), []byte("%PDFa"))
	if s.d.name == "postgres" {
		// Rows given ids here were numbered by the identity columns in a real database.
		for _, table := range []string{"organizations", "persons", "accounts", "employees", "links", "workouts"} {
			exec(`SELECT setval(pg_get_serial_sequence('` + table + `', 'id'), (SELECT MAX(id) FROM ` + table + `))`)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// contactOf is a contact with an id and a name only.
func contactOf(id, first, last string) linkspec.Contact {
	return linkspec.Contact{ID: id, Firstname: first, Lastname: last, Email: strings.ToLower(first) + "@example.com"}
}

// TestMigrate0005ClinicRecords: a database in today's shape (todaysShape) migrates to one
// record per organization without losing a plan, an export, a profile entry, a link, a
// session or a login code, on SQLite and PostgreSQL, and works with the new code after:
// each clinic sees and changes only its own record, and the member sees every clinic's plans.
func TestMigrate0005ClinicRecords(t *testing.T) {
	for _, b := range emptyDatabases() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.dsn(t)
			todaysShape(t, dsn)
			before := map[string]int{}
			s0, err := connect(ctx, dsn, Options{SSNKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			tables := []string{"workouts", "workout_items", "case_exports", "profile_entries", "links", "login_codes", "organizations", "employees", "memberships"}
			for _, table := range tables {
				before[table] = count(t, s0, table)
			}
			s0.Close()

			s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: newClock().Now})
			if err != nil {
				t.Fatalf("Open of today's database = %v", err)
			}
			defer s.Close()
			for _, table := range tables {
				if n := count(t, s, table); n != before[table] {
					t.Errorf("%s: %d rows after the migration, %d before", table, n, before[table])
				}
			}

			// Kari: A keeps id 7, B's record is numbered after the highest id (13); each
			// starts with what its clinic saw, and has its own custom id.
			const kariB = 14
			kari := Person{Firstname: "Kari", Lastname: "Nordmann", BirthDate: "1975-05-17", Gender: "female", Email: "kari@b.example",
				Mobile: "+47 1", Address: "Storgata 1", PartnerIDs: []string{"contact-1", "c-999"}}
			kari.CustomID = "contact-1"
			wantPerson(t, s, "A's Kari", 1, 7, kari)
			kari.CustomID = "4711"
			wantPerson(t, s, "B's Kari", 2, kariB, kari)
			if p, _ := s.Person(ctx, 2, kariB); string(p.Extra["insurance"]) != `"A-1"` {
				t.Errorf("B's Kari's extra = %s, want the shared record's", p.Extra)
			}
			if _, err := s.Person(ctx, 2, 7); !errors.Is(err, ErrNotFound) {
				t.Errorf("Person(B, 7) = %v, want ErrNotFound: 7 is A's record", err)
			}
			if ps, err := s.Persons(ctx, 2, "4711", 0); err != nil || len(ps) != 1 || ps[0].ID != kariB {
				t.Errorf("Persons(B, 4711) = %+v, %v, want B's Kari, %d", ps, err, kariB)
			}
			for _, tt := range []struct {
				org, person int64
				plan        string
				items       int
				profile     string
				caseID      string
				pdf         string
			}{
				{1, 7, "Plan A", 1, "64", "case-a", "%PDFa"},
				{2, kariB, "Plan B", 2, "11.5", "case-b", "%PDFb"},
			} {
				ws, err := s.Workouts(ctx, tt.org, WorkoutQuery{PersonID: tt.person})
				if err != nil || len(ws) != 1 || ws[0].Title != tt.plan || len(ws[0].Items) != tt.items || ws[0].Person == nil || ws[0].Person.ID != tt.person {
					t.Errorf("Workouts(%d, person %d) = %+v, %v, want %s with %d items for the record", tt.org, tt.person, ws, err, tt.plan, tt.items)
				}
				pe, err := s.Profile(ctx, tt.org, tt.person)
				if err != nil || len(pe) != 1 || pe[0].Value != tt.profile {
					t.Errorf("Profile(%d, %d) = %+v, %v, want the clinic's one entry %s", tt.org, tt.person, pe, err, tt.profile)
				}
				xs, err := s.CaseExports(ctx, tt.org, tt.caseID)
				if err != nil || len(xs) != 1 || xs[0].PersonID != tt.person {
					t.Fatalf("CaseExports(%d, %s) = %+v, %v, want one export for record %d", tt.org, tt.caseID, xs, err, tt.person)
				}
				if _, pdf, err := s.CaseExportPDF(ctx, tt.org, xs[0].ID); err != nil || !bytes.Equal(pdf, []byte(tt.pdf)) {
					t.Errorf("CaseExportPDF(%d, %d) = %q, %v, want %q", tt.org, xs[0].ID, pdf, err, tt.pdf)
				}
			}
			for token, want := range map[string]int64{"session-a": 7, "session-b": kariB, "member-kari": kariB} {
				if sess, err := s.Session(ctx, token); err != nil || sess.Person == nil || sess.Person.ID != want {
					t.Errorf("Session(%s) = %+v, %v, want record %d in focus", token, sess, err, want)
				}
			}
			if ex, err := s.ExchangeCode(ctx, "code-b"); err != nil || ex.Session.Person == nil || ex.Session.Person.ID != kariB || ex.Session.CaseID != "case-b" {
				t.Errorf("ExchangeCode(B's code) = %+v, %v, want B's Kari in focus with case-b", ex, err)
			}
			var linkPerson int64
			queryRow(t, s, "SELECT contact_id FROM links WHERE id = 2", nil, &linkPerson)
			if linkPerson != kariB {
				t.Errorf("B's link points at %d, want B's record %d", linkPerson, kariB)
			}

			memberPlans := func(account int64) string {
				t.Helper()
				// What the member sees with every organization in scope (a national eID).
				in, err := s.NationalEIDSignIn(ctx, account)
				if err != nil {
					return err.Error()
				}
				ws, err := s.MemberWorkouts(ctx, in.Session)
				if err != nil {
					return err.Error()
				}
				var out []string
				for _, w := range ws {
					out = append(out, w.Title+" @ "+w.OrganizationName)
				}
				return strings.Join(out, ", ")
			}
			for account, want := range map[int64]string{
				2: "Plan B @ Clinic B, Plan A @ Clinic A",       // Kari: both clinics'
				3: "Plan stray @ Clinic B, Plan Ola @ Clinic A", // Ola, with his 0003 stray's plan
				4: ErrNotFound.Error(),                          // the stray's account, retired
				5: "",                                           // Per: one member, 12's account
				6: ErrNotFound.Error(),                          // 13's account, retired
			} {
				if got := memberPlans(account); got != want {
					t.Errorf("MemberWorkouts(account %d) = %q, want %q", account, got, want)
				}
			}
			for _, token := range []string{"member-ola-b", "member-per-b"} {
				if _, err := s.Session(ctx, token); !errors.Is(err, ErrNoSession) {
					t.Errorf("Session(%s) of a retired account = %v, want ErrNoSession", token, err)
				}
			}

			// 0003's stray is org 2's record of c-8 again; the changed one keeps no id.
			wantPerson(t, s, "the 0003 stray", 2, 9, Person{Firstname: "Ola", Lastname: "Hansen", Gender: "male", CustomID: "c-8", PartnerIDs: []string{"c-8"}})
			wantPerson(t, s, "the renamed stray", 2, 11, Person{Firstname: "Eva", Lastname: "Lund", CustomID: "renamed"})
			wantPerson(t, s, "the Demo clinic's", 3, 10, Person{Firstname: "Åse", Lastname: "Ødegård", CustomID: "4711"})
			var members sql.NullInt64
			queryRow(t, s, "SELECT COUNT(DISTINCT member_id) FROM persons WHERE id IN (7, 14)", nil, &members)
			if members.Int64 != 1 {
				t.Errorf("Kari's records belong to %d members, want 1", members.Int64)
			}
			var unlinked int
			queryRow(t, s, "SELECT COUNT(*) FROM persons WHERE member_id IS NULL AND id IN (10, 11)", nil, &unlinked)
			if unlinked != 2 {
				t.Errorf("members of the wrapper's person and the renamed stray: %d without, want 2", unlinked)
			}

			// The new code on the migrated data: links find each clinic's own record and the
			// member's one account.
			for _, tt := range []struct {
				l              Link
				person, acct   int64
				personCreated  bool
				accountCreated bool
			}{
				{clinicLink(linkspec.KindMain, "org-b", "Clinic B", contactOf("c-8", "Ola", "Hansen")), 9, 0, false, false},
				{clinicLink(linkspec.KindGo, "org-a", "Clinic A", contactOf("contact-1", "Kari", "Nordmann")), 7, 2, false, false},
				{clinicLink(linkspec.KindGo, "org-b", "Clinic B", contactOf("c-999", "Kari", "Nordmann")), kariB, 2, false, false},
				{clinicLink(linkspec.KindGo, "org-b", "Clinic B", contactOf("c-13", "Per", "Berg")), 13, 5, false, false},
				{clinicLink(linkspec.KindGo, "org-b", "Clinic B", contactOf("c-8", "Ola", "Hansen")), 9, 3, false, false},
			} {
				r := mustResolve(t, s, tt.l)
				if r.PersonID != tt.person || r.PersonCreated || (tt.acct != 0 && r.AccountID != tt.acct) || r.AccountCreated {
					t.Errorf("%s link of %s at %s = record %d (created %v), account %d (created %v), want record %d, account %d",
						tt.l.Kind, tt.l.Payload.Contact.ID, tt.l.Payload.OrganizationID, r.PersonID, r.PersonCreated, r.AccountID, r.AccountCreated, tt.person, tt.acct)
				}
			}
			edit := personspec.Select{UserID: kariB, Firstname: "Edited", Lastname: "ByB", Address: "Elsewhere 2"}
			mustSelect(t, s, 2, edit)
			kari.CustomID, kari.Email = "contact-1", "kari@example.com" // A's own Go link above gave the e-mail
			wantPerson(t, s, "A's Kari after B's edit", 1, 7, kari)
			edit.UserID = 7
			if _, _, _, err := s.SelectPerson(ctx, 2, &edit); !errors.Is(err, ErrNotFound) {
				t.Errorf("SelectPerson(B, 7) = %v, want ErrNotFound", err)
			}
			if p, _, _ := mustSelect(t, s, 3, personspec.Select{Firstname: "New", Lastname: "Person"}); p.ID <= kariB {
				t.Errorf("a new record's id = %d, want one after %d", p.ID, kariB)
			}
			if r := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", contactOf("c-new", "Nina", "Ny"))); !r.PersonCreated || !r.MemberCreated || !r.AccountCreated || r.MemberID <= 12 || r.AccountID <= 7 {
				t.Errorf("a new contact's Go link = %+v, want a new record, member (after 12, the highest) and account (after 7)", r)
			}
			checkForeignKeys(t, s)
		})
	}
}

// TestMigrate0005StrayOfAnotherNumber: a 0003 stray whose identity number differs from that
// of the person holding its custom id is not taken for that person: nothing is merged on
// conflicting evidence. It stays its organization's record without the id, a member of its
// own (it has a member account, which keeps its plan); the partner's next link of the id at
// its organization makes a new record there for the id's member.
func TestMigrate0005StrayOfAnotherNumber(t *testing.T) {
	for _, b := range emptyDatabases() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.dsn(t)
			s0, err := connect(ctx, dsn, Options{SSNKey: testKey, Now: newClock().Now})
			if err != nil {
				t.Fatal(err)
			}
			p, err := s0.provider()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 4); err != nil {
				t.Fatalf("migrating to version 4: %v", err)
			}
			for _, stmt := range []string{
				`INSERT INTO organizations (id, partner, partner_org_id, name, created_at, updated_at) VALUES
					(1, 'demo', 'org-a', 'Clinic A', 1, 1), (2, 'demo', 'org-b', 'Clinic B', 1, 1)`,
				`INSERT INTO persons (id, ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis, created_at, updated_at,
					phone_home, phone_work, address, country, zipcode, location, extra) VALUES
					(1, 'hash-liv', 'Liv', '', 'Dahl', '', '', '', '', '', 10, 10, '', '', '', '', '', '', '{}'),
					(2, 'hash-other', 'Liv', '', 'Dahl', '', '', '', '', '', 20, 20, '', '', '', '', '', '', '{}')`,
				`INSERT INTO person_identities (partner, partner_person_id, person_id, created_at) VALUES ('demo', 'c-1', 1, 10)`,
				`INSERT INTO person_organizations (person_id, organization_id, custom_id, created_at, updated_at) VALUES
					(1, 1, 'c-1', 10, 10), (2, 2, 'c-1', 20, 20)`,
				`INSERT INTO accounts (id, role, username, email, display_name, password_hash, contact_id, created_at, updated_at) VALUES
					(1, 'instructor', 'coach', 'coach@b.example', 'Coach B', NULL, NULL, 1, 1),
					(2, 'member', NULL, 'liv@b.example', 'Liv Dahl', NULL, 2, 1, 1)`,
				`INSERT INTO links (id, partner, kind, endpoint, request_id, organization_id, contact_id, employee_id, account_id, case_id, created_at) VALUES
					(1, 'demo', 'go', 'url', 'r1', 2, 2, NULL, 2, '', 20)`,
				`INSERT INTO workouts (id, organization_id, person_id, owner_account_id, title, notes, is_template, created_at, updated_at) VALUES
					(100, 2, 2, 1, 'Plan B', '', 0, 1, 20)`,
			} {
				if _, err := s0.db.Exec(s0.q(stmt)); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			if s0.d.name == "postgres" {
				for _, table := range []string{"organizations", "persons", "accounts", "links", "workouts"} {
					if _, err := s0.db.Exec(`SELECT setval(pg_get_serial_sequence('` + table + `', 'id'), (SELECT MAX(id) FROM ` + table + `))`); err != nil {
						t.Fatal(err)
					}
				}
			}
			s0.Close()

			s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: newClock().Now})
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			defer s.Close()
			wantPerson(t, s, "the stray of another number", 2, 2, Person{Firstname: "Liv", Lastname: "Dahl", CustomID: "c-1"})
			var holder, stray sql.NullInt64
			queryRow(t, s, "SELECT member_id FROM persons WHERE id = 1", nil, &holder)
			queryRow(t, s, "SELECT member_id FROM persons WHERE id = 2", nil, &stray)
			if !holder.Valid || !stray.Valid || holder.Int64 == stray.Int64 {
				t.Errorf("members of c-1's person and the stray = %v, %v; want two members", holder, stray)
			}
			if ws, err := s.MemberWorkouts(ctx, eidSession(t, s, 2)); err != nil || len(ws) != 1 || ws[0].Title != "Plan B" {
				t.Errorf("MemberWorkouts(the stray's account) = %+v, %v, want its Plan B", ws, err)
			}
			r := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-b", "Clinic B", contactOf("c-1", "Liv", "Dahl")))
			if r.PersonID == 2 || !r.PersonCreated || r.MemberID != holder.Int64 || r.AccountID == 2 {
				t.Errorf("Go link of c-1 at Clinic B = %+v, want a new record of c-1's member %d, not the stray", r, holder.Int64)
			}
			checkForeignKeys(t, s)
		})
	}
}
