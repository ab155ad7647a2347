package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
)

// kari is one human, a patient of two clinics of partner demo that know her by different
// contact ids and details, and by the same national identity number.
const kariSSN = "17053550088"

func clinicLink(kind linkspec.Kind, org, orgName string, c linkspec.Contact) Link {
	l := Link{Partner: "demo", Endpoint: "url", RequestID: "req-" + org, Kind: kind, Payload: &linkspec.Payload{
		OrganizationID: org, OrganizationName: orgName, Contact: &c,
	}}
	if kind == linkspec.KindMain {
		l.Payload.EmployeeID, l.Payload.EmployeeFirstname, l.Payload.EmployeeLastname = "emp-"+org, "Ida", "Berg"
		l.Payload.EmployeeEmail = "ida@" + org + ".example"
	}
	return l
}

// kariAtA and kariAtB are the two clinics' contacts of Kari.
func kariAtA() linkspec.Contact {
	return linkspec.Contact{ID: "contact-1", SSN: kariSSN, Firstname: "Kari", Lastname: "Nordmann", Birthdate: "1975-05-17",
		Email: "kari@a.example", Mobile: "+47 400 00 001", Gender: "K"}
}

func kariAtB() linkspec.Contact {
	return linkspec.Contact{ID: "c-999", SSN: kariSSN, Firstname: "Kari", Lastname: "Berg", Email: "kari@b.example"}
}

// wantPerson fails the test unless orgID's record id reads as want says: the fields a
// clinic sees, compared one by one.
func wantPerson(t *testing.T, s *Store, what string, orgID, id int64, want Person) {
	t.Helper()
	p, err := s.Person(context.Background(), orgID, id)
	if err != nil {
		t.Fatalf("%s: Person(%d, %d) = %v", what, orgID, id, err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"name", p.Name(), want.Firstname + " " + want.Lastname},
		{"birthdate", p.BirthDate, want.BirthDate},
		{"email", p.Email, want.Email},
		{"mobile", p.Mobile, want.Mobile},
		{"address", p.Address, want.Address},
		{"gender", p.Gender, want.Gender},
		{"custom id", p.CustomID, want.CustomID},
		{"partner ids", strings.Join(p.PartnerIDs, ","), strings.Join(want.PartnerIDs, ",")},
	} {
		if f.got != f.want {
			t.Errorf("%s: %s = %q, want %q", what, f.name, f.got, f.want)
		}
	}
}

// TestClinicsKeepTheirOwnRecords is issue 25's two-organization scenario: organization B's
// main link carries the ssn of organization A's person, and B's instructor then tries to
// change that person through selectperson with A's id. A's record stays as A's links made
// it, B sees only what B's links and B's instructor gave, and neither reads the other's.
func TestClinicsKeepTheirOwnRecords(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			a := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			asA := Person{Firstname: "Kari", Lastname: "Nordmann", BirthDate: "1975-05-17", Email: "kari@a.example",
				Mobile: "+47 400 00 001", Gender: "female", CustomID: "contact-1", PartnerIDs: []string{"contact-1"}}
			if _, _, _, err := s.SelectPerson(ctx, a.OrganizationID, &personspec.Select{UserID: a.PersonID,
				Profile: []personspec.ProfileEntry{{Key: "weight", Value: "64", Unit: "kg", Source: "a"}}}); err != nil {
				t.Fatal(err)
			}

			b := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", kariAtB()))
			if b.PersonID == a.PersonID {
				t.Errorf("B's link resolved to A's record %d, want a record of B's own", a.PersonID)
			}
			wantPerson(t, s, "A's record after B's link", a.OrganizationID, a.PersonID, asA)
			wantPerson(t, s, "B's record after B's link", b.OrganizationID, b.PersonID, Person{Firstname: "Kari", Lastname: "Berg",
				Email: "kari@b.example", CustomID: "c-999", PartnerIDs: []string{"c-999"}})
			if _, err := s.Person(ctx, b.OrganizationID, a.PersonID); !errors.Is(err, ErrNotFound) {
				t.Errorf("Person(B, A's record) = %v, want ErrNotFound", err)
			}
			if ps, err := s.Persons(ctx, b.OrganizationID, "", 0); err != nil || len(ps) != 1 {
				t.Errorf("Persons(B) = %d records, %v, want B's one", len(ps), err)
			}

			// B's instructor (the wrapper's selectperson) with A's id: refused, nothing
			// changes; with B's own id: only B's record changes.
			edit := personspec.Select{UserID: a.PersonID, Firstname: "Edited", Lastname: "ByOrgB", Email: "edited@evil.example",
				Address: "Evil street 1", DateOfBirth: "2000-01-01", Gender: "male",
				Profile: []personspec.ProfileEntry{{Key: "weight", Value: "99", Unit: "kg", Source: "a"}}}
			if _, _, _, err := s.SelectPerson(ctx, b.OrganizationID, &edit); !errors.Is(err, ErrNotFound) {
				t.Errorf("SelectPerson(B, A's id) = %v, want ErrNotFound", err)
			}
			if err := s.SetCustomID(ctx, b.OrganizationID, a.PersonID, "b-custom"); !errors.Is(err, ErrNotFound) {
				t.Errorf("SetCustomID(B, A's id) = %v, want ErrNotFound", err)
			}
			edit.UserID = b.PersonID
			mustSelect(t, s, b.OrganizationID, edit)
			wantPerson(t, s, "A's record after B's instructor", a.OrganizationID, a.PersonID, asA)
			wantPerson(t, s, "B's record after B's instructor", b.OrganizationID, b.PersonID, Person{Firstname: "Edited", Lastname: "ByOrgB",
				Email: "edited@evil.example", Address: "Evil street 1", BirthDate: "2000-01-01", Gender: "male",
				CustomID: "c-999", PartnerIDs: []string{"c-999"}})
			if p, err := s.Profile(ctx, a.OrganizationID, a.PersonID); err != nil || len(p) != 1 || p[0].Value != "64" {
				t.Errorf("A's profile = %+v, %v, want A's one entry, 64", p, err)
			}

			// B's next link, and A's: each changes its own record only.
			mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", kariAtB()))
			again := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			if again.PersonID != a.PersonID || again.PersonCreated {
				t.Errorf("A's next link = record %d (created %v), want A's %d", again.PersonID, again.PersonCreated, a.PersonID)
			}
			wantPerson(t, s, "A's record after both links", a.OrganizationID, a.PersonID, asA)
			if p, err := s.Person(ctx, b.OrganizationID, b.PersonID); err != nil || p.Name() != "Kari Berg" || p.BirthDate != "2000-01-01" {
				t.Errorf("B's record after B's link = %+v, %v, want B's link's name and B's instructor's birthdate", p, err)
			}
		})
	}
}

// TestMemberSeesEveryClinicsPlans: the member behind both clinics' records is one account,
// found by partner id or by ssn; signed in with a national eID it sees both clinics' plans,
// each under its clinic's name and the clinic's record's name. A Go link that matched the
// member by ssn alone, with another partner id, signs in without renaming or re-mailing the
// account; a Go link with the member's own partner id keeps it current.
func TestMemberSeesEveryClinicsPlans(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			a := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			b := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", kariAtB()))
			planA, err := s.CreateWorkout(ctx, a.OrganizationID, 0, a.PersonID, 0, "Plan from A")
			if err != nil {
				t.Fatal(err)
			}
			planB, err := s.CreateWorkout(ctx, b.OrganizationID, 0, b.PersonID, 0, "Plan from B")
			if err != nil {
				t.Fatal(err)
			}

			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			goB := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-b", "Clinic B", kariAtB()))
			if goA.AccountID == 0 || goB.AccountID != goA.AccountID || goB.AccountCreated {
				t.Fatalf("Go links of A and B = account %d and %d (created %v), want one account", goA.AccountID, goB.AccountID, goB.AccountCreated)
			}
			if goA.PersonID != a.PersonID || goB.PersonID != b.PersonID {
				t.Errorf("Go links' records = %d and %d, want each clinic's own, %d and %d", goA.PersonID, goB.PersonID, a.PersonID, b.PersonID)
			}
			acct := accountOf(t, s, goA.AccountID)
			if acct.DisplayName != "Kari Nordmann" || acct.Email != "kari@a.example" {
				t.Errorf("account after B's Go link (ssn match, another partner id) = %q <%s>, want A's Kari Nordmann <kari@a.example> kept", acct.DisplayName, acct.Email)
			}

			eid := eidSession(t, s, goA.AccountID)
			ws, err := s.MemberWorkouts(ctx, eid)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]string{}
			for _, w := range ws {
				got[w.ID] = w.Title + " @ " + w.OrganizationName + " for " + w.Person.Name()
			}
			want := map[int64]string{planA.ID: "Plan from A @ Clinic A for Kari Nordmann", planB.ID: "Plan from B @ Clinic B for Kari Berg"}
			if len(got) != len(want) || got[planA.ID] != want[planA.ID] || got[planB.ID] != want[planB.ID] {
				t.Errorf("member's plans = %v, want %v", got, want)
			}
			for _, id := range []int64{planA.ID, planB.ID} {
				if w, err := s.MemberWorkout(ctx, eid, id); err != nil || w.ID != id {
					t.Errorf("MemberWorkout(%d) = %v, want the plan", id, err)
				}
			}

			// A Go link with the member's own partner id keeps the account current.
			renamed := kariAtA()
			renamed.Lastname, renamed.Email = "Nordmann-Lie", "kari.lie@a.example"
			mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", renamed))
			if acct := accountOf(t, s, goA.AccountID); acct.DisplayName != "Kari Nordmann-Lie" || acct.Email != "kari.lie@a.example" {
				t.Errorf("account after A's Go link = %q <%s>, want Kari Nordmann-Lie <kari.lie@a.example>", acct.DisplayName, acct.Email)
			}
		})
	}
}

// TestGoLinkSeesItsOwnClinicsPlans is issue 34's finding: clinic B sends a Go link with its
// own contact id and clinic A's patient's ssn in another spelling. The link's session sees
// B's plans only, never A's (nor A's record's name, notes or instructor), and shows the
// holder by B's record; A's Go link sees A's. The member stays one: with a national eID,
// its session sees both clinics' plans.
func TestGoLinkSeesItsOwnClinicsPlans(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			a := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			pending, err := s.ExchangeCode(ctx, a.Code)
			if err != nil {
				t.Fatal(err)
			}
			coach, err := s.CreateInstructorForPending(ctx, pending.Token, "coach-a", "coach@a.example", "Coach of A", "a-coach-password-7Kq")
			if err != nil {
				t.Fatal(err)
			}
			planA, err := s.CreateWorkout(ctx, a.OrganizationID, coach.Session.Account.ID, a.PersonID, 0, "Knee plan from A")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.UpdateWorkout(ctx, a.OrganizationID, planA.ID, planA.Title, "A's notes on the knee", nil); err != nil {
				t.Fatal(err)
			}

			atB := kariAtB()
			atB.SSN = kariSSN[:6] + " " + kariSSN[6:]
			goB := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-b", "Clinic B", atB))
			planB, err := s.CreateWorkout(ctx, goB.OrganizationID, 0, goB.PersonID, 0, "Back plan from B")
			if err != nil {
				t.Fatal(err)
			}
			target, err := s.PeekCode(ctx, goB.Code)
			if err != nil || target.Account == nil || target.Account.DisplayName != "Kari Berg" || target.Account.Email != "kari@b.example" {
				t.Errorf("PeekCode(B's Go link) = %+v, %v, want the account as B knows her, Kari Berg <kari@b.example>", target, err)
			}
			sessB := linkSession(t, s, goB)
			if sessB.Scope != ScopeOrganization || sessB.Account.DisplayName != "Kari Berg" || sessB.Account.Email != "kari@b.example" {
				t.Errorf("B's Go session = scope %q, account %q <%s>, want organization scope and B's record's Kari Berg <kari@b.example>",
					sessB.Scope, sessB.Account.DisplayName, sessB.Account.Email)
			}
			if ws, err := s.MemberWorkouts(ctx, sessB); err != nil || len(ws) != 1 || ws[0].ID != planB.ID {
				t.Errorf("MemberWorkouts(B's Go session) = %s, %v, want B's plan only", titles(ws), err)
			}
			if w, err := s.MemberWorkout(ctx, sessB, planA.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("MemberWorkout(B's Go session, A's plan) = %+v, %v, want ErrNotFound", w, err)
			}

			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			if goA.AccountID != goB.AccountID || goA.MemberID != goB.MemberID {
				t.Fatalf("A's and B's Go links = account %d, member %d and account %d, member %d, want one member and account",
					goA.AccountID, goA.MemberID, goB.AccountID, goB.MemberID)
			}
			sessA := linkSession(t, s, goA)
			ws, err := s.MemberWorkouts(ctx, sessA)
			if err != nil || len(ws) != 1 || ws[0].ID != planA.ID || ws[0].Notes != "A's notes on the knee" || ws[0].OwnerName != "Coach of A" ||
				ws[0].Person == nil || ws[0].Person.Name() != "Kari Nordmann" {
				t.Errorf("MemberWorkouts(A's Go session) = %+v, %v, want A's plan with A's notes, instructor and record", ws, err)
			}
			if sessA.Account.DisplayName != "Kari Nordmann" {
				t.Errorf("A's Go session shows the account as %q, want A's record's Kari Nordmann", sessA.Account.DisplayName)
			}

			in, err := s.NationalEIDSignIn(ctx, goA.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			eid := in.Session
			if eid.Scope != ScopeMember || eid.Organization != nil || eid.Person != nil || eid.Account.DisplayName != "Kari Nordmann" {
				t.Errorf("eID session = scope %q, organization %+v, person %+v, account %q; want member scope, none in focus, the account's own name",
					eid.Scope, eid.Organization, eid.Person, eid.Account.DisplayName)
			}
			if ws, err := s.MemberWorkouts(ctx, eid); err != nil || len(ws) != 2 {
				t.Errorf("MemberWorkouts(eID session) = %s, %v, want both clinics' plans", titles(ws), err)
			}
			if again, err := s.Session(ctx, in.Token); err != nil || again.Scope != ScopeMember {
				t.Errorf("the eID session read again = %+v, %v, want member scope kept", again, err)
			}
		})
	}
}

// TestMemberFoundBySSNOnly: the member is one per human across clinics whether a clinic's
// first link is a main link or a Go link, and only within the partner: another partner's
// link with the same ssn is another member, whose link sees nothing of the first partner's;
// only a national eID session joins them.
func TestMemberFoundBySSNOnly(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			// B's Go link comes first: it creates the account with B's details.
			goB := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-b", "Clinic B", kariAtB()))
			goA := mustResolve(t, s, clinicLink(linkspec.KindGo, "org-a", "Clinic A", kariAtA()))
			if goA.AccountID != goB.AccountID || goA.AccountCreated || goA.PersonID == goB.PersonID {
				t.Errorf("Go links of B then A = %+v and %+v, want one account and two records", goB, goA)
			}
			if acct := accountOf(t, s, goB.AccountID); acct.DisplayName != "Kari Berg" || acct.Email != "kari@b.example" {
				t.Errorf("account after A's Go link (ssn match) = %q <%s>, want B's Kari Berg <kari@b.example> kept", acct.DisplayName, acct.Email)
			}
			// A third clinic's main link by the partner id alone joins the same member.
			c := kariAtA()
			c.SSN = ""
			third := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-c", "Clinic C", c))
			planC, err := s.CreateWorkout(ctx, third.OrganizationID, 0, third.PersonID, 0, "Plan from C")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.MemberWorkout(ctx, eidSession(t, s, goA.AccountID), planC.ID); err != nil {
				t.Errorf("MemberWorkout(eID session, C's plan) = %v, want the member to see it", err)
			}
			// Another partner's clinic with Kari's ssn and ids: a member of its own.
			l := clinicLink(linkspec.KindGo, "org-a", "Other partner's clinic", kariAtA())
			l.Partner = "other"
			other := mustResolve(t, s, l)
			if other.AccountID == goA.AccountID || !other.AccountCreated {
				t.Errorf("another partner's Go link = account %d (created %v), want a new account, not %d", other.AccountID, other.AccountCreated, goA.AccountID)
			}
			link, err := s.ExchangeCode(ctx, other.Code)
			if err != nil {
				t.Fatal(err)
			}
			if ws, err := s.MemberWorkouts(ctx, link.Session); err != nil || len(ws) != 0 {
				t.Errorf("another partner's Go link sees %s, %v, want none of the first partner's plans", titles(ws), err)
			}
			// The human's own proof of the number (a national eID) sees the plans every
			// partner made for it, whichever partner's member it signs in to.
			if _, err := s.MemberWorkout(ctx, eidSession(t, s, other.AccountID), planC.ID); err != nil {
				t.Errorf("MemberWorkout(the other partner's member's eID session, C's plan) = %v, want the proven human to see it", err)
			}
		})
	}
}

// titles lists the plans' titles, for a message.
func titles(ws []Workout) string {
	var out []string
	for _, w := range ws {
		out = append(out, strconv.Quote(w.Title))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func accountOf(t *testing.T, s *Store, id int64) *Account {
	t.Helper()
	a, err := s.account(context.Background(), s.db, id)
	if err != nil {
		t.Fatalf("account(%d) = %v", id, err)
	}
	return a
}

// TestMemberIdentityOnlyFromItsOwnContact: what identifies the human to every clinic (the
// member's ssn hash, its partner ids, the records it links) changes only through the
// member's own contact; another clinic's disagreeing number or id is a conflict that moves
// nothing, while that clinic's own record follows its links.
func TestMemberIdentityOnlyFromItsOwnContact(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			a := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", kariAtA()))
			bLink := kariAtB()
			bResolved := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", bLink))

			// B's link now carries another number: B's record takes it, the member does not.
			bLink.SSN = "01013550103"
			r := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", bLink))
			if r.PersonID != bResolved.PersonID || r.MemberID != a.MemberID || !r.SSNConflict {
				t.Errorf("B's link with another number = %+v, want B's record, A's member, a conflict", r)
			}
			var recordHash, memberHash string
			queryRow(t, s, "SELECT ssn_hash FROM persons WHERE id = ?", []any{r.PersonID}, &recordHash)
			queryRow(t, s, "SELECT ssn_hash FROM members WHERE id = ?", []any{a.MemberID}, &memberHash)
			if recordHash != s.contactSSN("01013550103", s.now()).String || memberHash != s.contactSSN(kariSSN, s.now()).String {
				t.Errorf("after B's number: record hash changed %v, member hash kept %v; want true, true",
					recordHash == s.contactSSN("01013550103", s.now()).String, memberHash == s.contactSSN(kariSSN, s.now()).String)
			}
			// A third clinic still finds the member by Kari's number, not by B's.
			c := linkspec.Contact{ID: "c-third", SSN: kariSSN, Firstname: "Kari", Lastname: "N"}
			if r := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-c", "Clinic C", c)); r.MemberID != a.MemberID {
				t.Errorf("Clinic C by Kari's number = member %d, want %d", r.MemberID, a.MemberID)
			}
			// A's own contact corrects the member's number.
			own := kariAtA()
			own.SSN = "17053550169"
			if r := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-a", "Clinic A", own)); r.SSNConflict || r.MemberID != a.MemberID {
				t.Errorf("A's link with a corrected number = %+v, want no conflict", r)
			}
			queryRow(t, s, "SELECT ssn_hash FROM members WHERE id = ?", []any{a.MemberID}, &memberHash)
			if memberHash != s.contactSSN("17053550169", s.now()).String {
				t.Error("the member's number after its own contact corrected it is not the corrected one")
			}

			// Another human's id in B's link: B's record stays with its member.
			other := mustResolve(t, s, clinicLink(linkspec.KindMain, "org-x", "Clinic X", linkspec.Contact{ID: "c-other", SSN: "02023550051", Firstname: "Per", Lastname: "Berg"}))
			bLink.ID, bLink.SSN = "c-other", "01013550103"
			r = mustResolve(t, s, clinicLink(linkspec.KindMain, "org-b", "Clinic B", bLink))
			if r.PersonID != bResolved.PersonID || r.MemberID != a.MemberID || !r.SSNConflict {
				t.Errorf("B's link with Per's id and B's record's number = %+v, want B's record, Kari's member, a conflict", r)
			}
			var holder int64
			queryRow(t, s, "SELECT member_id FROM member_identities WHERE partner = 'demo' AND partner_person_id = 'c-other'", nil, &holder)
			if holder != other.MemberID {
				t.Errorf("c-other belongs to member %d after B's link, want Per's %d", holder, other.MemberID)
			}
		})
	}
}
