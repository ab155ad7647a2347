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

// rule says that no package of importers may depend, outside its tests, on a package of
// any of forbidden; except lists importers the rule does not cover.
type rule struct {
	name      string
	importers []string
	except    []string
	forbidden [][]string
}

// rules are docs/architecture.md's.
var rules = []rule{
	{
		// A partner SDK change must not be able to change the gateway.
		name:      "the gateway imports neither the partner kit nor the app service",
		importers: gateway,
		forbidden: [][]string{kit, app},
	},
	{
		name:      "the app service imports neither the gateway, linktoken nor the wrapper",
		importers: app,
		forbidden: [][]string{gateway, verifier, wrapper},
	},
	{
		name:      "the wrapper imports neither the app service, the gateway nor linktoken",
		importers: wrapper,
		forbidden: [][]string{app, gateway, verifier},
	},
	{
		// The national identity number checks are shared by the gateway's payload rules,
		// the app service and a national eID's sign-in: they stand on nothing else.
		name:      "nationalid imports no other package of the module",
		importers: natid,
		forbidden: [][]string{{"..."}},
	},
	{
		name:      "nothing outside tests imports internal/harness",
		importers: []string{"..."},
		except:    harness,
		forbidden: [][]string{harness},
	},
}

// goos are the systems the code is built for: the gateway and the app service on Linux,
// the wrapper on Linux, macOS and Windows.
var goos = []string{"linux", "darwin", "windows"}

// TestImportRules: no package depends, outside its tests, on a package a rule forbids it.
func TestImportRules(t *testing.T) {
	for _, sys := range goos {
		deps := moduleDeps(t, sys)
		for _, r := range rules {
			t.Run(sys+"/"+r.name, func(t *testing.T) {
				for _, v := range violations(deps, r) {
					t.Error(v)
				}
			})
		}
	}
}

// TestRulesNamePackages: every pattern of the rules matches a package, so that a rule
// does not pass because a folder was renamed.
func TestRulesNamePackages(t *testing.T) {
	deps := moduleDeps(t, "linux")
	for _, parts := range [][]string{gateway, kit, app, wrapper, verifier, harness, natid} {
		for _, p := range parts {
			found := false
			for pkg := range deps {
				if matches(pkg, []string{p}) {
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

// TestViolationsFindsAForbiddenImport: the check itself reports a forbidden dependency,
// direct or indirect, and only for the importers it covers.
func TestViolationsFindsAForbiddenImport(t *testing.T) {
	deps := map[string][]string{
		"plugins/jwtpartner":  {"linktoken", "partnerkit"},
		"caddymodule":         {"plugins/jwtpartner", "linktoken", "partnerkit"},
		"partnerkit":          {"linktoken"},
		"internal/harness":    {"internal/harness/browser"},
		"bench/cmd/loadbench": {"internal/harness"},
		"nationalid":          {"problem"},
	}
	for _, tt := range []struct {
		rule rule
		want int
	}{
		{rules[0], 2},
		{rules[1], 0},
		{rules[3], 1},
		{rules[4], 1},
	} {
		if got := violations(deps, tt.rule); len(got) != tt.want {
			t.Errorf("violations(%q) = %q, want %d", tt.rule.name, got, tt.want)
		}
	}
}

// violations lists, for rule r, every importer in deps with a forbidden dependency.
func violations(deps map[string][]string, r rule) []string {
	var out []string
	for pkg, ds := range deps {
		if !matches(pkg, r.importers) || matches(pkg, r.except) {
			continue
		}
		for _, d := range ds {
			for _, f := range r.forbidden {
				if matches(d, f) {
					out = append(out, fmt.Sprintf("%s imports %s (%s)", pkg, d, r.name))
				}
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
// each of the module's packages, its non-test dependencies within the module, paths
// relative to the module.
func moduleDeps(t *testing.T, goos string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...")
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list -deps: %v\n%s", goos, err, stderr.Bytes())
	}
	deps := make(map[string][]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, ok := relative(fields[0])
		if !ok {
			continue
		}
		var own []string
		for _, d := range fields[1:] {
			if rel, ok := relative(d); ok {
				own = append(own, rel)
			}
		}
		deps[pkg] = own
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(deps) == 0 {
		t.Fatalf("GOOS=%s go list -deps listed no package of %s", goos, module)
	}
	return deps
}

// relative is path relative to the module, if it is one of the module's packages.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}
