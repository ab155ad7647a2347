package linkspec

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Length bounds, in Unicode code points. The spec gives none; these are generous for real
// names and identifiers and small enough that a payload stays far below the gateway's body
// limit and the upstream's header limits.
const (
	MaxIDLength    = 256 // employeeId, organizationId, contact.id, caseId, employeeUsername
	MaxNameLength  = 200 // first, middle, last and organization names
	MaxEmailLength = 254 // RFC 5321 path limit
	MaxShortLength = 64  // ssn, gender, mobile, diagnosis
)

// FieldError names one failing field by its JSON path ("contact.firstname") and says why,
// without echoing the value: the value may be personal data.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error lists every failing field of a payload.
type Error struct {
	Fields []FieldError
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid payload: ")
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Reason)
	}
	return b.String()
}

// Validate checks the payload against the table of its kind (spec: "Link payload for the
// main client", "Contact object", "Link payload for the mobile client") and returns the
// kind. When allowed is not empty, a payload of another kind is refused too. The error, if
// any, is an *Error naming every failing field.
func (p *Payload) Validate(allowed ...Kind) (Kind, error) {
	kind := p.Kind()
	v := validator{}
	if len(allowed) > 0 && !containsKind(allowed, kind) {
		field := "employeeId"
		if kind == KindMain {
			v.add(field, "main-client links are not accepted for this partner")
		} else {
			v.add(field, "required: Go links are not accepted for this partner")
		}
	}
	if kind == KindMain {
		v.text("employeeId", p.EmployeeID, true, MaxIDLength)
		v.text("employeeUsername", p.EmployeeUsername, false, MaxIDLength)
		v.text("employeeFirstname", p.EmployeeFirstname, true, MaxNameLength)
		v.text("employeeLastname", p.EmployeeLastname, true, MaxNameLength)
		v.email("employeeEmail", p.EmployeeEmail, false)
	}
	v.text("organizationName", p.OrganizationName, true, MaxNameLength)
	v.text("organizationId", p.OrganizationID, true, MaxIDLength)
	v.text("caseId", p.CaseID, false, MaxIDLength)
	if p.Contact == nil {
		v.add("contact", "required")
	} else {
		c := p.Contact
		v.text("contact.id", c.ID, true, MaxIDLength)
		v.date("contact.birthdate", c.Birthdate)
		v.text("contact.ssn", c.SSN, false, MaxShortLength)
		v.text("contact.gender", c.Gender, false, MaxShortLength)
		v.text("contact.firstname", c.Firstname, true, MaxNameLength)
		v.text("contact.middlename", c.Middlename, false, MaxNameLength)
		v.text("contact.lastname", c.Lastname, true, MaxNameLength)
		v.text("contact.mobile", c.Mobile, false, MaxShortLength)
		v.email("contact.email", c.Email, kind == KindGo) // the Go client needs it for the account
		v.text("contact.diagnosis", c.Diagnosis, false, MaxShortLength)
	}
	if len(v.errs) > 0 {
		return kind, &Error{Fields: v.errs}
	}
	return kind, nil
}

func containsKind(kinds []Kind, k Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

type validator struct {
	errs []FieldError
}

func (v *validator) add(field, reason string) {
	v.errs = append(v.errs, FieldError{Field: field, Reason: reason})
}

// text checks presence, length in code points, valid UTF-8 and the absence of control
// characters, which have no place in a name or an identifier and are the raw material of
// header and log injection.
func (v *validator) text(field, s string, required bool, max int) bool {
	if s == "" {
		if required {
			v.add(field, "required")
		}
		return false
	}
	if !utf8.ValidString(s) {
		v.add(field, "not valid UTF-8")
		return false
	}
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			v.add(field, "contains a control character")
			return false
		}
		n++
	}
	if n > max {
		v.add(field, "longer than "+strconv.Itoa(max)+" characters")
		return false
	}
	if strings.TrimSpace(s) == "" {
		v.add(field, "blank")
		return false
	}
	return true
}

// email accepts what a mail system could deliver to: one "@" with text on both sides and
// no spaces. Deliverability is the app service's concern.
func (v *validator) email(field, s string, required bool) {
	if !v.text(field, s, required, MaxEmailLength) {
		return
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || strings.ContainsAny(s, " \t") || strings.Count(s, "@") != 1 {
		v.add(field, "not an e-mail address")
	}
}

// date requires a real calendar date written YYYY-MM-DD (spec: Contact object, birthdate).
func (v *validator) date(field, s string) {
	if s == "" {
		return
	}
	if !IsDate(s) {
		v.add(field, "not a calendar date in the form YYYY-MM-DD")
	}
}

// IsDate reports whether s is a real calendar date written YYYY-MM-DD.
func IsDate(s string) bool {
	if len(s) != len("2006-01-02") {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}
