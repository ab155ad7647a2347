// Package personspec holds the person record that the desktop wrapper's selectperson command
// (interface part B, B-PIPE-SELECT) and the JSON API exchange: its decoder and the profile
// date format. It knows no database and no HTTP, so the store, the web handlers and the
// fuzz tests share one reading of the input.
package personspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxSelectBody bounds the JSON of one selectperson's arguments, in bytes. DecodeSelect
// refuses more, the desktop wrapper checks it before it hands the arguments to the page,
// and the app service's JSON API reads request bodies up to it: so whatever the wrapper
// accepts, the API accepts too. 512 KiB holds the most profile entries (200) with values
// of 1024 two-byte characters each.
const MaxSelectBody = 512 << 10

// Size limits of DecodeSelect. They bound what one call may store; MaxSelectBody bounds
// the rest.
const (
	// MaxText bounds each text field of a person (names, contact data, custom id). It is
	// exported because the app service's API and the wrapper's commands take the same
	// fields and must not accept what this package would refuse, or the reverse.
	MaxText         = 256
	maxProfileValue = 1024
	maxProfile      = 200
	maxExtra        = 50
)

// Select is the selectperson arguments (interface part B table), decoded.
type Select struct {
	UserID      int64  // service id; 0 = new person (or find by CustomID)
	CustomID    string // "customid", or obsolete "id" read as customid
	Firstname   string
	Lastname    string
	Email       string
	Address     string
	PhoneHome   string
	PhoneWork   string
	Mobile      string
	Country     string
	Zipcode     string
	Location    string
	Gender      string // "" | "female" | "male"
	DateOfBirth string // yyyy-MM-dd or ""
	Profile     []ProfileEntry
	Extra       map[string]json.RawMessage // unknown members, kept verbatim (names lower-cased)
}

// ProfileEntry is one measurement of profiledata (B-PIPE-PROFILE).
type ProfileEntry struct {
	Key         string
	Name        string
	Value       string
	Unit        string
	Date        time.Time // UTC wall time; zero if absent
	Source      string
	Description string
	Extra       map[string]string // further keys of the entry (names lower-cased)
}

// FieldError names one member that DecodeSelect refused and why. Reason never quotes the
// value: these errors go back to the caller and into logs.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// DecodeSelect reads selectperson arguments from a JSON object. Member names are
// case-insensitive (the original lower-cases them, so "customId" and "dateOfBirth" work);
// ids may be JSON numbers or strings, as the sample client sends strings; firstname,
// lastname and a userid > 0 or a customid are required. It reports every refused member at
// once; the error is for input that is not one JSON object of valid UTF-8. Select is nil
// unless both are empty.
func DecodeSelect(data []byte) (*Select, []FieldError, error) {
	if len(data) > MaxSelectBody {
		return nil, []FieldError{{Field: "args", Reason: fmt.Sprintf("too large (at most %d bytes of JSON)", MaxSelectBody)}}, nil
	}
	members, err := decodeObject(data)
	if err != nil {
		return nil, nil, err
	}
	d := decoder{}
	sel := &Select{}
	var obsoleteID string
	strs := map[string]*string{
		"customid": &sel.CustomID, "firstname": &sel.Firstname, "lastname": &sel.Lastname,
		"email": &sel.Email, "address": &sel.Address, "phonehome": &sel.PhoneHome,
		"phonework": &sel.PhoneWork, "mobile": &sel.Mobile, "country": &sel.Country,
		"zipcode": &sel.Zipcode, "location": &sel.Location, "id": &obsoleteID,
	}
	for _, m := range members {
		switch name := m.name; {
		case strs[name] != nil:
			*strs[name] = d.text(name, m.value, MaxText)
		case name == "userid":
			sel.UserID = d.userID(name, m.value)
		case name == "gender":
			sel.Gender = d.gender(name, m.value)
		case name == "dateofbirth":
			sel.DateOfBirth = d.birthDate(name, m.value)
		case name == "profiledata":
			sel.Profile = d.profile(name, m.value)
		case len(sel.Extra) == maxExtra:
			d.fail(Shorten(name), fmt.Sprintf("too many unknown members (at most %d)", maxExtra))
		case utf8.RuneCountInString(name) > MaxText:
			d.fail(Shorten(name), fmt.Sprintf("name too long (at most %d characters)", MaxText))
		default:
			if sel.Extra == nil {
				sel.Extra = map[string]json.RawMessage{}
			}
			sel.Extra[name] = m.value
		}
	}
	if sel.CustomID == "" {
		sel.CustomID = obsoleteID
	}
	d.require("firstname", sel.Firstname)
	d.require("lastname", sel.Lastname)
	if sel.UserID == 0 && sel.CustomID == "" {
		d.fail("customid", "required when userid is 0")
	}
	if len(d.errs) > 0 {
		return nil, d.errs, nil
	}
	return sel, nil, nil
}

// member is one name/value pair of a JSON object, the name lower-cased.
type member struct {
	name  string
	value json.RawMessage
}

// decodeObject splits data into its members in order. It refuses invalid UTF-8, which
// encoding/json would turn into U+FFFD in strings but leave in raw values (PostgreSQL
// refuses it), and names that repeat once lower-cased, where encoding/json would quietly
// keep the last.
func decodeObject(data []byte) ([]member, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("decoding object: not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("decoding object: not a JSON object")
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decoding object: %v", err)
		}
		name := strings.ToLower(tok.(string)) // object keys are always strings
		if seen[name] {
			return nil, fmt.Errorf("decoding object: member %q appears twice", Shorten(name))
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("decoding object: %v", err)
		}
		members = append(members, member{name, value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("decoding object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decoding object: data after the object")
	}
	return members, nil
}

// Shorten keeps a name taken from the input readable in an error message or warning: at
// most 40 characters and an ellipsis. The wrapper's protocols shorten the names they
// report with it too.
func Shorten(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
}

// decoder collects field errors; each method returns the zero value for a refused member.
type decoder struct{ errs []FieldError }

func (d *decoder) fail(field, reason string) {
	d.errs = append(d.errs, FieldError{Field: field, Reason: reason})
}

// require reports an empty value, unless the field was already refused for its value.
func (d *decoder) require(field, value string) {
	if value != "" || slices.ContainsFunc(d.errs, func(e FieldError) bool { return e.Field == field }) {
		return
	}
	d.fail(field, "required")
}

// scalar returns a string or the literal text of a number ("" for null); ok is false for
// other JSON values. Numbers are accepted wherever a string is, since desktop programs send
// zip codes, phone numbers and ids either way.
func scalar(raw json.RawMessage) (s string, ok bool) {
	switch raw[0] {
	case '"':
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case 'n':
		return "", true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), true
	}
	return "", false
}

// text reads a single string of at most limit characters, trimmed. Control characters are
// refused (but tab and line breaks): PostgreSQL refuses NUL in text, and the others have
// no place in a name or a measurement.
func (d *decoder) text(field string, raw json.RawMessage, limit int) string {
	s, ok := scalar(raw)
	if !ok {
		d.fail(field, "must be a string")
		return ""
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > limit {
		d.fail(field, fmt.Sprintf("too long (at most %d characters)", limit))
		return ""
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' }) >= 0 {
		d.fail(field, "contains a control character")
		return ""
	}
	return s
}

func (d *decoder) userID(field string, raw json.RawMessage) int64 {
	s, ok := scalar(raw)
	if !ok {
		d.fail(field, "must be an integer")
		return 0
	}
	if s = strings.TrimSpace(s); s == "" {
		return 0
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		d.fail(field, "must be an integer of 0 or more")
		return 0
	}
	return id
}

func (d *decoder) gender(field string, raw json.RawMessage) string {
	g, ok := ParseGender(d.text(field, raw, MaxText))
	if !ok {
		d.fail(field, "must be female, male, F, M or K")
	}
	return g
}

// ParseGender maps a gender as a link or selectperson gives it to the stored value, in any
// case and trimmed: "female" for female, F and K (the Scandinavian initial of kvinne,
// kvinna, kvinde), "male" for male and M. A blank gender is "" and ok; any other is "" and
// not ok. The app service stores a link's gender through it too, so that both read one
// spelling the same.
func ParseGender(s string) (gender string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return "", true
	case "female", "f", "k":
		return "female", true
	case "male", "m":
		return "male", true
	}
	return "", false
}

func (d *decoder) birthDate(field string, raw json.RawMessage) string {
	s := d.text(field, raw, MaxText)
	if s == "" {
		return ""
	}
	if _, err := parseStrict(dateLayout, s); err != nil {
		d.fail(field, "must be a date yyyy-MM-dd")
		return ""
	}
	return s
}

func (d *decoder) profile(field string, raw json.RawMessage) []ProfileEntry {
	if raw[0] == 'n' {
		return nil
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		d.fail(field, "must be an array")
		return nil
	}
	if len(items) > maxProfile {
		d.fail(field, fmt.Sprintf("too many entries (at most %d)", maxProfile))
		return nil
	}
	var entries []ProfileEntry
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", field, i)
		members, err := decodeObject(item)
		if err != nil {
			d.fail(at, "must be an object with distinct member names")
			continue
		}
		var e ProfileEntry
		strs := map[string]*string{
			"key": &e.Key, "name": &e.Name, "unit": &e.Unit, "source": &e.Source, "description": &e.Description,
		}
		for _, m := range members {
			switch name := m.name; {
			case strs[name] != nil:
				*strs[name] = d.text(at+"."+name, m.value, MaxText)
			case name == "value":
				e.Value = d.text(at+".value", m.value, maxProfileValue)
			case name == "date":
				if s := d.text(at+".date", m.value, MaxText); s != "" {
					if e.Date, err = ParseProfileDate(s); err != nil {
						d.fail(at+".date", "must be yyyy-MM-dd HH:mm:ss, yyyy-MM-dd HH:mm or yyyy-MM-dd")
					}
				}
			case len(e.Extra) == maxExtra:
				d.fail(at+"."+Shorten(name), fmt.Sprintf("too many further keys (at most %d)", maxExtra))
			case utf8.RuneCountInString(name) > MaxText:
				d.fail(at+"."+Shorten(name), fmt.Sprintf("name too long (at most %d characters)", MaxText))
			default:
				if e.Extra == nil {
					e.Extra = map[string]string{}
				}
				e.Extra[name] = d.text(at+"."+name, m.value, MaxText)
			}
		}
		d.require(at+".key", e.Key)
		entries = append(entries, e)
	}
	return entries
}

// The profile date layouts (B-PIPE-PROFILE); dateLayout is also the birth date's.
const (
	dateLayout    = "2006-01-02"
	minuteLayout  = "2006-01-02 15:04"
	secondLayout  = "2006-01-02 15:04:05"
	minParsedYear = 1900
)

// ParseProfileDate reads "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm" or "yyyy-MM-dd" as UTC
// wall time, and nothing else: no fractions, zones or one-digit hours, which time.Parse
// would let through. Years before 1900 are refused, so that no date reads as the zero
// time that stands for "no date".
func ParseProfileDate(s string) (time.Time, error) {
	var layout string
	switch len(s) {
	case len(dateLayout):
		layout = dateLayout
	case len(minuteLayout):
		layout = minuteLayout
	case len(secondLayout):
		layout = secondLayout
	default:
		return time.Time{}, errors.New("parsing profile date: not yyyy-MM-dd HH:mm:ss, yyyy-MM-dd HH:mm or yyyy-MM-dd")
	}
	return parseStrict(layout, s)
}

// parseStrict parses s with layout and insists that formatting gives s back, which refuses
// what time.Parse tolerates beyond the layout.
func parseStrict(layout, s string) (time.Time, error) {
	t, err := time.Parse(layout, s)
	if err != nil || t.Format(layout) != s {
		return time.Time{}, fmt.Errorf("parsing date: not %s", layout)
	}
	if t.Year() < minParsedYear {
		return time.Time{}, fmt.Errorf("parsing date: year before %d", minParsedYear)
	}
	return t, nil
}

// FormatProfileDate writes t as "yyyy-MM-dd HH:mm:ss" in UTC, or "" for the zero time (no
// date), the form the JSON API answers with.
func FormatProfileDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(secondLayout)
}
