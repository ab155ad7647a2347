package i18n

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sources are the files that use the catalogue: the app service's templates, Go code and
// page scripts, and the case PDF.
var sources = []struct{ dir, ext string }{
	{"../web/templates", ".html"},
	{"../web/static", ".js"},
	{"../web", ".go"},
	{"../casepdf", ".go"},
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
