package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
)

// deviceRequest is a request that carries value as its device cookie.
func deviceRequest(value string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/app/login", nil)
	r.AddCookie(&http.Cookie{Name: deviceCookie, Value: value})
	return r
}

// remembered is the device cookie rememberDevice sets on top of r's for account.
func remembered(t *testing.T, h *Handler, r *http.Request, account int64) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.rememberDevice(w, r, &store.Session{Account: &store.Account{ID: account}})
	for _, c := range w.Result().Cookies() {
		if c.Name == deviceCookie {
			return c.Value
		}
	}
	t.Fatalf("rememberDevice(%d) set no %s cookie", account, deviceCookie)
	return ""
}

// TestDeviceCookie: the list holds account ids only, most recent first, at most
// maxDeviceAccounts of them within maxDeviceCookie characters; a value the service did
// not make, or made with another key or for another use, lists nothing.
func TestDeviceCookie(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	h := f.h
	v := remembered(t, h, httptest.NewRequest(http.MethodGet, "/", nil), 7)
	v = remembered(t, h, deviceRequest(v), 3)
	v = remembered(t, h, deviceRequest(v), 7)
	if got := h.deviceAccounts(deviceRequest(v)); fmt.Sprint(got) != "[7 3]" {
		t.Errorf("deviceAccounts after 7, 3, 7 = %v, want [7 3]", got)
	}
	if strings.Contains(v, "Demo") || len(v) > 60 {
		t.Errorf("device cookie %q, want the ids and a MAC only", v)
	}

	t.Run("bounded", func(t *testing.T) {
		v := ""
		for id := int64(1); id <= 50; id++ {
			v = remembered(t, h, deviceRequest(v), id<<56) // the longest ids
		}
		got := h.deviceAccounts(deviceRequest(v))
		if len(got) != maxDeviceAccounts || got[0] != 50<<56 || got[maxDeviceAccounts-1] != 31<<56 || len(v) > maxDeviceCookie {
			t.Errorf("after 50 accounts: %d listed (first %d), value of %d characters; want the last %d, at most %d characters",
				len(got), got[0]>>56, len(v), maxDeviceAccounts, maxDeviceCookie)
		}
	})

	other, err := New(Config{Store: f.st, UpstreamSecret: upstreamSecret, AppSecret: []byte("another-app-secret-0123456789abcdef-xyz")})
	if err != nil {
		t.Fatal(err)
	}
	body, mac, _ := strings.Cut(v, ".")
	for name, value := range map[string]string{
		"another service's":       remembered(t, other, httptest.NewRequest(http.MethodGet, "/", nil), 7),
		"list changed":            body + "A." + mac,
		"MAC changed":             body + "." + strings.ToUpper(mac[:1]) + strings.ToLower(mac[1:]),
		"no MAC":                  body,
		"a CSRF cookie":           h.mintCSRFCookie("anon"),
		"too long":                strings.Repeat("A", maxDeviceCookie) + "." + h.deviceMAC(strings.Repeat("A", maxDeviceCookie)),
		"another version":         "Ag." + h.deviceMAC("Ag"),
		"an id of zero":           "AQA." + h.deviceMAC("AQA"),
		"an unfinished id":        "AYA." + h.deviceMAC("AYA"),
		"not base64":              "A*A." + h.deviceMAC("A*A"),
		"empty list of a version": "AQ." + h.deviceMAC("AQ"),
	} {
		if got := h.deviceAccounts(deviceRequest(value)); len(got) != 0 {
			t.Errorf("%s device cookie %q lists %v, want nothing", name, value, got)
		}
	}
}

// clockJar is a browser's cookie store for one site on the fixture's clock, as Chromium
// keeps it: a cookie with Max-Age lives that long from when it was last set, one without
// until the browser is closed (restart).
type clockJar struct {
	now     func() time.Time
	cookies map[string]jarCookie
}

type jarCookie struct {
	value   string
	expires time.Time // zero: until the browser closes
}

func (j *clockJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	for _, c := range cs {
		switch {
		case c.MaxAge < 0: // Max-Age=0 or less: deleted
			delete(j.cookies, c.Name)
		case c.MaxAge > 0:
			j.cookies[c.Name] = jarCookie{c.Value, j.now().Add(time.Duration(c.MaxAge) * time.Second)}
		default:
			j.cookies[c.Name] = jarCookie{value: c.Value}
		}
	}
}

func (j *clockJar) Cookies(*url.URL) []*http.Cookie {
	var out []*http.Cookie
	for name, c := range j.cookies {
		if c.expires.IsZero() || j.now().Before(c.expires) {
			out = append(out, &http.Cookie{Name: name, Value: c.value})
		}
	}
	return out
}

// restart closes the browser and opens it again: the cookies without Max-Age are gone.
func (j *clockJar) restart() {
	for name, c := range j.cookies {
		if c.expires.IsZero() {
			delete(j.cookies, name)
		}
	}
}

// dailyBrowser is one person's browser on the fixture's clock.
func dailyBrowser(t *testing.T, f *fixture) (*browser, *clockJar) {
	jar := &clockJar{now: func() time.Time { return f.now }, cookies: map[string]jarCookie{}}
	return &browser{t: t, h: f.h, jar: jar}, jar
}

// opens opens a link of p in b as its person does (Continue when asked) and reports
// whether the browser was asked; the link must land on want.
func opens(t *testing.T, f *fixture, b *browser, p *linkspec.Payload, kind, want string) (asked bool) {
	t.Helper()
	path := f.link(t, p, kind)
	_, page := b.get(path)
	asked = askForm.FindStringSubmatch(page) != nil
	if res := b.signInByLink(path); res.Header.Get("Location") != want {
		t.Fatalf("%s: link → %d %q, want %s", f.now.Format(time.DateTime), res.StatusCode, res.Header.Get("Location"), want)
	}
	return asked
}

// TestDailyUserIsNeverAsked measures the question's cost to the people it is not for: a
// person who uses one browser every working day over a year and a half (weekends, five-week
// holidays, a three-month leave, the browser closed every night, sessions that end after
// 12 hours, a link late in the evening after the morning's session ended) is asked at most
// on their very first link in it, and never after: an instructor, whose first link is the
// first-sight sign-in with a password, never; a Go member once. The device cookie lives
// 400 days and is renewed at every sign-in, so it outlives the longest absence here; a
// browser left unused longer than that asks again (TestDeviceCookieLifetime).
func TestDailyUserIsNeverAsked(t *testing.T) {
	days := 550
	working := func(day int, d time.Time) bool {
		holiday := day >= 180 && day < 215 || day >= 330 && day < 365+60 || day >= 500 && day < 535 // 5 weeks, 3 months, 5 weeks
		return d.Weekday() != time.Saturday && d.Weekday() != time.Sunday && !holiday
	}
	for _, tt := range []struct {
		name, kind, landing string
		payload             func(day int) *linkspec.Payload
		firstDay            func(t *testing.T, f *fixture, b *browser) // the account's first link in this browser
		wantAsked           int
	}{
		{"instructor", "main", "/app", func(day int) *linkspec.Payload {
			p := mainPayload()
			p.Contact = &linkspec.Contact{ID: fmt.Sprintf("c-%d", day%40), Firstname: "Åse", Lastname: "Nordmann"}
			return p
		}, func(t *testing.T, f *fixture, b *browser) {
			if asked := opens(t, f, b, mainPayload(), "main", "/app/signin"); asked {
				t.Error("first-sight link asked")
			}
			_, page := b.get("/app/signin")
			b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
			_, page = b.get("/app/link")
			b.post("/app/link", url.Values{"action": {"link"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
		}, 0},
		{"Go member", "go", "/go", func(int) *linkspec.Payload { return goPayload() }, func(t *testing.T, f *fixture, b *browser) {
			if asked := opens(t, f, b, goPayload(), "go", "/go"); !asked {
				t.Error("the member's first link in a new browser was not asked")
			}
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "http://localhost:8080")
			start := f.now.Truncate(24 * time.Hour)
			b, jar := dailyBrowser(t, f)
			f.now = start.Add(8 * time.Hour)
			tt.firstDay(t, f, b)
			asked, links := 0, 0
			for day := 1; day < days; day++ {
				d := start.AddDate(0, 0, day)
				if !working(day, d) {
					continue
				}
				jar.restart() // the browser was closed overnight
				hours := []int{8, 13}
				if day%7 == 3 {
					hours = append(hours, 21) // the morning's 12-hour session has ended
				}
				for _, hour := range hours {
					f.now = d.Add(time.Duration(hour) * time.Hour)
					if opens(t, f, b, tt.payload(day), tt.kind, tt.landing) {
						asked++
						t.Errorf("asked on day %d (%s)", day, f.now.Format(time.DateTime))
					}
					links++
				}
			}
			if asked != tt.wantAsked {
				t.Errorf("asked %d times in %d links over %d days, want %d", asked, links, days, tt.wantAsked)
			}
			t.Logf("%s: asked %d times in %d links over %d days after the first", tt.name, asked, links, days)
		})
	}
}

// TestDeviceCookieLifetime: the device cookie is renewed at every sign-in, so a browser
// used again within 400 days of its last sign-in goes straight in however long ago its
// first one was; one left unused for longer asks again.
func TestDeviceCookieLifetime(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b, jar := dailyBrowser(t, f)
	if !opens(t, f, b, goPayload(), "go", "/go") {
		t.Fatal("first link in a new browser was not asked")
	}
	for _, tt := range []struct {
		after time.Duration
		asked bool
	}{
		{399 * 24 * time.Hour, false},
		{399 * 24 * time.Hour, false}, // 798 days after the first sign-in: renewed at 399
		{401 * 24 * time.Hour, true},
	} {
		f.now = f.now.Add(tt.after)
		jar.restart()
		if asked := opens(t, f, b, goPayload(), "go", "/go"); asked != tt.asked {
			t.Errorf("link %v after the last sign-in: asked %v, want %v", tt.after, asked, tt.asked)
		}
	}
}
