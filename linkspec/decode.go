package linkspec

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxClaimsDepth bounds the nesting of a claim set. The payload needs two levels (the claim
// set and the contact); extra claims get a few more. Deeper documents are refused because the
// gateway forwards the claim set whole, and common upstream parsers fail at depths from about
// 500 up (Python's json at ~1,000).
const MaxClaimsDepth = 16

// ErrClaimsDepth reports a claim set nested deeper than MaxClaimsDepth.
var ErrClaimsDepth = errors.New("claims nested too deeply")

// ReservedClaims are the registered claims a link token carries next to the payload
// (docs/interface.md A-DEC-1): no payload field may be named like them.
var ReservedClaims = []string{"iss", "aud", "nbf", "exp", "iat", "nonce"}

// ErrNearName reports a member whose name differs from a defined claim or field only in
// case, by Unicode folding or by '-' and '_' ("EMPLOYEEID", "employee_id", "contact.ID").
var ErrNearName = errors.New("a member name differs from a defined one only in case or punctuation")

// DecodePayload reads the payload fields from a claim set (the JSON of a token's payload
// segment), strictly: invalid UTF-8, a member name that occurs twice, a payload field of the
// wrong JSON type, nesting deeper than MaxClaimsDepth, and a member whose name differs from
// a defined claim or field only in case or punctuation (CheckMemberNames) are errors.
// Names match exactly. Near names are refused because parsers disagree on them: Go's
// encoding/json matches "EMPLOYEEID" to employeeId (the last case-insensitive match wins),
// others take only the exact name, so a claim set that is one identity to the gateway could
// be another to an upstream. Other claims are allowed and kept in Extra.
//
// The gateway and the app service both read claims with the rules of this function.
func DecodePayload(data []byte) (*Payload, error) {
	if err := CheckClaimsDepth(data); err != nil {
		return nil, err
	}
	var c Claims
	if err := json.Unmarshal(data, &c, StrictClaims()); err != nil {
		return nil, err
	}
	if err := c.Check(ReservedClaims...); err != nil {
		return nil, err
	}
	return c.Decoded(), nil
}

// Claims is a claim set as DecodePayload reads it: the payload fields, and the members the
// tables do not define, so that Check can tell a near name. A decoder of a larger claim set
// embeds it with `json:",inline"`; it must be decoded with StrictClaims, and its payload
// read with Decoded.
type Claims struct {
	Payload `json:",inline"`
	// Contact shadows Payload.Contact, to see the contact's extra members too; Decoded
	// links the two.
	Contact *ClaimsContact `json:"contact,omitempty"`
	// Extra holds the members named nowhere above (registered claims such as iss among
	// them, when the embedding struct does not define them), as signed.
	Extra map[string]jsontext.Value `json:",unknown"`
}

// ClaimsContact is the contact object of Claims.
type ClaimsContact struct {
	Contact `json:",inline"`
	Extra   map[string]jsontext.Value `json:",unknown"`
}

// Decoded returns the decoded payload; it shares memory with c.
func (c *Claims) Decoded() *Payload {
	p := &c.Payload
	if c.Contact != nil {
		p.Contact = &c.Contact.Contact
	}
	return p
}

// Check returns a *NameError wrapping ErrNearName when an extra member is named like a
// defined field, or at the top level like one of reserved, but for case or punctuation. A
// claim set without extra members costs nothing.
func (c *Claims) Check(reserved ...string) error {
	for name := range c.Extra {
		if f, ok := nearName(name, topLevelNames, reserved); ok {
			return &NameError{Field: f}
		}
	}
	if c.Contact != nil {
		for name := range c.Contact.Extra {
			if f, ok := nearName(name, contactNames, nil); ok {
				return &NameError{Field: "contact." + f}
			}
		}
	}
	return nil
}

// StrictClaims returns the go-json-experiment options of DecodePayload, for decoders of a
// claim set that embed Payload in a larger struct: exact names, no duplicates, valid UTF-8.
// The app service reads its JSON API's request bodies with them too, so that no JSON it
// takes means one thing to it and another to a lenient parser.
func StrictClaims() json.Options { return strictClaims }

// strictClaims is made once: joining options allocates, and every token is decoded with them.
var strictClaims = json.JoinOptions(
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// NameError names the defined field or claim that a member's name comes near; the member's
// own name is partner text and is not repeated.
type NameError struct {
	Field string
}

func (e *NameError) Error() string { return e.Field + ": " + ErrNearName.Error() }

func (e *NameError) Unwrap() error { return ErrNearName }

// The JSON names of the payload's fields, for CheckMemberNames.
var topLevelNames, contactNames = func() (top, contact []string) {
	for _, f := range Fields {
		if name, ok := strings.CutPrefix(f.Path, "contact."); ok {
			contact = append(contact, name)
		} else {
			top = append(top, f.Path)
		}
	}
	return append(top, "contact"), contact
}()

// nearName reports the defined name that name comes near: equal ignoring case (with
// Unicode simple folding, so "ſ" is "s") and every '-' and '_', yet not equal.
func nearName(name string, defined, reserved []string) (string, bool) {
	folded := name
	if strings.ContainsAny(name, "-_") {
		folded = strings.NewReplacer("-", "", "_", "").Replace(name)
	}
	for _, list := range [][]string{defined, reserved} {
		for _, d := range list {
			if strings.EqualFold(folded, d) && name != d {
				return d, true
			}
		}
	}
	return "", false
}

// CheckClaimsDepth returns ErrClaimsDepth when data nests deeper than MaxClaimsDepth. It
// looks only at brackets outside strings, so it is cheap enough to run before any decoding.
func CheckClaimsDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxClaimsDepth {
				return ErrClaimsDepth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// FieldPath writes a JSON pointer as a FieldError names a field: members joined by dots,
// array indexes in brackets ("/contact/firstname" is contact.firstname, "/items/0/sets" is
// items[0].sets). A member name longer than 64 bytes is cut there and ends in "…": the
// name comes from the sender, and an error repeats it.
func FieldPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(Clip(tok))
	}
	return b.String()
}

// Clip cuts a string the sender chose to 64 bytes, on a rune boundary, ending in "…" where
// it was cut, so that an error or a log line that repeats it stays short.
func Clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) && len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}
