package arguments

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/culture"
)

// names gives the commands' names and arguments in order, for comparison.
func names(cmds []command.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, string(c.Name))
	}
	return out
}

func TestParseOrderAndContact(t *testing.T) {
	// Written in another order than they are applied, keys in mixed case, from a raw
	// Windows command line.
	line := `openworkout=12 QueryWorkouts=knee queryexercises="hip flexor" LastName="Ørnø Nordmann" ` +
		`FirstName=Åsa ID=P-1 dateofbirth=1950-07-01 email=asa@example.com mobile="+47 999 99 999" caseid=C-9 signon=DOMAIN\asa`
	p, err := Parse(Split(line), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"signon", "setcase", "selectperson", "queryexercises", "queryworkouts", "openworkout"}
	if got := names(p.Commands); !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%q) commands = %q, want %q", line, got, want)
	}
	wantArgs := []map[string]any{
		{"user": `DOMAIN\asa`},
		{"caseid": "C-9"},
		{"customid": "P-1", "firstname": "Åsa", "lastname": "Ørnø Nordmann", "dateofbirth": "1950-07-01",
			"email": "asa@example.com", "mobile": "+47 999 99 999"},
		{"text": "hip flexor"},
		{"text": "knee"},
		{"id": int64(12)},
	}
	for i, c := range p.Commands {
		if !reflect.DeepEqual(c.Args, wantArgs[i]) || c.Source != command.FromArguments {
			t.Errorf("command %d %s args = %#v from %q, want %#v", i, c.Name, c.Args, c.Source, wantArgs[i])
		}
	}
	if p.Warnings != nil || p.XMLPath != "" || p.Provider != "" {
		t.Errorf("Parse(%q) = warnings %q, path %q, provider %q, want none", line, p.Warnings, p.XMLPath, p.Provider)
	}
}

func TestParseThreeOfThree(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		select_ bool
		warning string
	}{
		{"all three", []string{"id=1", "firstname=A", "lastname=B"}, true, ""},
		{"no lastname", []string{"id=1", "firstname=A", "dateofbirth=1950-07-01"}, false, "lastname missing"},
		{"no id", []string{"firstname=A", "lastname=B"}, false, "id missing"},
		{"blank id", []string{`id=""`, "firstname=A", "lastname=B"}, false, "id missing"},
		{"only email", []string{"email=a@example.com"}, false, "id and firstname and lastname missing"},
		{"none", []string{"signon=x"}, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.args, "")
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, c := range p.Commands {
				got = got || c.Name == command.SelectPerson
			}
			if got != tt.select_ {
				t.Errorf("Parse(%q) selects = %v, want %v", tt.args, got, tt.select_)
			}
			if w := strings.Join(p.Warnings, "\n"); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("Parse(%q) warnings = %q, want %q", tt.args, p.Warnings, tt.warning)
			}
		})
	}
}

func TestParseWarningsAndPath(t *testing.T) {
	p, err := Parse([]string{"input.xml", "Colour=blue", "stray", `provider="Svc.Desktop.Arguments.Component, Svc.Desktop"`, "signon=a", "SIGNON=b"}, "")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("input.xml")
	if p.XMLPath != abs || !filepath.IsAbs(p.XMLPath) {
		t.Errorf("XMLPath = %q, want %q", p.XMLPath, abs)
	}
	if p.Provider != "Svc.Desktop.Arguments.Component, Svc.Desktop" {
		t.Errorf("Provider = %q", p.Provider)
	}
	want := []string{`unknown argument "colour" ignored`, "argument 3 is not key=value: ignored", `argument "signon" given twice: the last one counts`}
	// The .xml file in any position, after the provider as an EHR writes it; a stray
	// argument before it is no path.
	if p, _ := Parse([]string{`provider="Svc.Desktop.Legacy3.Component, Svc.Desktop"`, "stray", `C:\export\INPUT.XML`}, ""); p.XMLPath == "" ||
		!strings.HasSuffix(p.XMLPath, `INPUT.XML`) {
		t.Errorf("Parse(provider, stray, C:\\export\\INPUT.XML) XMLPath = %q, want the file", p.XMLPath)
	}
	if !reflect.DeepEqual(p.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", p.Warnings, want)
	}
	if len(p.Commands) != 1 || p.Commands[0].Args["user"] != "b" {
		t.Errorf("Commands = %+v, want signon b", p.Commands)
	}
	// A path with '=' in it is still a path, and a key=value first argument is no path.
	if p, _ := Parse([]string{`C:\a=b\input.xml`}, ""); p.XMLPath == "" {
		t.Errorf(`Parse(C:\a=b\input.xml) XMLPath = ""`)
	}
	if p, _ := Parse([]string{`signon=x`}, ""); p.XMLPath != "" {
		t.Errorf(`Parse(signon=x) XMLPath = %q`, p.XMLPath)
	}
}

// A link's case id may be linkspec.MaxIDLength (256) characters; the wrapper's caseid
// argument takes the same ids, so the longest is accepted and one more refused.
func TestParseLongestCaseID(t *testing.T) {
	id := strings.Repeat("å", 256)
	p, err := Parse([]string{"caseid=" + id}, "")
	if err != nil || len(p.Commands) != 1 || p.Commands[0].Args["caseid"] != id {
		t.Fatalf("Parse(caseid=<256 characters>) = %v, %v; want one setcase with the id", p.Commands, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"openworkout=abc"}, "openworkout: id: must be an integer"},
		{[]string{"caseid=" + strings.Repeat("x", 257)}, "setcase: caseid: too long"},
	} {
		p, err := Parse(tt.args, "")
		if err == nil || !strings.Contains(err.Error(), tt.want) || p.Commands != nil {
			t.Errorf("Parse(%.60q) = %v, %v; want error %q and no commands", tt.args, p.Commands, err, tt.want)
		}
	}
}

func TestXMLArg(t *testing.T) {
	abs, _ := filepath.Abs("in.xml")
	for _, tt := range []struct {
		args  []string
		index int
		path  string
	}{
		{[]string{"in.xml", "x=y"}, 0, abs},
		{[]string{"id=1", "in.xml"}, 1, abs},
		{[]string{"provider=x", "stray", "in.xml", "other.xml"}, 2, abs},
		{[]string{`C:\a=b\in.xml`}, 0, ""},
		{[]string{"x=in.xml"}, -1, ""},
		{nil, -1, ""},
	} {
		i, path := XMLArg(tt.args)
		if tt.path == "" && i >= 0 {
			tt.path = path // the platform's absolute form of a Windows path; only the index counts
		}
		if i != tt.index || path != tt.path || (i >= 0 && !filepath.IsAbs(path)) {
			t.Errorf("XMLArg(%q) = %d, %q; want %d, %q", tt.args, i, path, tt.index, tt.path)
		}
	}
}

func TestParseUsesCulture(t *testing.T) {
	p, err := Parse([]string{"id=1", "firstname=A", "lastname=B", "dateofbirth=7/1/1950"}, culture.PatternForLocale("en_US"))
	if err != nil || len(p.Commands) != 1 || p.Commands[0].Args["dateofbirth"] != "1950-07-01" {
		t.Fatalf("Parse in en_US = %+v, %v; want dateofbirth 1950-07-01", p.Commands, err)
	}
}

// A date of birth that reads in no format is left out with a warning, as the original
// did; the person is still selected.
func TestParseUnreadableDateOfBirth(t *testing.T) {
	p, err := Parse([]string{"id=1", "firstname=A", "lastname=B", "dateofbirth=31.31.1950"}, culture.PatternForLocale("nb_NO"))
	if err != nil || len(p.Commands) != 1 || p.Commands[0].Args["dateofbirth"] != nil {
		t.Fatalf("Parse = %+v, %v; want selectperson without dateofbirth", p.Commands, err)
	}
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "dateofbirth left out") || strings.Contains(w, "1950") {
		t.Errorf("warnings = %q, want dateofbirth left out, without the value", p.Warnings)
	}
}

// The original's Arguments provider also read the contact's address and phone numbers,
// tab and culture.
func TestParseOriginalKeys(t *testing.T) {
	p, err := Parse([]string{"id=1", "firstname=A", "lastname=B", "address=Storgata 1", "phonehome=22 22 22 22",
		"phonework=23 23 23 23", "country=NO", "zipcode=0155", "location=Oslo", "tab=workouts", "culture=nb-NO"}, "")
	if err != nil || len(p.Commands) != 1 {
		t.Fatalf("Parse = %+v, %v", p.Commands, err)
	}
	want := map[string]any{"customid": "1", "firstname": "A", "lastname": "B", "address": "Storgata 1", "phonehome": "22 22 22 22",
		"phonework": "23 23 23 23", "country": "NO", "zipcode": "0155", "location": "Oslo"}
	if !reflect.DeepEqual(p.Commands[0].Args, want) {
		t.Errorf("selectperson args = %#v, want %#v", p.Commands[0].Args, want)
	}
	if p.Culture != "nb-NO" {
		t.Errorf("Culture = %q, want nb-NO", p.Culture)
	}
	if p, _ := Parse([]string{`signon=CLINIC\asa`}, ""); p.SignOn != `CLINIC\asa` {
		t.Errorf("SignOn = %q, want CLINIC\\asa", p.SignOn)
	}
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, `"tab" ignored`) || strings.Contains(w, "unknown") {
		t.Errorf("warnings = %q, want tab ignored and no unknown key", p.Warnings)
	}
}
