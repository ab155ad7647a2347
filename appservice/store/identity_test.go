package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// withSSN is l with the contact's identity number set.
func withSSN(l Link, ssn string) Link {
	c := *l.Payload.Contact
	c.SSN = ssn
	p := *l.Payload
	p.Contact = &c
	l.Payload = &p
	return l
}

// TestIdentityResolution walks the rows of docs/appservice.md's identity resolution table.
func TestIdentityResolution(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			first := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c1"), "01013550022"))

			t.Run("by partner id in another organization: its own record, the same member", func(t *testing.T) {
				r := mustResolve(t, s, mainLink("e1", "org2", "c1"))
				if r.PersonID == first.PersonID || !r.PersonCreated || r.MemberID != first.MemberID || r.MemberCreated || r.SSNConflict {
					t.Errorf("resolved %+v, want a new record of org2 for member %d", r, first.MemberID)
				}
				p, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || p.CustomID != "c1" || strings.Join(p.PartnerIDs, ",") != "c1" || p.BirthDate != "1990-01-01" {
					t.Errorf("Person in org2 = %+v, %v, want custom id c1, partner id c1 and the link's birthdate", p, err)
				}
				if _, err := s.Person(ctx, r.OrganizationID, first.PersonID); !errors.Is(err, ErrNotFound) {
					t.Errorf("Person(org2, org1's record) = %v, want ErrNotFound", err)
				}
			})
			t.Run("by ssn within the organization adds the id", func(t *testing.T) {
				r := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c1-other"), "010135-50022"))
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("resolved %+v, want record %d found by ssn", r, first.PersonID)
				}
				again := mustResolve(t, s, mainLink("e1", "org1", "c1-other"))
				if again.PersonID != first.PersonID {
					t.Errorf("link by the added id = record %d, want %d", again.PersonID, first.PersonID)
				}
				if p, _ := s.Person(ctx, r.OrganizationID, r.PersonID); strings.Join(p.PartnerIDs, ",") != "c1,c1-other" {
					t.Errorf("partner ids = %q, want c1,c1-other", p.PartnerIDs)
				}
			})
			t.Run("by ssn in another organization: its own record, the same member", func(t *testing.T) {
				r := mustResolve(t, s, withSSN(mainLink("e1", "org3", "c1-third"), "01013550022"))
				if r.PersonID == first.PersonID || !r.PersonCreated || r.MemberID != first.MemberID {
					t.Errorf("resolved %+v, want a new record of org3 for member %d", r, first.MemberID)
				}
				if p, _ := s.Person(ctx, r.OrganizationID, r.PersonID); strings.Join(p.PartnerIDs, ",") != "c1-third" {
					t.Errorf("org3's partner ids = %q, want only org3's c1-third", p.PartnerIDs)
				}
				// The id is the member's now: a fourth organization's link without ssn finds it.
				if r4 := mustResolve(t, s, mainLink("e1", "org4", "c1-third")); r4.MemberID != first.MemberID {
					t.Errorf("org4's link by the member's id = member %d, want %d", r4.MemberID, first.MemberID)
				}
			})
			t.Run("ssn of another partner's person does not match", func(t *testing.T) {
				l := withSSN(mainLink("e1", "org1", "c1"), "01013550022")
				l.Partner = "other"
				if r := mustResolve(t, s, l); r.PersonID == first.PersonID || !r.PersonCreated || !r.MemberCreated {
					t.Errorf("resolved %+v, want a new record and member of partner other", r)
				}
			})
			t.Run("unknown id and ssn create a person", func(t *testing.T) {
				r := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c2"), "02023550051"))
				if !r.PersonCreated || r.PersonID == first.PersonID || r.SSNConflict {
					t.Errorf("resolved %+v, want a new person", r)
				}
			})
			t.Run("conflict: id match kept, hash not moved", func(t *testing.T) {
				// c2's person holds 0202…; a link for c1 with 0202… must not take it.
				r := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c1"), "02023550051"))
				if r.PersonID != first.PersonID || !r.SSNConflict {
					t.Errorf("resolved %+v, want person %d with SSNConflict", r, first.PersonID)
				}
				for _, table := range []string{"persons", "members"} {
					var n int
					queryRow(t, s, "SELECT COUNT(*) FROM "+table+" WHERE ssn_hash = ?", []any{s.contactSSN("02023550051", s.now()).String}, &n)
					if n != 1 {
						t.Errorf("%s holding the conflicting hash = %d, want 1", table, n)
					}
				}
				if r := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c1-x"), "01013550022")); r.PersonID != first.PersonID {
					t.Errorf("person by the kept hash = %d, want %d", r.PersonID, first.PersonID)
				}
			})
			t.Run("no stored hash: stored unless another person has it", func(t *testing.T) {
				bare := mustResolve(t, s, mainLink("e1", "org1", "c-bare"))
				r := mustResolve(t, s, withSSN(mainLink("e1", "org1", "c-bare"), "03033550080"))
				if r.PersonID != bare.PersonID || r.SSNConflict {
					t.Errorf("resolved %+v, want person %d, no conflict", r, bare.PersonID)
				}
				if r := mustResolve(t, s, withSSN(mainLink("e1", "org2", "c-bare-2"), "03033550080")); r.MemberID != bare.MemberID {
					t.Errorf("member by the stored hash = %d, want %d", r.MemberID, bare.MemberID)
				}
				other := mustResolve(t, s, mainLink("e1", "org1", "c-bare-3"))
				r = mustResolve(t, s, withSSN(mainLink("e1", "org1", "c-bare-3"), "03033550080"))
				if r.PersonID != other.PersonID || !r.SSNConflict {
					t.Errorf("resolved %+v, want person %d with SSNConflict", r, other.PersonID)
				}
			})
			t.Run("empty fields do not clear stored ones", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.Contact.Birthdate = ""
				l.Payload.Contact.Mobile = "+47 400 00 000"
				r := mustResolve(t, s, l)
				p, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || p.BirthDate != "1990-01-01" || p.Mobile != "+47 400 00 000" {
					t.Errorf("Person = %+v, %v, want the stored birthdate kept and the new mobile", p, err)
				}
			})
			t.Run("gender stored as female or male", func(t *testing.T) {
				for in, want := range map[string]string{"K": "female", "m": "male", "Female": "female", "x": ""} {
					l := mainLink("e1", "org1", "c-g-"+in)
					l.Payload.Contact.Gender = in
					r := mustResolve(t, s, l)
					if p, err := s.Person(ctx, r.OrganizationID, r.PersonID); err != nil || p.Gender != want {
						t.Errorf("gender %q stored as %q, %v, want %q", in, p.Gender, err, want)
					}
				}
			})
			t.Run("one member account from two organizations", func(t *testing.T) {
				a := mustResolve(t, s, withSSN(goLink("org1", "m1", "m@example.com"), "04043550190"))
				b := mustResolve(t, s, withSSN(goLink("org2", "m1-elsewhere", "m@example.com"), "04043550190"))
				if a.PersonID == b.PersonID || a.MemberID != b.MemberID || a.AccountID != b.AccountID || b.AccountCreated {
					t.Errorf("Go links from two organizations: %+v and %+v, want two records of one member with one account", a, b)
				}
			})
		})
	}
}

// TestCreateInstructorForPending: a first-time employee creates an instructor account from
// the first-sight page; the employee is linked, the account is a member of the link's
// organization, and the next link signs it in directly.
func TestCreateInstructorForPending(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if _, err := s.EnsureInstructor(ctx, "coach", "coach@example.com", "Coach", "pw-1"); err != nil {
				t.Fatal(err)
			}
			r := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil || !ex.Session.Pending {
				t.Fatalf("ExchangeCode = %+v, %v, want a pending session", ex, err)
			}
			for _, tt := range []struct {
				username, email string
				want            error
			}{
				{"Coach", "ida@partner.example", ErrUsernameTaken},
				{"coach@EXAMPLE.com", "ida@partner.example", ErrUsernameTaken}, // another's e-mail: SignIn takes both
				{"ida", "COACH@example.com", ErrEmailTaken},
				{"ida", "coach", ErrEmailTaken}, // another's username
			} {
				_, err := s.CreateInstructorForPending(ctx, ex.Token, tt.username, tt.email, "Ida Berg", "pw-2")
				if !errors.Is(err, tt.want) || !errors.Is(err, ErrConflict) {
					t.Errorf("CreateInstructorForPending(%q, %q) = %v, want %v (an ErrConflict)", tt.username, tt.email, err, tt.want)
				}
			}
			if _, err := s.CreateInstructorForPending(ctx, "no-such-token", "ida", "ida@partner.example", "Ida Berg", "pw-2"); !errors.Is(err, ErrNoSession) {
				t.Errorf("CreateInstructorForPending(no pending session) = %v, want ErrNoSession", err)
			}
			in, err := s.CreateInstructorForPending(ctx, ex.Token, "Ida", "ida@partner.example", "Ida Berg", "pw-2")
			if err != nil {
				t.Fatalf("CreateInstructorForPending = %v", err)
			}
			sess := in.Session
			if sess.Pending || sess.ConfirmLink || sess.Account.Username != "ida" || sess.Person == nil || sess.CaseID != "case-7" || sess.Organization == nil || sess.Organization.ID != r.OrganizationID {
				t.Errorf("session = %+v, want signed in as ida with the link's person, case and organization", sess)
			}
			if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
				t.Errorf("pending session after the account = %v, want ErrNoSession", err)
			}
			if again := mustResolve(t, s, mainLink("e1", "org1", "c1")); again.AccountID != sess.Account.ID {
				t.Errorf("next link AccountID = %d, want %d", again.AccountID, sess.Account.ID)
			}
			signed, err := s.SignIn(ctx, "ida", "pw-2", "")
			if err != nil || signed.Session.Organization == nil || signed.Session.Organization.ID != r.OrganizationID {
				t.Errorf("password sign-in = %+v, %v, want it in the link's organization", signed, err)
			}
		})
	}
}

// TestSignInLandsInMembership: the bootstrap instructor gets the local Demo clinic; a main
// link makes its account a member of the link's organization, the most recent one.
func TestSignInLandsInMembership(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			if _, err := s.EnsureInstructor(ctx, "coach", "", "Coach", "pw-1"); err != nil {
				t.Fatal(err)
			}
			in, err := s.SignIn(ctx, "coach", "pw-1", "")
			if err != nil || in.Session.Organization == nil || in.Session.Organization.Name != "Demo clinic" || in.Session.Organization.PartnerID != "local" {
				t.Fatalf("SignIn = %+v, %v, want the Demo clinic", in, err)
			}
			if _, err := s.EnsureInstructor(ctx, "coach", "", "Coach", "pw-1"); err != nil {
				t.Fatal(err)
			}
			if n := count(t, s, "memberships"); n != 1 {
				t.Errorf("memberships after a second EnsureInstructor = %d, want 1", n)
			}
			ex, _ := s.ExchangeCode(ctx, mustResolve(t, s, mainLink("e1", "org1", "c1")).Code)
			pending, err := s.SignIn(ctx, "coach", "pw-1", ex.Token)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.ConfirmLink(ctx, pending.Token, true); err != nil {
				t.Fatal(err)
			}
			c.Add(time.Second)
			r := mustResolve(t, s, mainLink("e1", "org2", "c1"))
			in, err = s.SignIn(ctx, "coach", "pw-1", "")
			if err != nil || in.Session.Organization == nil || in.Session.Organization.ID != r.OrganizationID {
				t.Errorf("SignIn after links = %+v, %v, want the most recent membership, org2", in.Session, err)
			}
		})
	}
}

func TestCreateInstructorForPendingRollsBack(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			ex, err := s.ExchangeCode(ctx, mustResolve(t, s, mainLink("e1", "org1", "c1")).Code)
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("injected failure")
			s.hook = func(name string) error {
				if name == "account" {
					return boom
				}
				return nil
			}
			if _, err := s.CreateInstructorForPending(ctx, ex.Token, "ida", "ida@partner.example", "Ida", "pw"); !errors.Is(err, boom) {
				t.Fatalf("CreateInstructorForPending = %v, want the injected failure", err)
			}
			s.hook = nil
			if n := count(t, s, "accounts"); n != 0 {
				t.Errorf("accounts after a failure = %d, want 0", n)
			}
			if sess, err := s.Session(ctx, ex.Token); err != nil || !sess.Pending {
				t.Errorf("pending session after a failure = %+v, %v, want it kept", sess, err)
			}
			if _, err := s.CreateInstructorForPending(ctx, ex.Token, "ida", "ida@partner.example", "Ida", "pw"); err != nil {
				t.Errorf("CreateInstructorForPending after the failure = %v", err)
			}
		})
	}
}
