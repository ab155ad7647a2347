// Package linkflow walks the link flow over HTTP as a person's browser does, without a
// script: a partner's link signed and sent to the gateway, the login URL opened, the
// sign-in and the link confirmation of a first visit, and the web application's JSON API
// called as its pages call it. The demo's self-test (`./run.sh --check`, cmd/demo) and the
// end-to-end tests (integration/e2e) both walk it here, so that a change of the flow breaks
// both or neither.
//
// Pages are read with golang.org/x/net/html by the templates' stable ids (a button's id,
// its form, the form's fields), never by the order of attributes; the API's answers with
// encoding/json.
package linkflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// maxBody bounds what the browser reads of one answer.
const maxBody = 4 << 20

// Browser is one person's browser on the gateway's site: its own cookie jar, redirects
// followed, the last page it shows, and the CSRF token of the application's JSON API
// (taken from Status).
type Browser struct {
	site   *url.URL
	client *http.Client
	page   *Page
	csrf   string
}

// NewBrowser returns a fresh browser (no cookies) for the site at gateway, for example
// "http://localhost:8080". transport, when not nil, carries its requests (an HTTPS test
// stack's trusted root); nil is http.DefaultTransport.
func NewBrowser(gateway string, transport http.RoundTripper) (*Browser, error) {
	site, err := url.Parse(gateway)
	if err != nil || site.Scheme == "" || site.Host == "" {
		return nil, fmt.Errorf("gateway %q is not an absolute URL", gateway)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	return &Browser{site: site, client: &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second}}, nil
}

// Page is a page the browser shows: where it landed after redirects, its status and its
// parsed document.
type Page struct {
	Status int
	URL    *url.URL
	Body   []byte
	doc    *html.Node
}

// Path is the path the page landed on ("/app", "/go", "/app/signin").
func (p *Page) Path() string { return p.URL.Path }

// Has reports whether the page has an element with id.
func (p *Page) Has(id string) bool { return p.doc != nil && byID(p.doc, id) != nil }

// Text returns the text of the element with id, spaces trimmed; "" without one.
func (p *Page) Text(id string) string {
	if p.doc == nil {
		return ""
	}
	n := byID(p.doc, id)
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// String names the page for an error message: status, path, and the problem code of a
// refusal page.
func (p *Page) String() string {
	s := fmt.Sprintf("%d %s", p.Status, p.URL.Path)
	if code := p.Text("code"); code != "" {
		s += " (" + code + ")"
	}
	return s
}

// Page returns the page the browser shows, nil before the first.
func (b *Browser) Page() *Page { return b.page }

// Open navigates to u (absolute, or a path on the site) and returns the page it lands on.
func (b *Browser) Open(ctx context.Context, u string) (*Page, error) {
	target, err := b.site.Parse(u)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, err
	}
	return b.load(req)
}

// Click submits the form of the current page that holds the button with id, as a browser
// does when the person presses it: the form's fields as the page set them, those of
// fields in their place, and the button's own name and value.
func (b *Browser) Click(ctx context.Context, id string, fields url.Values) (*Page, error) {
	if b.page == nil || b.page.doc == nil {
		return nil, fmt.Errorf("clicking #%s: no page", id)
	}
	button := byID(b.page.doc, id)
	if button == nil {
		return nil, fmt.Errorf("clicking #%s: the page %s has none", id, b.page)
	}
	form := button
	for form != nil && !(form.Type == html.ElementNode && form.Data == "form") {
		form = form.Parent
	}
	if form == nil {
		return nil, fmt.Errorf("clicking #%s: it is in no form on %s", id, b.page)
	}
	values := url.Values{}
	var collect func(*html.Node)
	collect = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "input" && attr(n, "name") != "" {
			switch attr(n, "type") {
			case "submit", "button", "image", "reset", "file":
			case "checkbox", "radio":
				if hasAttr(n, "checked") {
					values.Add(attr(n, "name"), valueOr(n, "on"))
				}
			default:
				values.Add(attr(n, "name"), attr(n, "value"))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			collect(c)
		}
	}
	collect(form)
	for name, vs := range fields {
		values[name] = vs
	}
	if name := attr(button, "name"); name != "" {
		values.Set(name, attr(button, "value"))
	}
	action, err := b.page.URL.Parse(attr(form, "action"))
	if err != nil {
		return nil, fmt.Errorf("clicking #%s: form action: %v", id, err)
	}
	var req *http.Request
	if strings.EqualFold(attr(form, "method"), http.MethodPost) {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, action.String(), strings.NewReader(values.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", origin(b.page.URL))
		}
	} else {
		action.RawQuery = values.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, action.String(), nil)
	}
	if err != nil {
		return nil, err
	}
	return b.load(req)
}

// load sends req, follows redirects and keeps the page it lands on.
func (b *Browser) load(req *http.Request) (*Page, error) {
	req.Header.Set("Accept", "text/html")
	res, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", res.Request.URL.Path, err)
	}
	p := &Page{Status: res.StatusCode, URL: res.Request.URL, Body: body}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/html" {
		if p.doc, err = html.Parse(bytes.NewReader(body)); err != nil {
			return nil, fmt.Errorf("reading the page %s: %v", p.URL.Path, err)
		}
	}
	b.page = p
	return p, nil
}

// OpenLogin opens a login URL as the person it was sent to does: its page, then its
// button. A browser new to the link's account is asked "Continue as …?" and the person
// answers Continue. It returns the page the login ends on: the application, the sign-in
// page of a first visit, or the refusal page (a code used already).
func (b *Browser) OpenLogin(ctx context.Context, loginURL string) (*Page, error) {
	p, err := b.Open(ctx, loginURL)
	if err != nil {
		return nil, err
	}
	for _, id := range []string{"ask-continue", "login-continue"} {
		if p.Has(id) {
			return b.Click(ctx, id, nil)
		}
	}
	return p, nil
}

// SignIn signs in on the sign-in page the browser shows, with a service account's login
// name (or e-mail) and password.
func (b *Browser) SignIn(ctx context.Context, login, password string) (*Page, error) {
	return b.Click(ctx, "signin", url.Values{"login": {login}, "password": {password}})
}

// ConfirmLink answers the question of a first visit's link page ("link the partner user
// to this account?") with yes.
func (b *Browser) ConfirmLink(ctx context.Context) (*Page, error) {
	return b.Click(ctx, "link-confirm", nil)
}

// APIError is an answer of the JSON API other than the one the call wants.
type APIError struct {
	Method, Path string
	Status       int
	Body         []byte
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s /app/api/%s answered %d %s", e.Method, e.Path, e.Status, bytes.TrimSpace(e.Body))
}

// API calls the application's JSON API at /app/api/<path> as its pages do: Accept JSON,
// and on a change its CSRF token (from Status) and the site's Origin. in, when not nil, is
// sent as JSON; the answer must have status want and is decoded into out when not nil.
func (b *Browser) API(ctx context.Context, method, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	target := b.site.JoinPath("/app/api/")
	u, err := target.Parse(path)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Origin", origin(b.site))
		req.Header.Set("X-CSRF-Token", b.csrf)
	}
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return &APIError{Method: method, Path: path, Status: res.StatusCode, Body: data}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s /app/api/%s: reading the answer: %v", method, path, err)
		}
	}
	return nil
}

// Status is the application's session as its pages read it (GET /app/api/status).
type Status struct {
	SignedIn     bool   `json:"signedIn"`
	Role         string `json:"role"`
	CaseID       string `json:"caseId"`
	CSRFToken    string `json:"csrfToken"`
	Organization *struct {
		Name string `json:"name"`
	} `json:"organization"`
	// Person is the contact in focus; nil when none is.
	Person *Person `json:"person"`
}

// Person is a person as the API answers one.
type Person struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Workout is a plan or a template as the API lists it.
type Workout struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	Organization  string `json:"organization"`
	PersonID      int64  `json:"personId"`
	Template      bool   `json:"template"`
	ExerciseCount int    `json:"exerciseCount"`
}

// Status reads the session and keeps its CSRF token for the API's changes.
func (b *Browser) Status(ctx context.Context) (*Status, error) {
	var s Status
	if err := b.API(ctx, http.MethodGet, "status", nil, http.StatusOK, &s); err != nil {
		return nil, err
	}
	if s.CSRFToken != "" {
		b.csrf = s.CSRFToken
	}
	return &s, nil
}

// workouts lists the plans or templates of a GET.
func (b *Browser) workouts(ctx context.Context, path string) ([]Workout, error) {
	var v struct {
		Workouts []Workout `json:"workouts"`
	}
	if err := b.API(ctx, http.MethodGet, path, nil, http.StatusOK, &v); err != nil {
		return nil, err
	}
	return v.Workouts, nil
}

// Plans lists the plans of the person with id, as the instructor sees them.
func (b *Browser) Plans(ctx context.Context, person int64) ([]Workout, error) {
	return b.workouts(ctx, fmt.Sprintf("workouts?personId=%d", person))
}

// Templates lists up to limit of the template library's plans.
func (b *Browser) Templates(ctx context.Context, limit int) ([]Workout, error) {
	return b.workouts(ctx, fmt.Sprintf("workouts?template=true&limit=%d", limit))
}

// NewPlan gives the person with id a plan made from the template with id, as the
// application's New plan does, and returns it.
func (b *Browser) NewPlan(ctx context.Context, person, template int64) (*Workout, error) {
	var w Workout
	err := b.API(ctx, http.MethodPost, "workouts", map[string]int64{"personId": person, "templateId": template}, http.StatusCreated, &w)
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// MyPlans lists the plans made for the member a Go link signed in.
func (b *Browser) MyPlans(ctx context.Context) ([]Workout, error) {
	return b.workouts(ctx, "me/workouts")
}

// origin is u's origin as a browser sends it in the Origin header.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func byID(n *html.Node, id string) *html.Node {
	if n.Type == html.ElementNode && attr(n, "id") == id {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if found := byID(c, id); found != nil {
			return found
		}
	}
	return nil
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, name string) bool {
	for _, a := range n.Attr {
		if a.Key == name {
			return true
		}
	}
	return false
}

func valueOr(n *html.Node, def string) string {
	if hasAttr(n, "value") {
		return attr(n, "value")
	}
	return def
}
