package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestAccountLanguage: an account has no saved language until one is set, and the account
// the sessions read carries the saved one; on both databases.
func TestAccountLanguage(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if _, err := s.EnsureInstructor(ctx, "coach", "coach@example.com", "Coach", "correct horse battery staple"); err != nil {
				t.Fatal(err)
			}
			id, _, err := s.InstructorHome(ctx, "coach")
			if err != nil {
				t.Fatal(err)
			}
			if a, err := s.account(ctx, s.db, id); err != nil || a.Language != "" {
				t.Fatalf("account(%d).Language = %q, %v, want \"\" before a choice", id, a.Language, err)
			}
			for _, lang := range []string{"nb", "de", ""} {
				if err := s.SetAccountLanguage(ctx, id, lang); err != nil {
					t.Fatalf("SetAccountLanguage(%q) = %v", lang, err)
				}
				if a, err := s.account(ctx, s.db, id); err != nil || a.Language != lang {
					t.Errorf("account(%d).Language = %q, %v, want %q", id, a.Language, err, lang)
				}
			}
			if err := s.SetAccountLanguage(ctx, id+1000, "sv"); !errors.Is(err, ErrNotFound) {
				t.Errorf("SetAccountLanguage(unknown account) = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestMigrate0006AccountLanguage: a database of the earlier runner, migrated through 0006,
// keeps its accounts with no language saved, and takes one.
func TestMigrate0006AccountLanguage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := openSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	oldRunner(t, db, sqliteDialect)
	db.Close()
	s, err := Open(ctx, path, Options{SSNKey: testKey, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	queryRow(t, s, `SELECT COUNT(*) FROM accounts WHERE language = ''`, nil, &n)
	if n != 2 {
		t.Errorf("accounts without a language after 0006 = %d, want the old runner's 2", n)
	}
	if err := s.SetAccountLanguage(ctx, 1, "sv"); err != nil {
		t.Fatalf("SetAccountLanguage on a migrated account = %v", err)
	}
	if a, err := s.account(ctx, s.db, 1); err != nil || a.Language != "sv" || a.Username != "coach" {
		t.Errorf("account(1) = %+v, %v, want coach with language sv", a, err)
	}
}
