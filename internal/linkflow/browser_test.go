package linkflow

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestClickSubmitsTheButtonsForm: a click posts the fields of the form that holds the
// button, whatever the order of their attributes, with the button's name and value and the
// fields given in place of the page's; cookies the site set go along, and the browser lands
// where the answer redirects.
func TestClickSubmitsTheButtonsForm(t *testing.T) {
	var got url.Values
	var cookie, origin string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /form", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "csrf", Value: "cookie-value", Path: "/"})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>t</title>
<form method="post" action="/other"><input type="hidden" name="csrf" value="wrong-form"><button id="other">x</button></form>
<form action="/submit" method="POST" class="choice">
<input value="tok-1" type="hidden" name="csrf">
<input name="login" value="prefilled">
<input type="checkbox" name="remember">
<button type="submit" name="action" value="link" id="confirm">Link</button>
<button type="submit" name="action" value="decline" id="decline">No</button>
</form>`))
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		got = r.PostForm
		origin = r.Header.Get("Origin")
		if c, err := r.Cookie("csrf"); err == nil {
			cookie = c.Value
		}
		http.Redirect(w, r, "/landed", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /landed", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<p id="where">  the   landing </p>`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b, err := NewBrowser(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Open(ctx, "/form"); err != nil {
		t.Fatal(err)
	}
	p, err := b.Click(ctx, "confirm", url.Values{"login": {"instructor"}})
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"csrf": {"tok-1"}, "login": {"instructor"}, "action": {"link"}}
	if got.Encode() != want.Encode() {
		t.Errorf("posted %q, want %q", got.Encode(), want.Encode())
	}
	if cookie != "cookie-value" || origin != srv.URL {
		t.Errorf("cookie %q, Origin %q, want cookie-value and %s", cookie, origin, srv.URL)
	}
	if p.Status != http.StatusOK || p.Path() != "/landed" || p.Text("where") != "the landing" {
		t.Errorf("landed on %s with #where %q, want 200 /landed with %q", p, p.Text("where"), "the landing")
	}
	if _, err := b.Click(ctx, "confirm", nil); err == nil {
		t.Error("a click on a button the page does not have succeeded")
	}
}

// TestAPISendsTheCSRFTokenOnChanges: the API's changes carry the token Status read, and the
// site's Origin; a GET carries neither, and an answer other than the one wanted is an error
// that names it.
func TestAPISendsTheCSRFTokenOnChanges(t *testing.T) {
	var token, origin string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/api/status", func(w http.ResponseWriter, r *http.Request) {
		token = r.Header.Get("X-CSRF-Token")
		w.Write([]byte(`{"signedIn":true,"csrfToken":"api-token","person":{"id":7,"name":"Ola Nordmann"}}`))
	})
	mux.HandleFunc("POST /app/api/workouts", func(w http.ResponseWriter, r *http.Request) {
		token, origin = r.Header.Get("X-CSRF-Token"), r.Header.Get("Origin")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":3,"name":"Plan","personId":7,"exerciseCount":4}`))
	})
	mux.HandleFunc("GET /app/api/me/workouts", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"not_signed_in"}`, http.StatusUnauthorized)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b, err := NewBrowser(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := b.Status(ctx)
	if err != nil || st.Person == nil || st.Person.ID != 7 || token != "" {
		t.Fatalf("Status = %+v, %v (sent token %q), want person 7 and no token sent", st, err, token)
	}
	w, err := b.NewPlan(ctx, 7, 1)
	if err != nil || w.ID != 3 || w.ExerciseCount != 4 {
		t.Fatalf("NewPlan = %+v, %v", w, err)
	}
	if token != "api-token" || origin != srv.URL {
		t.Errorf("NewPlan sent token %q and Origin %q, want api-token and %s", token, origin, srv.URL)
	}
	var apiErr *APIError
	if _, err := b.MyPlans(ctx); err == nil || !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Errorf("MyPlans on a 401 = %v, want an APIError with status 401", err)
	}
}
