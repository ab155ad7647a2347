package linkspec

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// The upstream header contract. The gateway deletes every incoming header that starts with
// its prefix (DefaultHeaderPrefix unless configured), then sets these, each name being the
// prefix followed by the suffix below. Values are percent-encoded UTF-8 (EncodeHeaderValue),
// so any name survives a header intact and no value can smuggle a line break.
const (
	DefaultHeaderPrefix = "X-Partner-"

	HeaderName      = "Name"       // the partner's name, from the request path
	HeaderEndpoint  = "Endpoint"   // "url" or "payload"
	HeaderKind      = "Kind"       // "main" or "go"
	HeaderIssuer    = "Issuer"     // the verified iss claim
	HeaderKeyID     = "Key-Id"     // the kid that verified the signature
	HeaderRequestID = "Request-Id" // the id the gateway's log line and error pages carry
	// HeaderClaims holds the whole verified claim set, extra claims included, as base64url
	// (no padding) JSON: exactly the token's payload segment, unless the gateway dropped
	// malformed optional fields (Payload.DropMalformed); then the claim set without them
	// (WithoutFields), re-encoded.
	HeaderClaims = "Claims"
	// HeaderAssertion proves to the app service that the gateway set the headers above
	// (SignAssertion).
	HeaderAssertion = "Assertion"
)

// ValidHeaderPrefix reports whether p is usable as a header prefix (the gateway's
// header_prefix, the app service's -header-prefix): the start of a header name, a token of
// letters, digits and '-', so that the forwarded headers are names and the namespace the
// gateway clears of client headers is the one it sets.
func ValidHeaderPrefix(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Field names one payload field: its JSON path in the claims and its header suffix.
type Field struct {
	Path   string
	Header string
}

// Fields lists every payload field of the tables of docs/interface.md (A-PAY-MAIN,
// A-PAY-CONTACT), in table order.
var Fields = [...]Field{
	{"employeeId", "Employee-Id"},
	{"employeeUsername", "Employee-Username"},
	{"employeeFirstname", "Employee-Firstname"},
	{"employeeLastname", "Employee-Lastname"},
	{"employeeEmail", "Employee-Email"},
	{"organizationName", "Organization-Name"},
	{"organizationId", "Organization-Id"},
	{"contact.id", "Contact-Id"},
	{"contact.birthdate", "Contact-Birthdate"},
	{"contact.ssn", "Contact-Ssn"},
	{"contact.gender", "Contact-Gender"},
	{"contact.firstname", "Contact-Firstname"},
	{"contact.middlename", "Contact-Middlename"},
	{"contact.lastname", "Contact-Lastname"},
	{"contact.mobile", "Contact-Mobile"},
	{"contact.email", "Contact-Email"},
	{"contact.diagnosis", "Contact-Diagnosis"},
	{"caseId", "Case-Id"},
}

// fieldPtrs returns pointers to p's fields in the order of Fields, allocating the contact
// when alloc is set. An array, not a slice, so the hot path does not allocate; the literal
// is [...] so that a field added to Fields but not here (or the reverse) does not compile.
func (p *Payload) fieldPtrs(alloc bool) [len(Fields)]*string {
	c := p.Contact
	if c == nil {
		if !alloc {
			c = &Contact{}
		} else {
			p.Contact = &Contact{}
			c = p.Contact
		}
	}
	return [...]*string{
		&p.EmployeeID, &p.EmployeeUsername, &p.EmployeeFirstname, &p.EmployeeLastname,
		&p.EmployeeEmail, &p.OrganizationName, &p.OrganizationID,
		&c.ID, &c.Birthdate, &c.SSN, &c.Gender, &c.Firstname, &c.Middlename, &c.Lastname,
		&c.Mobile, &c.Email, &c.Diagnosis, &p.CaseID,
	}
}

// Values returns the value of every field, in the order of Fields ("" where unset).
func (p *Payload) Values() [len(Fields)]string {
	var v [len(Fields)]string
	for i, ptr := range p.fieldPtrs(false) {
		v[i] = *ptr
	}
	return v
}

// EachField calls fn with the header suffix and the value of every non-empty field.
func (p *Payload) EachField(fn func(header, value string)) {
	for i, ptr := range p.fieldPtrs(false) {
		if *ptr != "" {
			fn(Fields[i].Header, *ptr)
		}
	}
}

// SetField sets the field whose header suffix is header; it reports false for an unknown
// suffix.
func (p *Payload) SetField(header, value string) bool {
	for i, f := range Fields {
		if strings.EqualFold(f.Header, header) {
			*p.fieldPtrs(true)[i] = value
			return true
		}
	}
	return false
}

const upperhex = "0123456789ABCDEF"

// EncodeHeaderValue percent-encodes every byte of s outside RFC 3986's unreserved set, so
// the value is printable ASCII whatever the input.
func EncodeHeaderValue(s string) string {
	n := EncodedLen(s)
	if n == len(s) {
		return s
	}
	return string(AppendHeaderValue(make([]byte, 0, n), s))
}

// EncodedLen returns the length of EncodeHeaderValue(s); it equals len(s) exactly when s
// needs no encoding.
func EncodedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n += 2
		}
	}
	return n
}

// AppendHeaderValue appends EncodeHeaderValue(s) to dst.
func AppendHeaderValue(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return dst
}

// DecodeHeaderValue reverses EncodeHeaderValue.
func DecodeHeaderValue(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", errors.New("malformed percent-encoding")
		}
		b = append(b, byte(unhex(s[i+1])<<4|unhex(s[i+2])))
		i += 2
	}
	return string(b), nil
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// Forwarded is what the gateway vouches for to the app service: the header values before
// percent-encoding (decoded, as the app service reads them), Claims still base64url.
type Forwarded struct {
	Partner  string
	Endpoint string
	Kind     string
	Issuer   string
	KeyID    string
	Claims   string
	// RequestID is the gateway's id of the request (HeaderRequestID), unique per request:
	// bound into the assertion so that the app service can refuse an assertion it has seen
	// before (a replay within AssertionMaxAge would otherwise mint another login code).
	RequestID string
}

// AssertionMaxAge is how long an assertion is accepted after it was made. A forwarded request
// crosses one local hop, so a minute allows for clock steps without making a captured
// assertion useful for long.
const AssertionMaxAge = time.Minute

// SignAssertion returns the value of the assertion header: "v2.<unix seconds>.<mac>", where
// mac is HMAC-SHA256 keyed with a secret shared by the gateway and the app service over the
// time and every vouched value, the request id included. A client that talks to the app
// service directly cannot make one, and one seen in transit is useless for another identity
// or request, or after AssertionMaxAge; within it, the app service refuses a request id it
// has seen (v1 did not bind the request id and is no longer accepted).
func SignAssertion(secret []byte, now time.Time, f Forwarded) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return "v2." + ts + "." + base64.RawURLEncoding.EncodeToString(assertionMAC(secret, ts, f))
}

// Assertion errors, told apart only by the tests: the app service logs the text.
var (
	errAssertionMissing = errors.New("gateway assertion missing")
	errAssertionInvalid = errors.New("gateway assertion invalid")
	errAssertionExpired = errors.New("gateway assertion expired")
)

// VerifyAssertion checks an assertion made by SignAssertion for f at a time within
// AssertionMaxAge of now.
func VerifyAssertion(secret []byte, assertion string, now time.Time, f Forwarded) error {
	if assertion == "" {
		return errAssertionMissing
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 || parts[0] != "v2" {
		return errAssertionInvalid
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return errAssertionInvalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(mac, assertionMAC(secret, parts[1], f)) {
		return errAssertionInvalid
	}
	if d := now.Sub(time.Unix(sec, 0)); d > AssertionMaxAge || d < -AssertionMaxAge {
		return errAssertionExpired
	}
	return nil
}

func assertionMAC(secret []byte, ts string, f Forwarded) []byte {
	st, _ := macPool.Get().(*macState)
	if st == nil || subtle.ConstantTimeCompare(st.secret, secret) != 1 {
		st = &macState{secret: bytes.Clone(secret), mac: hmac.New(sha256.New, secret)}
	} else {
		st.mac.Reset()
	}
	msg := st.msg[:0]
	for _, s := range [...]string{"partnergate-assertion-v2", ts, f.Partner, f.Endpoint, f.Kind, f.Issuer, f.KeyID, f.Claims, f.RequestID} {
		msg = append(msg, s...)
		msg = append(msg, 0) // NUL cannot occur in a header value, so fields cannot run together
	}
	st.mac.Write(msg)
	sum := st.mac.Sum(nil)
	st.msg = msg
	macPool.Put(st)
	return sum
}

// macState is an HMAC keyed with one secret and a buffer for the message it signs, kept
// in macPool: every forwarded request signs an assertion, and a new HMAC costs two SHA-256
// states and the key's pads, and writing each field on its own a copy of it.
type macState struct {
	secret []byte
	mac    hash.Hash
	msg    []byte
}

var macPool sync.Pool

// WithoutFields returns the claim set data (a JSON object, as decoded by DecodePayload)
// without the payload members at paths ("caseId", "contact.email"): the claim set the
// gateway forwards once it has dropped malformed optional fields (Payload.DropMalformed),
// so that a dropped value reaches the app service neither as a header nor inside the
// claims. Every other member is kept, in its order, with its value as signed.
func WithoutFields(data []byte, paths []string) ([]byte, error) {
	var top, contact []string
	for _, p := range paths {
		if name, ok := strings.CutPrefix(p, "contact."); ok {
			contact = append(contact, name)
		} else {
			top = append(top, p)
		}
	}
	out, err := withoutMembers(data, top, contact)
	if err != nil {
		return nil, fmt.Errorf("removing dropped fields from the claims: %v", err)
	}
	return out, nil
}

// withoutMembers copies the JSON object data without the members in names; the value of
// member contact, when an object, loses the members in contact.
func withoutMembers(data []byte, names, contact []string) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), strictClaims)
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out, strictClaims)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errors.New("not a JSON object")
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return nil, err
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '}' {
			break
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if slices.Contains(names, name) {
			continue
		}
		if name == "contact" && len(contact) > 0 && val.Kind() == '{' {
			if val, err = withoutMembers(val, contact, nil); err != nil {
				return nil, err
			}
		}
		if err := enc.WriteToken(jsontext.String(name)); err != nil {
			return nil, err
		}
		if err := enc.WriteValue(val); err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}
