package partnerkit

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// The partner guide includes its snippets verbatim: the block after each
// "<!-- snippet: PATH -->" line must equal docs/PATH, so the guide cannot drift from the
// files the tests run.
const guidePath = "../docs/partners.md"

var snippetMarker = regexp.MustCompile(`^<!-- snippet: (\S+) -->$`)

// guideSnippets returns the snippet paths of the guide (relative to docs/) and the code
// blocks that follow them.
func guideSnippets(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		m := snippetMarker.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "```") {
			t.Fatalf("guide: snippet %s is not followed by a code block", m[1])
		}
		var b strings.Builder
		for sc.Scan() && sc.Text() != "```" {
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
		out[m[1]] = b.String()
	}
	return out
}

// snippetFiles are the guide's files, the complete examples that the tests run as programs;
// goSnippets are Go functions of this package's tests ("FILE#FUNC", relative to docs/),
// compiled and run by their examples.
var (
	snippetFiles = []string{
		"examples/keys.sh",
		"examples/node/jwks.mjs", "examples/node/mint.mjs", "examples/node/gateway.mjs", "examples/node/link.mjs",
		"examples/python/jwks.py", "examples/python/mint.py", "examples/python/gateway.py", "examples/python/link.py",
	}
	goSnippets = []string{"../partnerkit/example_test.go#openLink"}
	// linkPrograms are the examples' command-line programs that mint tokens.
	linkPrograms = []string{"examples/node/link.mjs", "examples/python/link.py"}
)

func TestGuideSnippetsAreTheFiles(t *testing.T) {
	blocks := guideSnippets(t)
	for _, path := range append(append([]string(nil), snippetFiles...), goSnippets...) {
		t.Run(path, func(t *testing.T) {
			file, fn, _ := strings.Cut(path, "#")
			data, err := os.ReadFile(filepath.Join("../docs", file))
			if err != nil {
				t.Fatal(err)
			}
			want := string(data)
			if fn != "" {
				if want = goFunc(want, fn); want == "" {
					t.Fatalf("%s has no func %s", file, fn)
				}
			}
			block, ok := blocks[path]
			if !ok {
				t.Fatalf("docs/partners.md does not include %s", path)
			}
			if block != want {
				t.Errorf("docs/partners.md's copy of %s differs from the file: copy the file into the guide", path)
			}
		})
	}
	if n := len(snippetFiles) + len(goSnippets); len(blocks) != n {
		t.Errorf("guide includes %d snippets, the test checks %d: add the new one to snippetFiles or goSnippets", len(blocks), n)
	}
}

// goFunc returns the text of the top-level func name in src, from its func line to its
// closing brace, or "".
func goFunc(src, name string) string {
	start := strings.Index(src, "\nfunc "+name+"(")
	if start < 0 {
		return ""
	}
	body := src[start+1:]
	end := strings.Index(body, "\n}\n")
	if end < 0 {
		return ""
	}
	return body[:end+3]
}

// TestGuideListsEveryCode: every linktoken code has a row in the guide's error table.
func TestGuideListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []problem.Code{
		problem.CodeTokenMalformed, problem.CodeHeaderInvalid, problem.CodeAlgorithmNotAllowed,
		problem.CodeKeyIDMissing, problem.CodeKeyUnknown, problem.CodeKeysUnavailable,
		problem.CodeSignatureInvalid, problem.CodeClaimsInvalid, problem.CodeIssuerInvalid,
		problem.CodeAudienceInvalid, problem.CodeLifetimeTooLong, problem.CodeTokenNotYetValid,
		problem.CodeTokenExpired, problem.CodeNonceMissing, problem.CodeNonceInvalid,
		problem.CodePayloadInvalid, problem.CodeKindNotAllowed,
	} {
		if !bytes.Contains(doc, []byte("| `"+string(c)+"` |")) {
			t.Errorf("docs/partners.md has no error table row for %s", c)
		}
	}
}

// snippetCommand returns the command that runs an example program with args: Node from its
// folder (where scripts/test-deps.sh installed jose from the lock file) through
// scripts/node-snippet.sh, which gives Node 18 the Web Crypto global jose needs; Debian's
// Python (with its python3-jwt), never another python3 on PATH.
func snippetCommand(t *testing.T, path string, args ...string) *exec.Cmd {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("../docs", path))
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(path) {
	case ".mjs":
		if _, err := os.Stat(filepath.Join(filepath.Dir(abs), "node_modules", "jose")); err != nil {
			t.Fatalf("jose is not installed in %s: run scripts/test-deps.sh", filepath.Dir(abs))
		}
		cmd := exec.Command(filepath.Join(filepath.Dir(abs), "../../../scripts/node-snippet.sh"), append([]string{abs}, args...)...)
		cmd.Dir = filepath.Dir(abs)
		return cmd
	case ".py":
		cmd := exec.Command("/usr/bin/python3", append([]string{abs}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in docs/
		return cmd
	}
	t.Fatalf("no runner for %s", path)
	return nil
}

// runSnippet runs an example's `link token KIND` with the key in keyFile and returns the
// token it prints.
func runSnippet(t *testing.T, path, kind, keyFile, kid, alg, iss, aud string) string {
	t.Helper()
	cmd := snippetCommand(t, path, "token", kind)
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), "KEY_FILE="+keyFile, "KID="+kid, "ALG="+alg, "ISS="+iss, "AUD="+aud)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestGuideSnippetsMintAcceptedTokens runs each example's minting with a key of each
// algorithm, for both kinds, and verifies its token with the gateway's verifier.
func TestGuideSnippetsMintAcceptedTokens(t *testing.T) {
	for _, path := range linkPrograms {
		for _, alg := range Algorithms {
			for _, kind := range []linkspec.Kind{linkspec.KindMain, linkspec.KindGo} {
				t.Run(path+"/"+alg+"/"+string(kind), func(t *testing.T) {
					s := testSigner(t, alg)
					keyFile := filepath.Join(t.TempDir(), "private.pem")
					if err := WritePrivateKey(keyFile, s.key, false); err != nil {
						t.Fatal(err)
					}
					tok := runSnippet(t, path, string(kind), keyFile, s.KeyID(), alg, testIss, testAud)
					doc, err := MarshalJWKS(s.PublicKey())
					if err != nil {
						t.Fatal(err)
					}
					set, err := linktoken.ParseKeySet(doc)
					if err != nil {
						t.Fatal(err)
					}
					v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: testIss, Audience: testAud})
					if err != nil {
						t.Fatal(err)
					}
					got, err := v.Verify(context.Background(), []byte(tok), set)
					if err != nil {
						t.Fatalf("the gateway's verifier refuses the %s token: %v", path, err)
					}
					if got.Alg != alg || got.Kind != kind || got.Payload.Contact == nil || got.Payload.Contact.Firstname != "Åsa" {
						t.Errorf("verified %s token: alg %s kind %s contact %+v, want %s, %s and Åsa", path, got.Alg, got.Kind, got.Payload.Contact, alg, kind)
					}
					if life := got.Expiry.Sub(got.NotBefore); life != time.Minute {
						t.Errorf("%s token lifetime %v, want 1m", path, life)
					}
				})
			}
		}
	}
}
