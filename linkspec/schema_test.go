package linkspec_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/problem"
)

// The JSON Schemas shipped for partners (docs/schemas) are held to the casebook that the
// gateway's verifier, the partner kit and the running gateway are tested with: every claim
// set the gateway accepts as it is passes its schema, every one it refuses for a claim or
// payload rule fails both, and the rules a schema cannot express are listed here, each with
// its reason, so that the list cannot grow silently.

// schemaFiles are the schemas by the kind of link they describe.
var schemaFiles = map[linkspec.Kind]string{
	linkspec.KindMain: "../docs/schemas/main-payload.schema.json",
	linkspec.KindGo:   "../docs/schemas/go-payload.schema.json",
}

// compileSchemas compiles the shipped schemas as JSON Schema 2020-12 (the compiler checks
// them against the draft's metaschema) with format asserted: a birthdate's "format": "date"
// is the calendar date rule, which 2020-12 makes an annotation unless the validator asserts
// it. A partner's validator must assert format too.
func compileSchemas(t *testing.T) map[linkspec.Kind]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	out := map[linkspec.Kind]*jsonschema.Schema{}
	for k, file := range schemaFiles {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			t.Fatalf("%s has no $id", file)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("adding %s: %v", file, err)
		}
		if out[k], err = c.Compile(id); err != nil {
			t.Fatalf("compiling %s: %v", file, err)
		}
	}
	return out
}

// claimSet decodes the payload segment of a compact token; ok is false when it is not one
// JSON document of valid UTF-8, to which no schema applies.
func claimSet(t *testing.T, tok string) (any, bool) {
	t.Helper()
	seg := strings.Split(tok, ".")
	if len(seg) != 3 {
		t.Fatalf("the case's token has %d segments, want 3", len(seg))
	}
	raw, err := base64.RawURLEncoding.DecodeString(seg[1])
	if err != nil {
		t.Fatalf("decoding the claims: %v", err)
	}
	if !utf8.Valid(raw) {
		return nil, false
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, false
	}
	return v, true
}

// failing returns, sorted, the dotted paths where v fails s (a missing required member by
// its own path, "" for the claim set itself), or nil when v passes.
func failing(s *jsonschema.Schema, v any) []string {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []string{"error: " + err.Error()}
	}
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if req, ok := e.ErrorKind.(*kind.Required); ok {
				for _, m := range req.Missing {
					seen[strings.Join(append(slices.Clone(e.InstanceLocation), m), ".")] = true
				}
			} else {
				seen[strings.Join(e.InstanceLocation, ".")] = true
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// TestSchemasAcceptTheCasebooksLinks: the valid main and Go links, and every accepted case
// of the casebook, pass the schema of their kind; a case whose optional values the gateway
// drops (A-DEC-3) fails it at exactly those fields, since the schema says what a partner
// should send and the gateway is lenient only about optional data.
func TestSchemasAcceptTheCasebooksLinks(t *testing.T) {
	schemas := compileSchemas(t)
	for _, tt := range []struct {
		kind   linkspec.Kind
		claims map[string]any
	}{{linkspec.KindMain, jwttest.MainClaims()}, {linkspec.KindGo, jwttest.GoClaims()}} {
		v := roundTrip(t, tt.claims)
		if got := failing(schemas[tt.kind], v); got != nil {
			t.Errorf("the valid %s link fails its schema at %q", tt.kind, got)
		}
	}
	for _, c := range linktokentest.Acceptances() {
		t.Run(c.Name, func(t *testing.T) {
			v, ok := claimSet(t, c.Token(t))
			if !ok {
				t.Fatal("the accepted token's claims are not JSON")
			}
			want := slices.Sorted(slices.Values(c.Dropped))
			if field := inexpressibleDrops[c.Name]; field != "" {
				want = slices.DeleteFunc(want, func(f string) bool { return f == field })
			}
			got := failing(schemas[c.Kind], v)
			if !slices.Equal(got, want) {
				t.Errorf("the %s schema fails at %q, want exactly the dropped fields %q", c.Kind, got, c.Dropped)
			}
		})
	}
}

// inexpressibleDrops are the casebook's accepted cases whose dropped field a schema passes,
// by case name: the field, with the reason in a comment.
var inexpressibleDrops = map[string]string{
	// A national identity number's check digits (mod-11, Luhn) and the date within it; the
	// schema checks its digits and separators.
	"main link, ssn check digits wrong": "contact.ssn",
}

// roundTrip makes claims the JSON value a schema validator sees.
func roundTrip(t *testing.T, claims map[string]any) any {
	t.Helper()
	data, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claimCodes are the codes of the rules on the claim set that a schema is asked to enforce.
// time_in_milliseconds is a code being added (issue 17): its cases belong here when they
// come, and an exp in milliseconds is beyond the schema's maximum.
var claimCodes = map[problem.Code]bool{
	problem.CodeClaimsInvalid:  true,
	problem.CodeNonceMissing:   true,
	problem.CodeNonceInvalid:   true,
	problem.CodePayloadInvalid: true,
	"time_in_milliseconds":     true,
}

// inexpressible are the casebook's claim-level rejections that a valid claim set for a
// JSON Schema validator can still carry, by case name, with the reason no schema can say it.
var inexpressible = map[string]string{
	// A parsed JSON value has no duplicate names: parsers keep one of them, and which one
	// differs (RFC 8259 section 4), which is why the gateway refuses them.
	"duplicate nonce":                   "duplicate member names",
	"duplicate exp":                     "duplicate member names",
	"duplicate employeeId":              "duplicate member names",
	"duplicate in contact":              "duplicate member names",
	"duplicate unknown claim":           "duplicate member names",
	"case variant duplicate employeeId": "a name that differs from a defined one only in case",
	"case variant duplicate in contact": "a name that differs from a defined one only in case",
	"unicode fold duplicate":            "a name that differs from a defined one only by Unicode case folding",
	"unicode fold variant alone":        "a name that differs from a defined one only by Unicode case folding",
	"case variant of exp next to exp":   "a name that differs from a defined one only in case",
	// Depth needs counting across any member; 2020-12 has no keyword for it.
	"extra claim nested too deeply": "nesting deeper than 16 levels",
	// A JSON Schema number is a mathematical value: 1.7e9 is the integer 1700000000.
	"exp exponent": "how an integer is written (an exponent)",
	// Relations between two claims.
	"exp equal to nbf": "exp after nbf",
	"exp before nbf":   "exp after nbf",
	"iat before nbf":   "iat equal to nbf",
	"iat after nbf":    "iat equal to nbf",
	// The schema states the default bounds; a partner's own are agreed with the service.
	"nonce over a partner maximum": "a partner's own nonce bounds",
}

// TestSchemasRefuseTheCasebooksClaimRejections: every casebook token refused for a claim or
// payload rule carries a claim set that fails both schemas (a refused claim set is a link of
// neither kind), and for payload_invalid the schema of the kind the gateway reads fails at
// the field the gateway names; unless the rule is in inexpressible, and then the schema of
// its kind accepts it. Claim sets that are not
// JSON (trailing data, invalid UTF-8) are outside any schema and counted apart.
func TestSchemasRefuseTheCasebooksClaimRejections(t *testing.T) {
	schemas := compileSchemas(t)
	used := map[string]bool{}
	notJSON := 0
	for _, c := range linktokentest.Rejections() {
		if !claimCodes[c.Want] {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			v, ok := claimSet(t, c.Token(t))
			if !ok {
				notJSON++
				return
			}
			k, other := linkspec.KindMain, linkspec.KindGo
			if kindOf(v) == linkspec.KindGo {
				k, other = other, k
			}
			own := failing(schemas[k], v)
			if reason, ok := inexpressible[c.Name]; ok {
				used[c.Name] = true
				if own != nil {
					t.Errorf("listed as inexpressible (%s), yet the %s schema refuses it at %q: take it off the list", reason, k, own)
				}
				return
			}
			if own == nil {
				t.Fatalf("the gateway refuses this %s link with %s; its schema accepts it", k, c.Want)
			}
			if failing(schemas[other], v) == nil {
				t.Errorf("the gateway refuses this %s link with %s; the %s schema accepts it", k, c.Want, other)
			}
			if c.Want == problem.CodePayloadInvalid && !slices.Contains(own, c.Field) {
				t.Errorf("the gateway names %s; the %s schema fails at %q", c.Field, k, own)
			}
		})
	}
	for name := range inexpressible {
		if !used[name] {
			t.Errorf("inexpressible lists %q, which is no claim-level rejection of the casebook", name)
		}
	}
	t.Logf("%d claim sets are not JSON; %d rules are listed as inexpressible", notJSON, len(inexpressible))
}

// kindOf reads the kind as linkspec.Payload.Kind does, on a claim set whose fields may have
// the wrong JSON type: a main link when one of the three employee fields is present and not
// empty.
func kindOf(v any) linkspec.Kind {
	m, _ := v.(map[string]any)
	for _, f := range []string{"employeeId", "employeeFirstname", "employeeLastname"} {
		if x, ok := m[f]; ok && x != "" {
			return linkspec.KindMain
		}
	}
	return linkspec.KindGo
}

// TestSchemasAgreeWithValidate holds each field rule of the schemas to linkspec's own
// Validate, at the edges the casebook does not reach: the same claim set must fail the
// schema of its kind at exactly the fields Validate names.
func TestSchemasAgreeWithValidate(t *testing.T) {
	schemas := compileSchemas(t)
	contact := func(c map[string]any) map[string]any { return c["contact"].(map[string]any) }
	main := func(f func(c map[string]any)) map[string]any {
		c := jwttest.MainClaims()
		f(c)
		return c
	}
	goLink := func(f func(c map[string]any)) map[string]any {
		c := jwttest.GoClaims()
		f(c)
		return c
	}
	tests := []struct {
		name   string
		claims map[string]any
	}{
		{"name at 200 code points", main(func(c map[string]any) { c["employeeFirstname"] = strings.Repeat("é", 200) })},
		{"name at 201 code points", main(func(c map[string]any) { c["employeeFirstname"] = strings.Repeat("é", 201) })},
		{"id at 256", main(func(c map[string]any) { c["organizationId"] = strings.Repeat("x", 256) })},
		{"id at 257", main(func(c map[string]any) { c["organizationId"] = strings.Repeat("x", 257) })},
		{"ssn at 65", main(func(c map[string]any) { contact(c)["ssn"] = strings.Repeat("1", 65) })},
		{"e-mail at 255", main(func(c map[string]any) { c["employeeEmail"] = strings.Repeat("a", 243) + "@example.org" })},
		{"tab in a name", main(func(c map[string]any) { contact(c)["lastname"] = "a\tb" })},
		{"DEL in an id", main(func(c map[string]any) { c["employeeId"] = "a\x7fb" })},
		{"C1 control in a name", main(func(c map[string]any) { c["organizationName"] = "a\u0085b" })},
		{"paragraph separator", main(func(c map[string]any) { contact(c)["firstname"] = "a\u2029b" })},
		{"no-break spaces only", main(func(c map[string]any) { contact(c)["firstname"] = "\u00a0\u3000" })},
		{"no-break space inside", main(func(c map[string]any) { contact(c)["firstname"] = "Anne\u00a0Marie" })},
		{"blank optional", main(func(c map[string]any) { contact(c)["gender"] = "  " })},
		{"empty optional is absent", main(func(c map[string]any) { contact(c)["gender"] = "" })},
		{"e-mail with two @", main(func(c map[string]any) { contact(c)["email"] = "a@b@c" })},
		{"e-mail with a space", main(func(c map[string]any) { contact(c)["email"] = "a b@c" })},
		{"e-mail without a local part", main(func(c map[string]any) { contact(c)["email"] = "@c" })},
		{"e-mail with unicode", main(func(c map[string]any) { contact(c)["email"] = "åse@ex.no" })},
		{"leap day", main(func(c map[string]any) { contact(c)["birthdate"] = "2000-02-29" })},
		{"no leap day", main(func(c map[string]any) { contact(c)["birthdate"] = "1900-02-29" })},
		{"month 13", main(func(c map[string]any) { contact(c)["birthdate"] = "1990-13-01" })},
		{"date with time", main(func(c map[string]any) { contact(c)["birthdate"] = "1990-01-01T00:00:00Z" })},
		{"empty birthdate is absent", main(func(c map[string]any) { contact(c)["birthdate"] = "" })},
		{"go link, empty employeeId", goLink(func(c map[string]any) { c["employeeId"] = "" })},
		{"go link, null employeeId", goLink(func(c map[string]any) { c["employeeId"] = nil })},
		{"null optional is absent", main(func(c map[string]any) { c["caseId"], contact(c)["birthdate"] = nil, nil })},
		{"null required", main(func(c map[string]any) { contact(c)["lastname"] = nil })},
		{"go link, blank contact email", goLink(func(c map[string]any) { contact(c)["email"] = " " })},
		{"go link, extra contact member", goLink(func(c map[string]any) { contact(c)["shoeSize"] = "42" })},
		{"main link, blank employeeLastname", main(func(c map[string]any) { c["employeeLastname"] = " " })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.claims)
			if err != nil {
				t.Fatal(err)
			}
			p, err := linkspec.DecodePayload(data)
			if err != nil {
				t.Fatalf("DecodePayload = %v", err)
			}
			k, err := p.Validate()
			var want []string
			var verr *linkspec.Error
			if errors.As(err, &verr) {
				for _, f := range verr.Fields {
					want = append(want, f.Field)
				}
				sort.Strings(want)
			} else if err != nil {
				t.Fatalf("Validate = %v", err)
			}
			if got := failing(schemas[k], roundTrip(t, tt.claims)); !slices.Equal(got, want) {
				t.Errorf("the %s schema fails at %q, Validate at %q", k, got, want)
			}
		})
	}
}
