package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/partnergate/partnergate/personspec"
)

// orgOf returns the id of a fresh organization made by a Go link of partner demo.
func orgOf(t *testing.T, s *Store, partnerOrg string) int64 {
	t.Helper()
	return mustResolve(t, s, goLink(partnerOrg, "seed-"+partnerOrg, "seed@example.com")).OrganizationID
}

func mustSelect(t *testing.T, s *Store, org int64, sel personspec.Select) (*Person, bool, int) {
	t.Helper()
	p, created, matched, err := s.SelectPerson(context.Background(), org, &sel)
	if err != nil {
		t.Fatalf("SelectPerson(%+v) = %v", sel, err)
	}
	return p, created, matched
}

func TestSelectPerson(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			org := orgOf(t, s, "org1")

			p, created, matched := mustSelect(t, s, org, personspec.Select{CustomID: "42", Firstname: "Åse", Lastname: "Ødegård",
				Gender: "female", DateOfBirth: "1950-03-04", Country: "NO",
				Extra: map[string]json.RawMessage{"insurance": json.RawMessage(`"A-1"`)}})
			if !created || matched != 0 || p.CustomID != "42" || p.Name() != "Åse Ødegård" || p.Gender != "female" || p.BirthDate != "1950-03-04" {
				t.Fatalf("new person = %+v (created %v, matched %d)", p, created, matched)
			}

			t.Run("by service id, empty fields kept, extra merged", func(t *testing.T) {
				c.Add(time.Second)
				got, created, matched := mustSelect(t, s, org, personspec.Select{UserID: p.ID, Firstname: "Åse", Lastname: "Ødegård",
					Mobile: "+47 1", Extra: map[string]json.RawMessage{"ward": json.RawMessage(`7`)}})
				if created || matched != 1 || got.ID != p.ID || got.BirthDate != "1950-03-04" || got.Country != "NO" || got.Mobile != "+47 1" {
					t.Errorf("by id = %+v (created %v, matched %d), want the same person with birth date kept and mobile set", got, created, matched)
				}
				if string(got.Extra["insurance"]) != `"A-1"` || string(got.Extra["ward"]) != `7` {
					t.Errorf("extra = %s, want both members", got.Extra)
				}
				if !got.UpdatedAt.After(p.UpdatedAt) {
					t.Errorf("UpdatedAt = %v, want after %v", got.UpdatedAt, p.UpdatedAt)
				}
			})

			// userid 0 is "the service id is not known" (docs/interface.md B-PIPE-SELECT): a
			// practice system that sends its patient each time with userid 0 and its own id
			// finds the same person again; only a custom id nobody has makes a new one.
			t.Run("userid 0: found by custom id, created when unknown", func(t *testing.T) {
				got, created, matched := mustSelect(t, s, org, personspec.Select{UserID: 0, CustomID: "42", Firstname: "Åse", Lastname: "Ødegård"})
				if created || matched != 1 || got.ID != p.ID {
					t.Errorf("userid 0, custom id 42 = person %d (created %v, matched %d), want %d, not created", got.ID, created, matched, p.ID)
				}
				other, created, matched := mustSelect(t, s, org, personspec.Select{UserID: 0, CustomID: "43", Firstname: "Ola", Lastname: "Nordmann"})
				if !created || matched != 0 || other.ID == p.ID || other.CustomID != "43" {
					t.Errorf("userid 0, custom id 43 = person %d %q (created %v, matched %d), want a new person", other.ID, other.CustomID, created, matched)
				}
			})

			t.Run("non-unique custom id: most recently changed, matched count", func(t *testing.T) {
				older, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "dup-tmp", Firstname: "Older", Lastname: "One"})
				newer, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "dup-tmp2", Firstname: "Newer", Lastname: "One"})
				c.Add(time.Second)
				if err := s.SetCustomID(ctx, org, older.ID, "dup"); err != nil {
					t.Fatal(err)
				}
				c.Add(time.Second)
				if err := s.SetCustomID(ctx, org, newer.ID, "dup"); err != nil {
					t.Fatal(err)
				}
				got, created, matched := mustSelect(t, s, org, personspec.Select{CustomID: "dup", Firstname: "Newer", Lastname: "One"})
				if created || matched != 2 || got.ID != newer.ID {
					t.Errorf("by custom id = person %d (created %v, matched %d), want %d of 2", got.ID, created, matched, newer.ID)
				}
				list, err := s.Persons(ctx, org, "dup", 0)
				if err != nil || len(list) != 2 || list[0].ID != newer.ID || list[1].ID != older.ID {
					t.Errorf("Persons(dup) = %+v, %v, want newer then older", list, err)
				}
				c.Add(time.Second)
				mustSelect(t, s, org, personspec.Select{UserID: older.ID, Firstname: "Older", Lastname: "One"})
				if got, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "dup", Firstname: "X", Lastname: "Y"}); got.ID != older.ID {
					t.Errorf("after changing the older one, by custom id = %d, want %d", got.ID, older.ID)
				}
				all, err := s.Persons(ctx, org, "", 2)
				if err != nil || len(all) != 2 || all[0].ID != older.ID {
					t.Errorf("Persons(all, limit 2) = %+v, %v, want 2, the just changed first", all, err)
				}
			})

			t.Run("unknown service id", func(t *testing.T) {
				if _, _, _, err := s.SelectPerson(ctx, org, &personspec.Select{UserID: 99999, Firstname: "A", Lastname: "B"}); !errors.Is(err, ErrNotFound) {
					t.Errorf("SelectPerson(unknown id) = %v, want ErrNotFound", err)
				}
			})
		})
	}
}

// TestProfileEntries: the three date formats of the interface arrive as times of second,
// minute and day precision, or none; re-sending an entry with the same key, date and
// source updates it.
func TestProfileEntries(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := orgOf(t, s, "org1")
			seconds := time.Date(2026, 3, 1, 8, 15, 30, 0, time.UTC) // yyyy-MM-dd HH:mm:ss
			minutes := time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC)  // yyyy-MM-dd HH:mm
			day := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)       // yyyy-MM-dd
			entries := []personspec.ProfileEntry{
				{Key: "weight", Name: "Weight", Value: "80", Unit: "kg", Date: seconds, Source: "scale"},
				{Key: "weight", Name: "Weight", Value: "79", Unit: "kg", Date: minutes, Source: "scale"},
				{Key: "weight", Name: "Weight", Value: "78", Unit: "kg", Date: day, Source: "scale", Extra: map[string]string{"device": "X1"}},
				{Key: "height", Name: "Height", Value: "180", Unit: "cm"},
			}
			p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "p", Firstname: "A", Lastname: "B", Profile: entries})
			resend := []personspec.ProfileEntry{
				{Key: "weight", Name: "Weight", Value: "77.5", Unit: "kg", Date: day, Source: "scale"},
				{Key: "height", Name: "Height", Value: "181", Unit: "cm"},
				{Key: "weight", Name: "Weight", Value: "70", Unit: "kg", Date: day, Source: "manual"},
			}
			mustSelect(t, s, org, personspec.Select{UserID: p.ID, Firstname: "A", Lastname: "B", Profile: resend})
			got, err := s.Profile(ctx, org, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				date  time.Time
				value string
			}{{day, "77.5"}, {day, "70"}, {minutes, "79"}, {seconds, "80"}, {time.Time{}, "181"}}
			if len(got) != len(want) {
				t.Fatalf("Profile() = %d entries %+v, want %d", len(got), got, len(want))
			}
			byValue := map[string]ProfileEntry{}
			for _, e := range got {
				byValue[e.Value] = e
			}
			for _, w := range want {
				e, ok := byValue[w.value]
				if !ok || !e.Date.Equal(w.date) {
					t.Errorf("entry %s = %+v, want date %v", w.value, e, w.date)
				}
			}
			if e := byValue["77.5"]; e.Extra != nil {
				t.Errorf("re-sent entry's extra = %v, want replaced by the re-sent entry's (none)", e.Extra)
			}
		})
	}
}

func TestSelectPersonRollsBack(t *testing.T) {
	for _, b := range backends(t) {
		for _, step := range []string{"person", "profile"} {
			t.Run(b.name+"/"+step, func(t *testing.T) {
				s := b.open(t, newClock())
				org := orgOf(t, s, "org1")
				persons := count(t, s, "persons")
				boom := errors.New("injected failure")
				s.hook = func(name string) error {
					if name == step {
						return boom
					}
					return nil
				}
				sel := personspec.Select{CustomID: "p", Firstname: "A", Lastname: "B", Profile: []personspec.ProfileEntry{{Key: "k", Value: "1"}}}
				if _, _, _, err := s.SelectPerson(context.Background(), org, &sel); !errors.Is(err, boom) {
					t.Fatalf("SelectPerson = %v, want the injected failure", err)
				}
				if count(t, s, "persons") != persons || count(t, s, "profile_entries") != 0 {
					t.Errorf("rows left behind after a failure at %s", step)
				}
			})
		}
	}
}
