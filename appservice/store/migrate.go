package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// migrate applies every embedded migration newer than the database's version with goose's
// Provider.
//
// Each file of migrations/ becomes a goose Go migration that substitutes the dialect's
// placeholders (@IDENTITY@, @BLOB@, @NOW@, and the two steps that differ by dialect,
// @CONTACTS_TO_PERSONS@ and @PERSONS_PER_ORGANIZATION@) into the file's one SQL text and
// runs it in the migration's transaction: goose's own SQL files cannot substitute.
//
// Versions are kept in the table the earlier hand-written runner made, schema_migrations
// (version, name, applied_at), through versionTable, a goose database.Store: databases that
// runner migrated (versions 1 and 2 recorded, no version 0) open as they are, with no
// adoption step that could itself fail halfway.
//
// On PostgreSQL a session advisory lock, taken before the version table is created, keeps
// app service instances starting at once from applying a migration twice (two concurrent
// CREATE TABLE IF NOT EXISTS of one table can both pass the check); on SQLite, where goose
// has no lock, each migration's IMMEDIATE transaction checks again that no other instance
// applied it meanwhile.
//
// A database whose schema is newer than the newest embedded migration is refused with a
// *SchemaNewerError, before goose takes its lock and again after it ran: goose itself
// applies nothing then and says nothing, and an old binary would run on tables it does not
// know (a rename, a new NOT NULL column) after a newer one migrated them.
func (s *Store) migrate(ctx context.Context) error {
	p, err := s.provider()
	if err != nil {
		return err
	}
	if err := s.checkNewer(ctx); err != nil {
		return err
	}
	if _, err = p.Up(ctx); err != nil {
		return err
	}
	return s.checkNewer(ctx)
}

// SchemaNewerError is the refusal of a database that a newer app service migrated.
type SchemaNewerError struct {
	Database int64 // the database's schema version
	Binary   int64 // the newest migration this binary has
}

func (e *SchemaNewerError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this binary's %d: a newer app service has migrated it; "+
		"upgrade this binary to the release that migrated it, or restore the database backup taken before that upgrade to run this one", e.Database, e.Binary)
}

// newest is the version of the newest embedded migration.
func newest() (int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return 0, err
	}
	var v int64
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && n > v {
			v = n
		}
	}
	return v, nil
}

// checkNewer refuses a schema newer than the newest embedded migration.
func (s *Store) checkNewer(ctx context.Context) error {
	known, err := newest()
	if err != nil {
		return err
	}
	v, err := s.version(ctx)
	if err != nil {
		return err
	}
	if v > known {
		return &SchemaNewerError{Database: v, Binary: known}
	}
	return nil
}

// version is the database's schema version: 0 before the version table exists.
func (s *Store) version(ctx context.Context) (int64, error) {
	vt := &versionTable{s: s}
	if ok, err := vt.TableExists(ctx, s.db); err != nil || !ok {
		return 0, err
	}
	return vt.GetLatestVersion(ctx, s.db)
}

// Migrate brings the schema of the database named by dsn (as Open takes it) up to date and
// closes it, for a migration run apart from the service (appservice -migrate-only), with a
// database user that may change the schema while the service's may not. It returns the
// schema version before and after; a schema newer than this binary's is a
// *SchemaNewerError.
func Migrate(ctx context.Context, dsn string) (before, after int64, err error) {
	s, err := connect(ctx, dsn, Options{Now: time.Now})
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	if before, err = s.version(ctx); err != nil {
		return 0, 0, fmt.Errorf("reading schema version: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		var newer *SchemaNewerError
		if errors.As(err, &newer) {
			return before, before, err
		}
		return before, before, fmt.Errorf("migrating schema: %w", err)
	}
	after, err = s.version(ctx)
	return before, after, err
}

func (s *Store) provider() (*goose.Provider, error) {
	ms, names, err := s.gooseMigrations()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithStore(&versionTable{s: s, names: names}),
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(ms...),
	}
	if s.d.name == "postgres" {
		opts = append(opts, goose.WithSessionLocker(advisoryLock{}))
	}
	return goose.NewProvider(goose.DialectCustom, s.db, nil, opts...)
}

// gooseMigrations turns the embedded SQL files into goose Go migrations for this dialect.
func (s *Store) gooseMigrations() ([]*goose.Migration, map[int64]string, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, nil, err
	}
	var out []*goose.Migration
	names := map[int64]string{}
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(name, ".sql") {
			return nil, nil, fmt.Errorf("migration %s: name must start with a positive version and _ and end in .sql", name)
		}
		if _, dup := names[v]; dup {
			return nil, nil, fmt.Errorf("migrations %s and %s share a version", names[v], name)
		}
		b, err := migrations.ReadFile("migrations/" + name)
		if err != nil {
			return nil, nil, err
		}
		names[v] = name
		text := string(b)
		out = append(out, goose.NewGoMigration(v, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			// Another instance may have applied it since goose listed the versions: on
			// SQLite nothing but this IMMEDIATE transaction orders the two.
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), v).Scan(&n); err != nil || n > 0 {
				return err
			}
			for _, stmt := range splitStatements(s.expand(text)) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			return nil
		}}, nil))
	}
	return out, names, nil
}

// expand substitutes the dialect's placeholders into a migration's text.
func (s *Store) expand(text string) string {
	return strings.NewReplacer(
		"@CONTACTS_TO_PERSONS@", s.d.contactsToPersons,
		"@PERSONS_PER_ORGANIZATION@", s.d.personsPerOrganization,
		"@IDENTITY@", s.d.identity,
		"@BLOB@", s.d.blob,
		"@NOW@", strconv.FormatInt(s.now(), 10),
	).Replace(text)
}

// versionTable is goose's version store over schema_migrations. Goose wants a version 0 row
// as the mark of an initialised table; databases of the earlier runner lack it, so
// ListMigrations reports it when absent instead of a migration writing it.
type versionTable struct {
	s     *Store
	names map[int64]string
}

func (v *versionTable) Tablename() string { return "schema_migrations" }

func (v *versionTable) CreateVersionTable(ctx context.Context, db database.DBTxConn) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version BIGINT PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`)
	return err
}

// TableExists asks the catalog, so a missing table is not a failed query (which would abort
// an enclosing PostgreSQL transaction).
func (v *versionTable) TableExists(ctx context.Context, db database.DBTxConn) (bool, error) {
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	if v.s.d.name == "postgres" {
		q = `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`
	}
	var n int
	err := db.QueryRowContext(ctx, q).Scan(&n)
	return n > 0, err
}

func (v *versionTable) Insert(ctx context.Context, db database.DBTxConn, req database.InsertRequest) error {
	name := v.names[req.Version]
	if req.Version == 0 {
		name = "goose version table"
	}
	_, err := db.ExecContext(ctx, v.s.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)
ON CONFLICT (version) DO NOTHING`), req.Version, name, v.s.now())
	return err
}

func (v *versionTable) Delete(ctx context.Context, db database.DBTxConn, version int64) error {
	_, err := db.ExecContext(ctx, v.s.q(`DELETE FROM schema_migrations WHERE version = ?`), version)
	return err
}

func (v *versionTable) GetMigration(ctx context.Context, db database.DBTxConn, version int64) (*database.GetMigrationResult, error) {
	var at int64
	err := db.QueryRowContext(ctx, v.s.q(`SELECT applied_at FROM schema_migrations WHERE version = ?`), version).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		if version == 0 {
			return &database.GetMigrationResult{IsApplied: true}, nil
		}
		return nil, database.ErrVersionNotFound
	}
	if err != nil {
		return nil, err
	}
	return &database.GetMigrationResult{Timestamp: time.UnixMilli(at), IsApplied: true}, nil
}

func (v *versionTable) GetLatestVersion(ctx context.Context, db database.DBTxConn) (int64, error) {
	var n sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&n); err != nil {
		return 0, err
	}
	return n.Int64, nil
}

func (v *versionTable) ListMigrations(ctx context.Context, db database.DBTxConn) ([]*database.ListMigrationsResult, error) {
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*database.ListMigrationsResult
	zero := false
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		zero = zero || n == 0
		out = append(out, &database.ListMigrationsResult{Version: n, IsApplied: true})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !zero {
		out = append(out, &database.ListMigrationsResult{Version: 0, IsApplied: true})
	}
	return out, nil
}

// migrationLock is the PostgreSQL advisory lock key of schema changes, the earlier runner's,
// so an old and a new instance starting together still take turns.
const migrationLock = 7215001

// advisoryLock is goose's session locker on PostgreSQL. It waits in pg_advisory_lock rather
// than polling as goose's own locker does (every 5 seconds), so instances starting together
// come up one right after the other.
type advisoryLock struct{}

func (advisoryLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+strconv.Itoa(migrationLock)+`)`)
	return err
}

func (advisoryLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+strconv.Itoa(migrationLock)+`)`)
	return err
}

var (
	_ database.StoreExtender = (*versionTable)(nil)
)

// The statements of migrations 0003 and 0005 that differ between the dialects beyond the
// @…@ placeholders: the dialect carries them (dialect.contactsToPersons,
// dialect.personsPerOrganization) and the migration files name them.

// sqliteContactsToPersons rebuilds contacts with the persons columns. SQLite cannot drop
// columns that a UNIQUE constraint or foreign key uses, and renaming a table rewrites the
// references to it: so the new table is created under the old name (the children's
// references still name contacts), filled with the same ids, and then renamed. Foreign key
// checks are deferred to the commit: dropping contacts orphans the children's rows until the
// refill gives their ids back, and the check at commit proves it did.
const sqliteContactsToPersons = `PRAGMA defer_foreign_keys = ON;
DROP TABLE contacts;
CREATE TABLE contacts (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	ssn_hash TEXT,
	firstname TEXT NOT NULL,
	middlename TEXT NOT NULL,
	lastname TEXT NOT NULL,
	birthdate TEXT NOT NULL,
	gender TEXT NOT NULL,
	email TEXT NOT NULL,
	mobile TEXT NOT NULL,
	diagnosis TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
INSERT INTO contacts (id, ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis, created_at, updated_at)
SELECT id, ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis, created_at, updated_at FROM legacy_contacts;
ALTER TABLE contacts RENAME TO persons;
`

// postgresContactsToPersons renames contacts and drops its per-organization key; the
// foreign keys follow the table, and the identity column keeps its sequence.
const postgresContactsToPersons = `ALTER TABLE contacts RENAME TO persons;
ALTER TABLE persons DROP COLUMN organization_id, DROP COLUMN partner_contact_id;
`

// personColumns0005 are the columns a person keeps through migration 0005, besides id,
// organization, custom id, member and times.
const personColumns0005 = `ssn_hash, firstname, middlename, lastname, birthdate, gender, email, mobile, diagnosis,
	phone_home, phone_work, address, country, zipcode, location, extra`

// sqlitePersonsPerOrganization rebuilds accounts without contact_id and persons with their
// organization, custom id and member, as sqliteContactsToPersons does: SQLite cannot drop a
// column that a UNIQUE constraint or foreign key uses, nor add a NOT NULL one with a
// reference. Each table is created again under its own name, so the children's references
// still name it, and filled with the same ids (a shared person's other organizations' records
// with their new ones); the foreign keys are checked at the commit.
const sqlitePersonsPerOrganization = `PRAGMA defer_foreign_keys = ON;
CREATE TABLE legacy_accounts AS SELECT * FROM accounts;
DROP TABLE accounts;
CREATE TABLE accounts (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	role TEXT NOT NULL,
	username TEXT UNIQUE,
	email TEXT NOT NULL,
	display_name TEXT NOT NULL,
	password_hash TEXT,
	member_id BIGINT REFERENCES members (id),
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
INSERT INTO accounts (id, role, username, email, display_name, password_hash, member_id, created_at, updated_at)
SELECT a.id, a.role, a.username, a.email, a.display_name, a.password_hash, m.member_id, a.created_at, a.updated_at
FROM legacy_accounts a LEFT JOIN m_account_member m ON m.account_id = a.id;
DROP TABLE legacy_accounts;
CREATE TABLE legacy_persons AS SELECT * FROM persons;
DROP TABLE persons;
CREATE TABLE persons (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	custom_id TEXT NOT NULL,
	member_id BIGINT REFERENCES members (id),
	ssn_hash TEXT,
	firstname TEXT NOT NULL,
	middlename TEXT NOT NULL,
	lastname TEXT NOT NULL,
	birthdate TEXT NOT NULL,
	gender TEXT NOT NULL,
	email TEXT NOT NULL,
	mobile TEXT NOT NULL,
	diagnosis TEXT NOT NULL,
	phone_home TEXT NOT NULL,
	phone_work TEXT NOT NULL,
	address TEXT NOT NULL,
	country TEXT NOT NULL,
	zipcode TEXT NOT NULL,
	location TEXT NOT NULL,
	extra TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
INSERT INTO persons (id, organization_id, custom_id, member_id, ` + personColumns0005 + `, created_at, updated_at)
SELECT s.new_id, s.organization_id, s.custom_id, m.member_id, ` + personColumns0005 + `, s.created_at, s.updated_at
FROM m_split s JOIN legacy_persons p ON p.id = s.old_id LEFT JOIN m_person_member m ON m.person_id = s.old_id;
DROP TABLE legacy_persons;
`

// postgresPersonsPerOrganization changes accounts and persons in place: a shared person's
// first organization's record is the row itself, the others' are copies with their new ids.
// A person of no organization cannot be a record: it is deleted, which fails the migration
// when anything still points at it (no code path makes one). The identity sequences move
// past the ids given explicitly.
const postgresPersonsPerOrganization = `ALTER TABLE accounts ADD COLUMN member_id BIGINT REFERENCES members (id);
UPDATE accounts SET member_id = m.member_id FROM m_account_member m WHERE m.account_id = accounts.id;
ALTER TABLE accounts DROP COLUMN contact_id;
ALTER TABLE persons ADD COLUMN organization_id BIGINT REFERENCES organizations (id),
	ADD COLUMN custom_id TEXT NOT NULL DEFAULT '',
	ADD COLUMN member_id BIGINT REFERENCES members (id);
INSERT INTO persons (id, organization_id, custom_id, member_id, ` + personColumns0005 + `, created_at, updated_at)
SELECT s.new_id, s.organization_id, s.custom_id, m.member_id, ` + personColumns0005 + `, s.created_at, s.updated_at
FROM m_split s JOIN persons p ON p.id = s.old_id LEFT JOIN m_person_member m ON m.person_id = s.old_id
WHERE s.new_id <> s.old_id;
UPDATE persons SET organization_id = s.organization_id, custom_id = s.custom_id, member_id = m.member_id,
	created_at = s.created_at, updated_at = s.updated_at
FROM m_split s LEFT JOIN m_person_member m ON m.person_id = s.old_id
WHERE s.old_id = persons.id AND s.new_id = s.old_id;
DELETE FROM persons WHERE organization_id IS NULL;
ALTER TABLE persons ALTER COLUMN organization_id SET NOT NULL, ALTER COLUMN custom_id DROP DEFAULT;
SELECT setval(pg_get_serial_sequence('persons', 'id'), GREATEST((SELECT MAX(id) FROM persons),
	COALESCE(pg_sequence_last_value(pg_get_serial_sequence('persons', 'id')::regclass), 0)))
WHERE EXISTS (SELECT 1 FROM m_split WHERE new_id <> old_id);
SELECT setval(pg_get_serial_sequence('members', 'id'), (SELECT MAX(id) FROM members))
WHERE EXISTS (SELECT 1 FROM members);
`
