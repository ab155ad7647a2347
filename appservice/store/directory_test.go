package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDirectorySignIn: a directory user's first sign-in is a pending first-sight session;
// once linked after the account's password and the link question, later sign-ins of the
// same (issuer, subject) land in the account directly, and nothing else matches: not the
// same subject of another issuer, not the account's e-mail address.
func TestDirectorySignIn(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := mustResolve(t, s, mainLink("e1", "org1", "c1")).OrganizationID
			if _, err := s.EnsureInstructor(ctx, "coach", "coach@service.example", "Coach", "s3cret-pass"); err != nil {
				t.Fatal(err)
			}
			u := DirectoryUser{Issuer: "https://idp.example/", Subject: "sub-1", Username: "anna", Firstname: "Anna", Lastname: "Lind",
				Email: "coach@service.example", Partner: "demo", PartnerOrgID: "org1"}

			first, err := s.DirectorySignIn(ctx, u, "")
			if err != nil {
				t.Fatalf("DirectorySignIn = %v", err)
			}
			if !first.Session.Pending || first.Session.Employee == nil || first.Session.Employee.Partner != "directory:https://idp.example/" ||
				first.Session.Organization == nil || first.Session.Organization.ID != org {
				t.Fatalf("first sight session = %+v, want pending for employee of directory:https://idp.example/ in org %d", first.Session, org)
			}
			in, err := s.SignIn(ctx, "coach", "s3cret-pass", first.Token)
			if err != nil || !in.Session.ConfirmLink {
				t.Fatalf("SignIn from the first-sight page = %+v, %v, want the link question", in, err)
			}
			if linked, err := s.ConfirmLink(ctx, in.Token, true); err != nil || !linked {
				t.Fatalf("ConfirmLink = %v, %v, want linked", linked, err)
			}

			later, err := s.DirectorySignIn(ctx, u, "")
			if err != nil {
				t.Fatalf("later DirectorySignIn = %v", err)
			}
			if later.Session.Pending || later.Session.ConfirmLink || later.Session.Account == nil || later.Session.Account.Username != "coach" ||
				later.Session.Organization == nil || later.Session.Organization.ID != org {
				t.Errorf("later session = %+v, want coach signed in directly in org %d", later.Session, org)
			}

			// The directory button pressed on a partner user's first-sight page: the linked
			// directory user's account takes over the partner user's pending session, with
			// the link question for the partner user.
			link := mustResolve(t, s, mainLink("e2", "org1", "c2"))
			ex, err := s.ExchangeCode(ctx, link.Code)
			if err != nil || !ex.Session.Pending {
				t.Fatalf("ExchangeCode = %+v, %v, want a pending first-sight session", ex, err)
			}
			took, err := s.DirectorySignIn(ctx, u, ex.Token)
			if err != nil {
				t.Fatalf("DirectorySignIn from a partner user's first-sight page = %v", err)
			}
			if !took.Session.ConfirmLink || took.Session.Employee == nil || took.Session.Employee.PartnerID != "e2" || took.Session.Account.Username != "coach" {
				t.Errorf("session = %+v, want coach asked to link partner user e2", took.Session)
			}
			if linked, err := s.ConfirmLink(ctx, took.Token, true); err != nil || !linked {
				t.Errorf("ConfirmLink(partner user e2) = %v, %v, want linked to coach", linked, err)
			}

			other := u
			other.Issuer = "https://other-idp.example/"
			o, err := s.DirectorySignIn(ctx, other, "")
			if err != nil || !o.Session.Pending {
				t.Errorf("same subject, another issuer = %+v, %v, want a first sight (pending)", o, err)
			}
		})
	}
}

// TestUseDirectoryState: a directory sign-in's state is good once until its time has
// passed, by the database's record; only its hash is kept; an expired record is taken over
// and DeleteExpired removes it.
func TestUseDirectoryState(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			expires := c.Now().Add(10 * time.Minute)
			for i, want := range []bool{true, false, false} {
				if fresh, err := s.UseDirectoryState(ctx, "state-1", expires); err != nil || fresh != want {
					t.Fatalf("UseDirectoryState #%d = %v, %v, want %v", i+1, fresh, err, want)
				}
			}
			if fresh, err := s.UseDirectoryState(ctx, "state-2", expires); err != nil || !fresh {
				t.Errorf("UseDirectoryState of another state = %v, %v, want fresh", fresh, err)
			}
			var stored string
			if err := s.db.QueryRowContext(ctx, `SELECT state_hash FROM used_directory_states LIMIT 1`).Scan(&stored); err != nil || strings.Contains(stored, "state-") {
				t.Errorf("stored state %q (%v), want its hash only", stored, err)
			}
			c.Add(11 * time.Minute)
			if err := s.DeleteExpired(ctx); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM used_directory_states`).Scan(&n); err != nil || n != 0 {
				t.Errorf("%d states left after DeleteExpired (%v), want 0", n, err)
			}
			if fresh, err := s.UseDirectoryState(ctx, "state-1", c.Now().Add(10*time.Minute)); err != nil || !fresh {
				t.Errorf("UseDirectoryState after the record expired = %v, %v, want fresh", fresh, err)
			}
			if fresh, err := s.UseDirectoryState(ctx, "", expires); err != nil || fresh {
				t.Errorf("UseDirectoryState of no state = %v, %v, want not fresh", fresh, err)
			}
		})
	}
}

// TestDirectoryAccount: whom a directory user would sign in: nil before the first sight is
// linked, the linked account after; another issuer's same subject is someone else.
func TestDirectoryAccount(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if _, err := s.EnsureInstructor(ctx, "coach", "coach@service.example", "Coach", "s3cret-pass"); err != nil {
				t.Fatal(err)
			}
			u := DirectoryUser{Issuer: "https://idp.example/", Subject: "sub-1", Username: "anna", Partner: "demo"}
			if a, err := s.DirectoryAccount(ctx, u.Issuer, u.Subject); err != nil || a != nil {
				t.Fatalf("DirectoryAccount of an unseen user = %+v, %v, want nil", a, err)
			}
			first, err := s.DirectorySignIn(ctx, u, "")
			if err != nil {
				t.Fatal(err)
			}
			if a, err := s.DirectoryAccount(ctx, u.Issuer, u.Subject); err != nil || a != nil {
				t.Fatalf("DirectoryAccount at first sight = %+v, %v, want nil", a, err)
			}
			in, err := s.SignIn(ctx, "coach", "s3cret-pass", first.Token)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.ConfirmLink(ctx, in.Token, true); err != nil {
				t.Fatal(err)
			}
			if a, err := s.DirectoryAccount(ctx, u.Issuer, u.Subject); err != nil || a == nil || a.Username != "coach" {
				t.Errorf("DirectoryAccount after linking = %+v, %v, want coach", a, err)
			}
			if a, err := s.DirectoryAccount(ctx, "https://other.example/", u.Subject); err != nil || a != nil {
				t.Errorf("DirectoryAccount of the subject at another issuer = %+v, %v, want nil", a, err)
			}
		})
	}
}
