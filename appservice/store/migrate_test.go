package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/pgtest"
)

// oldRunner makes the database the hand-written migration runner before goose left: its
// schema_migrations table, migrations 1 and 2 (testdata/oldrunner, copies of those files as
// that runner applied them) and a little data in them.
func oldRunner(t *testing.T, db *sql.DB, d dialect) {
	t.Helper()
	s := &Store{db: db, d: d, opts: Options{Now: newClock().Now}}
	exec := func(stmt string, args ...any) {
		t.Helper()
		if _, err := db.Exec(s.q(stmt), args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	files, err := filepath.Glob("testdata/oldrunner/*.sql")
	if err != nil || len(files) != 2 {
		t.Fatalf("old migrations = %v, %v", files, err)
	}
	sort.Strings(files)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range splitStatements(strings.ReplaceAll(string(b), "@IDENTITY@", d.identity)) {
			exec(stmt)
		}
		exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 1)`, i+1, filepath.Base(f))
	}
	for _, stmt := range []string{
		`INSERT INTO organizations (id, partner, partner_org_id, name, created_at, updated_at) VALUES (1, 'demo', 'org1', 'North', 1, 1), (2, 'demo', 'org2', 'South', 1, 1)`,
		// c1 in two organizations was two contacts; c3 has a member account.
		`INSERT INTO contacts (id, organization_id, partner_contact_id, ssn_hash, firstname, middlename, lastname, birthdate, gender, mobile, email, diagnosis, created_at, updated_at) VALUES
			(1, 1, 'c1', 'hash-1', 'Ola', '', 'Nordmann', '1990-01-01', 'M', '', '', '', 1, 1),
			(2, 2, 'c1', 'hash-1', 'Ola', '', 'Nordmann', '1990-01-01', 'male', '', '', '', 2, 2),
			(3, 1, 'c3', NULL, 'Kari', '', 'Hansen', '', 'K', '', 'kari@example.com', '', 3, 3)`,
		`INSERT INTO accounts (id, role, username, email, display_name, password_hash, contact_id, created_at, updated_at) VALUES
			(1, 'instructor', 'coach', 'coach@example.com', 'Coach', NULL, NULL, 1, 1),
			(2, 'member', NULL, 'kari@example.com', 'Kari Hansen', NULL, 3, 1, 1)`,
		`INSERT INTO employees (id, partner, partner_employee_id, username, firstname, lastname, email, account_id, created_at, updated_at) VALUES
			(1, 'demo', 'e1', 'ida', 'Ida', 'Berg', 'ida@example.com', 1, 1, 1)`,
		`INSERT INTO links (id, partner, kind, endpoint, request_id, organization_id, contact_id, employee_id, account_id, case_id, created_at) VALUES
			(1, 'demo', 'main', 'url', 'r1', 1, 1, 1, NULL, 'case-7', 1),
			(2, 'demo', 'go', 'payload', 'r2', 1, 3, NULL, 2, '', 1)`,
	} {
		exec(stmt)
	}
	exec(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, created_at, expires_at)
VALUES (?, 1, 1, 1, 1, 1, 1, ?)`, hashSecret("old-session"), newClock().Now().UnixMilli()+3600_000)
	if d.name == "postgres" {
		// The old runner's rows were numbered by the identity columns, not given ids.
		for _, table := range []string{"organizations", "contacts", "accounts", "employees", "links"} {
			exec(`SELECT setval(pg_get_serial_sequence('` + table + `', 'id'), (SELECT MAX(id) FROM ` + table + `))`)
		}
	}
}

// TestOldRunnerDatabaseMigrates: a database made by the earlier migration runner opens:
// goose takes versions 1 and 2 as applied, migration 3 turns contacts into persons with the
// same ids, and the old rows keep working with the new code.
func TestOldRunnerDatabaseMigrates(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) (string, *sql.DB, dialect)
	}{
		{"sqlite", func(t *testing.T) (string, *sql.DB, dialect) {
			path := filepath.Join(t.TempDir(), "app.db")
			db, err := openSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			return path, db, sqliteDialect
		}},
		{"postgres", func(t *testing.T) (string, *sql.DB, dialect) {
			url := pgtest.NewDatabase(t)
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			return url, db, postgresDialect
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn, db, d := b.dsn(t)
			oldRunner(t, db, d)
			db.Close()

			c := newClock()
			for round := 1; round <= 2; round++ {
				s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: c.Now})
				if err != nil {
					t.Fatalf("Open #%d of the old runner's database = %v", round, err)
				}
				t.Cleanup(func() { s.Close() })
				// The newest version, not the number of files: versions are handed out
				// to changes in flight, so one may land before a lower one.
				known, _ := newest()
				if v, err := s.version(ctx); err != nil || v != known {
					t.Errorf("version() after open #%d = %d, %v, want %d", round, v, err, known)
				}
			}
			s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			for _, tt := range []struct {
				org, id        int64
				name, customID string
				gender         string
				partnerIDs     string
			}{
				{1, 1, "Ola Nordmann", "c1", "male", "c1"},
				// c1 of org2 was a second contact of c1: 0003 left the id with the older one,
				// 0005 gives it back (same ssn hash, custom id c1) as org2's own record's.
				{2, 2, "Ola Nordmann", "c1", "male", "c1"},
				{1, 3, "Kari Hansen", "c3", "female", "c3"},
			} {
				p, err := s.Person(ctx, tt.org, tt.id)
				if err != nil {
					t.Fatalf("Person(%d, %d) = %v", tt.org, tt.id, err)
				}
				if p.Name() != tt.name || p.CustomID != tt.customID || p.Gender != tt.gender || strings.Join(p.PartnerIDs, ",") != tt.partnerIDs {
					t.Errorf("Person(%d, %d) = %+v, want %s, custom id %s, gender %s, partner ids %q", tt.org, tt.id, p, tt.name, tt.customID, tt.gender, tt.partnerIDs)
				}
			}
			if _, err := s.Person(ctx, 2, 1); err != ErrNotFound {
				t.Errorf("Person(org 2, contact of org 1) = %v, want ErrNotFound", err)
			}

			sess, err := s.Session(ctx, "old-session")
			if err != nil || sess.Person == nil || sess.Person.ID != 1 || sess.CaseID != "case-7" {
				t.Errorf("old session = %+v, %v, want person 1 and the link's case-7", sess, err)
			}
			var members int
			queryRow(t, s, "SELECT COUNT(*) FROM memberships WHERE account_id = 1 AND organization_id = 1", nil, &members)
			if members != 1 {
				t.Errorf("memberships of the linked instructor in org1 = %d, want 1", members)
			}

			// 0003's two persons of c1 are, after 0005, each organization's record of one
			// member: a Go link of c1 finds each organization's own record and one account.
			var c1Members, unlinked int
			queryRow(t, s, "SELECT COUNT(DISTINCT member_id), COUNT(*) - COUNT(member_id) FROM persons WHERE id IN (1, 2)", nil, &c1Members, &unlinked)
			if c1Members != 1 || unlinked != 0 {
				t.Errorf("c1's records belong to %d members, %d to none; want both to one", c1Members, unlinked)
			}
			south := mustResolve(t, s, goLink("org2", "c1", "ola@example.com"))
			north := mustResolve(t, s, goLink("org1", "c1", "ola@example.com"))
			if south.PersonID != 2 || north.PersonID != 1 || south.PersonCreated || north.PersonCreated || south.MemberCreated ||
				south.MemberID != north.MemberID || north.AccountCreated || north.AccountID != south.AccountID {
				t.Errorf("Go links of c1 = %+v in org2, %+v in org1; want records 2 and 1 of one member, one account", south, north)
			}

			r := mustResolve(t, s, goLink("org1", "c3", "kari@example.com"))
			if r.PersonID != 3 || r.AccountID != 2 || r.AccountCreated {
				t.Errorf("Go link for old c3 = person %d account %d (created %v), want person 3, account 2", r.PersonID, r.AccountID, r.AccountCreated)
			}
			r = mustResolve(t, s, goLink("org2", "c-new", "new@example.com"))
			if r.PersonID <= 3 || !r.PersonCreated || !r.AccountCreated {
				t.Errorf("Go link for a new contact = person %d (created %v), account created %v, want a new person after id 3", r.PersonID, r.PersonCreated, r.AccountCreated)
			}
			// The foreign keys of links, sessions and accounts point at persons now.
			if _, err := s.db.Exec(s.q(`INSERT INTO links (partner, kind, endpoint, request_id, organization_id, contact_id, case_id, created_at)
VALUES ('demo', 'go', 'x', 'x', 1, 999, '', 1)`)); err == nil {
				t.Error("link to person 999 inserted, want a foreign key failure")
			}
			checkForeignKeys(t, s)
		})
	}
}

// checkForeignKeys fails the test when SQLite's foreign_key_check finds a row pointing at
// nothing: SQLite migrations defer the checks to the commit, and PostgreSQL checks each
// statement itself.
func checkForeignKeys(t *testing.T, s *Store) {
	t.Helper()
	if s.d.name != "sqlite" {
		return
	}
	rows, err := s.db.Query("PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Error("PRAGMA foreign_key_check reports violations after the migration")
	}
}

// TestConcurrentOpenSQLite: app service instances starting at once on one fresh SQLite file
// all come up; a migration another instance applied meanwhile is skipped.
func TestConcurrentOpenSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := Open(context.Background(), path, Options{SSNKey: testKey})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open = %v", err)
		}
	}
}

// emptyDatabases names an empty SQLite file (in a folder not made yet) and an empty
// PostgreSQL database, for tests that open them their own way.
func emptyDatabases() []struct {
	name string
	dsn  func(t *testing.T) string
} {
	return []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "app.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	}
}

// TestSchemaNewerRefused: a binary opening a database that a newer binary migrated (its
// version table above the newest embedded migration) refuses to start, naming both
// versions and what to do, and changes nothing; Migrate refuses it alike.
func TestSchemaNewerRefused(t *testing.T) {
	known, err := newest()
	if err != nil || known < 4 {
		t.Fatalf("newest() = %d, %v, want the newest embedded migration", known, err)
	}
	for _, b := range emptyDatabases() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.dsn(t)
			s, err := Open(ctx, dsn, Options{SSNKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			// What a newer release's migration leaves: its row in the version table.
			if _, err := s.db.Exec(s.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, '9999_future.sql', 1)`), known+1); err != nil {
				t.Fatal(err)
			}
			s.Close()

			want := fmt.Sprintf("database schema version %d is newer than this binary's %d", known+1, known)
			_, err = Open(ctx, dsn, Options{SSNKey: testKey})
			var newer *SchemaNewerError
			if !errors.As(err, &newer) || newer.Database != known+1 || newer.Binary != known ||
				!strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "upgrade this binary") || !strings.Contains(err.Error(), "restore the database backup") {
				t.Fatalf("Open(newer schema) = %v, want %q … upgrade this binary … restore the database backup", err, want)
			}
			before, after, err := Migrate(ctx, dsn)
			if !errors.As(err, &newer) || before != known+1 || after != known+1 {
				t.Errorf("Migrate(newer schema) = %d, %d, %v, want %d, %d and a SchemaNewerError", before, after, err, known+1, known+1)
			}
		})
	}
}

// TestMigrateOnly: Migrate brings a fresh database to the newest version and reports the
// versions before and after; a second run changes nothing; the service then opens it.
func TestMigrateOnly(t *testing.T) {
	known, _ := newest()
	for _, b := range emptyDatabases() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := b.dsn(t)
			for _, want := range [][2]int64{{0, known}, {known, known}} {
				before, after, err := Migrate(ctx, dsn)
				if err != nil || before != want[0] || after != want[1] {
					t.Errorf("Migrate() = %d, %d, %v, want %d, %d", before, after, err, want[0], want[1])
				}
			}
			s, err := Open(ctx, dsn, Options{SSNKey: testKey})
			if err != nil {
				t.Fatalf("Open after Migrate = %v", err)
			}
			defer s.Close()
			if v, err := s.version(ctx); err != nil || v != known {
				t.Errorf("version() = %d, %v, want %d", v, err, known)
			}
		})
	}
}

// TestSeparateMigrationUser: the privileges docs/appservice.md gives work. A migration
// user with CREATE on the schema runs Migrate (appservice -migrate-only); the service's
// user, with only SELECT, INSERT, UPDATE and DELETE on the tables (granted by default
// privileges, so a later release's tables are covered too), then opens the migrated
// database and resolves a link, but cannot change the schema.
func TestSeparateMigrationUser(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	suffix := strings.TrimPrefix(url[strings.LastIndex(url, "/test_")+1:strings.Index(url, "?")], "test_")
	migrator, service := "migrator_"+suffix, "service_"+suffix
	for _, stmt := range []string{
		`CREATE ROLE ` + migrator + ` LOGIN`,
		`CREATE ROLE ` + service + ` LOGIN`,
		`GRANT CREATE, USAGE ON SCHEMA public TO ` + migrator,
		`GRANT USAGE ON SCHEMA public TO ` + service,
		`ALTER DEFAULT PRIVILEGES FOR ROLE ` + migrator + ` IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ` + service,
	} {
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	as := func(role string) string {
		return strings.Replace(url, "postgres://postgres@", "postgres://"+role+"@", 1)
	}

	if _, err := Open(ctx, as(service), Options{SSNKey: testKey}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Open as the service user before migrating = %v, want permission denied", err)
	}
	known, _ := newest()
	if _, after, err := Migrate(ctx, as(migrator)); err != nil || after != known {
		t.Fatalf("Migrate as the migration user = %d, %v, want %d", after, err, known)
	}
	s, err := Open(ctx, as(service), Options{SSNKey: testKey})
	if err != nil {
		t.Fatalf("Open as the service user after migrating = %v", err)
	}
	defer s.Close()
	if r := mustResolve(t, s, goLink("org1", "c1", "kari@example.com")); r.PersonID == 0 || !r.AccountCreated {
		t.Errorf("link resolved as the service user = %+v, want a new person and account", r)
	}
	if _, err := s.db.Exec(`CREATE TABLE intruder (id INT)`); err == nil {
		t.Error("the service user created a table, want permission denied")
	}
}
