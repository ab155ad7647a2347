package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
)

// signupPayload is a main link of a first-time employee with a partner username.
func signupPayload() *linkspec.Payload {
	p := mainPayload()
	p.EmployeeUsername = "ida.berg.north"
	return p
}

// firstSight opens a main link of p's employee, seen the first time, in a new browser, and
// returns the browser on the first-sight page with the page's CSRF token.
func firstSight(t *testing.T, f *fixture, p *linkspec.Payload) (*browser, string, string) {
	t.Helper()
	b := newBrowser(t, f.h)
	if res := b.signInByLink(f.link(t, p, "main")); res.Header.Get("Location") != "/app/signin" {
		t.Fatalf("first-sight login → %q, want /app/signin", res.Header.Get("Location"))
	}
	_, page := b.get("/app/signin")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the first-sight page:\n%s", page)
	}
	return b, page, m[1]
}

// signupForm is a valid "Create my account" post with the page's token.
func signupValues(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "username": {"ida.b"}, "email": {"ida.b@north.example"}, "displayname": {"Ida Berg"},
		"password": {"correct horse battery"}, "password2": {"correct horse battery"}}
}

// TestSignup: a first-time employee creates an instructor account on the first-sight page,
// on both databases: the form is prefilled from the link, bad input and taken names are
// told on the page with nothing created, only a pending session may post it, with the
// session's CSRF token and from this site, a failure inside the store leaves nothing, and
// success signs the new account in with the link's contact in focus; the employee's next
// link signs in directly.
func TestSignup(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			db, driver, dsn := d.open(t)
			logs := &harness.SyncBuffer{}
			f := newFixtureOn(t, "http://localhost:8080", db, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			raw := rawDB(t, driver, dsn)
			accounts := func(t *testing.T) int {
				t.Helper()
				var n int
				if err := raw.QueryRow(`SELECT COUNT(*) FROM accounts`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			before := accounts(t)
			// nothingCreated checks that a refused post left no account and that the employee
			// is still first-time: the page greets it again, ready for another try.
			nothingCreated := func(t *testing.T, b *browser) {
				t.Helper()
				if n := accounts(t); n != before {
					t.Errorf("accounts = %d, want %d (nothing created)", n, before)
				}
				if _, page := b.get("/app/signin"); !strings.Contains(page, `id="signup-section"`) {
					t.Errorf("first-sight page after the refusal lacks the form (pending session lost):\n%s", page)
				}
			}

			t.Run("prefilled", func(t *testing.T) {
				_, page, _ := firstSight(t, f, signupPayload())
				for _, want := range []string{
					`<form method="post" action="/app/signup">`,
					`id="signup-username" name="username" autocomplete="username" required maxlength="64" value="ida.berg.north"`,
					`id="signup-email" name="email" type="email" autocomplete="email" maxlength="254" value="ida@partner.example"`,
					`id="signup-name" name="displayname" autocomplete="name" required maxlength="128" value="Ida Berg"`,
					`autocomplete="new-password" required minlength="12"`,
					`id="signup-password-rules">At least 12 characters; not your username or a password containing it, not one of the commonest passwords (also with digits or symbols added), and not a repeated piece or a sequence such as aaaa or 1234.<`,
					`partner user <strong>Ida Berg</strong>`, `partner <code>demo</code>`, `username <code>ida.berg.north</code>`, `id <code>emp-1</code>`,
					`id="login" name="login" autocomplete="username" required value="ida@partner.example"`,
				} {
					if !strings.Contains(page, want) {
						t.Errorf("first-sight page lacks %q:\n%s", want, page)
					}
				}
				checkNothingInline(t, page)
				if strings.Contains(page, "<script") {
					t.Errorf("first-sight page has a script; it must work without one")
				}
			})

			t.Run("invalid input", func(t *testing.T) {
				b, _, csrf := firstSight(t, f, signupPayload())
				for _, tt := range []struct {
					name string
					set  url.Values
					want string
				}{
					{"password of 11 characters", url.Values{"password": {"eleven-char"}, "password2": {"eleven-char"}}, "at least 12 characters"},
					{"password is the username", url.Values{"username": {"ida.berg.north"}, "password": {"IDA.BERG.NORTH"}, "password2": {"IDA.BERG.NORTH"}}, "must not be your username"},
					// Issue 25: length was the only rule.
					{"password contains the username", url.Values{"password": {"my IDA.B password"}, "password2": {"my IDA.B password"}}, "must not be your username or contain it"},
					{"password repeats the username", url.Values{"username": {"kari.n"}, "password": {"kari.nKARI.N"}, "password2": {"kari.nKARI.N"}}, "must not be your username or contain it"},
					{"one character repeated", url.Values{"password": {"aaaaaaaaaaaa"}, "password2": {"aaaaaaaaaaaa"}}, "repeat a short piece"},
					{"a short piece repeated", url.Values{"password": {"abc1abc1abc1abc1"}, "password2": {"abc1abc1abc1abc1"}}, "repeat a short piece"},
					{"a sequence of letters", url.Values{"password": {"abcdefghijklm"}, "password2": {"abcdefghijklm"}}, "sequence"},
					{"a sequence of digits", url.Values{"password": {"123456789012"}, "password2": {"123456789012"}}, "sequence"},
					{"a sequence down", url.Values{"password": {"zyxwvutsrqpo"}, "password2": {"zyxwvutsrqpo"}}, "sequence"},
					{"a common password", url.Values{"password": {"qwertyuiop12"}, "password2": {"qwertyuiop12"}}, "commonest passwords"},
					{"a common password in capitals", url.Values{"password": {"WINNIETHEPOOH"}, "password2": {"WINNIETHEPOOH"}}, "commonest passwords"},
					{"a common password with digits", url.Values{"password": {"password1234"}, "password2": {"password1234"}}, "commonest passwords"},
					{"a common password with symbols around", url.Values{"password": {"!!Sunshine2024!!"}, "password2": {"!!Sunshine2024!!"}}, "commonest passwords"},
					{"passwords differ", url.Values{"password2": {"correct horse battery!"}}, "two passwords differ"},
					{"no username", url.Values{"username": {" "}}, "Choose a username"},
					{"username with a space", url.Values{"username": {"ida berg"}}, "letters, digits and . - _ @ only"},
					{"e-mail not an address", url.Values{"email": {"Ida <ida@north.example>"}}, "e-mail address is not valid"},
					{"no name", url.Values{"displayname": {""}}, "Give your name"},
					{"name with a bidi override", url.Values{"displayname": {"Ida \u202eBerg"}}, "Give your name"},
				} {
					t.Run(tt.name, func(t *testing.T) {
						v := signupValues(csrf)
						for k, x := range tt.set {
							v[k] = x
						}
						res, page := b.post("/app/signup", v)
						if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, `id="signup-errors"`) || !strings.Contains(page, tt.want) {
							t.Errorf("signup with %v = %d, want 400 saying %q:\n%s", tt.set, res.StatusCode, tt.want, page)
						}
						for _, pw := range []string{v.Get("password"), v.Get("password2")} {
							if strings.Contains(page, `value="`+pw+`"`) {
								t.Errorf("the refused page sent a password back")
							}
						}
						nothingCreated(t, b)
					})
				}
				t.Run("form kept", func(t *testing.T) {
					v := signupValues(csrf)
					v.Set("password2", "something else entirely")
					_, page := b.post("/app/signup", v)
					for _, want := range []string{`value="ida.b"`, `value="ida.b@north.example"`} {
						if !strings.Contains(page, want) {
							t.Errorf("refused form lacks %s as sent:\n%s", want, page)
						}
					}
				})
			})

			t.Run("name taken", func(t *testing.T) {
				b, _, csrf := firstSight(t, f, signupPayload())
				for _, tt := range []struct{ field, value, want string }{
					{"username", "Instructor", "The username Instructor is taken. Choose another one."},
					{"username", "coach@service.example", "is taken"}, // another account's e-mail, a login too
					{"email", "COACH@service.example", "This e-mail address cannot be used for a new account"},
				} {
					v := signupValues(csrf)
					v.Set(tt.field, tt.value)
					res, page := b.post("/app/signup", v)
					if res.StatusCode != http.StatusConflict || !strings.Contains(page, tt.want) {
						t.Errorf("signup with %s %q = %d, want 409 saying %q:\n%s", tt.field, tt.value, res.StatusCode, tt.want, page)
					}
					nothingCreated(t, b)
				}
			})

			t.Run("CSRF and origin", func(t *testing.T) {
				b, _, csrf := firstSight(t, f, signupPayload())
				v := signupValues("")
				v.Del("csrf")
				if res, _ := b.post("/app/signup", v); res.StatusCode != http.StatusForbidden {
					t.Errorf("signup without CSRF token = %d, want 403", res.StatusCode)
				}
				other, _, _ := firstSight(t, f, signupPayload())
				if res, _ := other.post("/app/signup", signupValues(csrf)); res.StatusCode != http.StatusForbidden {
					t.Errorf("signup with another browser's CSRF token = %d, want 403", res.StatusCode)
				}
				for _, origin := range []string{"https://attacker.example", "null"} {
					r := httptest.NewRequest(http.MethodPost, "/app/signup", strings.NewReader(signupValues(csrf).Encode()))
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					r.Header.Set("Origin", origin)
					if res := b.do(r); res.StatusCode != http.StatusForbidden {
						t.Errorf("signup with Origin %q = %d, want 403", origin, res.StatusCode)
					}
				}
				nothingCreated(t, b)
			})

			t.Run("no pending session", func(t *testing.T) {
				anon := newBrowser(t, f.h)
				_, page := anon.get("/app/signin")
				if strings.Contains(page, `id="signup-section"`) || !strings.Contains(page, `id="signup-hint"`) {
					t.Errorf("sign-in page without a link offers the form or lacks the hint:\n%s", page)
				}
				res, page := anon.post("/app/signup", signupValues(csrfField.FindStringSubmatch(page)[1]))
				if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "Open the application from your partner application") {
					t.Errorf("signup without a session = %d, want 403 saying to open the link:\n%s", res.StatusCode, page)
				}
				member, csrf := signedIn(t, f)
				if res, _ := member.post("/app/signup", signupValues(csrf)); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
					t.Errorf("signup with a signed-in session = %d → %q, want 303 → /go", res.StatusCode, res.Header.Get("Location"))
				}
				ended, _, csrf := firstSight(t, f, signupPayload())
				f.now = f.now.Add(16 * time.Minute) // the pending session lasts 15
				res, page = ended.post("/app/signup", signupValues(csrf))
				f.now = f.now.Add(-16 * time.Minute)
				if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "has ended") {
					t.Errorf("signup after the pending session ended = %d, want 403 saying so:\n%s", res.StatusCode, page)
				}
				if n := accounts(t); n != before+1 { // the member's, from signedIn
					t.Errorf("accounts = %d, want %d (only the Go member)", n, before+1)
				}
				before = accounts(t)
			})

			t.Run("rollback", func(t *testing.T) {
				// A failure at the transaction's last write, the new session: the account,
				// the employee's link and the membership written before it must go too.
				fail := map[string][]string{
					"sqlite": {`CREATE TRIGGER fail_session BEFORE INSERT ON sessions BEGIN SELECT RAISE(ABORT, 'injected failure'); END`},
					"postgres": {`CREATE FUNCTION fail_session() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
						`CREATE TRIGGER fail_session BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION fail_session()`},
				}[d.name]
				b, _, csrf := firstSight(t, f, signupPayload())
				for _, q := range fail {
					if _, err := raw.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				res, page := b.post("/app/signup", signupValues(csrf))
				if _, err := raw.Exec(`DROP TRIGGER fail_session` + map[string]string{"postgres": " ON sessions"}[d.name]); err != nil {
					t.Fatal(err)
				}
				if res.StatusCode != http.StatusInternalServerError || !strings.Contains(page, "nothing was saved") {
					t.Errorf("signup with a failing store = %d, want 500 saying nothing was saved:\n%s", res.StatusCode, page)
				}
				nothingCreated(t, b)
				if _, _, err := f.st.InstructorHome(ctx, "ida.b"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("InstructorHome(ida.b) after the failure = %v, want ErrNotFound", err)
				}
				var members int
				if err := raw.QueryRow(`SELECT COUNT(*) FROM memberships`).Scan(&members); err != nil || members != 1 {
					t.Errorf("memberships = %d, %v, want 1 (the bootstrap instructor's)", members, err)
				}
				if res := newBrowser(t, f.h).signInByLink(f.link(t, signupPayload(), "main")); res.Header.Get("Location") != "/app/signin" {
					t.Errorf("employee's next link after the failure → %q, want /app/signin (not linked)", res.Header.Get("Location"))
				}
			})

			t.Run("success", func(t *testing.T) {
				b, _, csrf := firstSight(t, f, signupPayload())
				late, _, lateCSRF := firstSight(t, f, signupPayload()) // the same employee in another tab
				pending := cookieOf(t, b, sessionCookie).Value
				res, _ := b.post("/app/signup", signupValues(csrf))
				if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
					t.Fatalf("signup = %d → %q, want 303 → /app", res.StatusCode, res.Header.Get("Location"))
				}
				if tok := cookieOf(t, b, sessionCookie).Value; tok == pending {
					t.Errorf("session token kept after creating the account, want a new one")
				}
				if _, err := f.st.Session(ctx, pending); !errors.Is(err, store.ErrNoSession) {
					t.Errorf("pending session after the account = %v, want ErrNoSession", err)
				}
				_, page := b.get("/app")
				for _, want := range []string{`id="account">Ida Berg<`, `id="organization">North Clinic<`, `id="contact-name">Åse Nordmann<`, `id="case">case-9<`} {
					if !strings.Contains(page, want) {
						t.Errorf("app page after signup lacks %q:\n%s", want, page)
					}
				}
				if n := accounts(t); n != before+1 {
					t.Errorf("accounts = %d, want %d", n, before+1)
				}

				sso := newBrowser(t, f.h)
				if res := sso.signInByLink(f.link(t, signupPayload(), "main")); res.Header.Get("Location") != "/app" {
					t.Errorf("employee's next link → %q, want /app (single sign-on)", res.Header.Get("Location"))
				}
				if _, page := sso.get("/app"); !strings.Contains(page, `id="account">Ida Berg<`) {
					t.Errorf("app page after the next link is not Ida Berg's:\n%s", page)
				}
				if in, err := f.st.SignIn(ctx, "IDA.B@north.example", "correct horse battery", ""); err != nil || in.Session.Organization == nil || in.Session.Organization.Name != "North Clinic" {
					t.Errorf("password sign-in by e-mail = %+v, %v, want it in North Clinic", in, err)
				}

				// The other tab's pending session is for the same employee, now linked: the
				// account it would create is rolled back with the link it could not make.
				v := signupValues(lateCSRF)
				v.Set("username", "ida.other")
				v.Set("email", "")
				res, page = late.post("/app/signup", v)
				if res.StatusCode != http.StatusConflict || !strings.Contains(page, "This partner user has an account already") {
					t.Errorf("second account for the employee = %d, want 409 saying so:\n%s", res.StatusCode, page)
				}
				if _, _, err := f.st.InstructorHome(ctx, "ida.other"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("InstructorHome(ida.other) = %v, want ErrNotFound (rolled back)", err)
				}
				if n := accounts(t); n != before+1 {
					t.Errorf("accounts = %d, want %d", n, before+1)
				}
			})

			t.Run("logs", func(t *testing.T) {
				out := logs.String()
				if !strings.Contains(out, `"outcome":"account_created"`) || !strings.Contains(out, `"outcome":"username_taken"`) {
					t.Errorf("logs lack the outcomes:\n%s", out)
				}
				for _, secret := range []string{"correct horse", "eleven-char", "ida.b", "ida.berg", "Ida", "Berg", "north.example", "Instructor", "coach@"} {
					if strings.Contains(out, secret) {
						t.Errorf("logs hold %q:\n%s", secret, out)
					}
				}
			})
		})
	}
}

// TestSignupLimited: account creation hashes a password, so the sign-in bounds apply to it:
// an address that has used up its attempts gets 429 on the form with Retry-After, and no
// account.
func TestSignupLimited(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b, _, csrf := firstSight(t, f, signupPayload())
	for i := 0; i < signInPerAddress; i++ {
		if _, err := f.st.CountSignIn(context.Background(), "192.0.2.1", "guess-"+strconv.Itoa(i), signInLimits); err != nil {
			t.Fatal(err)
		}
	}
	v := signupValues(csrf)
	r := httptest.NewRequest(http.MethodPost, "/app/signup", strings.NewReader(v.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = "192.0.2.1:4711"
	res := b.do(r)
	page := body(t, res)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(page, "Too many attempts") {
		t.Errorf("signup from a limited address = %d Retry-After %q, want 429 with Retry-After:\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	if _, _, err := f.st.InstructorHome(context.Background(), "ida.b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("InstructorHome(ida.b) = %v, want ErrNotFound", err)
	}
}

// TestSignupMemberEmailFree: Go members never sign in with a password, so their e-mail
// addresses cannot collide with an instructor's sign-in and are no reason to refuse a new
// account: the form confirms nothing about who is a member (issue 25: a member's e-mail
// answered 409 "An account with this e-mail address exists already"). An instructor's
// e-mail is refused in words that name no kind of account.
func TestSignupMemberEmailFree(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			db, _, _ := d.open(t)
			f := newFixtureOn(t, "http://localhost:8080", db, nil)
			signedIn(t, f) // the Go member Kari, kari@example.com
			ola := goPayload()
			ola.Contact = &linkspec.Contact{ID: "c-3", Firstname: "Ola", Lastname: "Nordmann", Email: "ola@example.com"}
			if res := newBrowser(t, f.h).signInByLink(f.link(t, ola, "go")); res.Header.Get("Location") != "/go" {
				t.Fatalf("Ola's Go login → %q, want /go", res.Header.Get("Location"))
			}
			employee := func(id string) *linkspec.Payload {
				p := mainPayload()
				p.EmployeeID, p.EmployeeUsername = id, ""
				return p
			}

			b, _, csrf := firstSight(t, f, employee("emp-m1"))
			v := signupValues(csrf)
			v.Set("username", "kari.coach")
			v.Set("email", "Kari@Example.com")
			if res, page := b.post("/app/signup", v); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
				t.Fatalf("signup with a member's e-mail = %d → %q, want 303 → /app:\n%s", res.StatusCode, res.Header.Get("Location"), page)
			}

			b, _, csrf = firstSight(t, f, employee("emp-m2"))
			v = signupValues(csrf)
			v.Set("username", "ola@example.com")
			v.Set("email", "")
			if res, page := b.post("/app/signup", v); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
				t.Fatalf("signup with a member's e-mail as username = %d → %q, want 303 → /app:\n%s", res.StatusCode, res.Header.Get("Location"), page)
			}

			// The new instructor signs in with the address the member has too.
			in := newBrowser(t, f.h)
			_, page := in.get("/app/signin")
			if res, _ := in.post("/app/signin", url.Values{"login": {"kari@example.com"}, "password": {"correct horse battery"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
				t.Errorf("sign-in by the shared e-mail = %d → %q, want 303 → /app", res.StatusCode, res.Header.Get("Location"))
			}

			// An instructor's e-mail is still refused, without saying whose it is.
			b, _, csrf = firstSight(t, f, employee("emp-m3"))
			v = signupValues(csrf)
			v.Set("username", "third.one")
			v.Set("email", "KARI@example.com")
			res, page := b.post("/app/signup", v)
			const want = "This e-mail address cannot be used for a new account: if it is yours, sign in with it above; otherwise give another address, or none."
			if res.StatusCode != http.StatusConflict || !strings.Contains(page, want) || strings.Contains(page, "exists") || strings.Contains(page, "member") {
				t.Errorf("signup with an instructor's e-mail = %d, want 409 saying only %q:\n%s", res.StatusCode, want, page)
			}
		})
	}
}
