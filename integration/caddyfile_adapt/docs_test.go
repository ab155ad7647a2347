package caddyfileadapt

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// repoRoot is the repository seen from this package's folder, where go test runs.
const repoRoot = "../.."

// TestCaddyfilesFormatted keeps every Caddyfile a reader may copy as `caddy fmt` writes it:
// Caddyfile.example, deploy/Caddyfile, any file named Caddyfile* under docs/, and every fenced ```caddyfile
// block in README.md, SECURITY.md and docs/**/*.md. Caddy's adapter warns about an
// unformatted Caddyfile, so a copied example should not start with a warning. Snippets that
// are not whole Caddyfiles (one directive's block, <placeholders>, "…" in a comment) are
// checked too: the formatter is lexical, it only needs balanced braces, and a snippet is
// pasted into a Caddyfile as it stands.
func TestCaddyfilesFormatted(t *testing.T) {
	example := filepath.Join(repoRoot, "Caddyfile.example")
	if _, err := os.Stat(example); err != nil {
		t.Fatalf("the example configuration is missing: %v", err)
	}
	files := []string{example}
	// The production configuration of deploy/ (docs/operations.md).
	deploy, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "Caddyfile*"))
	if err != nil || len(deploy) == 0 {
		t.Fatalf("deploy/Caddyfile is missing: %v", err)
	}
	files = append(files, deploy...)
	markdown := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "SECURITY.md")}
	err = filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "node_modules":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasPrefix(d.Name(), "Caddyfile"):
			files = append(files, path)
		case strings.HasSuffix(d.Name(), ".md"):
			markdown = append(markdown, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking docs: %v", err)
	}

	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, file)
		t.Run(name, func(t *testing.T) { checkFormatted(t, name, data) })
	}
	for _, file := range markdown {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, file)
		blocks, err := caddyfileBlocks(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, b := range blocks {
			at := fmt.Sprintf("%s:%d", name, b.line)
			t.Run(at, func(t *testing.T) { checkFormatted(t, at, b.body) })
		}
	}
}

// checkFormatted compares the input with Caddy's formatting of it, as caddy adapt does
// (caddyfile.FormattingDifference), and names the first line that differs.
func checkFormatted(t *testing.T, name string, input []byte) {
	t.Helper()
	input = bytes.ReplaceAll(input, []byte("\r\n"), []byte("\n"))
	got := caddyfile.Format(input)
	if bytes.Equal(got, input) {
		return
	}
	in, out := strings.Split(string(input), "\n"), strings.Split(string(got), "\n")
	line := 0
	for line < len(in) && line < len(out) && in[line] == out[line] {
		line++
	}
	t.Errorf("%s is not formatted as caddy fmt writes it; first difference at its line %d:\nhave %q\nwant %q\nformatted:\n%s",
		name, line+1, lineAt(in, line), lineAt(out, line), got)
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of input)"
}

type fencedBlock struct {
	line int    // line of the opening fence, 1-based
	body []byte // the lines between the fences, the fence's indentation removed
}

// caddyfileBlocks returns the fenced code blocks of a Markdown file whose info string is
// "caddyfile". A fence may be indented (a block inside a list item); that indentation is
// removed from the block's lines, as a Markdown renderer does.
func caddyfileBlocks(markdown []byte) ([]fencedBlock, error) {
	var (
		blocks []fencedBlock
		open   *fencedBlock
		fence  string // the opening fence's indentation and backticks
		indent string
		lines  []string
	)
	for i, line := range strings.Split(string(markdown), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if open == nil {
			if !strings.HasPrefix(trimmed, "```") {
				continue
			}
			indent = line[:len(line)-len(trimmed)]
			ticks := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			fence = indent + ticks
			info := strings.TrimSpace(strings.TrimPrefix(trimmed, ticks))
			open, lines = &fencedBlock{line: i + 1}, nil
			if !strings.EqualFold(info, "caddyfile") {
				open.line = -open.line // a block of another language: skipped at its end
			}
			continue
		}
		if strings.TrimRight(line, " ") == fence {
			if open.line > 0 {
				open.body = []byte(strings.Join(lines, "\n") + "\n")
				blocks = append(blocks, *open)
			}
			open = nil
			continue
		}
		lines = append(lines, strings.TrimPrefix(line, indent))
	}
	if open != nil {
		return nil, fmt.Errorf("the code block opened at line %d is not closed", max(open.line, -open.line))
	}
	return blocks, nil
}

// ruleID matches the rule identifiers of docs/interface.md as code and docs cite them.
var ruleID = regexp.MustCompile(`\b(?:A-(?:AUTH|EP|DEC|ANS)-[0-9]+|A-PAY-[A-Z]+|SVC-[0-9]+|LIM-[0-9]+|VER-[0-9]+|B-(?:CFG-USER|CFG-APP|SSO|ARG|ARG-[0-9]+|XML|PIPE|PIPE-SELECT|PIPE-PROFILE|INST))\b`)

// TestCitedRulesExist keeps the rule citations of comments and docs pointing somewhere: every
// identifier such as A-AUTH-6 cited in a .go or .md file of the repository has its anchor in
// docs/interface.md, so a rule cannot be renumbered or removed under a comment that cites it.
func TestCitedRulesExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "interface.md"))
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != repoRoot:
			return filepath.SkipDir
		case d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(repoRoot, path)
		for i, line := range strings.Split(string(data), "\n") {
			for _, id := range ruleID.FindAllString(line, -1) {
				cited++
				if !bytes.Contains(doc, []byte(`id="`+strings.ToLower(id)+`"`)) {
					t.Errorf("%s:%d cites %s, which docs/interface.md does not define", name, i+1, id)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository: %v", err)
	}
	if cited == 0 {
		t.Fatal("no rule citations found: the pattern or the walk is broken")
	}
}
