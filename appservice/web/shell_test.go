package web

import (
	"encoding/json"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
)

// TestShellViews: every view path answers the one shell, for the role it belongs to, with
// the strict CSP and nothing inline that the CSP would have to allow.
func TestShellViews(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	instructor := newBrowser(t, f.h)
	instructor.signInByLink(f.link(t, mainPayload(), "main")) // first sight: sign in, confirm the link
	_, page := instructor.get("/app/signin")
	instructor.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	_, page = instructor.get("/app/link")
	instructor.post("/app/link", url.Values{"action": {"link"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	member := newBrowser(t, f.h)
	member.signInByLink(f.link(t, goPayload(), "go"))

	views := map[string]*browser{
		"/app": instructor, "/app/persons": instructor, "/app/persons/1": instructor, "/app/exercises": instructor,
		"/app/exercises/3": instructor, "/app/workouts": instructor, "/app/workouts/7": instructor,
		"/app/templates": instructor, "/app/cases/case-9": instructor, "/app/devices": instructor, "/go": member, "/go/workouts/7": member,
	}
	wantCSP := "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self' http://partner.localhost:*"
	for p, b := range views {
		t.Run(p, func(t *testing.T) {
			res, page := b.get(p)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", p, res.StatusCode)
			}
			role, want := "instructor", wantCSP
			if b == member {
				// Go's shell may also register its service worker and read its manifest.
				role, want = "member", strings.Replace(wantCSP, "connect-src 'self'; ", "connect-src 'self'; worker-src 'self'; manifest-src 'self'; ", 1)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != want {
				t.Errorf("GET %s CSP = %q, want %q", p, got, want)
			}
			for _, want := range []string{`<meta name="app-role" content="` + role + `">`, `<meta name="csrf-token" content="`,
				`<script type="module" src="/app/static/app/main.js" async></script>`, `id="signout"`, `id="organization">North Clinic<`} {
				if !strings.Contains(page, want) {
					t.Errorf("GET %s lacks %q:\n%s", p, want, page)
				}
			}
			checkNothingInline(t, page)
		})
	}
	t.Run("contact in focus", func(t *testing.T) {
		_, page := instructor.get("/app/workouts/7")
		for _, want := range []string{`id="account">Demo Instructor<`, `id="contact-name">Åse Nordmann<`, `id="contact-birthdate">1990-01-31<`, `id="case">case-9<`} {
			if !strings.Contains(page, want) {
				t.Errorf("shell lacks %q:\n%s", want, page)
			}
		}
	})
	t.Run("other role", func(t *testing.T) {
		if res, _ := member.get("/app/workouts"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
			t.Errorf("member GET /app/workouts = %d → %q, want 303 → /go", res.StatusCode, res.Header.Get("Location"))
		}
		if res, _ := instructor.get("/go/workouts/7"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
			t.Errorf("instructor GET /go/workouts/7 = %d → %q, want 303 → /app", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("not a view", func(t *testing.T) {
		for _, p := range []string{"/app/nothing", "/app/persons/1/more", "/go/plans", "/app/api/nothing"} {
			if res, page := instructor.get(p); res.StatusCode != http.StatusNotFound || strings.Contains(page, "main.js") {
				t.Errorf("GET %s = %d, want 404 without the shell", p, res.StatusCode)
			}
		}
	})
}

// TestShellWithoutSession: /app sends to the sign-in page as before; a deeper view (an old
// bookmark, a reload after the session expired) and Go say that the session ended.
func TestShellWithoutSession(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	if res, _ := b.get("/app"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/signin" {
		t.Errorf("GET /app = %d → %q, want 303 → /app/signin", res.StatusCode, res.Header.Get("Location"))
	}
	for p, want := range map[string]string{
		"/app/workouts/7": "Your session has ended. Open the link again from your partner application, or sign in.",
		"/go":             "Your session has ended. Open Go again from the application of your clinic or center.",
		"/go/workouts/7":  "Your session has ended.",
	} {
		res, page := b.get(p)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, `id="session-ended"`) || !strings.Contains(page, want) {
			t.Errorf("GET %s = %d, want 401 with the session-ended view saying %q:\n%s", p, res.StatusCode, want, page)
		}
		if strings.Contains(page, `id="signout"`) || !strings.Contains(page, `<meta name="app-signed-in" content="false">`) {
			t.Errorf("GET %s shows a signed-in shell:\n%s", p, page)
		}
		checkNothingInline(t, page)
	}
	if _, page := b.get("/app/persons"); !strings.Contains(page, `href="/app/signin"`) {
		t.Errorf("instructor's session-ended view has no sign-in link:\n%s", page)
	}
}

var (
	inlineScript  = regexp.MustCompile(`<script(?:\s[^>]*)?>`)
	inlineHandler = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	styleAttr     = regexp.MustCompile(`(?i)\sstyle\s*=`)
)

// checkNothingInline fails when page has a script without src, an event handler attribute
// or a style attribute: the CSP forbids them, so they would only break.
func checkNothingInline(t *testing.T, page string) {
	t.Helper()
	for _, tag := range inlineScript.FindAllString(page, -1) {
		if !strings.Contains(tag, ` src="/app/static/`) {
			t.Errorf("page has an inline script %q", tag)
		}
	}
	if m := inlineHandler.FindString(page); m != "" {
		t.Errorf("page has an event handler attribute %q", m)
	}
	if m := styleAttr.FindString(page); m != "" {
		t.Errorf("page has a style attribute %q", m)
	}
}

// appModules returns the paths (under static/) of the application's modules.
func appModules(t *testing.T) []string {
	t.Helper()
	var mods []string
	err := fs.WalkDir(staticFS, "static/app", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".js") {
			mods = append(mods, p)
		}
		return err
	})
	if err != nil || len(mods) == 0 {
		t.Fatalf("no modules under static/app: %v", err)
	}
	return mods
}

// TestModules: the modules are served as JavaScript, every import names a module that
// exists, and none uses what the CSP forbids or what would turn data into markup.
func TestModules(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	importRE := regexp.MustCompile(`(?m)^\s*import\s[^"']*["']([^"']+)["']`)
	forbidden := regexp.MustCompile(`\beval\s*\(|new\s+Function\b|\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|setAttribute\(\s*["'](?:style|on[a-z]+)["']`)
	for _, mod := range appModules(t) {
		src, _ := staticFS.ReadFile(mod)
		res, _ := b.get("/app/" + mod)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET /app/%s = %d %q, want 200 text/javascript (browsers refuse modules of another type)", mod, res.StatusCode, res.Header.Get("Content-Type"))
		}
		for _, m := range importRE.FindAllStringSubmatch(string(src), -1) {
			if _, err := fs.Stat(staticFS, path.Join(path.Dir(mod), m[1])); err != nil {
				t.Errorf("%s imports %q, which does not exist", mod, m[1])
			}
		}
		if m := forbidden.FindString(string(src)); m != "" {
			t.Errorf("%s uses %q", mod, m)
		}
	}
}

// TestModuleExports: every name a module imports is exported by the module it names, and
// every export has an importer (node --check resolves neither; a typo would show only in a
// browser, and an unused export is dead code).
func TestModuleExports(t *testing.T) {
	named := regexp.MustCompile(`(?m)^import\s*\{([^}]*)\}\s*from\s*"([^"]+)"`)
	star := regexp.MustCompile(`(?m)^import\s*\*\s*as\s+\w+\s+from\s*"([^"]+)"`)
	exported := regexp.MustCompile(`(?m)^export\s+(?:async\s+)?(?:function|const|class|let)\s+(\w+)`)
	exports, used := map[string][]string{}, map[string]map[string]bool{}
	mods := appModules(t)
	for _, mod := range mods {
		src, _ := staticFS.ReadFile(mod)
		for _, m := range exported.FindAllStringSubmatch(string(src), -1) {
			exports[mod] = append(exports[mod], m[1])
		}
		used[mod] = map[string]bool{}
	}
	for _, mod := range mods {
		src, _ := staticFS.ReadFile(mod)
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			target := path.Join(path.Dir(mod), m[2])
			for _, name := range strings.Split(m[1], ",") {
				name, _, _ = strings.Cut(strings.TrimSpace(name), " as ")
				if name == "" {
					continue
				}
				if !slices.Contains(exports[target], name) {
					t.Errorf("%s imports %s from %s, which does not export it", mod, name, target)
				}
				if used[target] != nil {
					used[target][name] = true
				}
			}
		}
		for _, m := range star.FindAllStringSubmatch(string(src), -1) {
			target := path.Join(path.Dir(mod), m[1])
			for _, name := range exports[target] {
				used[target][name] = true
			}
		}
	}
	for mod, names := range exports {
		for _, name := range names {
			if !used[mod][name] {
				t.Errorf("%s exports %s, which no module imports", mod, name)
			}
		}
	}
}

// TestModuleRoutes: main.js routes exactly the view paths the server answers with the shell.
func TestModuleRoutes(t *testing.T) {
	src, err := staticFS.ReadFile("static/app/main.js")
	if err != nil {
		t.Fatal(err)
	}
	var routed []string
	for _, m := range regexp.MustCompile(`route\("([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		routed = append(routed, regexp.MustCompile(`:(\w+)`).ReplaceAllString(m[1], "{$1}"))
	}
	served := slices.Concat(instructorViews, memberViews)
	slices.Sort(routed)
	slices.Sort(served)
	if !slices.Equal(routed, served) {
		t.Errorf("main.js routes %q, the server serves the shell for %q", routed, served)
	}
}

// TestBounds: the modules bound a case id and a custom id as the API does, the first by
// the link's caseId (linkspec.MaxIDLength), the second by personspec.MaxText, each in one
// constant of api.js that the views and svcApp use; no module bounds them by a number of
// its own.
func TestBounds(t *testing.T) {
	api, err := staticFS.ReadFile("static/app/api.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name, field string // the constant in api.js; the field it bounds, as modules name it
		want        int
		users       []string
	}{
		{"maxCaseId", "case", linkspec.MaxIDLength, []string{"editor.js", "svcapp.js"}},
		{"maxCustomId", "custom", personspec.MaxText, []string{"person.js", "persons.js"}},
	} {
		m := regexp.MustCompile(`export const ` + b.name + ` = (\d+);`).FindSubmatch(api)
		if m == nil {
			t.Errorf("api.js exports no %s", b.name)
			continue
		}
		if string(m[1]) != strconv.Itoa(b.want) {
			t.Errorf("api.js %s = %s, want %d", b.name, m[1], b.want)
		}
		users := map[string]bool{}
		for _, mod := range appModules(t) {
			src, _ := staticFS.ReadFile(mod)
			if regexp.MustCompile(`\b` + b.name + `\b`).Match(src) {
				users[path.Base(mod)] = true
			}
			for _, n := range regexp.MustCompile(`(?i)`+b.field+`\w*(?:\.length\s*>|[^\n]*maxlength:)\s*(\d+)`).FindAllSubmatch(src, -1) {
				t.Errorf("%s bounds a %s id by %s instead of %s", mod, b.field, n[1], b.name)
			}
		}
		for _, mod := range b.users {
			if !users[mod] {
				t.Errorf("%s does not use %s", mod, b.name)
			}
		}
	}
}

// TestModuleSyntax checks every module with node --check when node is installed
// (scripts/test-deps.sh installs it): a syntax error would otherwise show only in a browser.
func TestModuleSyntax(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	for _, mod := range appModules(t) {
		src, _ := staticFS.ReadFile(mod)
		cmd := exec.Command(node, "--input-type=module", "--check")
		cmd.Stdin = strings.NewReader(string(src))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("node --check %s: %v\n%s", mod, err, out)
		}
	}
}

// TestShellCaseLinkEscaped: the case link in the focus bar holds the case id as one path
// segment, escaped as the page script escapes it (encodeURIComponent in chrome.js), so a
// case id with slashes, dots and a query stays a case and never names another address of
// the site (issue 25: "../../app/api/exports/1.pdf?…" rendered as a path to an export).
func TestShellCaseLinkEscaped(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	c := w.instructor
	c.t = t
	for _, caseID := range []string{"../../app/api/exports/1.pdf?download=1", "a/b#c", "case 9 ü", "%2e%2e"} {
		t.Run(caseID, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"caseId": caseID})
			if res, b := c.call(http.MethodPut, "/app/api/session/case", string(body)); res.StatusCode != http.StatusOK {
				t.Fatalf("PUT /app/api/session/case = %d %s", res.StatusCode, b)
			}
			_, page := c.get("/app")
			m := regexp.MustCompile(`<a id="case-link" href="([^"]*)">`).FindStringSubmatch(page)
			if m == nil {
				t.Fatalf("no case link in:\n%s", page)
			}
			href := html.UnescapeString(m[1])
			if want := "/app/cases/" + url.PathEscape(caseID); href != want {
				t.Errorf("case link href = %q, want %q", href, want)
			}
			base, _ := url.Parse("http://localhost:8080/app")
			ref, err := url.Parse(href)
			if err != nil {
				t.Fatalf("case link %q: %v", href, err)
			}
			got := base.ResolveReference(ref)
			seg, ok := strings.CutPrefix(got.EscapedPath(), "/app/cases/")
			if !ok || strings.Contains(seg, "/") || got.RawQuery != "" || got.Fragment != "" {
				t.Fatalf("case link %q opens %q, want /app/cases/ and one segment", href, got)
			}
			if dec, _ := url.PathUnescape(seg); dec != caseID {
				t.Errorf("case link's segment = %q, want the case id %q", dec, caseID)
			}
		})
	}
}

// TestStaticNoListings: the static files are served, their folders are not listed (issue
// 25): a listing shows every module and file name of the application to anyone.
func TestStaticNoListings(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	for _, p := range []string{"/app/static/", "/app/static/app/", "/app/static/app/views/", "/app/static/app", "/app/static/app/views"} {
		res, page := b.get(p)
		if res.StatusCode != http.StatusNotFound || strings.Contains(page, "main.js") || strings.Contains(page, "<a href") {
			t.Errorf("GET %s = %d %q, want 404 without a listing", p, res.StatusCode, page)
		}
	}
	for _, p := range []string{"/app/static/app/main.js", "/app/static/app.css", "/app/static/login.js"} {
		if res, _ := b.get(p); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", p, res.StatusCode)
		}
	}
}
