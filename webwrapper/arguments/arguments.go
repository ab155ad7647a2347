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
	"github.com/partnergate/partnergate/webwrapper/culture"
)

// Parsed is what one command line asks for.
type Parsed struct {
	// Provider is the value of provider=, "" when not given.
	Provider string
	// XMLPath is the first argument that names an .xml file (IsXMLPath), in any position
	// as the original took it: the input.xml path of the XML provider (B-XML), made
	// absolute.
	XMLPath string
	// Commands are the arguments' commands in the order they are applied.
	Commands []command.Command
	// Culture is the value of culture=: the language of the window when this start opens
	// it, instead of the Culture setting (a running window keeps its language).
	Culture string
	// SignOn is the value of signon=: the external user this start signs on as (B-SSO).
	SignOn string
	// Warnings name what was ignored: unknown keys, stray arguments, an incomplete contact,
	// a date of birth that reads in no format, tab. They never quote a value.
	Warnings []string
}

// known lists the keys of B-ARG, provider, and the keys the original's Arguments provider
// also read: the contact's address and phone numbers, tab and culture.
var known = map[string]bool{
	"provider": true, "signon": true, "queryexercises": true, "queryworkouts": true, "id": true,
	"firstname": true, "lastname": true, "dateofbirth": true, "email": true, "mobile": true,
	"caseid": true, "openworkout": true,
	"address": true, "phonehome": true, "phonework": true, "country": true, "zipcode": true, "location": true,
	"tab": true, "culture": true,
}

// contactKeys are the optional contact keys that go to selectperson as they are.
var contactKeys = []string{"email", "mobile", "address", "phonehome", "phonework", "country", "zipcode", "location"}

// Parse reads args (without the program name) with shortDate, the culture's short date
// pattern in .NET notation (ShortDatePattern; "" reads dates as ISO 8601 only). A value
// that no command accepts is an error naming its key, and then nothing runs.
func Parse(args []string, shortDate string) (Parsed, error) {
	var p Parsed
	xml, xmlPath := XMLArg(args)
	p.XMLPath = xmlPath
	values := map[string]string{}
	for i, arg := range args {
		key, value, ok := Pair(arg)
		if !ok {
			if i != xml {
				p.Warnings = append(p.Warnings, fmt.Sprintf("argument %d is not key=value: ignored", i+1))
			}
			continue
		}
		if !known[key] {
			p.Warnings = append(p.Warnings, fmt.Sprintf("unknown argument %q ignored", personspec.Shorten(key)))
			continue
		}
		if _, dup := values[key]; dup {
			p.Warnings = append(p.Warnings, fmt.Sprintf("argument %q given twice: the last one counts", key))
		}
		values[key] = value
	}
	p.Provider = values["provider"]
	p.Culture = values["culture"]
	p.SignOn = values["signon"]
	if values["tab"] != "" {
		// The original chose a tab of its own window; the web application has views
		// instead, which the other arguments open (queryexercises, queryworkouts, openworkout).
		p.Warnings = append(p.Warnings, "argument \"tab\" ignored: the web application has no tabs")
	}

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
	person, warnings := contact(values, shortDate)
	p.Warnings = append(p.Warnings, warnings...)
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
// (B-ARG-1); otherwise it warns, naming what is missing, if any contact key was given. A
// date of birth that reads neither as ISO 8601 nor in the culture's short date pattern is
// left out with a warning, as the original did, and the person is still selected.
func contact(values map[string]string, shortDate string) (map[string]any, []string) {
	var missing, given []string
	for _, k := range []string{"id", "firstname", "lastname"} {
		if values[k] == "" {
			missing = append(missing, k)
		} else {
			given = append(given, k)
		}
	}
	for _, k := range append([]string{"dateofbirth"}, contactKeys...) {
		if values[k] != "" {
			given = append(given, k)
		}
	}
	if len(missing) > 0 {
		if len(given) == 0 {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("no contact selected: id, firstname and lastname are all needed, %s missing",
			strings.Join(missing, " and "))}
	}
	person := map[string]any{"customid": values["id"], "firstname": values["firstname"], "lastname": values["lastname"]}
	var warnings []string
	if v := values["dateofbirth"]; v != "" {
		if t, err := culture.ParseDate(v, shortDate); err == nil {
			person["dateofbirth"] = t.Format(time.DateOnly)
		} else {
			warnings = append(warnings, "dateofbirth left out: "+err.Error())
		}
	}
	for _, k := range contactKeys {
		if v := values[k]; v != "" {
			person[k] = v
		}
	}
	return person, warnings
}

// IsXMLPath tells whether arg names an .xml file: not key=value, and ending in .xml in any
// case (C:\export\input.xml, ./INPUT.XML).
func IsXMLPath(arg string) bool {
	if _, _, ok := Pair(arg); ok {
		return false
	}
	return len(arg) > len(".xml") && strings.EqualFold(filepath.Ext(arg), ".xml")
}

// XMLArg finds the input.xml of a command line: the first argument that names an .xml
// file (IsXMLPath), in any position, as the original took it. It returns its index and
// its path made absolute, since a second start hands its arguments to the running
// instance, whose working folder differs; -1 and "" when no argument names one. A path
// stays as it is when the working folder is gone (reading it then fails with a clear
// error).
func XMLArg(args []string) (index int, path string) {
	i := slices.IndexFunc(args, IsXMLPath)
	if i < 0 {
		return -1, ""
	}
	if abs, err := filepath.Abs(args[i]); err == nil {
		return i, abs
	}
	return i, args[i]
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
