package store

import (
	"context"
	"errors"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/nationalid"
)

// eidNumber is the number a national eID gives, as its sign-in reads it.
func eidNumber(t *testing.T, s *Store, country nationalid.Country, raw string) nationalid.Number {
	t.Helper()
	n, err := nationalid.Parse(country, raw, s.opts.Now())
	if err != nil {
		t.Fatalf("nationalid.Parse(%s) = %v", country, err)
	}
	return n
}

// mustPlan makes a plan titled title for r's record, in r's organization.
func mustPlan(t *testing.T, s *Store, r *Resolved, title string) *Workout {
	t.Helper()
	w, err := s.CreateWorkout(context.Background(), r.OrganizationID, 0, r.PersonID, 0, title)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSignInByNationalIDKnownMember: a member a Go link of clinic A made, with a plan at A
// and one at clinic B (B knows her by another contact id, the same ssn), signs in with the
// eID to the same account and sees both plans; a number written with separators matches
// the same member.
func TestSignInByNationalIDKnownMember(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			mainB := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", kariAtB()))
			planA, planB := mustPlan(t, s, goA, "Plan from A"), mustPlan(t, s, mainB, "Plan from B")
			accounts, members := count(t, s, "accounts"), count(t, s, "members")

			for _, raw := range []string{kariSSN, "170535 50088", "170535-50088"} {
				in, err := s.SignInByNationalID(ctx, eidNumber(t, s, nationalid.Norway, raw))
				if err != nil {
					t.Fatalf("SignInByNationalID = %v", err)
				}
				sess := in.Session
				if in.AccountCreated || sess.Account.ID != goA.AccountID || sess.Scope != ScopeMember || sess.Organization != nil {
					t.Errorf("eID sign-in = created %v, account %d, scope %q, organization %+v; want A's Go link's account %d, member scope, no organization",
						in.AccountCreated, sess.Account.ID, sess.Scope, sess.Organization, goA.AccountID)
				}
				ws, err := s.MemberWorkouts(ctx, sess)
				if err != nil || len(ws) != 2 || ws[0].ID != planB.ID || ws[1].ID != planA.ID {
					t.Errorf("MemberWorkouts(eID session) = %s, %v, want B's and A's plans", titles(ws), err)
				}
				if again, err := s.Session(ctx, in.Token); err != nil || again.Scope != ScopeMember || again.Account.ID != goA.AccountID {
					t.Errorf("the eID session read again = %+v, %v", again, err)
				}
			}
			if count(t, s, "accounts") != accounts || count(t, s, "members") != members {
				t.Errorf("eID sign-ins of a known member created accounts or members")
			}
		})
	}
}

// TestSignInByNationalIDContactWithoutAccount: a human known from clinics' main-client links
// only (a member, no account) gets, at the eID sign-in, the account a Go link would have
// made, named as the record the member was created with; the clinic's later Go link signs
// in to that same account, and a second eID sign-in makes no other.
func TestSignInByNationalIDContactWithoutAccount(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			mainB := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", kariAtB()))
			mainA := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			if mainA.MemberID != mainB.MemberID {
				t.Fatalf("main links of A and B = members %d and %d, want one", mainA.MemberID, mainB.MemberID)
			}
			planA := mustPlan(t, s, mainA, "Plan from A")
			instructors := count(t, s, "accounts")

			in, err := s.SignInByNationalID(ctx, eidNumber(t, s, nationalid.Norway, kariSSN))
			if err != nil {
				t.Fatalf("SignInByNationalID = %v", err)
			}
			if !in.AccountCreated || count(t, s, "accounts") != instructors+1 {
				t.Errorf("eID sign-in of a member without account: created %v, %d accounts; want one made", in.AccountCreated, count(t, s, "accounts"))
			}
			acct := accountOf(t, s, in.Session.Account.ID)
			if acct.Role != RoleMember || acct.DisplayName != "Kari Berg" || acct.Email != "kari@b.example" {
				t.Errorf("new account = %s %q <%s>, want a member named as B's record (the member's first) says", acct.Role, acct.DisplayName, acct.Email)
			}
			if ws, err := s.MemberWorkouts(ctx, in.Session); err != nil || len(ws) != 1 || ws[0].ID != planA.ID {
				t.Errorf("MemberWorkouts(eID session) = %s, %v, want A's plan", titles(ws), err)
			}

			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			if goA.AccountCreated || goA.AccountID != in.Session.Account.ID {
				t.Errorf("A's Go link after the eID sign-in = account %d (created %v), want the eID's %d", goA.AccountID, goA.AccountCreated, in.Session.Account.ID)
			}
			again, err := s.SignInByNationalID(ctx, eidNumber(t, s, nationalid.Norway, kariSSN))
			if err != nil || again.AccountCreated || again.Session.Account.ID != in.Session.Account.ID {
				t.Errorf("second eID sign-in = %+v, %v, want the same account", again, err)
			}
		})
	}
}

// TestSignInByNationalIDUnknown: a valid number no member has is ErrNationalIDUnknown and
// writes nothing: no account, member, record or session; a number only an instructor's
// world knows (none) or another partner's member of another number does not match either.
func TestSignInByNationalIDUnknown(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			// A record with no number (selectperson's) matches nothing either.
			mustResolve(t, s, goLink("org-a", "no-ssn", "nobody@a.example"))
			before := map[string]int{}
			tables := []string{"accounts", "members", "persons", "sessions"}
			for _, table := range tables {
				before[table] = count(t, s, table)
			}
			for _, n := range []nationalid.Number{
				eidNumber(t, s, nationalid.Norway, "01013550022"),
				eidNumber(t, s, nationalid.Sweden, "19121212-1212"),
				eidNumber(t, s, nationalid.Denmark, "010150-5000"),
				{},
			} {
				if in, err := s.SignInByNationalID(ctx, n); !errors.Is(err, ErrNationalIDUnknown) {
					t.Errorf("SignInByNationalID(%v) = %+v, %v, want ErrNationalIDUnknown", n, in, err)
				}
			}
			for _, table := range tables {
				if got := count(t, s, table); got != before[table] {
					t.Errorf("%s: %d rows after unknown numbers, want %d", table, got, before[table])
				}
			}
		})
	}
}

// TestSignInByNationalIDPartners: members are one per partner; a number two partners'
// members carry signs in to the one with an account, and with none to the oldest.
func TestSignInByNationalIDPartners(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			other := clinicLink(linkspec.KindMain, "org-x", "Clinic X", kariAtB())
			other.Partner = "other"
			mainX := mustResolve(t, s, other)
			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			if goA.MemberID == mainX.MemberID {
				t.Fatal("two partners' links made one member")
			}
			in, err := s.SignInByNationalID(ctx, eidNumber(t, s, nationalid.Norway, kariSSN))
			if err != nil || in.AccountCreated || in.Session.Account.ID != goA.AccountID {
				t.Errorf("SignInByNationalID = %+v, %v, want the account of partner demo's member %d", in, err, goA.AccountID)
			}
		})
	}
}

// TestSignInByNationalIDEveryPartner: a human two partners know (a clinic's Go link of
// partner demo, a gym's main-client link of partner gym: two members, one per partner,
// with one number) signs in with the eID and sees the plans of both; the clinic's Go link
// still sees its own organization's plan only, and the gym's plan stays out of its reach.
func TestSignInByNationalIDEveryPartner(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			gymLink := clinicLink(linkspec.KindMain, "gym-1", "Gym One", kariAtB())
			gymLink.Partner = "gym"
			gym := mustResolve(t, s, gymLink)
			if gym.MemberID == goA.MemberID {
				t.Fatalf("two partners' links made one member %d, want one per partner", gym.MemberID)
			}
			planA, planGym := mustPlan(t, s, goA, "Plan from A"), mustPlan(t, s, gym, "Plan from the gym")

			in, err := s.SignInByNationalID(ctx, eidNumber(t, s, nationalid.Norway, kariSSN))
			if err != nil {
				t.Fatalf("SignInByNationalID = %v", err)
			}
			if in.Session.Account.ID != goA.AccountID {
				t.Errorf("eID sign-in = account %d, want the Go link's %d", in.Session.Account.ID, goA.AccountID)
			}
			ws, err := s.MemberWorkouts(ctx, in.Session)
			if err != nil || len(ws) != 2 || ws[0].ID != planGym.ID || ws[1].ID != planA.ID {
				t.Errorf("MemberWorkouts(eID session) = %s, %v, want the gym's and clinic A's plans", titles(ws), err)
			}
			if w, err := s.MemberWorkout(ctx, in.Session, planGym.ID); err != nil || w.ID != planGym.ID {
				t.Errorf("MemberWorkout(eID session, the gym's plan) = %+v, %v", w, err)
			}

			link, err := s.ExchangeCode(ctx, goA.Code)
			if err != nil {
				t.Fatalf("the Go link's sign-in: %v", err)
			}
			if ws, err := s.MemberWorkouts(ctx, link.Session); err != nil || len(ws) != 1 || ws[0].ID != planA.ID {
				t.Errorf("MemberWorkouts(clinic A's Go link) = %s, %v, want A's plan only", titles(ws), err)
			}
			if _, err := s.MemberWorkout(ctx, link.Session, planGym.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("MemberWorkout(clinic A's Go link, the gym's plan) = %v, want ErrNotFound", err)
			}
		})
	}
}
