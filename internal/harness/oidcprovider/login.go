package oidcprovider

import (
	"context"
	"html/template"
	"net/http"
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
