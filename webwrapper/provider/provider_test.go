package provider

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
)

func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		name string
		want Provider
	}{
		{"", xmlProvider{}},
		{"Svc.Desktop.Legacy3.Component, Svc.Desktop", xmlProvider{}},
		{"Svc.Desktop.Arguments.Component, Svc.Desktop", argumentsProvider{}},
		{"svc.desktop.arguments.component,Svc.Desktop", argumentsProvider{}},
		{"  Svc.Desktop.Arguments.Component ,  Svc.Desktop ", argumentsProvider{}},
		// Assembly-qualified, as Type.GetType accepts it.
		{"Svc.Desktop.Arguments.Component, Svc.Desktop, Version=2.1.5.0, Culture=neutral, PublicKeyToken=null", argumentsProvider{}},
		{"Svc.Desktop.Legacy3.Component, Svc.Desktop, Version=1.0.0.0, Culture=neutral, PublicKeyToken=b77a5c561934e089", xmlProvider{}},
		{"Svc.Desktop.Legacy3.Component,Svc.Desktop,Version=1.0.0.0", xmlProvider{}},
	} {
		if got, err := Lookup(tt.name); err != nil || got != tt.want {
			t.Errorf("Lookup(%q) = %T, %v; want %T", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{"Svc.Desktop.Arguments.Component, Svc.Desktop, neutral", "Svc.Desktop.Arguments.Component, Other"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("Lookup(%q) succeeded, want unknown", bad)
		}
	}
	_, err := Lookup("Svc.Desktop.Legacy2.Component, Svc.Desktop")
	if err == nil || !strings.Contains(err.Error(), `unknown protocol provider "Svc.Desktop.Legacy2.Component, Svc.Desktop"`) ||
		!strings.Contains(err.Error(), Arguments) || !strings.Contains(err.Error(), XML) {
		t.Errorf("Lookup(unknown) = %v, want an error listing the known providers", err)
	}
}

type fake struct{}

func (fake) Read([]string) (Start, error) { return Start{}, nil }

func TestRegister(t *testing.T) {
	Register("Example.Provider, Example", fake{})
	t.Cleanup(func() { delete(providers, normalise("Example.Provider, Example")) })
	if p, err := Lookup("example.provider, example"); err != nil || p != (fake{}) {
		t.Fatalf("Lookup of a registered provider = %v, %v", p, err)
	}
	for _, tt := range []struct {
		name string
		p    Provider
	}{{"Example.Provider,Example", fake{}}, {"", fake{}}, {"X, Y", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %v) did not panic", tt.name, tt.p)
				}
			}()
			Register(tt.name, tt.p)
		}()
	}
}

func TestForArgs(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		configured string
		want       Provider
		wantErr    bool
	}{
		{nil, "", xmlProvider{}, false},
		{[]string{"input.xml"}, "", xmlProvider{}, false},
		{nil, Arguments, argumentsProvider{}, false},
		{[]string{"Provider=" + Arguments, "id=1"}, "", argumentsProvider{}, false},
		{[]string{"provider=" + XML}, Arguments, xmlProvider{}, false},
		{[]string{"provider=Nope"}, "", nil, true},
		{nil, "Nope", nil, true},
	} {
		got, err := ForArgs(tt.args, tt.configured)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ForArgs(%q, %q) = %T, %v; want %T", tt.args, tt.configured, got, err, tt.want)
		}
	}
}

// commands runs a start's Commands, as the running instance does.
func commands(t *testing.T, s Start) ([]command.Command, []string, error) {
	t.Helper()
	if s.Commands == nil {
		return nil, nil, nil
	}
	return s.Commands()
}

// The XML provider honours the file and culture=, as the original did, and ignores
// signon=: the original's XML provider named no sign-on user. Reading the start touches
// no file; its commands read the file and delete it.
func TestXMLProvider(t *testing.T) {
	dir := wintest.TempDir(t)
	t.Chdir(dir)
	path := filepath.Join(dir, "input.xml")
	doc := `<exorinput exercisequery="knee"><source_customerno>1</source_customerno><firstname>A</firstname>` +
		`<lastname>B</lastname><born>1950-07-01</born></exorinput>`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file after the provider argument, as an EHR writes the command line, and by a
	// path relative to the working folder.
	args := []string{"provider=" + XML, "signon=x", "culture=sv-SE", "stray", "input.xml"}
	s, err := xmlProvider{}.Read(args)
	if err != nil {
		t.Fatal(err)
	}
	want := Start{Culture: "sv-SE", XMLPath: path, Args: []string{"provider=" + XML, "signon=x", "culture=sv-SE", "stray", path}}
	if s.Culture != want.Culture || s.SignOn != "" || s.XMLPath != want.XMLPath || !slices.Equal(s.Args, want.Args) {
		t.Errorf("Read(%q) = culture %q, signon %q, path %q, args %q; want %q, \"\", %q, %q",
			args, s.Culture, s.SignOn, s.XMLPath, s.Args, want.Culture, want.XMLPath, want.Args)
	}
	if len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0], `argument "signon" ignored`) || !strings.Contains(s.Warnings[1], "argument 4") {
		t.Errorf("warnings = %q, want signon and argument 4 ignored", s.Warnings)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("after Read the file is gone (%v), want it untouched until the commands are read", err)
	}
	cmds, _, err := commands(t, s)
	if err != nil || len(cmds) != 2 || cmds[0].Name != command.SelectPerson || cmds[1].Name != command.QueryExercises {
		t.Fatalf("Commands = %v, %v; want selectperson and queryexercises", cmds, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after the commands the file is still there (%v), want it deleted", err)
	}
	if cmds, _, err := commands(t, s); err == nil {
		t.Fatalf("Commands of a deleted file = %v, want an error", cmds)
	}
	if s, err := (xmlProvider{}).Read(nil); err != nil || s.Commands != nil || s.XMLPath != "" {
		t.Fatalf("Read(no file) = %+v, %v; want no commands", s, err)
	}
}

// The Arguments provider honours culture= and signon=, and ignores an .xml file.
func TestArgumentsProvider(t *testing.T) {
	wintest.ShortDate(t, "nb_NO.UTF-8", "dd.MM.yyyy")
	args := []string{"input.xml", "provider=" + Arguments, "id=1", "firstname=A", "lastname=B", "dateofbirth=01.07.1950",
		"culture=nb-NO", `signon=CLINIC\asa`}
	s, err := argumentsProvider{}.Read(args)
	if err != nil || s.Culture != "nb-NO" || s.SignOn != `CLINIC\asa` || s.XMLPath != "" || !slices.Equal(s.Args, args) {
		t.Fatalf("Read = %+v, %v; want culture nb-NO, signon CLINIC\\asa, no file, the arguments as given", s, err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "an .xml file argument is ignored") {
		t.Fatalf("warnings = %q", s.Warnings)
	}
	cmds, _, err := commands(t, s)
	if err != nil || len(cmds) != 2 || cmds[0].Name != command.SignOn || cmds[1].Args["dateofbirth"] != "1950-07-01" {
		t.Fatalf("Commands = %v, %v; want signon, then selectperson born 1950-07-01", cmds, err)
	}
	// A value no command accepts: nothing of the command line counts.
	if s, err := (argumentsProvider{}).Read([]string{"openworkout=x", "culture=nb-NO"}); err == nil || s.Culture != "" || s.Commands != nil {
		t.Fatalf("Read(openworkout=x) = %+v, %v; want an error and nothing", s, err)
	}
}
