// Package command is the desktop wrapper's one command model (interface part B): the
// command-line arguments, the input.xml file and the pipe all turn into Commands, which
// one queue runs in order against the page. Validation lives here, so that a command is
// refused the same way whichever protocol brought it.
package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/webwrapper/culture"
)

// Name is a command's method name, lower-case as the original wrapper matched it.
type Name string

// The pipe's methods (B-PIPE), then those only the arguments and the XML file give.
const (
	Hide                 Name = "hide"
	Show                 Name = "show"
	Version              Name = "version"
	Close                Name = "close"
	GetWorkoutsForClient Name = "getworkoutsforclient"
	OpenWorkout          Name = "openworkout"
	GetListOfUsers       Name = "getlistofusers"
	SetCustomID          Name = "setcustomid"
	SelectPerson         Name = "selectperson"
	Log                  Name = "log" // undocumented in the original: turns logging on, answers nothing

	SignOn         Name = "signon"         // Args "user": the calling program's user name (B-SSO)
	QueryExercises Name = "queryexercises" // Args "text": the search text, may be empty
	QueryWorkouts  Name = "queryworkouts"  // Args "text": the search text, may be empty
	SetCase        Name = "setcase"        // Args "caseid": the case PDFs are archived under
)

// Where a command came from, for Command.Source.
const (
	FromArguments = "arguments"
	FromXML       = "xml"
	FromPipe      = "pipe"
)

// Command is one request to the wrapper.
type Command struct {
	Name Name
	// Args holds the arguments with lower-case names and typed values: int64 ids, strings,
	// and for selectperson's profiledata the decoded JSON array ([]any).
	Args map[string]any
	// Source is FromArguments, FromXML or FromPipe.
	Source string
	// Warnings name what New left out rather than refusing the command, as the original
	// did: a selectperson gender or date of birth it cannot read, a profile entry without
	// a key. They never quote a value.
	Warnings []string
}

// Queued tells whether the command waits its turn in the wrapper's one queue: everything
// but the window commands, version and log, which act at once, even while the queue
// waits for a sign-in.
func (c Command) Queued() bool {
	switch c.Name {
	case Hide, Show, Version, Close, Log:
		return false
	}
	return true
}

// NeedsSignIn tells whether the command must wait until someone is signed in: every
// queued command but signon, which comes before the sign-in.
func (c Command) NeedsSignIn() bool {
	return c.Queued() && c.Name != SignOn
}

// kind is how an argument is normalised and checked.
type kind int

const (
	text    kind = iota // a string; a JSON number is taken as its literal text
	integer             // an int64; a string of digits is accepted, as the sample client sends
	date                // a date, normalised to yyyy-MM-dd or RFC 3339
)

// fields lists every command and the arguments it reads. Selectperson's other members are
// personspec's to judge; unknown arguments of the other commands are ignored.
var fields = map[Name]map[string]kind{
	Hide: {}, Show: {}, Version: {}, Close: {}, Log: {},
	GetWorkoutsForClient: {"customid": text, "userid": integer, "from": date},
	OpenWorkout:          {"id": integer},
	GetListOfUsers:       {"customid": text},
	SetCustomID:          {"userid": integer, "customid": text},
	SelectPerson:         {"userid": integer},
	SignOn:               {"user": text},
	QueryExercises:       {"text": text},
	QueryWorkouts:        {"text": text},
	SetCase:              {"caseid": text},
}

// maxLength is a text argument's bound in characters: a case id's is the link's
// (linkspec.MaxIDLength), since a link's case id is set by setcase too and listed by the
// same API; every other text's is the person record's (personspec.MaxText).
func maxLength(key string) int {
	if key == "caseid" {
		return linkspec.MaxIDLength
	}
	return personspec.MaxText
}

// Error is a refused command: an unknown name, or the arguments that failed and why.
// Reasons never quote a value, since errors go back to the caller and into logs.
type Error struct {
	Name   Name
	Fields []personspec.FieldError
}

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("unknown command %q", e.Name)
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Reason
	}
	return fmt.Sprintf("%s: %s", e.Name, strings.Join(parts, "; "))
}

// New builds a command from a method name and arguments as a protocol read them (pipe
// arguments decoded with json.Decoder.UseNumber), matching both names case-insensitively,
// normalising the values and validating the result.
func New(name string, args map[string]any, source string) (Command, error) {
	n := Name(strings.ToLower(strings.TrimSpace(name)))
	known, ok := fields[n]
	if !ok {
		return Command{}, &Error{Name: Name(personspec.Shorten(string(n)))}
	}
	c := Command{Name: n, Args: make(map[string]any, len(args)), Source: source}
	var errs []personspec.FieldError
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(args)) { // sorted, so that errors read the same each time
		v := args[k]
		key := strings.ToLower(k)
		if seen[key] {
			errs = append(errs, personspec.FieldError{Field: personspec.Shorten(key), Reason: "given twice"})
			continue
		}
		seen[key] = true
		kd, ok := known[key]
		if !ok {
			c.Args[key] = v
			continue
		}
		nv, err := normalise(kd, v)
		if err != nil {
			errs = append(errs, personspec.FieldError{Field: key, Reason: err.Error()})
			continue
		}
		if nv != nil {
			c.Args[key] = nv
		}
	}
	if errs != nil {
		return Command{}, &Error{Name: n, Fields: errs}
	}
	switch n {
	case GetWorkoutsForClient:
		// The original took userid when it is above 0, else customid; "0" is no userid.
		if id, _ := c.Args["userid"].(int64); id == 0 {
			delete(c.Args, "userid")
		} else if id > 0 {
			delete(c.Args, "customid")
		}
	case SelectPerson:
		c.Warnings = lenientPerson(c.Args)
	}
	if err := Validate(c); err != nil {
		return Command{}, err
	}
	return c, nil
}

// normalise converts v to the kind's type; nil means absent (null or a blank string).
func normalise(k kind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	var s string
	switch v := v.(type) {
	case string:
		s = strings.TrimSpace(v)
	case json.Number:
		s = v.String()
	case int64:
		s = strconv.FormatInt(v, 10)
	case int:
		s = strconv.Itoa(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return nil, errors.New("must be an integer")
		}
		s = strconv.FormatInt(int64(v), 10)
	default:
		return nil, errors.New("must be a string or a number")
	}
	if s == "" {
		return nil, nil
	}
	switch k {
	case integer:
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("must be an integer")
		}
		return id, nil
	case date:
		t, dateOnly, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		if dateOnly {
			return t.Format(time.DateOnly), nil
		}
		return t.Format(time.RFC3339), nil
	}
	return s, nil
}

// parseDate reads a getworkoutsforclient "from": yyyy-MM-dd (preferred), yyyy-MM-dd HH:mm,
// yyyy-MM-dd HH:mm:ss or RFC 3339. dateOnly tells the first form, which means the whole day.
func parseDate(s string) (t time.Time, dateOnly bool, err error) {
	if t, err := personspec.ParseProfileDate(s); err == nil {
		return t, len(s) == len(time.DateOnly), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, errors.New("must be a date yyyy-MM-dd (or yyyy-MM-dd HH:mm:ss, or RFC 3339)")
}

// Validate checks c.Args for c.Name: required arguments present, ids positive, texts
// within limits, selectperson by personspec's rules (B-PIPE-SELECT).
func Validate(c Command) error {
	known, ok := fields[c.Name]
	if !ok {
		return &Error{Name: Name(personspec.Shorten(string(c.Name)))}
	}
	v := validator{name: c.Name, args: c.Args}
	for _, key := range slices.Sorted(maps.Keys(known)) {
		v.check(key, known[key])
	}
	switch c.Name {
	case GetWorkoutsForClient:
		switch {
		case v.failed("customid") || v.failed("userid"):
		case !v.has("customid") && !v.has("userid"):
			v.fail("customid", "required unless userid is given")
		}
	case OpenWorkout:
		v.require("id")
	case SetCustomID:
		v.require("userid")
		v.require("customid")
	case SignOn:
		v.require("user")
	case SetCase:
		v.require("caseid")
	case SelectPerson:
		if len(v.errs) == 0 {
			v.selectPerson()
		}
	}
	if v.errs != nil {
		return &Error{Name: c.Name, Fields: v.errs}
	}
	return nil
}

type validator struct {
	name Name
	args map[string]any
	errs []personspec.FieldError
}

func (v *validator) fail(field, reason string) {
	v.errs = append(v.errs, personspec.FieldError{Field: field, Reason: reason})
}

func (v *validator) has(key string) bool {
	_, ok := v.args[key]
	return ok
}

func (v *validator) failed(key string) bool {
	for _, e := range v.errs {
		if e.Field == key {
			return true
		}
	}
	return false
}

func (v *validator) require(key string) {
	if !v.has(key) && !v.failed(key) {
		v.fail(key, "required")
	}
}

// check verifies the type and range of one argument, if present.
func (v *validator) check(key string, k kind) {
	val, ok := v.args[key]
	if !ok {
		return
	}
	switch k {
	case integer:
		id, ok := val.(int64)
		switch {
		case !ok:
			v.fail(key, "must be an integer")
		case id < 0, id == 0 && v.name != SelectPerson: // selectperson's userid 0 creates a person
			v.fail(key, "must be a positive integer")
		}
	case date:
		s, ok := val.(string)
		if !ok {
			v.fail(key, "must be a string")
		} else if _, _, err := parseDate(s); err != nil {
			v.fail(key, err.Error())
		}
	default:
		s, ok := val.(string)
		switch {
		case !ok:
			v.fail(key, "must be a string")
		case utf8.RuneCountInString(s) > maxLength(key):
			v.fail(key, fmt.Sprintf("too long (at most %d characters)", maxLength(key)))
		case strings.IndexFunc(s, unicode.IsControl) >= 0:
			v.fail(key, "contains a control character")
		}
	}
}

// lenientPerson reads selectperson's gender, date of birth and profile entries as the
// original did, before personspec judges the rest: a gender that starts with M or m is
// male, with F, f, K or k (the Scandinavian kvinne, kvinna, kvinde) female, and any other
// is left out; a date of birth that is not yyyy-MM-dd is read in the user's culture
// (culture.ShortDatePattern, as the Arguments protocol reads it) and left out when it reads
// in no format; a profile entry without a key is left out, since the service cannot use
// its value. Each one left out is a warning, never quoting the value.
func lenientPerson(args map[string]any) (warnings []string) {
	if v, ok := args["gender"]; ok && v != nil {
		s, _ := v.(string)
		switch g := strings.TrimSpace(s); {
		case g == "":
			delete(args, "gender")
		case strings.ContainsRune("Mm", rune(g[0])):
			args["gender"] = "male"
		case strings.ContainsRune("FfKk", rune(g[0])):
			args["gender"] = "female"
		default:
			delete(args, "gender")
			warnings = append(warnings, "gender left out: neither male (M…) nor female (F…, K…)")
		}
	}
	if v, ok := args["dateofbirth"]; ok && v != nil {
		s, _ := v.(string)
		switch s = strings.TrimSpace(s); {
		case s == "":
			delete(args, "dateofbirth")
		default:
			if _, err := personspec.ParseProfileDate(s); err == nil && len(s) == len(time.DateOnly) {
				args["dateofbirth"] = s
				break
			}
			if t, err := culture.ParseDate(s, culture.ShortDatePattern()); err == nil {
				args["dateofbirth"] = t.Format(time.DateOnly)
				break
			}
			delete(args, "dateofbirth")
			warnings = append(warnings, "dateofbirth left out: "+culture.ErrDate.Error())
		}
	}
	if items, ok := args["profiledata"].([]any); ok {
		kept := make([]any, 0, len(items))
		for i, item := range items {
			if m, ok := item.(map[string]any); ok && !hasKey(m) {
				warnings = append(warnings, fmt.Sprintf("profiledata[%d] left out: it has no key", i))
				continue
			}
			kept = append(kept, item)
		}
		args["profiledata"] = kept
	}
	return warnings
}

// hasKey tells whether a profile entry has a key that is not blank, in any case of the
// member's name; a key of another type counts, so that personspec refuses it.
func hasKey(entry map[string]any) bool {
	for k, v := range entry {
		if strings.EqualFold(k, "key") {
			s, isString := v.(string)
			return v != nil && (!isString || strings.TrimSpace(s) != "")
		}
	}
	return false
}

// selectPerson runs personspec's decoder, the app service's own, over the arguments.
func (v *validator) selectPerson() {
	data, err := json.Marshal(v.args)
	if err != nil {
		v.fail("args", "must be JSON values")
		return
	}
	_, errs, err := personspec.DecodeSelect(data)
	if err != nil {
		v.fail("args", "must be one object of valid UTF-8")
		return
	}
	v.errs = append(v.errs, errs...)
}
