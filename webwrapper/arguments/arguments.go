// Package arguments reads the wrapper's command-line arguments (interface part B, B-ARG,
// provider "Svc.Desktop.Arguments.Component, Svc.Desktop") into commands.
//
// One set of arguments is applied in this order, whatever order they were written in:
//
//  1. signon: the calling program's user, before anything needs a sign-in (B-SSO);
//  2. setcase: caseid, so that what follows is archived under that case;
//  3. selectperson: the contact, only when id, firstname and lastname are all given
//     (B-ARG-1), with dateofbirth, email and mobile;
//  4. queryexercises;
//  5. queryworkouts;
//  6. openworkout, last, so that the workout is what the window shows.
package arguments

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// Parsed is what one command line asks for.
type Parsed struct {
	// Provider is the value of provider=, "" when not given.
	Provider string
	// XMLPath is the first argument when it is not key=value: the input.xml path of the
	// XML provider (B-XML), made absolute.
	XMLPath string
	// Commands are the arguments' commands in the order they are applied.
	Commands []command.Command
	// Warnings name what was ignored: unknown keys, stray arguments, an incomplete contact.
	// They never quote a value.
	Warnings []string
}

// known lists the keys of B-ARG, plus provider.
var known = map[string]bool{
	"provider": true, "signon": true, "queryexercises": true, "queryworkouts": true, "id": true,
	"firstname": true, "lastname": true, "dateofbirth": true, "email": true, "mobile": true,
	"caseid": true, "openworkout": true,
}

// Parse reads args (without the program name) with shortDate, the culture's short date
// pattern in .NET notation (ShortDatePattern; "" reads dates as ISO 8601 only). A value
// that no command accepts is an error naming its key, and then nothing runs.
func Parse(args []string, shortDate string) (Parsed, error) {
	var p Parsed
	values := map[string]string{}
	for i, arg := range args {
		key, value, ok := Pair(arg)
		if !ok {
			if i == 0 {
				p.XMLPath = absolute(arg)
			} else {
				p.Warnings = append(p.Warnings, fmt.Sprintf("argument %d is not key=value: ignored", i+1))
			}
			continue
		}
		if !known[key] {
			p.Warnings = append(p.Warnings, fmt.Sprintf("unknown argument %q ignored", shorten(key)))
			continue
		}
		if _, dup := values[key]; dup {
			p.Warnings = append(p.Warnings, fmt.Sprintf("argument %q given twice: the last one counts", key))
		}
		values[key] = value
	}
	p.Provider = values["provider"]

	var cmds []command.Command
	add := func(name command.Name, args map[string]any) error {
		c, err := command.New(string(name), args, command.FromArguments)
		if err != nil {
			return err
		}
		cmds = append(cmds, c)
		return nil
	}
	// 1 and 2: signon and setcase.
	for _, a := range []struct {
		key  string
		name command.Name
		arg  string
	}{{"signon", command.SignOn, "user"}, {"caseid", command.SetCase, "caseid"}} {
		if v := values[a.key]; v != "" {
			if err := add(a.name, map[string]any{a.arg: v}); err != nil {
				return Parsed{}, err
			}
		}
	}
	// 3: the contact.
	person, warning, err := contact(values, shortDate)
	if err != nil {
		return Parsed{}, err
	}
	if warning != "" {
		p.Warnings = append(p.Warnings, warning)
	}
	if person != nil {
		if err := add(command.SelectPerson, person); err != nil {
			return Parsed{}, err
		}
	}
	// 4 to 6: the searches, then the workout.
	for _, a := range []struct {
		key  string
		name command.Name
		arg  string
	}{{"queryexercises", command.QueryExercises, "text"}, {"queryworkouts", command.QueryWorkouts, "text"},
		{"openworkout", command.OpenWorkout, "id"}} {
		if v := values[a.key]; v != "" {
			if err := add(a.name, map[string]any{a.arg: v}); err != nil {
				return Parsed{}, err
			}
		}
	}
	p.Commands = cmds
	return p, nil
}

// contact builds selectperson's arguments when id, firstname and lastname are all given
// (B-ARG-1); otherwise it warns, naming what is missing, if any contact key was given.
func contact(values map[string]string, shortDate string) (map[string]any, string, error) {
	var missing, given []string
	for _, k := range []string{"id", "firstname", "lastname"} {
		if values[k] == "" {
			missing = append(missing, k)
		} else {
			given = append(given, k)
		}
	}
	for _, k := range []string{"dateofbirth", "email", "mobile"} {
		if values[k] != "" {
			given = append(given, k)
		}
	}
	if len(missing) > 0 {
		if len(given) == 0 {
			return nil, "", nil
		}
		return nil, fmt.Sprintf("no contact selected: id, firstname and lastname are all needed, %s missing",
			strings.Join(missing, " and ")), nil
	}
	person := map[string]any{"customid": values["id"], "firstname": values["firstname"], "lastname": values["lastname"]}
	if v := values["dateofbirth"]; v != "" {
		t, err := parseDate(v, shortDate)
		if err != nil {
			return nil, "", &command.Error{Name: command.SelectPerson, Fields: []personspec.FieldError{{Field: "dateofbirth", Reason: err.Error()}}}
		}
		person["dateofbirth"] = t.Format(time.DateOnly)
	}
	for _, k := range []string{"email", "mobile"} {
		if v := values[k]; v != "" {
			person[k] = v
		}
	}
	return person, "", nil
}

// ForForwarding returns args with the input.xml path, if any, made absolute: a second
// start hands its arguments to the running instance, whose working folder differs.
func ForForwarding(args []string) []string {
	out := slices.Clone(args)
	if len(out) > 0 {
		if _, _, ok := Pair(out[0]); !ok {
			out[0] = absolute(out[0])
		}
	}
	return out
}

// absolute makes path absolute, or leaves it as it is when the working folder is gone
// (reading it will then fail with a clear error).
func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// Pair splits key=value. The key must be letters only, so that a path such as
// C:\a=b\input.xml is not read as a pair; it is lower-cased (keys are case-insensitive).
// A value still in double quotes (a caller that quoted it twice) loses them.
func Pair(arg string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(arg, "=")
	if !ok || key == "" || strings.IndexFunc(key, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
		return "", "", false
	}
	value = strings.TrimSpace(value)
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	return strings.ToLower(key), value, true
}

// shorten keeps an unknown key readable in a warning.
func shorten(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
