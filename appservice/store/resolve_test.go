package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestResolveOrganizationAndContact(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())

			first := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			if !first.PersonCreated {
				t.Errorf("first link: PersonCreated = false, want true")
			}

			t.Run("organization name kept current", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.OrganizationName = "North Clinic (renamed)"
				r := mustResolve(t, s, l)
				if r.OrganizationID != first.OrganizationID {
					t.Errorf("organization id = %d, want %d", r.OrganizationID, first.OrganizationID)
				}
				var name string
				queryRow(t, s, "SELECT name FROM organizations WHERE id = ?", []any{r.OrganizationID}, &name)
				if name != "North Clinic (renamed)" {
					t.Errorf("organization name = %q, want %q", name, "North Clinic (renamed)")
				}
			})

			t.Run("same partner organization id in another partner is another organization", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Partner = "other"
				r := mustResolve(t, s, l)
				if r.OrganizationID == first.OrganizationID {
					t.Errorf("organization of partner other = %d, want a new one", r.OrganizationID)
				}
			})

			t.Run("contact by partner id, fields updated", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.Contact.Lastname = "Nordmann-Berg"
				l.Payload.Contact.SSN = "010135 50022"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("person = %d (created %v), want %d (not created)", r.PersonID, r.PersonCreated, first.PersonID)
				}
				c, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || c.Lastname != "Nordmann-Berg" {
					t.Fatalf("person = %+v, %v, want lastname %q", c, err, "Nordmann-Berg")
				}
			})

			t.Run("diagnosis kept as the clinic wrote it", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.Contact.Diagnosis = `M17.1 <b>kne</b> & "hofte"`
				r := mustResolve(t, s, l)
				mustResolve(t, s, mainLink("e1", "org1", "c1")) // a link without one keeps it
				c, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || c.Diagnosis != l.Payload.Contact.Diagnosis {
					t.Fatalf("person = %+v, %v, want diagnosis %q", c, err, l.Payload.Contact.Diagnosis)
				}
			})

			t.Run("contact by ssn under a new partner id", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1-new")
				l.Payload.Contact.SSN = "010135-50022"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("person = %d (created %v), want %d found by ssn", r.PersonID, r.PersonCreated, first.PersonID)
				}
				c, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || strings.Join(c.PartnerIDs, ",") != "c1,c1-new" {
					t.Errorf("person partner ids = %+v, %v, want c1 and the new c1-new", c, err)
				}
			})

			t.Run("link without ssn keeps the known hash", func(t *testing.T) {
				mustResolve(t, s, mainLink("e1", "org1", "c1-new"))
				l := mainLink("e1", "org1", "c1-newer")
				l.Payload.Contact.SSN = "01013550022"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID {
					t.Errorf("person = %d, want %d found by the kept ssn hash", r.PersonID, first.PersonID)
				}
			})

			t.Run("ssn finds the member across the partner's organizations, not across partners", func(t *testing.T) {
				l := mainLink("e1", "org2", "c9")
				l.Payload.Contact.SSN = "01013550022"
				r := mustResolve(t, s, l)
				if r.PersonID == first.PersonID || !r.PersonCreated || r.MemberID != first.MemberID || r.MemberCreated {
					t.Errorf("org2's link = record %d (created %v) of member %d, want a record of org2's own of member %d", r.PersonID, r.PersonCreated, r.MemberID, first.MemberID)
				}
				l.Partner = "other"
				r = mustResolve(t, s, l)
				if r.MemberID == first.MemberID || !r.PersonCreated || !r.MemberCreated {
					t.Errorf("partner other's link = record %d (created %v) of member %d (created %v), want a new record and member", r.PersonID, r.PersonCreated, r.MemberID, r.MemberCreated)
				}
			})

			t.Run("unknown contact is created", func(t *testing.T) {
				l := mainLink("e1", "org1", "c2")
				l.Payload.Contact.SSN = "02023550132"
				r := mustResolve(t, s, l)
				if !r.PersonCreated || r.PersonID == first.PersonID {
					t.Errorf("person = %d (created %v), want a new person", r.PersonID, r.PersonCreated)
				}
			})

			t.Run("a placeholder ssn is refused, never matched", func(t *testing.T) {
				// The gateway drops it (linkspec.DropMalformed); reaching the store, it is a
				// broken or bypassed gateway's.
				l := mainLink("e1", "org1", "c3")
				l.Payload.Contact.SSN = "N/A"
				if r, err := s.ResolveLink(context.Background(), l); !errors.Is(err, errLinkInvalid) {
					t.Errorf("ResolveLink(ssn N/A) = %+v, %v, want errLinkInvalid", r, err)
				}
			})

			t.Run("ssn never stored in clear", func(t *testing.T) {
				rows, err := s.db.Query("SELECT * FROM persons")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					for i, v := range vals {
						var str string
						switch v := v.(type) {
						case string:
							str = v
						case []byte:
							str = string(v)
						}
						if strings.Contains(str, "3550022") || strings.Contains(str, "3550132") {
							t.Errorf("persons.%s holds the identity number in clear", cols[i])
						}
					}
				}
			})

			t.Run("caseId kept with the link", func(t *testing.T) {
				r := mustResolve(t, s, mainLink("e1", "org1", "c2"))
				var caseID string
				queryRow(t, s, "SELECT case_id FROM links WHERE id = ?", []any{r.LinkID}, &caseID)
				if caseID != "case-7" {
					t.Errorf("links.case_id = %q, want %q", caseID, "case-7")
				}
			})
		})
	}
}

func TestGoMemberCreatedOnce(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			r := mustResolve(t, s, goLink("org1", "c1", "kari@example.com"))
			if !r.AccountCreated || r.AccountID == 0 {
				t.Fatalf("first Go link: AccountCreated %v AccountID %d, want a new account", r.AccountCreated, r.AccountID)
			}
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil || ex.Session.Pending || ex.Session.Account.Role != RoleMember || ex.Session.Account.DisplayName != "Kari Hansen" {
				t.Fatalf("Go exchange = %+v, %v, want a member session for Kari Hansen", ex, err)
			}
			r2 := mustResolve(t, s, goLink("org1", "c1", "kari.new@example.com"))
			if r2.AccountCreated || r2.AccountID != r.AccountID {
				t.Errorf("second Go link: AccountCreated %v AccountID %d, want existing %d", r2.AccountCreated, r2.AccountID, r.AccountID)
			}
			var email string
			queryRow(t, s, "SELECT email FROM accounts WHERE id = ?", []any{r.AccountID}, &email)
			if email != "kari.new@example.com" {
				t.Errorf("member e-mail = %q, want the latest %q", email, "kari.new@example.com")
			}
			if _, err := s.SignIn(ctx, "kari.new@example.com", "", ""); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(member) = %v, want ErrBadCredentials: members have no password", err)
			}
		})
	}
}

func TestResolveRollsBack(t *testing.T) {
	for _, b := range backends(t) {
		for _, step := range []string{"organization", "contact", "user", "link"} {
			t.Run(b.name+"/"+step, func(t *testing.T) {
				s := b.open(t, newClock())
				boom := errors.New("injected failure")
				s.hook = func(name string) error {
					if name == step {
						return boom
					}
					return nil
				}
				for _, l := range []Link{mainLink("e1", "org1", "c1"), goLink("org1", "c1", "k@example.com")} {
					l.RequestID, l.OnceUntil = "req-"+string(l.Kind), newClock().Now().Add(2*time.Minute)
					if _, err := s.ResolveLink(context.Background(), l); !errors.Is(err, boom) {
						t.Fatalf("ResolveLink(%s) = %v, want the injected failure", l.Kind, err)
					}
				}
				for _, table := range []string{"organizations", "persons", "person_partner_ids", "members", "member_identities", "employees", "accounts", "memberships", "links", "login_codes", "used_requests"} {
					if n := count(t, s, table); n != 0 {
						t.Errorf("after failure at %s: %s has %d rows, want 0", step, table, n)
					}
				}
			})
		}
	}
}

// TestRequestIDSingleUse: a link whose request id is single-use (a gateway assertion binds
// it) is resolved once; a replay mints no code, also when replays race, and a failed
// resolution does not use the id up.
func TestRequestIDSingleUse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			once := func(id string) Link {
				l := mainLink("e1", "org1", "c1")
				l.RequestID, l.OnceUntil = id, c.Now().Add(2*time.Minute)
				return l
			}
			boom := errors.New("injected failure")
			s.hook = func(name string) error {
				if name == "link" {
					return boom
				}
				return nil
			}
			if _, err := s.ResolveLink(ctx, once("req-a")); !errors.Is(err, boom) {
				t.Fatalf("ResolveLink(failing) = %v", err)
			}
			s.hook = nil
			if _, err := s.ResolveLink(ctx, once("req-a")); err != nil {
				t.Fatalf("ResolveLink(after a failed attempt) = %v, want resolved: the failure used nothing up", err)
			}
			if _, err := s.ResolveLink(ctx, once("req-a")); !errors.Is(err, ErrRequestReplayed) {
				t.Fatalf("ResolveLink(replay) = %v, want ErrRequestReplayed", err)
			}
			if n := count(t, s, "login_codes"); n != 1 {
				t.Errorf("login codes after a replay = %d, want 1", n)
			}

			var wg sync.WaitGroup
			results := make(chan error, 6)
			for range cap(results) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := s.ResolveLink(ctx, once("req-race"))
					results <- err
				}()
			}
			wg.Wait()
			close(results)
			wins := 0
			for err := range results {
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, ErrRequestReplayed):
					t.Errorf("racing replay = %v", err)
				}
			}
			if wins != 1 {
				t.Errorf("racing replays resolved %d times, want 1", wins)
			}

			// Once the assertion has expired, the row is cleared or taken over.
			c.Add(3 * time.Minute)
			if _, err := s.ResolveLink(ctx, once("req-a")); err != nil {
				t.Errorf("ResolveLink(id past its time) = %v, want resolved", err)
			}
			if err := s.DeleteExpired(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, s, "used_requests"); n != 1 {
				t.Errorf("used request ids after DeleteExpired = %d, want 1 (req-a's renewed row)", n)
			}
		})
	}
}

// wantRows checks the number of rows of each table after what happened.
func wantRows(t *testing.T, s *Store, after string, want map[string]int) {
	t.Helper()
	for table, n := range want {
		if got := count(t, s, table); got != n {
			t.Errorf("%s has %d rows after %s, want %d", table, got, after, n)
		}
	}
}

// resolveAtOnce resolves link(i) for i in 0..7 at once and fails the test on any error.
func resolveAtOnce(t *testing.T, s *Store, link func(i int) Link) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.ResolveLink(context.Background(), link(i))
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent ResolveLink = %v, want nil", err)
		}
	}
}

func TestConcurrentFirstLinks(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			resolveAtOnce(t, s, func(i int) Link {
				if i%2 == 0 {
					return mainLink("e-new", "org-new", "c-new")
				}
				return goLink("org-new", "c-new", "new@example.com")
			})
			wantRows(t, s, "8 concurrent first links", map[string]int{"organizations": 1, "persons": 1, "person_partner_ids": 1, "members": 1, "member_identities": 1, "employees": 1, "accounts": 1, "links": 8})
		})
	}
}

// TestConcurrentFirstLinksOfTwoClinics: the first links of one contact id from two
// organizations at once make a record in each and one member with one account.
func TestConcurrentFirstLinksOfTwoClinics(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			resolveAtOnce(t, s, func(i int) Link { return goLink([]string{"org-a", "org-b"}[i%2], "c-new", "new@example.com") })
			wantRows(t, s, "concurrent first links from two clinics", map[string]int{"organizations": 2, "persons": 2, "person_partner_ids": 2, "members": 1, "member_identities": 1, "accounts": 1})
			var linked int
			queryRow(t, s, "SELECT COUNT(*) FROM persons WHERE member_id = (SELECT id FROM members)", nil, &linked)
			if linked != 2 {
				t.Errorf("records of the member = %d, want both clinics' 2", linked)
			}
		})
	}
}

// TestConcurrentFirstLinksOfOneSSN: the first links of one human from eight organizations
// at once, each clinic with its own contact id and the same national identity number, make
// one member with all eight ids and one account, not a member per clinic.
func TestConcurrentFirstLinksOfOneSSN(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			resolveAtOnce(t, s, func(i int) Link {
				l := goLink(fmt.Sprintf("org-%d", i), fmt.Sprintf("c-%d", i), "kari@example.com")
				l.Payload.Contact.SSN = kariSSN
				return l
			})
			wantRows(t, s, "concurrent first links of one ssn from eight clinics", map[string]int{"organizations": 8, "persons": 8, "members": 1, "member_identities": 8, "accounts": 1})
			var linked int
			queryRow(t, s, "SELECT COUNT(*) FROM persons WHERE member_id = (SELECT MIN(id) FROM members)", nil, &linked)
			if linked != 8 {
				t.Errorf("records of the member = %d, want all eight clinics'", linked)
			}
		})
	}
}

// TestContactSSN: the spellings of one number hash alike, a Swedish number's ten digits as
// its twelve; a number that fails its country's check has no hash, so it never matches.
func TestContactSSN(t *testing.T) {
	s := &Store{opts: Options{SSNKey: testKey}}
	now := newClock().Now().UnixMilli()
	for _, same := range [][]string{
		{"17053550088", "170535-50088", " 170535 50088 "},
		{"20400229-1237", "204002291237"},
		{"121212-1212", "201212121212", "20121212-1212"},
		{"121212+1212", "191212121212"},
		{"0101505000", "010150-5000"},
	} {
		want := s.contactSSN(same[0], now)
		if !want.Valid {
			t.Fatalf("contactSSN(%q) = NULL, want a hash", same[0])
		}
		for _, spelling := range same[1:] {
			if got := s.contactSSN(spelling, now); got != want {
				t.Errorf("contactSSN(%q) = %v, want the hash of %q", spelling, got, same[0])
			}
		}
	}
	if s.contactSSN("121212-1212", now) == s.contactSSN("121212+1212", now) {
		t.Error("contactSSN: 121212-1212 and 121212+1212 hash alike, want two people a century apart")
	}
	for _, bad := range []string{"", "N/A", "0", "00000000000", "170485 12345", "131052-308T", "--"} {
		if got := s.contactSSN(bad, now); got.Valid {
			t.Errorf("contactSSN(%q) = %v, want NULL: no number to match on", bad, got)
		}
	}
}

// BenchmarkResolveLink measures the database work of one link on SQLite: a known
// organization, contact and linked employee (the steady state), plus the login code.
func BenchmarkResolveLink(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "app.db"), Options{SSNKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l := mainLink("e1", "org1", "c1")
	l.Payload.Contact.SSN = "01013550022"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.ResolveLink(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}
