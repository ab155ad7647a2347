// Package architecture holds the import rules of docs/architecture.md ("Who may import
// whom") as a test: each rule is checked against the packages' non-test dependencies as
// `go list -deps` reports them, on every operating system the code is built for, so that a
// rule broken on Windows only (the wrapper's pipe and instance files) is caught on Linux.
package architecture

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/partnergate/partnergate"

// The parts of the tree the rules name, as package path patterns relative to the module: a
// pattern ending in "/..." is the folder and every package below it.
var (
	gateway  = []string{"plugins/...", "caddymodule", "cmd/caddy"}
	kit      = []string{"partnerkit/...", "cmd/partnerlink"}
	app      = []string{"appservice/...", "cmd/appservice"}
	wrapper  = []string{"webwrapper/...", "cmd/webwrapper", "cmd/svcpipe"}
	verifier = []string{"linktoken/..."}
	harness  = []string{"internal/harness/..."}
	natid    = []string{"nationalid"}
)

// caddy is the prefix of every Caddy package path.
const caddy = "github.com/caddyserver/"

// rule is one sentence of docs/architecture.md's "Who may import whom", checked for every
// package of importers that except does not name. A package may not depend, outside its
// tests and directly or through others, on a package of forbidden or on an outside
// package whose path begins with one of forbiddenOutside; with stdOnly, on no outside
// package but the standard library's. It may not itself import a package of
// forbiddenImports (what it reaches through another package is that one's business). With
// only set, its own imports of the module's packages are those of only or of its own
// folder.
type rule struct {
	name             string
	importers        []string
	except           []string
	forbidden        [][]string
	forbiddenOutside []string
	stdOnly          bool
	forbiddenImports []string
	only             []string
}

// rules are docs/architecture.md's, in its order.
var rules = []rule{
	{
		name:      "problem imports no other package of the module, only the standard library",
		importers: []string{"problem"},
		forbidden: [][]string{{"..."}},
		stdOnly:   true,
	},
	{
		name:      "plugins/jwtpartner imports only linktoken, linkspec, problem, i18n and plugins/nonce",
		importers: []string{"plugins/jwtpartner"},
		only:      []string{"linktoken", "linkspec", "problem", "i18n", "plugins/nonce"},
	},
	{
		name:             "nothing imports plugins/jwtpartner but caddymodule",
		importers:        []string{"..."},
		except:           []string{"caddymodule"},
		forbiddenImports: []string{"plugins/jwtpartner"},
	},
	{
		// plugins/nonce/redistest starts redis-server for tests on a free port.
		name:      "the nonce stores and droptrailers import no other package of the module",
		importers: []string{"plugins/nonce", "plugins/droptrailers"},
		forbidden: [][]string{{"..."}},
	},
	{
		// The national identity number checks are shared by the gateway's payload rules,
		// the app service and a national eID's sign-in: they stand on nothing else.
		name:      "nationalid imports no other package of the module, only the standard library",
		importers: natid,
		forbidden: [][]string{{"..."}},
		stdOnly:   true,
	},
	{
		name:      "linkspec imports only problem and nationalid",
		importers: []string{"linkspec"},
		only:      []string{"problem", "nationalid"},
	},
	{
		name:      "linktoken imports only linkspec and problem",
		importers: []string{"linktoken"},
		only:      []string{"linkspec", "problem"},
	},
	{
		name:      "partnerkit imports only linktoken, linkspec and problem",
		importers: []string{"partnerkit"},
		only:      []string{"linktoken", "linkspec", "problem"},
	},
	{
		// A partner's program must not pull in a web server.
		name:             "linkspec, linktoken and partnerkit import no Caddy package",
		importers:        []string{"linkspec", "linktoken/...", "partnerkit/..."},
		forbiddenOutside: []string{caddy},
	},
	{
		// A partner SDK change must not be able to change the gateway.
		name:      "the gateway imports neither the partner kit nor the app service",
		importers: gateway,
		forbidden: [][]string{kit, app},
	},
	{
		name:      "i18n imports only problem",
		importers: []string{"i18n"},
		only:      []string{"problem"},
	},
	{
		name:      "the app service imports only linkspec, nationalid, personspec, problem and i18n of the rest",
		importers: []string{"appservice/..."},
		only:      []string{"appservice/...", "linkspec", "nationalid", "personspec", "problem", "i18n"},
	},
	{
		name:      "the app service imports neither the gateway, linktoken nor the wrapper",
		importers: app,
		forbidden: [][]string{gateway, verifier, wrapper},
	},
	{
		name:      "the wrapper imports only personspec, linkspec and i18n of the rest",
		importers: []string{"webwrapper/..."},
		only:      []string{"webwrapper/...", "personspec", "linkspec", "i18n"},
	},
	{
		name:      "the wrapper imports neither the app service, the gateway nor linktoken",
		importers: wrapper,
		forbidden: [][]string{app, gateway, verifier},
	},
	{
		name:      "nothing outside tests imports internal/harness",
		importers: []string{"..."},
		except:    harness,
		forbidden: [][]string{harness},
	},
}

// pkg is what the rules need to know of one package of the module, test files left out.
type pkg struct {
	imports []string // its own imports of the module's packages, relative paths
	deps    []string // every package of the module it depends on, relative paths
	outside []string // every package outside the module it depends on, full paths
}

// goos are the systems the code is built for: the gateway and the app service on Linux,
// the wrapper on Linux, macOS and Windows.
var goos = []string{"linux", "darwin", "windows"}

// TestImportRules: no package depends, outside its tests, on a package a rule forbids it.
func TestImportRules(t *testing.T) {
	for _, sys := range goos {
		pkgs, std := moduleDeps(t, sys)
		for _, r := range rules {
			t.Run(sys+"/"+r.name, func(t *testing.T) {
				for _, v := range violations(pkgs, std, r) {
					t.Error(v)
				}
			})
		}
	}
}

// TestRulesNamePackages: every pattern of the rules matches a package, so that a rule
// does not pass because a folder was renamed.
func TestRulesNamePackages(t *testing.T) {
	pkgs, _ := moduleDeps(t, "linux")
	var parts [][]string
	for _, r := range rules {
		parts = append(parts, r.importers, r.except, r.only, r.forbiddenImports)
		parts = append(parts, r.forbidden...)
	}
	for _, ps := range parts {
		for _, p := range ps {
			found := false
			for name := range pkgs {
				if matches(name, []string{p}) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("pattern %q matches no package of the module", p)
			}
		}
	}
}

// ruleNamed is the rule whose name begins with prefix.
func ruleNamed(t *testing.T, prefix string) rule {
	t.Helper()
	for _, r := range rules {
		if strings.HasPrefix(r.name, prefix) {
			return r
		}
	}
	t.Fatalf("no rule named %q…", prefix)
	return rule{}
}

// TestViolationsFindsAForbiddenImport: the check itself reports a forbidden dependency,
// direct or indirect, an import outside a rule's list, an outside package, and only for the
// importers it covers.
func TestViolationsFindsAForbiddenImport(t *testing.T) {
	pkgs := map[string]pkg{
		"plugins/jwtpartner":  {imports: []string{"linktoken", "partnerkit"}, deps: []string{"linktoken", "partnerkit"}},
		"caddymodule":         {imports: []string{"plugins/jwtpartner"}, deps: []string{"plugins/jwtpartner", "linktoken", "partnerkit"}},
		"cmd/caddy":           {imports: []string{"caddymodule"}, deps: []string{"caddymodule", "plugins/jwtpartner"}},
		"partnerkit":          {imports: []string{"linktoken"}, deps: []string{"linktoken"}, outside: []string{caddy + "caddy/v2"}},
		"internal/harness":    {imports: []string{"internal/harness/browser"}, deps: []string{"internal/harness/browser"}},
		"bench/cmd/loadbench": {imports: []string{"internal/harness", "plugins/jwtpartner"}, deps: []string{"internal/harness", "plugins/jwtpartner"}},
		"nationalid":          {imports: []string{"problem"}, deps: []string{"problem"}},
		"problem":             {outside: []string{"strings", "golang.org/x/text/language"}},
	}
	std := map[string]bool{"strings": true}
	for _, tt := range []struct {
		rule string
		want int
	}{
		{"the gateway imports neither", 2},        // jwtpartner and caddymodule on partnerkit; cmd/caddy not through it
		{"the app service imports neither", 0},    // no app service package here
		{"nationalid imports", 1},                 // problem
		{"nothing outside tests imports", 1},      // loadbench
		{"plugins/jwtpartner imports only", 1},    // partnerkit
		{"nothing imports plugins/jwtpartner", 1}, // loadbench; caddymodule may
		{"linkspec, linktoken and partnerkit", 1}, // caddy
		{"problem imports no other", 1},           // x/text, not strings
	} {
		if got := violations(pkgs, std, ruleNamed(t, tt.rule)); len(got) != tt.want {
			t.Errorf("violations(%q) = %q, want %d", tt.rule, got, tt.want)
		}
	}
}

// violations lists, for rule r, every importer in pkgs with a dependency r forbids; std
// names the standard library's packages.
func violations(pkgs map[string]pkg, std map[string]bool, r rule) []string {
	var out []string
	for name, p := range pkgs {
		if !matches(name, r.importers) || matches(name, r.except) {
			continue
		}
		for _, d := range p.deps {
			for _, f := range r.forbidden {
				if matches(d, f) {
					out = append(out, fmt.Sprintf("%s depends on %s (%s)", name, d, r.name))
				}
			}
		}
		for _, d := range p.outside {
			if r.stdOnly && !std[d] {
				out = append(out, fmt.Sprintf("%s depends on %s (%s)", name, d, r.name))
			}
			for _, f := range r.forbiddenOutside {
				if strings.HasPrefix(d, f) {
					out = append(out, fmt.Sprintf("%s depends on %s (%s)", name, d, r.name))
				}
			}
		}
		for _, d := range p.imports {
			own := d == name || strings.HasPrefix(d, name+"/")
			if matches(d, r.forbiddenImports) || r.only != nil && !own && !matches(d, r.only) {
				out = append(out, fmt.Sprintf("%s imports %s (%s)", name, d, r.name))
			}
		}
	}
	slices.Sort(out)
	return out
}

// matches says whether pkg, a path relative to the module, is one of patterns.
func matches(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if p == "..." {
			return true
		}
		if dir, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == dir || strings.HasPrefix(pkg, dir+"/") {
				return true
			}
		} else if pkg == p {
			return true
		}
	}
	return false
}

// moduleDeps runs `go list -deps` on every package of the module for goos and returns, for
// each of the module's packages, what the rules need to know of it, and the set of the
// standard library's packages among all dependencies.
func moduleDeps(t *testing.T, goos string) (map[string]pkg, map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{.Standard}}|{{join .Imports ","}}|{{join .Deps ","}}`, module+"/...")
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list -deps: %v\n%s", goos, err, stderr.Bytes())
	}
	pkgs := make(map[string]pkg)
	std := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 4 {
			t.Fatalf("go list printed %q", sc.Text())
		}
		if f[1] == "true" {
			std[strip(f[0])] = true
		}
		name, ok := relative(f[0])
		if !ok {
			continue
		}
		var p pkg
		for _, d := range strings.FieldsFunc(f[2], comma) {
			if rel, ok := relative(d); ok {
				p.imports = append(p.imports, rel)
			}
		}
		for _, d := range strings.FieldsFunc(f[3], comma) {
			if rel, ok := relative(d); ok {
				p.deps = append(p.deps, rel)
			} else {
				p.outside = append(p.outside, strip(d))
			}
		}
		pkgs[name] = p
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("GOOS=%s go list -deps listed no package of %s", goos, module)
	}
	return pkgs, std
}

// relative is path relative to the module, if it is one of the module's packages.
func relative(path string) (string, bool) {
	path = strip(path)
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

// strip drops what go list adds to a package built again for another (a main package's
// profile-guided build: "caddymodule [<module>/cmd/caddy]"): it is the same package.
func strip(path string) string {
	path, _, _ = strings.Cut(path, " [")
	return path
}

func comma(r rune) bool { return r == ',' }
