package arguments

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/partnergate/partnergate/webwrapper/command"
)

// FuzzParse feeds raw Windows command lines through Split and Parse: no panic, every
// command valid and in the documented order, a contact only from all three keys, and no
// argument lost to splitting (joining the arguments keeps every non-separator byte that
// is not a quote or a backslash).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`signon=a caseid=C-1 id=1 firstname="Åsa Ørnø" lastname=B dateofbirth=1.7.1950 queryexercises=x openworkout=3`,
		`input.xml provider="Svc.Desktop.Legacy3.Component, Svc.Desktop"`,
		`a\\\"b "c""d" e\\`,
		`id=1 firstname=A`,
		`openworkout=-1`,
	} {
		f.Add(s)
	}
	order := []command.Name{command.SignOn, command.SetCase, command.SelectPerson, command.QueryExercises,
		command.QueryWorkouts, command.OpenWorkout}
	f.Fuzz(func(t *testing.T, line string) {
		args := Split(line)
		keep := func(s string) string {
			var b []byte
			for i := 0; i < len(s); i++ {
				if c := s[i]; c != ' ' && c != '\t' && c != '"' && c != '\\' {
					b = append(b, c)
				}
			}
			return string(b)
		}
		if got, want := keep(strings.Join(args, "")), keep(line); got != want {
			t.Fatalf("Split(%q) = %q lost or added characters", line, args)
		}
		p, err := Parse(args, "dd.MM.yyyy")
		if err != nil {
			if p.Commands != nil {
				t.Fatalf("Parse(%q) = commands %v with error %v", line, p.Commands, err)
			}
			return
		}
		last := -1
		for _, c := range p.Commands {
			if err := command.Validate(c); err != nil {
				t.Fatalf("Parse(%q) gave an invalid command %+v: %v", line, c, err)
			}
			i := slices.Index(order, c.Name)
			if i <= last {
				t.Fatalf("Parse(%q) commands %v out of order", line, p.Commands)
			}
			last = i
			if c.Name == command.SelectPerson && (c.Args["customid"] == "" || c.Args["firstname"] == "" || c.Args["lastname"] == "") {
				t.Fatalf("Parse(%q) selected %+v without all three", line, c.Args)
			}
		}
		for _, w := range p.Warnings {
			if !utf8.ValidString(w) || w == "" {
				t.Fatalf("Parse(%q) warning %q", line, w)
			}
		}
	})
}
