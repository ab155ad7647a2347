package architecture

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The repository as seen from this package's folder, where go test runs.
const treeRoot = "../.."

// TestWhereThingsLiveMatchesTree keeps docs/architecture.md's "Where things live" table
// true: every package of the module has its line, and every folder a line names exists. A
// package added or moved without its line fails here, not in a newcomer's afternoon.
func TestWhereThingsLiveMatchesTree(t *testing.T) {
	named := whereThingsLive(t)
	if len(named) < 20 {
		t.Fatalf("found %d folders in the table: the section or its parsing is broken", len(named))
	}
	for dir := range named {
		if _, err := os.Stat(filepath.Join(treeRoot, dir)); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", dir)
		}
	}
	list := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	list.Dir = treeRoot
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(treeRoot)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	dirs := strings.Fields(string(out))
	if len(dirs) < 40 {
		t.Fatalf("go list found %d packages: it did not list the whole module", len(dirs))
	}
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == "." {
			continue
		}
		if !named[filepath.ToSlash(rel)+"/"] {
			missing = append(missing, filepath.ToSlash(rel)+"/")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("package %s has no line in docs/architecture.md's \"Where things live\"", m)
	}
}

// whereThingsLive returns the folders named in the first column of the table.
func whereThingsLive(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(treeRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Where things live\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Where things live" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range backticked.FindAllStringSubmatch(first, -1) {
			if strings.HasSuffix(m[1], "/") {
				named[m[1]] = true
			}
		}
	}
	return named
}

var backticked = regexp.MustCompile("`([^`]+)`")

// markdownFiles lists the documents a reader follows: the README, SECURITY.md, CHANGELOG.md
// and docs/, without installed packages or generated artifacts.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(treeRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "node_modules":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".md"):
			rel, _ := filepath.Rel(treeRoot, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	htmlID  = regexp.MustCompile(`id="([^"]+)"`)
)

// TestDocLinksResolve follows every relative link of the docs: the file must exist and, for
// a link with a fragment, the heading or id it names must be in that file. Moving a section
// from one document to another leaves no link pointing at the old place.
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		data, err := os.ReadFile(filepath.Join(treeRoot, file))
		if err == nil {
			for _, id := range htmlID.FindAllStringSubmatch(string(data), -1) {
				a[id[1]] = true
			}
			seen := map[string]int{}
			inFence := false
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "```") {
					inFence = !inFence
					continue
				}
				m := heading.FindStringSubmatch(line)
				if inFence || m == nil {
					continue
				}
				slug := githubSlug(m[1])
				if n := seen[slug]; n > 0 {
					a[slug+"-"+strconv.Itoa(n)] = true
				} else {
					a[slug] = true
				}
				seen[slug]++
			}
		}
		anchors[file] = a
		return a
	}
	links := 0
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(filepath.Join(treeRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
					if _, err := os.Stat(filepath.Join(treeRoot, dest)); err != nil {
						t.Errorf("%s:%d links to %s, which does not exist", file, i+1, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d links to %s, but %s has no heading or id %q", file, i+1, target, dest, frag)
				}
			}
		}
	}
	if links < 100 {
		t.Fatalf("followed only %d links: the pattern or the walk is broken", links)
	}
}

// githubSlug makes a heading's anchor as GitHub does: lower case, punctuation removed,
// spaces turned into hyphens.
func githubSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToUpper(string(r)) != strings.ToLower(string(r)) }

// repoPath matches a path the docs cite in backticks: a top-level folder of this
// repository, then the rest of a file or folder name.
var repoPath = regexp.MustCompile("^(appservice|bench|caddymodule|cmd|deploy|docs|integration|internal|linkspec|linktoken|nationalid|partnerkit|personspec|plugins|problem|scripts|webwrapper)/[A-Za-z0-9_./-]*$")

// TestCitedPathsExist checks every repository path the docs cite in backticks (README,
// SECURITY.md, docs/; the CHANGELOG tells history and may name what is gone). A file
// renamed or moved fails here until the docs say where it went. Patterns (`*`, `{a,b}`,
// `<name>`), generated artifacts and line suffixes (`file.go:12`) are read accordingly.
func TestCitedPathsExist(t *testing.T) {
	cited := 0
	for _, file := range markdownFiles(t) {
		if file == "CHANGELOG.md" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(treeRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				p := m[1]
				if j := strings.IndexByte(p, ':'); j > 0 {
					p = p[:j]
				}
				p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), ".")
				if !repoPath.MatchString(p) || strings.HasPrefix(p, "integration/artifacts") {
					continue
				}
				cited++
				if _, err := os.Stat(filepath.Join(treeRoot, p)); err != nil {
					t.Errorf("%s:%d cites %s, which does not exist", file, i+1, m[1])
				}
			}
		}
	}
	if cited < 50 {
		t.Fatalf("found only %d cited paths: the pattern or the walk is broken", cited)
	}
}
