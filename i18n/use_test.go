package i18n

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/problem"
)

// sources are the files that use the catalogue: the app service's templates, Go code and
// page scripts, the case PDF, the gateway's refusal page, the wrapper's download page and
// what the wrapper tells a person.
var sources = []struct{ dir, ext string }{
	{"../appservice/web/templates", ".html"},
	{"../appservice/web/static", ".js"},
	{"../appservice/web", ".go"},
	{"../appservice/casepdf", ".go"},
	{"../plugins/jwtpartner", ".go"},
	{"../webwrapper/site", ".html"},
	{"../webwrapper/site", ".go"},
	{"../webwrapper/lifecycle", ".go"},
}

var (
	// quoted is any "…" literal: a key is used when one of the sources names it.
	quoted = regexp.MustCompile(`"([^"\\\n]*)"`)
	// calls are the lookups with a literal key: each must be in the catalogue.
	calls = map[string]*regexp.Regexp{
		".html": regexp.MustCompile(`\{\{-?\s*(?:t|th)\s+"([^"]+)"`),
		".js":   regexp.MustCompile(`\b(?:t|parts)\(\s*"([^"]+)"`),
		".go":   regexp.MustCompile(`(?:\bi18n\.T\([^,()]+,\s*|\bd\.t\(|\bth\()"([^"]+)"`),
	}
)

// readSources returns each source file's text by path, tests left out.
func readSources(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, src := range sources {
		err := filepath.WalkDir(src.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != src.dir && src.ext == ".go" {
					return fs.SkipDir // a package's own files only
				}
				return nil
			}
			if !strings.HasSuffix(path, src.ext) || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			files[path] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files, want the templates, scripts and Go files", len(files))
	}
	return files
}

// TestKeysUsed: every key of the catalogue is named by a template, a script or Go code
// (a server.* message by its English text, which the Go code writes: its literal pieces
// around the placeholders), and every key a lookup names is in the catalogue. The
// languages' completeness is TestCatalogueComplete's.
func TestKeysUsed(t *testing.T) {
	files := readSources(t)
	used := map[string]bool{}
	var all strings.Builder
	for path, text := range files {
		all.WriteString(text)
		for _, m := range quoted.FindAllStringSubmatch(text, -1) {
			used[m[1]] = true
		}
		re := calls[filepath.Ext(path)]
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			used[m[1]] = true
			if !Has(m[1]) {
				t.Errorf("%s looks up %q, which the catalogue lacks", path, m[1])
			}
		}
	}
	// A code's title is looked up by its code (ProblemTitle): TestProblemTitles holds those.
	for _, c := range problem.Codes() {
		used["problem.title."+string(c)] = true
	}
	text := all.String()
	for _, k := range Keys(Default) {
		if strings.HasPrefix(k, "server.") {
			for _, piece := range placeholder.Split(catalogue[Default][k], -1) {
				if piece != "" && !strings.Contains(text, piece) {
					t.Errorf("%q is unused: no Go code writes %q", k, piece)
				}
			}
			continue
		}
		if !used[k] {
			t.Errorf("%q is unused: no template, script or Go code names it", k)
		}
	}
}

// TestProblemTitles: every code of the problem package has its title in the catalogue, so
// a refusal page never shows an English title in another language, and the catalogue
// holds no title of a code that does not exist.
func TestProblemTitles(t *testing.T) {
	codes := map[string]bool{}
	for _, c := range problem.Codes() {
		codes[string(c)] = true
		if !Has("problem.title." + string(c)) {
			t.Errorf("the catalogue has no title of %s", c)
		}
	}
	if len(codes) < 40 {
		t.Fatalf("problem.Codes() returned %d codes", len(codes))
	}
	for _, k := range Keys(Default) {
		if c, ok := strings.CutPrefix(k, "problem.title."); ok && !codes[c] {
			t.Errorf("%s is the title of %s, which is no code", k, c)
		}
	}
	if got := ProblemTitle("nb", problem.CodeTokenExpired); got == problem.Title(problem.CodeTokenExpired) {
		t.Errorf("ProblemTitle(nb, token_expired) = %q, the English title", got)
	}
}
