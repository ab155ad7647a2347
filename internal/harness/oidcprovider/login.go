package oidcprovider

import (
	"context"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"testing"
)

const (
	// loginPath is the provider's login form, where op sends a sign-in with its id in
	// authRequestID.
	loginPath = "/login/username"
	// loggedOutPath is where end_session ends without a post_logout_redirect_uri.
	loggedOutPath = "/logged-out"
)

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test provider: sign in</title></head>
<body>
<h1>Sign in to the test provider</h1>
{{with .Error}}<p id="provider-error">{{.}}</p>{{end}}
<form method="post" action="` + loginPath + `">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input name="username" value="{{.Username}}" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button>
</form>
</body></html>`))

// login is the provider's login form: a username and a password, as a directory's own
// sign-in page asks; the sign-in's login_hint fills the username.
type login struct {
	st       *storage
	callback func(ctx context.Context, id string) string
}

func (l *login) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		id := r.URL.Query().Get("authRequestID")
		l.render(w, http.StatusOK, id, l.st.loginHint(id), "")
	case http.MethodPost:
		id, username := r.PostFormValue("id"), r.PostFormValue("username")
		if err := l.st.checkLogin(id, username, r.PostFormValue("password")); err != nil {
			l.render(w, http.StatusOK, id, username, err.Error())
			return
		}
		http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (l *login) render(w http.ResponseWriter, status int, id, username, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, map[string]string{"ID": id, "Username": username, "Error": msg})
}

// SignIn is a person at the provider, with a plain HTTP client: it follows authURL (a
// relying party's authorization URL), signs username in on the login form and returns
// where the provider then sends the browser, the relying party's redirect URI with the
// code and state (followed no further).
func SignIn(t testing.TB, authURL, username, password string) *url.URL {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != u.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := loginID.FindSubmatch(page)
	if m == nil {
		t.Fatalf("the provider's login form has no sign-in id (%d):\n%s", res.StatusCode, page)
	}
	res, err = c.PostForm(res.Request.URL.ResolveReference(&url.URL{Path: loginPath}).String(),
		url.Values{"id": {string(m[1])}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := res.Location()
	if err != nil {
		t.Fatalf("the provider's login answered %d without a redirect to the client", res.StatusCode)
	}
	return loc
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)
