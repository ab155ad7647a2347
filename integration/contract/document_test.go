// Package contract holds the machine-readable contract shipped in docs/ to the code and to
// the running gateway: docs/openapi.yaml is a valid OpenAPI 3.1 document, it lists every
// code the gateway and the app service answer a link with, under that code's status, its
// version is the interface's, and the gateway's real answers fit it.
//
// Libraries: github.com/pb33f/libopenapi-validator validates the document against the
// OpenAPI 3.1 specification's own JSON Schema and validates requests and answers against
// the document (3.1's JSON Schema 2020-12 included); github.com/santhosh-tekuri/jsonschema
// compiles every schema of the document against the 2020-12 metaschema, which the OpenAPI
// schema leaves unchecked, and validates answers that no operation describes (405).
package contract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/problem"
)

// TestMain removes the caddy the harness builds for these tests once they have run.
func TestMain(m *testing.M) { harness.Main(m) }

// docPath is the OpenAPI document, relative to this package.
const docPath = "../../docs/openapi.yaml"

// documentID names the document as a JSON Schema resource, so that its schemas compile by
// JSON pointer.
const documentID = "urn:partnergate:openapi"

// readDocument returns the document's bytes.
func readDocument(t *testing.T) []byte {
	t.Helper()
	spec, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// newValidator is the document's request and answer validator, with formats asserted
// (the login URL is a "uri") and the plain text and form bodies decoded.
func newValidator(t *testing.T) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(readDocument(t))
	if err != nil {
		t.Fatalf("reading %s: %v", docPath, err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions(), config.WithStandardBodyDecoders())
	if len(errs) > 0 {
		t.Fatalf("building the validator of %s: %v", docPath, errs)
	}
	return v
}

// documentTree is the document as plain JSON values (YAML's integers as JSON numbers).
func documentTree(t *testing.T) map[string]any {
	t.Helper()
	var y any
	if err := yaml.Unmarshal(readDocument(t), &y); err != nil {
		t.Fatalf("parsing %s: %v", docPath, err)
	}
	data, err := json.Marshal(y)
	if err != nil {
		t.Fatalf("%s as JSON: %v", docPath, err)
	}
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return tree.(map[string]any)
}

// get walks the tree by keys; nil when a key is missing.
func get(tree any, keys ...string) any {
	for _, k := range keys {
		m, ok := tree.(map[string]any)
		if !ok {
			return nil
		}
		tree = m[k]
	}
	return tree
}

// schemaCompiler has the document added as a resource: a schema of it compiles as
// documentID + "#/components/schemas/Name".
func schemaCompiler(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(documentID, documentTree(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOpenAPIDocumentIsValid: the document is valid by the OpenAPI 3.1 specification's JSON
// Schema (which catches an unknown member or a status key that is not one), and every
// schema in it is a valid JSON Schema 2020-12 (which the specification's schema leaves to
// the dialect, so that "type: strin" would pass it).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	v := newValidator(t)
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, s := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", s.Reason, s.FieldPath)
			}
		}
	}
	tree := documentTree(t)
	if got := get(tree, "openapi"); got != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", got)
	}
	c := schemaCompiler(t)
	schemas, _ := get(tree, "components", "schemas").(map[string]any)
	if len(schemas) == 0 {
		t.Fatal("the document has no components.schemas")
	}
	for name := range schemas {
		if _, err := c.Compile(documentID + "#/components/schemas/" + name); err != nil {
			t.Errorf("components.schemas.%s is no valid JSON Schema 2020-12: %v", name, err)
		}
	}
}

// answeringSources are the packages and files whose code answers a partner's link: the
// gateway's handler and verifier, the payload rules, and the app service's link endpoint
// behind the gateway. A code they use is one a partner can receive.
var answeringSources = []string{
	"../../plugins/jwtpartner",
	"../../linktoken",
	"../../linkspec",
	"../../appservice/web/partner.go",
	"../../appservice/web/problem.go", // failure: unavailable or internal_error on a link
}

// answeredCodes returns the codes the answering sources use (problem.CodeX in code, not in
// comments or tests), by value, resolved through problem/problem.go's constants, so that a
// code added by any change to those packages is found.
func answeredCodes(t *testing.T) []problem.Code {
	t.Helper()
	fset := token.NewFileSet()
	values := map[string]string{}
	pf, err := parser.ParseFile(fset, "../../problem/problem.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range pf.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						values[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	var files []string
	for _, src := range answeringSources {
		if strings.HasSuffix(src, ".go") {
			files = append(files, src)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(src, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if !strings.HasSuffix(m, "_test.go") {
				files = append(files, m)
			}
		}
	}
	seen := map[problem.Code]bool{}
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			// problem.Code is the type; problem.CodeX a code.
			if !ok || !strings.HasPrefix(sel.Sel.Name, "Code") || sel.Sel.Name == "Code" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "problem" {
				v, ok := values[sel.Sel.Name]
				if !ok {
					t.Errorf("%s uses problem.%s, which problem/problem.go does not define as a string constant", file, sel.Sel.Name)
					return true
				}
				seen[problem.Code(v)] = true
			}
			return true
		})
	}
	codes := make([]problem.Code, 0, len(seen))
	for c := range seen {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	if len(codes) < 30 {
		t.Fatalf("found only %d codes in %v: the scan is broken", len(codes), answeringSources)
	}
	return codes
}

// documentedCodes returns the codes of each ProblemNNN schema, by status.
func documentedCodes(t *testing.T, tree map[string]any) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	schemas, _ := get(tree, "components", "schemas").(map[string]any)
	for name, s := range schemas {
		n, ok := strings.CutPrefix(name, "Problem")
		status, err := strconv.Atoi(n)
		if !ok || err != nil {
			continue
		}
		all, _ := get(s, "allOf").([]any)
		if len(all) != 2 {
			t.Fatalf("components.schemas.%s: want allOf of Problem and the status's codes", name)
		}
		code := get(all[1], "properties", "code")
		if c, ok := get(code, "const").(string); ok {
			out[status] = append(out[status], c)
		}
		for _, c := range asSlice(get(code, "enum")) {
			out[status] = append(out[status], c.(string))
		}
		if got := get(all[1], "properties", "status", "const"); got == nil || got.(json.Number).String() != n {
			t.Errorf("components.schemas.%s: status const = %v, want %s", name, got, n)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// linkStatuses are the statuses of the link endpoints' refusals: both operations answer
// each of them.
var linkStatuses = []int{400, 401, 403, 404, 409, 413, 415, 500, 503}

// TestEveryAnsweredCodeIsDocumented: every code the answering code uses is listed in the
// document under its status (problem.Status), and every listed code is a known code of that
// status; both link operations answer every status of linkStatuses with the problem
// document (/url) and the page (/payload), and every status but 405 (any method but POST)
// is an answer of some operation.
func TestEveryAnsweredCodeIsDocumented(t *testing.T) {
	tree := documentTree(t)
	byStatus := documentedCodes(t, tree)
	for _, c := range answeredCodes(t) {
		status := problem.Status(c)
		if !slices.Contains(byStatus[status], string(c)) {
			t.Errorf("code %s (status %d) is answered but not in components.schemas.Problem%d of %s", c, status, status, docPath)
		}
	}
	for status, codes := range byStatus {
		for _, c := range codes {
			if problem.Title(problem.Code(c)) == problem.Title("") {
				t.Errorf("Problem%d lists %s, which package problem does not know", status, c)
			} else if got := problem.Status(problem.Code(c)); got != status {
				t.Errorf("Problem%d lists %s, whose status is %d", status, c, got)
			}
		}
		if status != 405 && !answered(tree, strconv.Itoa(status)) {
			t.Errorf("components.schemas.Problem%d is no operation's answer", status)
		}
	}
	for _, status := range linkStatuses {
		code := strconv.Itoa(status)
		for path, want := range map[string]string{
			"/partner/{name}/url":     "#/components/responses/Problem" + code,
			"/partner/{name}/payload": "#/components/responses/Page" + code,
		} {
			if got := get(tree, "paths", path, "post", "responses", code, "$ref"); got != want {
				t.Errorf("POST %s answers %s with %v, want %s", path, code, got, want)
			}
		}
	}
}

// answered reports whether an operation answers status with a response of the document's
// components.responses.
func answered(tree map[string]any, status string) bool {
	paths, _ := get(tree, "paths").(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			if ref, _ := get(op, "responses", status, "$ref").(string); strings.HasPrefix(ref, "#/components/responses/") {
				return true
			}
		}
	}
	return false
}

// TestProblemSchemaAllowsExtensionMembers: a problem document may carry members a later
// minor version adds (RFC 9457 section 3.2), and only the codes of its status.
func TestProblemSchemaAllowsExtensionMembers(t *testing.T) {
	s, err := schemaCompiler(t).Compile(documentID + "#/components/schemas/Problem401")
	if err != nil {
		t.Fatal(err)
	}
	doc := func(code, extra string) any {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"type":"urn:partnergate:problem:` + code +
			`","title":"Audience invalid","status":401,"code":"` + code + `","request_id":"r-1"` + extra + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		name, code, extra string
		valid             bool
	}{
		{"as answered", "audience_invalid", "", true},
		{"with extension members", "audience_invalid", `,"expected":"svc-link","kind":"main","trace":[{"rule":"A-AUTH-8"}]`, true},
		{"a code of another status", "token_malformed", "", false},
		{"a code nobody answers", "audience_wrong", "", false},
		{"fields of the wrong shape", "audience_invalid", `,"fields":"aud"`, false},
	} {
		if err := s.Validate(doc(tt.code, tt.extra)); (err == nil) != tt.valid {
			t.Errorf("%s: Validate = %v, want valid %v", tt.name, err, tt.valid)
		}
	}
}

// TestInterfaceVersion: the interface has one version, in problem.InterfaceVersion, the
// document's info.version and the newest release of CHANGELOG.md.
func TestInterfaceVersion(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(problem.InterfaceVersion) {
		t.Errorf("problem.InterfaceVersion = %q, want MAJOR.MINOR.PATCH", problem.InterfaceVersion)
	}
	if got := get(documentTree(t), "info", "version"); got != problem.InterfaceVersion {
		t.Errorf("%s info.version = %v, want problem.InterfaceVersion %s", docPath, got, problem.InterfaceVersion)
	}
	f, err := os.Open("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\]`)
	var versions []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := release.FindStringSubmatch(sc.Text()); m != nil {
			versions = append(versions, m[1])
		}
	}
	if len(versions) == 0 {
		t.Fatal("CHANGELOG.md has no release heading \"## [x.y.z]\"")
	}
	if versions[0] != problem.InterfaceVersion {
		t.Errorf("CHANGELOG.md's newest release is %s, want problem.InterfaceVersion %s", versions[0], problem.InterfaceVersion)
	}
	sorted := slices.Clone(versions)
	sort.SliceStable(sorted, func(i, j int) bool { return newer(sorted[i], sorted[j]) })
	if !slices.Equal(sorted, versions) {
		t.Errorf("CHANGELOG.md's releases %v are not newest first", versions)
	}
}

// newer reports whether version a is after b.
func newer(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x > y
		}
	}
	return false
}
