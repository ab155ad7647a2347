package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/problem"
)

// apiPrefix is where the JSON API lives; the views and window.svcApp call nothing else.
const apiPrefix = "/app/api/"

// maxAPIBody bounds a request body: the largest legitimate one is a selectperson call,
// whose limit the desktop wrapper checks too, so that what it accepts fits here.
const maxAPIBody = personspec.MaxSelectBody

// who may call a route.
type who int

const (
	anyone     who = iota // signed in or not (status)
	instructor            // an instructor's session in an organization
	member                // a Go member's session
	either                // an instructor's or a member's session
)

// apiRequest is what a route handler gets: the checked session and the request.
type apiRequest struct {
	*http.Request
	w     http.ResponseWriter
	s     *store.Session // nil only for an anyone route without a session
	token string         // the session cookie, for the session's own updates
	body  []byte         // the request body, for POST and PUT
}

// org is the session's organization id (instructor routes have one).
func (r *apiRequest) org() int64 { return r.s.Organization.ID }

// apiFunc answers a checked request with a status and a JSON value, or an error: a
// refusal, or a store error that apiError turns into one.
type apiFunc func(r *apiRequest) (int, any, error)

// apiRoutes registers the JSON API. Every route is wrapped by api, which checks what the
// route needs before the handler runs; paths and methods no route has are answered by
// apiFallback with not_found or method_not_allowed.
func (h *Handler) apiRoutes() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, w who, fn apiFunc) {
		mux.Handle(pattern, h.api(w, fn))
	}
	route("GET /app/api/status", anyone, h.apiStatus)
	route("GET /app/api/exercises", instructor, h.apiExercises)
	route("GET /app/api/exercises/{id}", either, h.apiExercise)
	route("GET /app/api/workouts", instructor, h.apiWorkouts)
	route("GET /app/api/workouts/{id}", either, h.apiWorkout)
	route("POST /app/api/workouts", instructor, h.apiCreateWorkout)
	route("PUT /app/api/workouts/{id}", instructor, h.apiUpdateWorkout)
	route("POST /app/api/workouts/{id}/export", instructor, h.apiExport)
	route("GET /app/api/persons", instructor, h.apiPersons)
	route("GET /app/api/persons/{id}", instructor, h.apiPerson)
	route("POST /app/api/persons/select", instructor, h.apiSelectPerson)
	route("PUT /app/api/persons/{id}/customId", instructor, h.apiSetCustomID)
	route("PUT /app/api/session/person", instructor, h.apiSessionPerson)
	route("PUT /app/api/session/case", instructor, h.apiSessionCase)
	route("GET /app/api/cases/{caseId}/exports", instructor, h.apiCaseExports)
	route("GET /app/api/exports/{file}", instructor, h.apiExportPDF)
	route("GET /app/api/me/workouts", member, h.apiMyWorkouts)
	route("PUT /app/api/me/language", anyone, h.apiSetLanguage)
	route("GET /app/api/me/devices", instructor, h.apiDevices)
	route("POST /app/api/me/devices/{id}/revoke", instructor, h.apiRevokeDevice)
	mux.HandleFunc(apiPrefix, func(w http.ResponseWriter, r *http.Request) { h.apiFallback(mux, w, r) })
	return mux
}

// apiFallback answers a request no route matched: 405 with Allow when the path has routes
// for other methods, else 404. (A pattern without a method matches every method, so the
// mux never answers 405 itself once this catch-all exists.)
func (h *Handler) apiFallback(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != apiPrefix {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeProblem(w, problem.New(problem.CodeNotFound, "There is no such API route."))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeProblem(w, problem.New(problem.CodeMethodNotAllowed, "Use "+strings.Join(allow, " or ")+"."))
}

// api wraps a route with its checks: for a state-changing call the Origin (or
// Sec-Fetch-Site where a browser sends no Origin), then the session, the session's CSRF
// token in X-CSRF-Token, the role, and the body's type and size. A cross-site page can make
// the browser send the cookie, but can neither read the token nor set its Origin to ours.
func (h *Handler) api(allowed who, fn apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		changes := r.Method != http.MethodGet && r.Method != http.MethodHead
		if changes && !h.sameOriginRequest(r) {
			h.apiRefused(w, r, problem.New(problem.CodeOriginForbidden, "The request does not come from this site's pages."))
			return
		}
		s, token, err := h.apiSession(r)
		if err != nil {
			h.apiError(w, r, err)
			return
		}
		if s == nil && allowed != anyone {
			h.apiRefused(w, r, problem.New(problem.CodeSessionRequired, "Your session has ended. Open the link again from your partner application, or sign in."))
			return
		}
		// The token comes in X-CSRF-Token instead of a form field, from the shell's meta
		// element or the status answer.
		if changes && !h.validCSRFToken(r, r.Header.Get("X-CSRF-Token")) {
			h.apiRefused(w, r, problem.New(problem.CodeCSRFInvalid, "The request's X-CSRF-Token is missing or not this session's; reload the page."))
			return
		}
		if s != nil {
			if p, ok := roleAllows(allowed, s); !ok {
				h.apiRefused(w, r, p)
				return
			}
		}
		h.setOfflineOwner(w, s)
		req := &apiRequest{Request: r, w: w, s: s, token: token}
		// The catalogue's texts (exercise names and instructions, the global templates)
		// come in the language the pages are written in, as the pages choose it.
		req.Request = r.WithContext(store.WithLanguage(r.Context(), h.apiLanguage(req)))
		if changes {
			if req.body, err = readJSONBody(w, r); err != nil {
				h.apiError(w, r, err)
				return
			}
		}
		status, v, err := fn(req)
		if err != nil {
			h.apiError(w, r, err)
			return
		}
		if f, ok := v.(file); ok {
			f.write(w)
			return
		}
		writeJSON(w, status, v)
	})
}

// roleAllows checks the session against a route's callers.
func roleAllows(allowed who, s *store.Session) (problem.Problem, bool) {
	role := s.Account.Role
	switch {
	case allowed == anyone:
	case allowed == member && role != store.RoleMember:
		return problem.New(problem.CodeRoleForbidden, "Only a Go member can do this."), false
	case (allowed == instructor || allowed == either) && s.Organization == nil:
		return problem.New(problem.CodeOrganizationRequired, "Your session has no organization: open the application from your partner application, or sign in again."), false
	case allowed == instructor && role != store.RoleInstructor:
		return problem.New(problem.CodeRoleForbidden, "Only an instructor can do this."), false
	}
	return problem.Problem{}, true
}

// apiSession returns the request's signed-in session and its token, or nil: a session
// waiting for a first-time employee's sign-in or for a link confirmation is not signed in
// for the API. A database failure is an error, not "no session", so it answers 503.
func (h *Handler) apiSession(r *http.Request) (*store.Session, string, error) {
	tok := h.cookie(r, sessionCookie)
	if tok == "" {
		return nil, "", nil
	}
	s, err := h.cfg.Store.Session(r.Context(), tok)
	switch {
	case errors.Is(err, store.ErrNoSession):
		return nil, "", nil
	case err != nil:
		return nil, "", err
	case s.Pending || s.ConfirmLink || s.Account == nil:
		return nil, "", nil
	}
	return s, tok, nil
}

// sameOriginRequest accepts a request whose Origin is this site, or, without an Origin,
// whose Sec-Fetch-Site says same-origin. A request with neither is refused: every browser
// that runs the application sends one of them on a POST or PUT.
func (h *Handler) sameOriginRequest(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return o != "null" && h.sameOrigin(r, o)
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// readJSONBody reads an application/json body of at most maxAPIBody bytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, refusal{problem.New(problem.CodeUnsupportedMediaType, "Send the body as application/json.")}
	}
	if r.ContentLength > maxAPIBody {
		return nil, tooLarge()
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case err != nil:
		return nil, refusal{problem.New(problem.CodeBodyUnreadable, "The request body could not be read.")}
	}
	return b, nil
}

func tooLarge() error {
	return refusal{problem.New(problem.CodeBodyTooLarge, "The request body is larger than "+strconv.Itoa(maxAPIBody>>10)+" KiB.")}
}

// refusal is a problem returned as an error by a route or a check.
type refusal struct{ p problem.Problem }

func (r refusal) Error() string { return r.p.Code + ": " + r.p.Detail }

// apiError answers err: a problem as it is; store.ErrNotFound as not_found (an id of
// another organization looks exactly like one that does not exist); any other error is a
// failure of ours: 503 with Retry-After when the database does not answer, else 500. The
// log line has the route and the error, never a request value.
func (h *Handler) apiError(w http.ResponseWriter, r *http.Request, err error) {
	var p problem.Problem
	var ref refusal
	switch {
	case errors.As(err, &ref):
		p = ref.p
	case errors.Is(err, store.ErrNoSession):
		// The session ended between the check and the change.
		p = problem.New(problem.CodeSessionRequired, "Your session has ended. Open the link again from your partner application, or sign in.")
	case errors.Is(err, store.ErrNotFound):
		p = problem.New(problem.CodeNotFound, "There is no such record in your organization.")
	default:
		p = h.failure(w, r, "Try again in a moment.")
		h.log.Error("api request failed", "route", r.Pattern, "outcome", p.Code, "error", err.Error())
	}
	if p.Status < 500 {
		h.apiRefused(w, r, p)
		return
	}
	writeProblem(w, p)
}

// apiRefused answers a refusal, logged at debug: a stale page or a typo is no incident.
func (h *Handler) apiRefused(w http.ResponseWriter, r *http.Request, p problem.Problem) {
	if h.log.Enabled(r.Context(), slog.LevelDebug) {
		h.log.Debug("api request refused", "route", r.Pattern, "outcome", p.Code)
	}
	writeProblem(w, p)
}

func writeProblem(w http.ResponseWriter, p problem.Problem) {
	_ = problem.WriteJSON(w, p) // a failed write is a client gone
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeProblem(w, problem.New(problem.CodeInternal, "Try again in a moment."))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// invalid is an invalid_argument refusal naming the failing fields.
func invalid(fields ...problem.FieldError) error {
	p := problem.New(problem.CodeInvalidArgument, "Some arguments are not valid; see fields.")
	p.Fields = fields
	return refusal{p}
}

// fieldErrors collects the failing fields of one request.
type fieldErrors []problem.FieldError

func (fe *fieldErrors) add(field, reason string) {
	*fe = append(*fe, problem.FieldError{Field: field, Reason: reason})
}

// err is the invalid_argument problem, or nil when no field failed.
func (fe fieldErrors) err() error {
	if len(fe) == 0 {
		return nil
	}
	return invalid(fe...)
}

// text checks a string argument: at most max characters, no control characters (a tab or
// line break only where multiline).
func (fe *fieldErrors) text(field, s string, max int, multiline bool) {
	switch {
	case !utf8.ValidString(s):
		fe.add(field, "not valid UTF-8")
	case utf8.RuneCountInString(s) > max:
		fe.add(field, "at most "+strconv.Itoa(max)+" characters")
	case strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t'))
	}):
		fe.add(field, "control characters are not allowed")
	}
}

// intRange checks a number argument.
func (fe *fieldErrors) intRange(field string, n, lo, hi int) {
	if n < lo || n > hi {
		fe.add(field, "must be from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
}

// decodeBody decodes the request body into v: one JSON object with only v's members.
// An empty body is an empty object. It reads with the claims decoder's rules
// (linkspec.StrictClaims: member names match exactly, a name given twice and invalid UTF-8
// are refused), not encoding/json's, which matches names in any case and keeps the last of
// two: {"caseId":"a","CASEID":"b"} must not set a case the page did not send. A member
// that is not v's is refused too, and the refusal says when it differs from one only in
// case.
func decodeBody(r *apiRequest, v any) error {
	if len(bytes.TrimSpace(r.body)) == 0 {
		return nil
	}
	err := jsonv2.Unmarshal(r.body, v, apiBodyRules)
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && se.Err == jsontext.ErrDuplicateName {
		return invalid(problem.FieldError{Field: linkspec.FieldPath(se.JSONPointer), Reason: "given more than once"})
	}
	var me *jsonv2.SemanticError
	if errors.As(err, &me) && me.JSONPointer != "" {
		field := linkspec.FieldPath(me.JSONPointer)
		switch {
		case me.Err == jsonv2.ErrUnknownName:
			if known := caseVariantOf(me.GoType, me.JSONPointer.LastToken()); known != "" {
				return invalid(problem.FieldError{Field: field, Reason: "differs from " + known + " only in case: member names are case-sensitive"})
			}
			return invalid(problem.FieldError{Field: field, Reason: "unknown member"})
		case me.GoType != nil:
			return invalid(problem.FieldError{Field: field, Reason: "must be a JSON " + jsonKindOf(me.GoType)})
		}
	}
	return invalid(problem.FieldError{Field: "", Reason: "the body must be one JSON object"})
}

// apiBodyRules are decodeBody's options, joined once.
var apiBodyRules = jsonv2.JoinOptions(linkspec.StrictClaims(), jsonv2.RejectUnknownMembers(true))

// caseVariantOf returns the JSON name of the member of struct type t that name differs from
// only in case, or "".
func caseVariantOf(t reflect.Type, name string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	for f := range t.Fields() {
		json, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if json == "" {
			json = f.Name
		}
		if f.IsExported() && json != "-" && json != name && strings.EqualFold(json, name) {
			return json
		}
	}
	return ""
}

// jsonKindOf names the JSON kind a Go type takes.
func jsonKindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	}
	return "value of another type"
}

// pathID reads a positive id from the path.
func pathID(r *apiRequest, name string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid(problem.FieldError{Field: name, Reason: "must be a positive integer"})
	}
	return id, nil
}

// queryInt reads an optional integer query parameter within [lo, hi]; 0 when absent.
func queryInt(r *apiRequest, fe *fieldErrors, name string, lo, hi int64) int64 {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		fe.add(name, "must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
		return 0
	}
	return n
}

// queryText reads an optional text query parameter.
func queryText(r *apiRequest, fe *fieldErrors, name string, max int) string {
	v := r.URL.Query().Get(name)
	fe.text(name, v, max, false)
	return v
}
