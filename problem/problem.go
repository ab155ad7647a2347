// Package problem holds the stable rejection codes of the link flow, their titles and HTTP
// statuses, and the RFC 9457 problem document that carries them, as JSON and as the one
// HTML page a person sees. The gateway and the app service both answer with it, so a code
// means the same thing, and looks the same, wherever a link fails.
//
// The package imports only the standard library: every other partnergate package may
// import it.
package problem

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strings"
)

// InterfaceVersion is the version of the partner interface: the error codes and their
// statuses, the problem document, the headers and the payload fields (semantic versioning,
// CHANGELOG.md says what each part of it means). It lives here because every part that
// answers a partner imports this package; docs/openapi.yaml's info.version and the newest
// entry of CHANGELOG.md carry the same value, and a test holds the three together.
const InterfaceVersion = "1.1.0"

// Code is a stable machine-readable rejection code. Codes are part of the public interface:
// partners and operators match on them, so a code is never renamed.
type Code string

// The gateway's codes. The token verifier's own (token_malformed, signature_invalid, ...)
// follow below; linktoken rejects with them, and every code's title and status is in this
// package's table.
const (
	CodeNotFound              Code = "not_found"                // the path is not /partner/{name}/url or /payload
	CodePartnerUnknown        Code = "partner_unknown"          // no partner of that name is configured
	CodeMethodNotAllowed      Code = "method_not_allowed"       // not a POST
	CodeUnsupportedMediaType  Code = "unsupported_media_type"   // wrong Content-Type for the endpoint
	CodeBodyTooLarge          Code = "body_too_large"           // over max_body_size
	CodeBodyUnreadable        Code = "body_unreadable"          // the client stopped sending the body
	CodeTokenMissing          Code = "token_missing"            // empty body, or no payload field
	CodeTokenDuplicated       Code = "token_duplicated"         // more than one payload field
	CodeTokenInQuery          Code = "token_in_query"           // a payload field in the URL's query
	CodeTokenReplayed         Code = "token_replayed"           // the nonce was claimed before
	CodeTokenBeforeStoreStart Code = "token_before_store_start" // acceptable before the nonce store's memory begins
	CodeNonceStoreUnavailable Code = "nonce_store_unavailable"  // the nonce store failed
	CodeNonceStoreFull        Code = "nonce_store_full"         // the nonce store has no room; retry shortly
	CodeInternal              Code = "internal_error"           // a bug or a failed dependency; the log line says more
	CodeDryRunRateLimited     Code = "dry_run_rate_limited"     // over a partner's dry run rate (POST /partner/{name}/check)
	CodeUpstreamUnavailable   Code = "upstream_unavailable"     // the token was accepted, but the service behind the gateway failed
	CodeOriginNotAllowed      Code = "origin_not_allowed"       // a /payload form from a page whose origin is not on the partner's origins
)

// The verifier's codes (linktoken), one per token rule, cheapest check first.
const (
	CodeTokenMalformed      Code = "token_malformed"       // not a compact JWS of base64url JSON
	CodeHeaderInvalid       Code = "header_invalid"        // typ not JWT, crit/b64/cty/jku/jwk/x5u/enc/zip present, a malformed x5c/x5t hint
	CodeAlgorithmNotAllowed Code = "algorithm_not_allowed" // alg outside the partner's set
	CodeKeyIDMissing        Code = "key_id_missing"        // no kid
	CodeKeyUnknown          Code = "key_unknown"           // kid not in the partner's key set
	CodeKeysUnavailable     Code = "keys_unavailable"      // the key set is not loaded (yet)
	CodeSignatureInvalid    Code = "signature_invalid"
	CodeClaimsInvalid       Code = "claims_invalid"       // wrong JSON type, duplicate member, missing nbf/exp, iat != nbf
	CodeTimeInMilliseconds  Code = "time_in_milliseconds" // nbf, exp or iat above 10^11: milliseconds, not seconds
	CodeIssuerInvalid       Code = "issuer_invalid"       // iss is not the partner's issuer
	CodeAudienceInvalid     Code = "audience_invalid"     // aud does not contain the agreed audience
	CodeLifetimeTooLong     Code = "lifetime_too_long"    // exp - nbf over max_lifetime
	CodeTokenNotYetValid    Code = "token_not_yet_valid"  // now < nbf - leeway
	CodeTokenExpired        Code = "token_expired"        // now >= exp + leeway
	CodeNonceMissing        Code = "nonce_missing"
	CodeNonceInvalid        Code = "nonce_invalid"    // not a string, or outside the length bounds
	CodePayloadInvalid      Code = "payload_invalid"  // the app service answers it too
	CodeKindNotAllowed      Code = "kind_not_allowed" // a main link to a Go-only partner, or the reverse
)

// The app service's codes. It also answers not_found, method_not_allowed and
// internal_error, in the gateway's sense.
const (
	CodeAssertionInvalid   Code = "gateway_assertion_invalid"  // no valid gateway assertion: not from the gateway
	CodeAssertionReplayed  Code = "gateway_assertion_replayed" // a valid assertion seen before: a replayed request
	CodeLoginCodeInvalid   Code = "login_code_invalid"
	CodeLoginCodeUsed      Code = "login_code_used"
	CodeLoginCodeExpired   Code = "login_code_expired"
	CodeCSRFInvalid        Code = "csrf_invalid"
	CodeCredentialsInvalid Code = "credentials_invalid" // a log outcome only: the sign-in page itself says so
)

// The app service's directory sign-in codes (OpenID Connect, /app/directory/{name}/…).
const (
	CodeDirectoryStateInvalid   Code = "directory_state_invalid"    // the callback's state is not this browser's sign-in, was used already or is too old
	CodeDirectoryRefused        Code = "directory_refused"          // the provider answered an error, or refused the code (used before, expired)
	CodeDirectoryTokenInvalid   Code = "directory_token_invalid"    // the ID token failed verification: signature, issuer, audience (another client id) or nonce
	CodeDirectoryTokenExpired   Code = "directory_token_expired"    // the ID token has expired
	CodeDirectoryUnavailable    Code = "directory_unavailable"      // the provider does not answer (discovery or code exchange)
	CodeDirectoryUserNotAllowed Code = "directory_user_not_allowed" // a valid ID token whose claims do not entitle the user to the directory's organization
)

// The app service's national eID sign-in codes (OpenID Connect, /app/eid/{name}/…).
const (
	CodeEIDStateInvalid    Code = "eid_state_invalid"     // the callback's state is not this browser's sign-in, was used already or is too old
	CodeEIDRefused         Code = "eid_refused"           // the provider answered an error, or refused the code (used before, expired)
	CodeEIDTokenInvalid    Code = "eid_token_invalid"     // the ID token failed verification: signature, issuer, audience (another client id) or nonce
	CodeEIDTokenExpired    Code = "eid_token_expired"     // the ID token has expired
	CodeEIDUnavailable     Code = "eid_unavailable"       // the provider does not answer (discovery or code exchange)
	CodeEIDAssuranceTooLow Code = "eid_assurance_too_low" // the ID token's acr is missing or below the provider's lowest accepted level
	CodeEIDNumberInvalid   Code = "eid_number_invalid"    // the ID token's number claim is missing or no valid number of the provider's country
	CodeEIDPersonUnknown   Code = "eid_person_unknown"    // a valid number no member has: no clinic prepared anything for the person
)

// The app service's desktop sign-on codes (/app/device/…, the desktop wrapper's).
const (
	CodeDeviceSignOnInvalid Code = "device_signon_invalid" // no live device sign-on has this secret: unknown, revoked, expired, or a used one presented again
	CodeDeviceSignOnRefused Code = "device_signon_refused" // the session may not get one: not an instructor's, not fresh from a sign-in, or started by a device sign-on
)

// The app service's JSON API codes (/app/api/). It also answers not_found, csrf_invalid,
// method_not_allowed, unsupported_media_type, body_too_large and internal_error.
const (
	CodeSessionRequired      Code = "session_required"      // no signed-in session
	CodeOriginForbidden      Code = "origin_forbidden"      // a state-changing call from another site
	CodeInvalidArgument      Code = "invalid_argument"      // the failing fields say which
	CodeRoleForbidden        Code = "role_forbidden"        // a member calling an instructor's route, or the reverse
	CodeOrganizationRequired Code = "organization_required" // an instructor's session without an organization
	CodeUnavailable          Code = "unavailable"           // the database does not answer; retry
)

// kind is a code's title (RFC 9457: the same for every occurrence of the code) and status.
type kind struct {
	title  string
	status int
}

// kinds gives every code its title and status. The statuses follow one rule: 400 for a
// request or token that is not well formed whatever the keys; 401 for a well-formed token
// that does not authenticate (signature, key, algorithm, issuer, audience, time window);
// 403 for an authentic token of a kind the partner may not send, and for a /payload form
// posted from a site that is not on the partner's origins; 409 for a replay (the
// token was good once; a new one is needed, and retrying this one never helps) and for a
// token the replay store cannot vouch for; 429 with Retry-After for a dry run over its
// partner's rate; 503 with Retry-After for a dependency of the gateway that failed, so the
// token itself may succeed later; 502 with Retry-After for the service behind the gateway
// failing after the token was accepted, so a new token may succeed later.
var kinds = map[Code]kind{
	CodeNotFound:             {"Not found", http.StatusNotFound},
	CodePartnerUnknown:       {"Unknown partner", http.StatusNotFound},
	CodeMethodNotAllowed:     {"Method not allowed", http.StatusMethodNotAllowed},
	CodeUnsupportedMediaType: {"Unsupported media type", http.StatusUnsupportedMediaType},
	CodeBodyTooLarge:         {"Request body too large", http.StatusRequestEntityTooLarge},
	CodeBodyUnreadable:       {"Request body unreadable", http.StatusBadRequest},
	CodeTokenMissing:         {"Token missing", http.StatusBadRequest},
	CodeTokenDuplicated:      {"Token given more than once", http.StatusBadRequest},
	CodeTokenInQuery:         {"Token in the URL", http.StatusBadRequest},
	CodeTokenReplayed:        {"Token already used", http.StatusConflict},
	// The store lost its memory (a Redis restarted empty) after this token became
	// acceptable, so it may have been used and forgotten. The refusal is final for this
	// token, as a replay's is: 409, a conflict with the store's state. Not 503, whose
	// Retry-After invites sending the same token again, which can never succeed; not 401,
	// because the token is authentic and within its time window. A freshly signed token
	// succeeds once the store's memory covers it (leeway + 5s after the loss).
	CodeTokenBeforeStoreStart: {"Token older than the replay store's memory", http.StatusConflict},
	CodeNonceStoreUnavailable: {"Replay protection unavailable", http.StatusServiceUnavailable},
	CodeNonceStoreFull:        {"Replay protection at capacity", http.StatusServiceUnavailable},
	CodeInternal:              {"Internal error", http.StatusInternalServerError},
	// Retry-After says when the partner's bucket has room again.
	CodeDryRunRateLimited: {"Too many dry runs", http.StatusTooManyRequests},
	// The token passed and its nonce is spent before the request is forwarded, so the
	// same token can never succeed again: not 503, whose Retry-After invites sending the
	// same request (here a certain token_replayed). 502 says the gateway is fine and the
	// service behind it is not; its Retry-After says when a freshly signed token is worth
	// sending, since a service restart takes seconds.
	CodeUpstreamUnavailable: {"Service behind the gateway unavailable", http.StatusBadGateway},
	// An authentic partner's token may be in the form, lifted by someone who wants another
	// browser signed in as themselves (login CSRF): the request is refused for where it comes
	// from, whatever the token, like an authentic token of a kind the partner may not send.
	CodeOriginNotAllowed: {"Form from a site the partner did not register", http.StatusForbidden},

	CodeTokenMalformed:      {"Token malformed", http.StatusBadRequest},
	CodeHeaderInvalid:       {"Token header invalid", http.StatusBadRequest},
	CodeAlgorithmNotAllowed: {"Algorithm not allowed", http.StatusUnauthorized},
	CodeKeyIDMissing:        {"Key id missing", http.StatusBadRequest},
	CodeKeyUnknown:          {"Unknown key", http.StatusUnauthorized},
	CodeKeysUnavailable:     {"Partner keys unavailable", http.StatusServiceUnavailable},
	CodeSignatureInvalid:    {"Signature invalid", http.StatusUnauthorized},
	CodeClaimsInvalid:       {"Claims invalid", http.StatusBadRequest},
	CodeTimeInMilliseconds:  {"Time in milliseconds", http.StatusBadRequest},
	CodeIssuerInvalid:       {"Issuer invalid", http.StatusUnauthorized},
	CodeAudienceInvalid:     {"Audience invalid", http.StatusUnauthorized},
	CodeLifetimeTooLong:     {"Token lifetime too long", http.StatusBadRequest},
	CodeTokenNotYetValid:    {"Token not yet valid", http.StatusUnauthorized},
	CodeTokenExpired:        {"Token expired", http.StatusUnauthorized},
	CodeNonceMissing:        {"Nonce missing", http.StatusBadRequest},
	CodeNonceInvalid:        {"Nonce invalid", http.StatusBadRequest},
	CodePayloadInvalid:      {"Payload invalid", http.StatusBadRequest},
	CodeKindNotAllowed:      {"Link kind not allowed", http.StatusForbidden},

	CodeAssertionInvalid:  {"Not forwarded by the gateway", http.StatusForbidden},
	CodeAssertionReplayed: {"Request already processed", http.StatusConflict},
	CodeLoginCodeInvalid:  {"Link not valid", http.StatusBadRequest},
	CodeLoginCodeUsed:     {"Link already used", http.StatusGone},
	CodeLoginCodeExpired:  {"Link expired", http.StatusGone},
	CodeCSRFInvalid:       {"Form expired", http.StatusForbidden},

	CodeDirectoryStateInvalid:   {"Directory sign-in not valid", http.StatusBadRequest},
	CodeDirectoryRefused:        {"Directory sign-in refused", http.StatusUnauthorized},
	CodeDirectoryTokenInvalid:   {"Directory answer not valid", http.StatusUnauthorized},
	CodeDirectoryTokenExpired:   {"Directory answer expired", http.StatusUnauthorized},
	CodeDirectoryUnavailable:    {"Directory unavailable", http.StatusServiceUnavailable},
	CodeDirectoryUserNotAllowed: {"Not allowed by this directory", http.StatusForbidden},

	CodeEIDStateInvalid:    {"Sign-in not valid", http.StatusBadRequest},
	CodeEIDRefused:         {"Sign-in refused", http.StatusUnauthorized},
	CodeEIDTokenInvalid:    {"Electronic ID answer not valid", http.StatusUnauthorized},
	CodeEIDTokenExpired:    {"Electronic ID answer expired", http.StatusUnauthorized},
	CodeEIDUnavailable:     {"Electronic ID unavailable", http.StatusServiceUnavailable},
	CodeEIDAssuranceTooLow: {"Level of security too low", http.StatusForbidden},
	CodeEIDNumberInvalid:   {"No usable identity number", http.StatusUnauthorized},
	CodeEIDPersonUnknown:   {"No plans yet", http.StatusNotFound},

	CodeDeviceSignOnInvalid: {"Desktop sign-on not valid", http.StatusUnauthorized},
	CodeDeviceSignOnRefused: {"Desktop sign-on refused", http.StatusForbidden},

	CodeSessionRequired:      {"Session required", http.StatusUnauthorized},
	CodeOriginForbidden:      {"Cross-origin request refused", http.StatusForbidden},
	CodeInvalidArgument:      {"Invalid argument", http.StatusBadRequest},
	CodeRoleForbidden:        {"Not allowed for this role", http.StatusForbidden},
	CodeOrganizationRequired: {"No organization", http.StatusForbidden},
	CodeUnavailable:          {"Service unavailable", http.StatusServiceUnavailable},
}

// Status is the HTTP status of a code: 400 for a code without a row, since a verifier code
// added later is a token that is not well formed until it is given one.
func Status(c Code) int {
	if k, ok := kinds[c]; ok {
		return k.status
	}
	return http.StatusBadRequest
}

// Codes returns every code that has a title and a status, sorted: for a catalogue that
// translates each title, and the test that it misses none.
func Codes() []Code {
	codes := make([]Code, 0, len(kinds))
	for c := range kinds {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// Title is the short human summary of a code.
func Title(c Code) string {
	if k, ok := kinds[c]; ok {
		return k.title
	}
	return "Link rejected"
}

// TypePrefix makes a code an RFC 9457 problem type URI. A URN, because a type must not
// change while documentation moves; docs/jwt_partner.md lists every code.
const TypePrefix = "urn:partnergate:problem:"

// FieldError names one failing field by its JSON path ("contact.firstname") and says why,
// without echoing the value: the value may be personal data.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Problem is a rejection as RFC 9457 describes it, with the code, the failing fields and
// the request id as extension members, and, for some codes, what the gateway expected
// instead and which link kind it read. Those say what to fix; they name the partner's
// agreed values and the interface's limits, never a value of the token.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Code      string       `json:"code"`
	Fields    []FieldError `json:"fields,omitempty"`
	RequestID string       `json:"request_id,omitempty"`
	Hints
}

// Hints are the members of a refused link's problem document that tell the partner's
// developer what the gateway wanted. linktoken's errors and reports carry the same
// struct, so that a refusal's hints reach the document without a copy of each.
type Hints struct {
	// Expected is the value the failing claim must have (issuer_invalid: the agreed
	// issuer; audience_invalid: the agreed audience).
	Expected string `json:"expected,omitempty"`
	// MaxLifetime is the longest exp - nbf the partner may sign, in seconds
	// (lifetime_too_long).
	MaxLifetime int64 `json:"max_lifetime,omitempty"`
	// Kind is the link kind the payload was read as, main or go (payload_invalid,
	// kind_not_allowed), and KindFrom the fields that made it a main link: those of
	// employeeId, employeeFirstname and employeeLastname it carries. A go link carries none,
	// and KindFrom is absent.
	Kind     string   `json:"kind,omitempty"`
	KindFrom []string `json:"kind_from,omitempty"`
}

// New is the problem of code c with its title and status. detail must be safe to show and
// to log: never a token, a payload value or an identity number.
func New(c Code, detail string) Problem {
	return Problem{Type: TypePrefix + string(c), Title: Title(c), Status: Status(c), Detail: detail, Code: string(c)}
}

// WriteJSON answers p as application/problem+json.
func WriteJSON(w http.ResponseWriter, p Problem) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, err = w.Write(body)
	return err
}

//go:embed page.html
var pageFS embed.FS

// page is page.html on its own: the standalone page with its inline style.
var page = template.Must(template.ParseFS(pageFS, "page.html"))

// WritePage answers p as the HTML page t for a person in the tab that posted a link; t is
// nil for the standalone page, or a page that ParsePage made with blocks of its own (the
// page in another language: problem_lang, problem_detail, problem_code). html/template
// escapes every value; the page has no script, and its CSP allows nothing but the inline
// style. frameAncestors are the pages that may show it in a frame: origins as a browser
// serializes them (https://ehr.acme.example), the CSP frame-ancestors sources of the
// answer. Without any, no page may frame it (frame-ancestors 'none', and X-Frame-Options:
// DENY for browsers that predate frame-ancestors). A page that answers a form post is
// framed only where the form was: the pages of the partner that posted it.
func WritePage(w http.ResponseWriter, p Problem, frameAncestors []string, t *template.Template) error {
	if t == nil {
		t = page
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "problem", p); err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	if len(frameAncestors) == 0 {
		hdr.Set("Content-Security-Policy", pageCSP+"'none'")
		hdr.Set("X-Frame-Options", "DENY")
	} else {
		hdr.Set("Content-Security-Policy", pageCSP+strings.Join(frameAncestors, " "))
	}
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(p.Status)
	_, err := w.Write(buf.Bytes())
	return err
}

// pageCSP is the standalone page's Content-Security-Policy up to its frame-ancestors
// sources.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors "

// ParsePage adds the page to t as the template "problem", for a service that shows it
// inside its own layout, or in another language. The page's blocks problem_head (given the
// title; its problem_lang is the page's lang attribute), problem_detail,
// problem_code (the code, status and request id line) and problem_foot hold the
// standalone page's parts; t replaces them by defining them
// again in templates parsed after this call.
func ParsePage(t *template.Template) (*template.Template, error) {
	return t.ParseFS(pageFS, "page.html")
}
