package linkspec

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/partnergate/partnergate/nationalid"
	"github.com/partnergate/partnergate/problem"
)

// Length bounds, in Unicode code points. The interface gives none (docs/interface.md A-DEC-2);
// these are generous for real names and identifiers and small enough that a payload stays far
// below the gateway's body limit and the upstream's header limits.
const (
	// MaxIDLength bounds employeeId, organizationId, contact.id, caseId and
	// employeeUsername. It is exported because a case id travels on: the app service's API
	// and the wrapper accept and store the same ids, so they use this bound too.
	MaxIDLength    = 256
	maxNameLength  = 200 // first, middle, last and organization names
	maxEmailLength = 254 // RFC 5321 path limit
	maxShortLength = 64  // ssn, gender, mobile, diagnosis
)

// FieldError names one failing field; it is the problem document's, so a payload's
// failures go into a rejection as they are.
type FieldError = problem.FieldError

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

// Validate checks the payload against the table of its kind (docs/interface.md A-PAY-MAIN,
// A-PAY-CONTACT, A-PAY-GO) and returns the kind. When allowed is not empty, a payload of
// another kind is refused too. The error, if any, is an *Error naming every failing field.
// Validate is strict about every field, optional ones included: the gateway and the app
// service call DropMalformed first, so that a malformed optional value is dropped rather than
// refused; the partner kit's signer does not, so that a partner learns of the value before the
// gateway drops it.
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
	p.check(&v, kind)
	if len(v.errs) > 0 {
		return kind, &Error{Fields: v.errs}
	}
	return kind, nil
}

// DropMalformed clears every optional field of p whose value breaks its rule (blank, a control
// character, too long, not an e-mail address, not a date, not a national identity number)
// and returns them, in table order,
// with the reason; it returns nil when it clears nothing. Required fields are left alone:
// Validate refuses them. The interface gives no format for the e-mail fields and says
// middlename "may be empty", and a partner's optional data is a nicety (prefilling, a second
// way to match a contact): a value the service cannot use is not worth turning a valid link
// into an error page. Which fields are optional depends on the kind, so it is decided first
// (contact.email is required in a Go link).
func (p *Payload) DropMalformed() []FieldError {
	v := validator{drop: true}
	p.check(&v, p.Kind())
	return v.errs
}

// check applies the table of kind to p. In drop mode it checks only the optional fields,
// and clears the failing ones.
func (p *Payload) check(v *validator, kind Kind) {
	if kind == KindMain {
		v.required("employeeId", p.EmployeeID, ruleID)
	}
	// Optional in the main table; in a Go link, extra user data ("for example prefilling
	// e-mail addresses"), held to the same rules.
	v.optional("employeeUsername", &p.EmployeeUsername, ruleID)
	if kind == KindMain {
		v.required("employeeFirstname", p.EmployeeFirstname, ruleName)
		v.required("employeeLastname", p.EmployeeLastname, ruleName)
	}
	v.optional("employeeEmail", &p.EmployeeEmail, ruleEmail)
	v.required("organizationName", p.OrganizationName, ruleName)
	v.required("organizationId", p.OrganizationID, ruleID)
	v.optional("caseId", &p.CaseID, ruleID)
	if p.Contact == nil {
		if !v.drop {
			v.add("contact", "required")
		}
		return
	}
	c := p.Contact
	v.required("contact.id", c.ID, ruleID)
	v.optional("contact.birthdate", &c.Birthdate, ruleDate)
	v.optional("contact.ssn", &c.SSN, ruleNationalID)
	v.optional("contact.gender", &c.Gender, ruleShort)
	v.required("contact.firstname", c.Firstname, ruleName)
	v.optional("contact.middlename", &c.Middlename, ruleName)
	v.required("contact.lastname", c.Lastname, ruleName)
	v.optional("contact.mobile", &c.Mobile, ruleShort)
	if kind == KindGo {
		v.required("contact.email", c.Email, ruleEmail) // the Go client needs it for the account
	} else {
		v.optional("contact.email", &c.Email, ruleEmail)
	}
	v.optional("contact.diagnosis", &c.Diagnosis, ruleShort)
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
	// drop makes optional clear a failing field, and required do nothing (DropMalformed).
	drop bool
}

// rule is the format a field must have.
type rule uint8

const (
	ruleID    rule = iota // text of at most MaxIDLength
	ruleName              // text of at most maxNameLength
	ruleShort             // text of at most maxShortLength
	ruleEmail             // an e-mail address of at most maxEmailLength
	ruleDate              // a calendar date YYYY-MM-DD
	// ruleNationalID is a national identity number of Norway, Sweden or Denmark, checked by
	// its form and check digits (nationalid.ParseAny). The number is what matches a contact
	// to the member behind the partner's records and, later, to a national electronic ID:
	// a placeholder ("N/A", "0") or a mistyped number must not match one person to another,
	// and a number of another country cannot be checked, nor matched by a Nordic eID
	// (docs/interface.md A-PAY-CONTACT).
	ruleNationalID
)

// apply checks s (not empty) by r.
func (v *validator) apply(field, s string, r rule) {
	switch r {
	case ruleID:
		v.text(field, s, false, MaxIDLength)
	case ruleName:
		v.text(field, s, false, maxNameLength)
	case ruleShort:
		v.text(field, s, false, maxShortLength)
	case ruleEmail:
		v.email(field, s, false)
	case ruleDate:
		v.date(field, s)
	case ruleNationalID:
		// The clock only places a ten-digit Swedish number's year in its century, which
		// changes no verdict before 2100.
		if v.text(field, s, false, maxShortLength) {
			if _, err := nationalid.ParseAny(s, time.Now()); err != nil {
				v.add(field, "not a national identity number of Norway, Sweden or Denmark")
			}
		}
	}
}

// required checks a required field; in drop mode it does nothing.
func (v *validator) required(field, s string, r rule) {
	switch {
	case v.drop:
	case s == "":
		v.add(field, "required")
	default:
		v.apply(field, s, r)
	}
}

// optional checks an optional field, absent when empty; in drop mode a failing value is
// cleared (and reported).
func (v *validator) optional(field string, s *string, r rule) {
	if *s == "" {
		return
	}
	n := len(v.errs)
	v.apply(field, *s, r)
	if v.drop && len(v.errs) > n {
		*s = ""
	}
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
	if !v.text(field, s, required, maxEmailLength) {
		return
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || strings.ContainsAny(s, " \t") || strings.Count(s, "@") != 1 {
		v.add(field, "not an e-mail address")
	}
}

// date requires a real calendar date written YYYY-MM-DD (docs/interface.md A-PAY-CONTACT).
func (v *validator) date(field, s string) {
	if s == "" {
		return
	}
	if !isDate(s) {
		v.add(field, "not a calendar date in the form YYYY-MM-DD")
	}
}

// isDate reports whether s is a real calendar date written YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) != len("2006-01-02") {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}
