package provider

import (
	"os"
	"path/filepath"
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

func (fake) Commands([]string) ([]command.Command, []string, error) { return nil, nil, nil }

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

func TestXMLProvider(t *testing.T) {
	path := filepath.Join(wintest.TempDir(t), "input.xml")
	doc := `<exorinput exercisequery="knee"><source_customerno>1</source_customerno><firstname>A</firstname>` +
		`<lastname>B</lastname><born>1950-07-01</born></exorinput>`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file after the provider argument, as an EHR writes the command line.
	cmds, warnings, err := xmlProvider{}.Commands([]string{"provider=" + XML, "signon=x", "stray", path})
	if err != nil || len(cmds) != 2 || cmds[0].Name != command.SelectPerson || cmds[1].Name != command.QueryExercises {
		t.Fatalf("Commands = %v, %v; want selectperson and queryexercises", cmds, err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], `argument "signon" ignored`) || !strings.Contains(warnings[1], "argument 3") {
		t.Fatalf("warnings = %q", warnings)
	}
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if cmds, _, err := (xmlProvider{}).Commands([]string{path}); err != nil || len(cmds) != 2 {
		t.Fatalf("Commands(path first) = %v, %v; want two commands", cmds, err)
	}
	if cmds, _, err := (xmlProvider{}).Commands(nil); cmds != nil || err != nil {
		t.Fatalf("Commands(no file) = %v, %v; want nothing", cmds, err)
	}
	if _, _, err := (xmlProvider{}).Commands([]string{path}); err == nil {
		t.Fatal("Commands(deleted file) succeeded")
	}
}

func TestArgumentsProvider(t *testing.T) {
	wintest.ShortDate(t, "nb_NO.UTF-8", "dd.MM.yyyy")
	cmds, warnings, err := argumentsProvider{}.Commands([]string{"input.xml", "provider=" + Arguments, "id=1", "firstname=A",
		"lastname=B", "dateofbirth=01.07.1950"})
	if err != nil || len(cmds) != 1 || cmds[0].Args["dateofbirth"] != "1950-07-01" {
		t.Fatalf("Commands = %v, %v; want selectperson born 1950-07-01", cmds, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "an .xml file argument is ignored") {
		t.Fatalf("warnings = %q", warnings)
	}
	if _, _, err := (argumentsProvider{}).Commands([]string{"openworkout=x"}); err == nil {
		t.Fatal("Commands(openworkout=x) succeeded")
	}
}
