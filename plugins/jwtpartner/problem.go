package jwtpartner

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// Code is a rejection's stable machine code: linktoken's codes for the token rules, and
// the gateway's own below. Partners match on codes, so a code is never renamed.
type Code = linktoken.Code

// The gateway's codes, next to linktoken's.
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
	CodeInternal              Code = "internal_error"           // a bug; the log line says more
)

// statusOf maps a code to its HTTP status. The rule: 400 for a request or token that is not
// well formed whatever the keys; 401 for a well-formed token that does not authenticate
// (signature, key, algorithm, issuer, audience, time window); 403 for an authentic token
// of a kind the partner may not send; 409 for a replay (the token was good once; a new one
// is needed, and retrying this one never helps) and for a token the replay store cannot
// vouch for; 503 with Retry-After for a dependency of the gateway that failed, so the token
// itself may succeed later.
func statusOf(c Code) int {
	switch c {
	case CodeNotFound, CodePartnerUnknown:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case linktoken.CodeSignatureInvalid, linktoken.CodeKeyUnknown, linktoken.CodeAlgorithmNotAllowed,
		linktoken.CodeIssuerInvalid, linktoken.CodeAudienceInvalid,
		linktoken.CodeTokenExpired, linktoken.CodeTokenNotYetValid:
		return http.StatusUnauthorized
	case linktoken.CodeKindNotAllowed:
		return http.StatusForbidden
	case CodeTokenReplayed:
		return http.StatusConflict
	case CodeTokenBeforeStoreStart:
		// The store lost its memory (a Redis restarted empty) after this token became
		// acceptable, so it may have been used and forgotten. The refusal is final for this
		// token, as a replay's is: 409, a conflict with the store's state. Not 503, whose
		// Retry-After invites sending the same token again, which can never succeed; not
		// 401, because the token is authentic and within its time window. A freshly signed
		// token succeeds once the store's memory covers it (leeway + 5s after the loss).
		return http.StatusConflict
	case linktoken.CodeKeysUnavailable, CodeNonceStoreUnavailable, CodeNonceStoreFull:
		return http.StatusServiceUnavailable
	case CodeInternal:
		return http.StatusInternalServerError
	}
	// token_missing, token_duplicated, token_in_query, token_malformed, header_invalid,
	// key_id_missing, claims_invalid, lifetime_too_long, nonce_missing, nonce_invalid,
	// payload_invalid, body_unreadable and any code linktoken adds later.
	return http.StatusBadRequest
}

// titles are the short human summaries of the codes (RFC 9457 title: the same for every
// occurrence of the code).
var titles = map[Code]string{
	CodeNotFound:                      "Not a partner link endpoint",
	CodePartnerUnknown:                "Unknown partner",
	CodeMethodNotAllowed:              "Method not allowed",
	CodeUnsupportedMediaType:          "Unsupported media type",
	CodeBodyTooLarge:                  "Request body too large",
	CodeBodyUnreadable:                "Request body unreadable",
	CodeTokenMissing:                  "Token missing",
	CodeTokenDuplicated:               "Token given more than once",
	CodeTokenInQuery:                  "Token in the URL",
	CodeTokenReplayed:                 "Token already used",
	CodeTokenBeforeStoreStart:         "Token older than the replay store's memory",
	CodeNonceStoreUnavailable:         "Replay protection unavailable",
	CodeNonceStoreFull:                "Replay protection at capacity",
	CodeInternal:                      "Internal error",
	linktoken.CodeTokenMalformed:      "Token malformed",
	linktoken.CodeHeaderInvalid:       "Token header invalid",
	linktoken.CodeAlgorithmNotAllowed: "Algorithm not allowed",
	linktoken.CodeKeyIDMissing:        "Key id missing",
	linktoken.CodeKeyUnknown:          "Unknown key",
	linktoken.CodeKeysUnavailable:     "Partner keys unavailable",
	linktoken.CodeSignatureInvalid:    "Signature invalid",
	linktoken.CodeClaimsInvalid:       "Claims invalid",
	linktoken.CodeIssuerInvalid:       "Issuer invalid",
	linktoken.CodeAudienceInvalid:     "Audience invalid",
	linktoken.CodeLifetimeTooLong:     "Token lifetime too long",
	linktoken.CodeTokenNotYetValid:    "Token not yet valid",
	linktoken.CodeTokenExpired:        "Token expired",
	linktoken.CodeNonceMissing:        "Nonce missing",
	linktoken.CodeNonceInvalid:        "Nonce invalid",
	linktoken.CodePayloadInvalid:      "Payload invalid",
	linktoken.CodeKindNotAllowed:      "Link kind not allowed",
}

func titleOf(c Code) string {
	if t, ok := titles[c]; ok {
		return t
	}
	return "Link rejected"
}

// problemTypePrefix makes a code an RFC 9457 problem type URI. A URN, because a type must
// not change while documentation moves; the README lists every code.
const problemTypePrefix = "urn:partnergate:problem:"

// outcomeAccepted is the outcome of a forwarded request in logs and metrics.
const outcomeAccepted = "accepted"

// dependency reports whether a code means a dependency of the gateway failed (logged at
// error), not the client.
func dependency(c Code) bool {
	switch c {
	case linktoken.CodeKeysUnavailable, CodeNonceStoreUnavailable, CodeNonceStoreFull, CodeInternal:
		return true
	}
	return false
}

// rejection is a refused request: its code, a detail safe to show and log, the failing
// payload fields, and the cause for the log.
type rejection struct {
	code   Code
	detail string
	fields []linkspec.FieldError
	err    error
}

func reject(c Code, detail string) *rejection { return &rejection{code: c, detail: detail} }

// rejectToken turns linktoken's error into a rejection. An error without a code is a bug
// in the verifier: fail closed with 500.
func rejectToken(err error) *rejection {
	var e *linktoken.Error
	if errors.As(err, &e) {
		return &rejection{code: e.Code, detail: e.Detail, fields: e.Fields, err: e.Err}
	}
	return &rejection{code: CodeInternal, detail: "the token could not be checked", err: err}
}

// Problem is the application/problem+json body of a rejection on /url (RFC 9457).
type Problem struct {
	Type      string                `json:"type"`
	Title     string                `json:"title"`
	Status    int                   `json:"status"`
	Detail    string                `json:"detail,omitempty"`
	Code      string                `json:"code"`
	Fields    []linkspec.FieldError `json:"fields,omitempty"`
	RequestID string                `json:"request_id,omitempty"`
}

func (rq *request) problem(rej *rejection) Problem {
	return Problem{
		Type:      problemTypePrefix + string(rej.code),
		Title:     titleOf(rej.code),
		Status:    statusOf(rej.code),
		Detail:    rej.detail,
		Code:      string(rej.code),
		Fields:    rej.fields,
		RequestID: rq.requestID,
	}
}

// writeRejection answers a refused request, logs it and counts it. The next handler is not called.
func (h *Handler) writeRejection(w http.ResponseWriter, rq *request, rej *rejection) error {
	h.logOutcome(rq, rej)
	h.metrics.request(rq.partnerLabel(), rq.endpointLabel(), string(rej.code))
	rq.errorCode = rej.code

	status := statusOf(rej.code)
	hdr := w.Header()
	switch status {
	case http.StatusMethodNotAllowed:
		hdr.Set("Allow", http.MethodPost)
	case http.StatusServiceUnavailable:
		hdr.Set("Retry-After", retryAfterSeconds)
	case http.StatusUnauthorized:
		// RFC 9110 §15.5.2: a 401 names the scheme the client must use.
		hdr.Set("WWW-Authenticate", `PartnerLink realm="partnergate"`)
	}
	hdr.Set("Cache-Control", "no-store")

	if h.Errors == ErrorsHandle {
		return caddyhttp.Error(status, fmt.Errorf("partner link rejected: %s", rej.code))
	}
	p := rq.problem(rej)
	if rq.endpoint == endpointPayload {
		return writeHTMLProblem(w, p)
	}
	return writeJSONProblem(w, p)
}

func writeJSONProblem(w http.ResponseWriter, p Problem) error {
	body, err := json.Marshal(p)
	if err != nil {
		return caddyhttp.Error(http.StatusInternalServerError, err)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, err = w.Write(body)
	return err
}

// problemPage is the page a person sees in the tab or iframe that posted the form.
// html/template escapes every value; the page has no script, and its CSP allows nothing
// but the inline style.
var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .2em}small{color:#666}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>The link could not be opened: {{.Detail}}.</p>
{{- if .Fields}}
<ul>
{{- range .Fields}}
<li><code>{{.Field}}</code>: {{.Reason}}</li>
{{- end}}
</ul>
{{- end}}
<p><small>Error code <code>{{.Code}}</code> (HTTP {{.Status}}){{if .RequestID}}, request id <code>{{.RequestID}}</code>{{end}}. Give these to the support team of the application you came from.</small></p>
</body>
</html>
`))

func writeHTMLProblem(w http.ResponseWriter, p Problem) error {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(p.Status)
	return problemPage.Execute(w, p)
}
