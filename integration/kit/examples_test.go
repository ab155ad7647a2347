package kit

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/browser"
)

// The guide's complete examples (docs/examples), run as a partner runs them: keys from the
// guide's openssl commands, key sets from each language's publisher, links posted by each
// language's client to the real gateway.

// langs are the example languages, each a folder of docs/examples.
var langs = []string{"node", "python"}

// exampleAlgs are the algorithms of docs/examples/keys.sh, with the key files it writes.
var exampleAlgs = []string{"ES256", "RS256"}

// exampleRun runs program (without its extension) of the lang example with args and env.
func exampleRun(t *testing.T, lang, program string, env []string, args ...string) result {
	t.Helper()
	ext := map[string]string{"node": ".mjs", "python": ".py"}[lang]
	return exampleExec(t, lang, env, append([]string{program + ext}, args...)...)
}

// exampleExec runs the interpreter of lang in its example folder with args, as a partner
// would: Node from its folder, where scripts/test-deps.sh installed jose from the lock file,
// through scripts/node-snippet.sh, which gives Node 18 the Web Crypto global jose needs;
// Debian's Python (with python3-jwt), never another python3 on PATH.
func exampleExec(t *testing.T, lang string, env []string, args ...string) result {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs/examples", lang)
	var cmd *exec.Cmd
	switch lang {
	case "node":
		if _, err := os.Stat(filepath.Join(dir, "node_modules/jose")); err != nil {
			t.Fatalf("jose is not installed in %s: run scripts/test-deps.sh", dir)
		}
		cmd = exec.Command(filepath.Join(root, "scripts/node-snippet.sh"), args...)
	case "python":
		cmd = exec.Command("/usr/bin/python3", args...)
	default:
		t.Fatalf("no example in %s", lang)
	}
	cmd.Dir = dir
	// No __pycache__ in the checkout.
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the %s example %q: %v", lang, args, err)
	}
	return result{code, out.String(), errb.String()}
}

// opensslKeys runs the guide's openssl commands (docs/examples/keys.sh) in a new folder and
// returns it.
func opensslKeys(t *testing.T) string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-eu", filepath.Join(root, "docs/examples/keys.sh"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/examples/keys.sh: %v\n%s", err, out)
	}
	return dir
}

// publishKey runs lang's publisher on the public key of alg from keys and writes the set it
// prints to a new jwks.json, after checking that the set is public.
func publishKey(t *testing.T, lang, keys, alg, kid string) string {
	t.Helper()
	pub := filepath.Join(keys, strings.ToLower(alg)+"-public.pem")
	r := exampleRun(t, lang, "jwks", nil, pub, kid, alg)
	if r.code != 0 {
		t.Fatalf("%s jwks %s = %d:\n%s", lang, alg, r.code, r.stderr)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("%s jwks printed %q (%v), want a set of one key", lang, r.stdout, err)
	}
	k := set.Keys[0]
	if k["kid"] != kid || k["alg"] != alg || k["use"] != "sig" {
		t.Errorf("%s jwks key kid %v alg %v use %v, want %s %s sig", lang, k["kid"], k["alg"], k["use"], kid, alg)
	}
	for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
		if _, ok := k[private]; ok {
			t.Errorf("%s jwks published the private member %q", lang, private)
		}
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// linkEnv is the example's configuration for partner name with the key of alg from keys.
func linkEnv(gateway, name, keys, alg string) []string {
	return []string{
		"GATEWAY=" + gateway, "PARTNER=" + name,
		"KEY_FILE=" + filepath.Join(keys, strings.ToLower(alg)+"-private.pem"), "KID=" + name + "-2026", "ALG=" + alg,
		"ISS=" + issuer, "AUD=" + audienceOf(name),
	}
}

// TestExamplesEndToEnd runs each language's example against the real gateway: keys from
// the guide's openssl commands, the key set from the example's publisher, a main and a Go
// link through /url, the form page's token through /payload, and a refusal of each kind the
// example handles, reported with the code and what the program does about it, and a
// gateway that does not answer.
func TestExamplesEndToEnd(t *testing.T) {
	keys := opensslKeys(t)
	var partners []string
	for _, lang := range langs {
		for _, alg := range exampleAlgs {
			name := lang + "-" + strings.ToLower(alg)
			partners = append(partners, ownPartner(name, "jwks_file "+publishKey(t, lang, keys, alg, name+"-2026")))
		}
	}
	// A partner whose key URL is down: the gateway answers keys_unavailable with Retry-After.
	down := harness.NewJWKSServer(t)
	down.SetDown(true)
	partners = append(partners, ownPartner("down", "jwks_url "+down.JWKSURL()))
	c, up := startGateway(t, partners...)

	for _, lang := range langs {
		for _, alg := range exampleAlgs {
			name := lang + "-" + strings.ToLower(alg)
			env := linkEnv(c.URL, name, keys, alg)
			for _, kind := range []string{"main", "go"} {
				t.Run(name+"/url/"+kind, func(t *testing.T) {
					r := exampleRun(t, lang, "link", env, "url", kind)
					if r.code != 0 || strings.TrimSpace(r.stdout) != appURL {
						t.Fatalf("link url %s = %d, stdout %q, stderr %q; want 0 and the login URL", kind, r.code, r.stdout, r.stderr)
					}
					got := up.Last(t)
					if k := got.Header.Get("X-Partner-Kind"); k != kind {
						t.Errorf("upstream X-Partner-Kind = %q, want %q", k, kind)
					}
					if kid := got.Header.Get("X-Partner-Key-Id"); kid != name+"-2026" {
						t.Errorf("upstream X-Partner-Key-Id = %q, want %s-2026", kid, name)
					}
				})
			}
			t.Run(name+"/form", func(t *testing.T) {
				r := exampleRun(t, lang, "link", env, "form", "main")
				if r.code != 0 {
					t.Fatalf("link form = %d:\n%s", r.code, r.stderr)
				}
				action, tok := formOf(t, r.stdout)
				if action != c.URL+"/partner/"+name+"/payload" {
					t.Errorf("form action = %q, want the gateway's /payload", action)
				}
				// Submitted as the browser submits the form.
				req, err := http.NewRequest(http.MethodPost, action, strings.NewReader(url.Values{"payload": {tok}}.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp := harness.Do(t, req)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(resp.Body), "signed in") {
					t.Errorf("posting the form: %d %s, want the upstream's page", resp.StatusCode, resp.Body)
				}
				if got := up.Last(t); got.Header.Get("X-Partner-Endpoint") != "payload" || got.Header.Get("X-Partner-Kind") != "main" {
					t.Errorf("upstream got endpoint %q kind %q, want payload main", got.Header.Get("X-Partner-Endpoint"), got.Header.Get("X-Partner-Kind"))
				}
			})
		}

		name := lang + "-es256"
		noEmail := filepath.Join(t.TempDir(), "no-email.json")
		if err := os.WriteFile(noEmail, []byte(`{"organizationName": "Acme Clinic", "organizationId": "org-17",
 "contact": {"id": "c-4711", "firstname": "Åsa", "lastname": "Lind"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			env  []string
			args []string
			want []string // in the program's report, in order
		}{
			{"wrong audience", append(linkEnv(c.URL, name, keys, "ES256"), "AUD=another"), []string{"url", "main"},
				[]string{"audience_invalid (401", "fix the configuration and alert the team", "message for the user: The service cannot be opened"}},
			{"Go link without contact.email", linkEnv(c.URL, name, keys, "ES256"), []string{"url", "go", noEmail},
				[]string{"payload_invalid (400", "show the user a message", "message for the user:", "contact.email"}},
			{"key URL down", append(linkEnv(c.URL, "down", keys, "ES256"), "MAX_WAIT_SECONDS=0"), []string{"url", "go"},
				[]string{"keys_unavailable (503", "wait Retry-After and retry with a fresh token", "message for the user: The service is busy"}},
			{"gateway not listening", linkEnv("http://127.0.0.1:"+strconv.Itoa(freeport.For(t)), name, keys, "ES256"), []string{"url", "go"},
				[]string{"link failed: ", "message for the user: The service cannot be opened"}},
		} {
			t.Run(lang+"/refused/"+tc.name, func(t *testing.T) {
				r := exampleRun(t, lang, "link", tc.env, tc.args...)
				if r.code != 1 || r.stdout != "" {
					t.Errorf("link = %d, stdout %q; want 1 and nothing", r.code, r.stdout)
				}
				if !inOrder(r.stderr, tc.want) {
					t.Errorf("link reported %q, want %q in this order", r.stderr, tc.want)
				}
				if strings.Contains(r.stderr, "eyJ") {
					t.Errorf("link's report holds a token: %q", r.stderr)
				}
			})
		}
	}
}

// inOrder reports whether s holds each of parts, in order.
func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// TestExampleFormPagesSubmitInABrowser: each example's form page, served by the partner's
// web server and opened in a real browser, posts itself to /payload and the browser shows
// what the app service answered. The gateway lists the site among the partners' origins,
// so the page must let the browser name it in Origin (issue 25).
func TestExampleFormPagesSubmitInABrowser(t *testing.T) {
	keys := opensslKeys(t)
	var page sync.Map // path → the form page
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := page.Load(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, p)
	}))
	defer site.Close()
	var partners []string
	for _, lang := range langs {
		partners = append(partners, ownPartner(lang, "jwks_file "+publishKey(t, lang, keys, "ES256", lang+"-2026"), "origins "+site.URL))
	}
	c, up := startGateway(t, partners...)
	bctx := browser.New(t)
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			r := exampleRun(t, lang, "link", linkEnv(c.URL, lang, keys, "ES256"), "form", "go")
			if r.code != 0 {
				t.Fatalf("link form = %d:\n%s", r.code, r.stderr)
			}
			page.Store("/link-"+lang, r.stdout)
			ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.Navigate(site.URL+"/link-"+lang), chromedp.WaitVisible(chromedp.ID("signed-in"))); err != nil {
				t.Fatalf("the browser did not reach the app service's page: %v", err)
			}
			if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != c.URL+"/partner/"+lang+"/payload" {
				t.Errorf("browser is at %q (%v), want the gateway's /payload", loc, err)
			}
			if got := up.Last(t); got.Header.Get("X-Partner-Endpoint") != "payload" || got.Header.Get("X-Partner-Kind") != "go" {
				t.Errorf("upstream got endpoint %q kind %q, want payload go", got.Header.Get("X-Partner-Endpoint"), got.Header.Get("X-Partner-Kind"))
			}
		})
	}
}

// fakeGateway answers /url with answers in turn (a problem code with a status and
// Retry-After, or "" for a login URL) and records each request and its token's nonce. It
// stands in for the gateway where the real one cannot be made to answer a code on cue
// (token_replayed for a fresh nonce, nonce_store_unavailable without breaking Redis).
type fakeGateway struct {
	answers  []fakeAnswer
	mu       sync.Mutex
	requests []string // method, path and content type
	nonces   []string
}

type fakeAnswer struct {
	code       string
	status     int
	retryAfter string
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(r.Body)
	f.mu.Lock()
	n := len(f.nonces)
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	f.nonces = append(f.nonces, nonceOf(body.String()))
	f.mu.Unlock()
	if n >= len(f.answers) || f.answers[n].code == "" {
		fmt.Fprintln(w, appURL)
		return
	}
	a := f.answers[n]
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(a.status)
	fmt.Fprintf(w, `{"type":"urn:partnergate:problem:%s","title":"t","status":%d,"detail":"d","code":%q,"request_id":"req-1"}`, a.code, a.status, a.code)
}

// nonceOf returns the nonce claim of a compact JWS, or "".
func nonceOf(tok string) string {
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Nonce string `json:"nonce"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.Nonce
}

// TestExamplesRetryOnce: the examples retry a refused link once, with a fresh token, where
// the code says a new token or waiting can help, and never otherwise.
func TestExamplesRetryOnce(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "es256-private.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	replayed := fakeAnswer{"token_replayed", http.StatusConflict, ""}
	for _, tc := range []struct {
		name      string
		answers   []fakeAnswer
		wantCode  int
		wantPosts int
		want      string
	}{
		{"token_replayed, then accepted", []fakeAnswer{replayed}, 0, 2, appURL},
		{"token_replayed twice", []fakeAnswer{replayed, replayed}, 1, 2, "token_replayed (409"},
		{"nonce_store_unavailable with Retry-After 1, then accepted", []fakeAnswer{{"nonce_store_unavailable", http.StatusServiceUnavailable, "1"}}, 0, 2, appURL},
		{"nonce_store_full with Retry-After 30, over the wait", []fakeAnswer{{"nonce_store_full", http.StatusServiceUnavailable, "30"}}, 1, 1, "nonce_store_full (503"},
		{"audience_invalid", []fakeAnswer{{"audience_invalid", http.StatusUnauthorized, ""}}, 1, 1, "audience_invalid (401"},
		{"internal_error", []fakeAnswer{{"internal_error", http.StatusInternalServerError, ""}}, 1, 1, "req-1"},
	} {
		for _, lang := range langs {
			t.Run(lang+"/"+tc.name, func(t *testing.T) {
				fake := &fakeGateway{answers: tc.answers}
				srv := httptest.NewServer(fake)
				defer srv.Close()
				env := []string{"GATEWAY=" + srv.URL, "PARTNER=acme", "KEY_FILE=" + keyFile, "KID=k1", "ALG=ES256", "ISS=" + issuer, "AUD=" + audience}
				r := exampleRun(t, lang, "link", env, "url", "go")
				out := r.stdout
				if tc.wantCode != 0 {
					out = r.stderr
				}
				if r.code != tc.wantCode || !strings.Contains(out, tc.want) {
					t.Errorf("link url = %d, stdout %q, stderr %q; want %d and %q", r.code, r.stdout, r.stderr, tc.wantCode, tc.want)
				}
				fake.mu.Lock()
				defer fake.mu.Unlock()
				if len(fake.nonces) != tc.wantPosts {
					t.Errorf("the example posted %d tokens, want %d", len(fake.nonces), tc.wantPosts)
				}
				for _, req := range fake.requests {
					if req != "POST /partner/acme/url text/plain" {
						t.Errorf("the example sent %q, want POST /partner/acme/url text/plain", req)
					}
				}
				if len(fake.nonces) == 2 && (fake.nonces[0] == "" || fake.nonces[0] == fake.nonces[1]) {
					t.Errorf("the retry's nonce %q is the first token's %q, want a fresh token", fake.nonces[1], fake.nonces[0])
				}
			})
		}
	}
}

// TestExampleActionsCoverEveryCode: each example's ACTIONS table puts every code the
// gateway can answer (problem's codes but the app service's) in exactly one of the four
// groups, and names no other code, so that a code added to the gateway fails here until
// the examples handle it.
func TestExampleActionsCoverEveryCode(t *testing.T) {
	codes := gatewayCodes(t)
	groups := []string{"fix_configuration", "retry_new_token", "wait_and_retry", "tell_user"}
	tables := map[string]map[string][]string{}
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			printActions := map[string][]string{
				"node":   {"--input-type=module", "-e", `import { ACTIONS } from "./gateway.mjs"; console.log(JSON.stringify(ACTIONS));`},
				"python": {"-c", "import json, gateway; print(json.dumps(gateway.ACTIONS))"},
			}
			r := exampleExec(t, lang, nil, printActions[lang]...)
			if r.code != 0 {
				t.Fatalf("reading %s's ACTIONS = %d:\n%s", lang, r.code, r.stderr)
			}
			var table map[string][]string
			if err := json.Unmarshal([]byte(r.stdout), &table); err != nil {
				t.Fatalf("%s's ACTIONS %q: %v", lang, r.stdout, err)
			}
			tables[lang] = table
			var got []string
			for g := range table {
				got = append(got, g)
			}
			slices.Sort(got)
			if want := slices.Sorted(slices.Values(groups)); !slices.Equal(got, want) {
				t.Errorf("%s's ACTIONS groups = %q, want %q", lang, got, want)
			}
			seen := map[string]string{}
			for _, g := range groups {
				for _, c := range table[g] {
					if other, ok := seen[c]; ok {
						t.Errorf("%s's ACTIONS puts %s in %s and in %s", lang, c, other, g)
					}
					seen[c] = g
					if !slices.Contains(codes, c) {
						t.Errorf("%s's ACTIONS names %s, which the gateway never answers", lang, c)
					}
				}
			}
			for _, c := range codes {
				if _, ok := seen[c]; !ok {
					t.Errorf("%s's ACTIONS forgets the gateway's code %s", lang, c)
				}
			}
		})
	}
	if fmt.Sprint(tables["node"]) != fmt.Sprint(tables["python"]) {
		t.Errorf("the Node and Python examples act differently:\nnode   %v\npython %v", tables["node"], tables["python"])
	}
	guide := guideActions(t)
	for _, g := range groups {
		got, want := slices.Sorted(slices.Values(guide[g])), slices.Sorted(slices.Values(tables["node"][g]))
		if !slices.Equal(got, want) {
			t.Errorf("docs/partners.md's row for %s names %q, the examples %q", g, got, want)
		}
	}
}

// guideRows are the labels of the guide's rows of the examples' groups (section 6).
var guideRows = map[string]string{
	"fix the configuration and alert":   "fix_configuration",
	"mint a fresh token and retry once": "retry_new_token",
	"wait Retry-After and retry":        "wait_and_retry",
	"show the user a message":           "tell_user",
}

var codeInCell = regexp.MustCompile("`([a-z_]+)`")

// guideActions returns the codes that each row of the guide's table of groups names.
func guideActions(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range guideLines(t) {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| ") {
			continue
		}
		if g, ok := guideRows[strings.TrimPrefix(cells[0], "| ")]; ok {
			for _, m := range codeInCell.FindAllStringSubmatch(cells[1], -1) {
				out[g] = append(out[g], m[1])
			}
		}
	}
	if len(out) != len(guideRows) {
		t.Fatalf("docs/partners.md has rows for %d of the %d groups", len(out), len(guideRows))
	}
	return out
}

// gatewayCodes returns every Code constant of package problem except those of the blocks
// documented as the app service's, so that a new gateway code is in the list by default.
func gatewayCodes(t *testing.T) []string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "problem/*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST || strings.HasPrefix(gd.Doc.Text(), "The app service") {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Code constant that is not a string literal", fset.Position(v.Pos()))
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes = append(codes, s)
				}
			}
		}
	}
	if len(codes) < 30 {
		t.Fatalf("found %d gateway codes in problem/, want every one (%q)", len(codes), codes)
	}
	return codes
}
