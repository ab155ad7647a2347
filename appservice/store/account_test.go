package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMainClientFirstSightThenSSO(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if created, err := s.EnsureInstructor(ctx, "Instructor", "coach@service.example", "Coach", "s3cret-pass"); err != nil || !created {
				t.Fatalf("EnsureInstructor = %v, %v, want created", created, err)
			}

			r := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			if r.AccountID != 0 {
				t.Fatalf("first sight: AccountID = %d, want 0 (sign-in needed)", r.AccountID)
			}
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil {
				t.Fatalf("ExchangeCode = %v", err)
			}
			if !ex.Session.Pending || ex.Session.Employee == nil || ex.Session.Employee.Email != "ida@partner.example" {
				t.Fatalf("first sight session = %+v, want pending for the employee", ex.Session)
			}

			if _, err := s.SignIn(ctx, "instructor", "wrong", ex.Token); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(wrong password) = %v, want ErrBadCredentials", err)
			}
			if _, err := s.SignIn(ctx, "nobody", "s3cret-pass", ""); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(unknown user) = %v, want ErrBadCredentials", err)
			}
			in, err := s.SignIn(ctx, "COACH@service.example", "s3cret-pass", ex.Token)
			if err != nil {
				t.Fatalf("SignIn(by e-mail) = %v", err)
			}
			// Signing in does not link: the person confirms first (login CSRF).
			if !in.Session.ConfirmLink || in.Session.Account == nil || in.Session.Employee == nil || in.Session.Person == nil || in.Session.Person.Firstname != "Ola" {
				t.Fatalf("SignIn session = %+v, want one asking to confirm the link, with the contact in focus", in.Session)
			}
			if again := mustResolve(t, s, mainLink("e1", "org1", "c1")); again.AccountID != 0 {
				t.Fatalf("link before the confirmation: AccountID = %d, want 0 (not linked yet)", again.AccountID)
			}
			linked, err := s.ConfirmLink(ctx, in.Token, true)
			if err != nil || !linked {
				t.Fatalf("ConfirmLink(accept) = %v, %v, want linked", linked, err)
			}
			if _, err := s.ConfirmLink(ctx, in.Token, true); !errors.Is(err, ErrNoSession) {
				t.Errorf("ConfirmLink(settled) = %v, want ErrNoSession", err)
			}
			in.Session, err = s.Session(ctx, in.Token)
			if err != nil || in.Session.ConfirmLink || in.Session.Person == nil {
				t.Fatalf("session after confirming = %+v, %v, want signed in with the contact in focus", in.Session, err)
			}
			if in.Session.Organization == nil || in.Session.Organization.Name != "North Clinic" || in.Session.CaseID != "case-7" {
				t.Errorf("signed-in session organization %+v case %q, want North Clinic, case-7", in.Session.Organization, in.Session.CaseID)
			}
			if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
				t.Errorf("Session(pending token after sign-in) = %v, want ErrNoSession", err)
			}

			r2 := mustResolve(t, s, mainLink("e1", "org1", "c2"))
			if r2.AccountID != in.Session.Account.ID {
				t.Fatalf("second link: AccountID = %d, want %d (single sign-on)", r2.AccountID, in.Session.Account.ID)
			}
			ex2, err := s.ExchangeCode(ctx, r2.Code)
			if err != nil || ex2.Session.Pending || ex2.Session.Account.Username != "instructor" {
				t.Fatalf("second exchange = %+v, %v, want a signed-in instructor", ex2, err)
			}

			t.Run("first link wins", func(t *testing.T) {
				if _, err := s.EnsureInstructor(ctx, "other", "other@service.example", "Other", "pass-2"); err != nil {
					t.Fatal(err)
				}
				// a code issued before the link, exchanged for a pending session, then used by another account
				r := mustResolve(t, s, mainLink("e2", "org1", "c1"))
				ex, _ := s.ExchangeCode(ctx, r.Code)
				exOther, _ := s.ExchangeCode(ctx, mustResolve(t, s, mainLink("e2", "org1", "c1")).Code)
				first, err := s.SignIn(ctx, "instructor", "s3cret-pass", ex.Token)
				if err != nil {
					t.Fatal(err)
				}
				other, err := s.SignIn(ctx, "other", "pass-2", exOther.Token)
				if err != nil || !other.Session.ConfirmLink {
					t.Fatalf("SignIn(other) = %v, session %+v, want one asking to confirm", err, other)
				}
				if linked, err := s.ConfirmLink(ctx, first.Token, true); err != nil || !linked {
					t.Fatalf("ConfirmLink(first) = %v, %v, want linked", linked, err)
				}
				if linked, err := s.ConfirmLink(ctx, other.Token, true); err != nil || linked {
					t.Fatalf("ConfirmLink(second) = %v, %v, want not linked: the first link wins", linked, err)
				}
				var acct int64
				queryRow(t, s, "SELECT account_id FROM employees WHERE id = ?", []any{r.EmployeeID}, &acct)
				if acct != first.Session.Account.ID {
					t.Errorf("employee account = %d, want %d", acct, first.Session.Account.ID)
				}
				sess, err := s.Session(ctx, other.Token)
				if err != nil || sess.ConfirmLink || sess.Employee != nil || sess.Person != nil {
					t.Errorf("second account's session = %+v, %v, want signed in without the link's employee and contact", sess, err)
				}
			})

			t.Run("declined", func(t *testing.T) {
				r := mustResolve(t, s, mainLink("e3", "org1", "c1"))
				ex, _ := s.ExchangeCode(ctx, r.Code)
				in, err := s.SignIn(ctx, "instructor", "s3cret-pass", ex.Token)
				if err != nil {
					t.Fatal(err)
				}
				if linked, err := s.ConfirmLink(ctx, in.Token, false); err != nil || linked {
					t.Fatalf("ConfirmLink(decline) = %v, %v, want not linked", linked, err)
				}
				sess, err := s.Session(ctx, in.Token)
				if err != nil || sess.Account == nil || sess.ConfirmLink || sess.Employee != nil || sess.Organization != nil || sess.Person != nil {
					t.Errorf("session after declining = %+v, %v, want signed in with nothing of the link", sess, err)
				}
				if again := mustResolve(t, s, mainLink("e3", "org1", "c1")); again.AccountID != 0 {
					t.Errorf("link after declining: AccountID = %d, want 0", again.AccountID)
				}
			})
		})
	}
}

func TestPassword(t *testing.T) {
	h, err := hashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hashPassword() = %q, want an argon2id PHC string", h)
	}
	for _, tt := range []struct {
		name, hash, pw string
		want           bool
	}{
		{"right", h, "correct horse", true},
		{"wrong", h, "correct horse!", false},
		{"garbage hash", "$argon2id$x", "correct horse", false},
		{"huge memory refused", strings.Replace(h, "m=19456", "m=99999999", 1), "correct horse", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkPassword(tt.hash, tt.pw); got != tt.want {
				t.Errorf("checkPassword(%q) = %v, want %v", tt.pw, got, tt.want)
			}
		})
	}
}

// BenchmarkCheckPassword is the argon2id check every password sign-in pays, the yardstick
// of what the sign-in limits add (BenchmarkCountSignIn).
func BenchmarkCheckPassword(b *testing.B) {
	hash, err := hashPassword("correct horse battery staple")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !checkPassword(hash, "correct horse battery staple") {
			b.Fatal("checkPassword = false")
		}
	}
}
