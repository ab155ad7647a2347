package web

import (
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/problem"
)

// The desktop wrapper's device sign-on (docs/appservice.md, Desktop sign-on): three
// endpoints for a program, not for a page. None reads a cookie: the issue takes the
// session token in Authorization, which no script of a page can read (the cookie is
// HttpOnly) and no other site can send (a cross-site request with Authorization and a JSON
// body needs a CORS preflight, which nothing here answers); the exchange and the sign-out
// take the device sign-on's secret in the body. So a page, even one running a stranger's
// script, can neither get a device sign-on nor see one.
//
//	POST /app/device/credential  Authorization: Bearer <session token>
//	     {"externalUser", "installation", "computer"} → 201 {"credential", "id"}
//	POST /app/device/signin      {"credential", "externalUser", "installation", "computer"}
//	     → 200 {"credential"} and the session cookie
//	POST /app/device/signout     {"credential"} → 204

// installationID is what a wrapper installation's id looks like: the wrapper makes it of
// 128 random bits; the bounds keep a made-up one short and printable.
var installationID = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// readDevice reads a device endpoint's JSON body into in, whose members are all the
// endpoint takes. A request from a page of another site (its Origin) is refused: the
// wrapper sends none.
func (h *Handler) readDevice(w http.ResponseWriter, r *http.Request, in any) error {
	if o := r.Header.Get("Origin"); o != "" && !h.sameOrigin(r, o) {
		return refusal{problem.New(problem.CodeOriginForbidden, "The desktop sign-on is for the desktop wrapper, not for another site's pages.")}
	}
	b, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	return decodeBody(&apiRequest{Request: r, w: w, body: b}, in)
}

// checkBinding checks the external user, the installation and the computer a wrapper
// names: required where they bind, short, no control characters.
func checkBinding(fe *fieldErrors, b store.DeviceBinding) {
	if strings.TrimSpace(b.ExternalUser) == "" {
		fe.add("externalUser", "required")
	}
	fe.text("externalUser", b.ExternalUser, 256, false)
	if !installationID.MatchString(b.Installation) {
		fe.add("installation", "must be 16 to 64 letters, digits, - or _")
	}
	fe.text("computer", b.Computer, 256, false)
}

// deviceIssue gives the signed-in session named in Authorization a device sign-on for the
// wrapper installation and external user in the body.
func (h *Handler) deviceIssue(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ExternalUser string `json:"externalUser"`
		Installation string `json:"installation"`
		Computer     string `json:"computer"`
	}
	if err := h.readDevice(w, r, &in); err != nil {
		h.deviceError(w, r, err)
		return
	}
	b := store.DeviceBinding{ExternalUser: in.ExternalUser, Installation: in.Installation, Computer: in.Computer}
	var fe fieldErrors
	checkBinding(&fe, b)
	if err := fe.err(); err != nil {
		h.deviceError(w, r, err)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		h.deviceError(w, r, store.ErrNoSession)
		return
	}
	secret, d, err := h.cfg.Store.IssueDeviceSignOn(r.Context(), token, b)
	if err != nil {
		h.deviceError(w, r, err)
		return
	}
	h.log.Info("device sign-on issued", "outcome", "issued", "device", d.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"credential": secret, "id": d.ID})
}

// deviceSignIn exchanges a device sign-on's secret for a session (the cookie) and the
// secret's successor. The computer's name, when given, replaces the listed one (a
// renamed computer).
func (h *Handler) deviceSignIn(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Credential   string `json:"credential"`
		ExternalUser string `json:"externalUser"`
		Installation string `json:"installation"`
		Computer     string `json:"computer"`
	}
	if err := h.readDevice(w, r, &in); err != nil {
		h.deviceError(w, r, err)
		return
	}
	b := store.DeviceBinding{ExternalUser: in.ExternalUser, Installation: in.Installation, Computer: in.Computer}
	var fe fieldErrors
	if in.Credential == "" {
		fe.add("credential", "required")
	}
	checkBinding(&fe, b)
	if err := fe.err(); err != nil {
		h.deviceError(w, r, err)
		return
	}
	out, err := h.cfg.Store.DeviceSignIn(r.Context(), in.Credential, b)
	if err != nil {
		h.deviceError(w, r, err)
		return
	}
	h.log.Info("signed in", "outcome", "signed_in", "by", "device")
	h.setCookie(w, r, sessionCookie, out.Token, 0)
	writeJSON(w, http.StatusOK, map[string]string{"credential": out.Secret})
}

// deviceSignOut ends the device sign-on of the secret in the body: the wrapper forgot
// the link. An unknown secret is no error.
func (h *Handler) deviceSignOut(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Credential string `json:"credential"`
	}
	if err := h.readDevice(w, r, &in); err != nil {
		h.deviceError(w, r, err)
		return
	}
	if in.Credential == "" {
		h.deviceError(w, r, invalid(problem.FieldError{Field: "credential", Reason: "required"}))
		return
	}
	if err := h.cfg.Store.DeviceSignOut(r.Context(), in.Credential); err != nil {
		h.deviceError(w, r, err)
		return
	}
	h.log.Info("device sign-on ended", "outcome", "signed_out")
	w.WriteHeader(http.StatusNoContent)
}

// deviceError answers a device endpoint's failure as problem JSON. The refusals of a
// secret are one code (device_signon_invalid) whatever the store found, so that a
// stranger's guess learns nothing; the log tells them apart, and a reused secret, which
// means someone holds a copy, is a warning.
func (h *Handler) deviceError(w http.ResponseWriter, r *http.Request, err error) {
	var p problem.Problem
	switch {
	case errors.Is(err, store.ErrDeviceUnknown), errors.Is(err, store.ErrDeviceExpired):
		p = problem.New(problem.CodeDeviceSignOnInvalid, "Sign in with your password; the desktop then remembers the sign-on again.")
		h.log.Info("device sign-in refused", "outcome", p.Code, "reason", deviceReason(err))
	case errors.Is(err, store.ErrDeviceReused):
		p = problem.New(problem.CodeDeviceSignOnInvalid, "Sign in with your password; the desktop then remembers the sign-on again.")
		h.log.Warn("device sign-in refused: a used secret came again, the desktop's sign-on has ended", "outcome", p.Code, "reason", deviceReason(err))
	case errors.Is(err, store.ErrDeviceRefused):
		p = problem.New(problem.CodeDeviceSignOnRefused, "Only an instructor's sign-in of the last 10 minutes, made with a password, a directory or a partner link, gets a device sign-on.")
		h.log.Info("device sign-on refused", "outcome", p.Code)
	case errors.Is(err, store.ErrNoSession):
		w.Header().Set("WWW-Authenticate", `Bearer realm="partnergate"`)
		p = problem.New(problem.CodeSessionRequired, "Send the signed-in session's token as Authorization: Bearer.")
		h.log.Info("device sign-on refused", "outcome", p.Code)
	default:
		h.apiError(w, r, err)
		return
	}
	writeProblem(w, p)
}

// deviceReason names a refused secret's case for the log.
func deviceReason(err error) string {
	switch {
	case errors.Is(err, store.ErrDeviceReused):
		return "reused"
	case errors.Is(err, store.ErrDeviceExpired):
		return "expired"
	}
	return "unknown"
}

// deviceJSON is a signed-in desktop in the account's list.
type deviceJSON struct {
	ID           int64  `json:"id"`
	ExternalUser string `json:"externalUser"`
	Computer     string `json:"computer"`
	CreatedAt    string `json:"createdAt"`
	LastUsedAt   string `json:"lastUsedAt"`
	ExpiresAt    string `json:"expiresAt"`
}

// apiDevices lists the desktops the instructor's account is signed in on by a device
// sign-on.
func (h *Handler) apiDevices(r *apiRequest) (int, any, error) {
	ds, err := h.cfg.Store.Devices(r.Context(), r.s.Account.ID)
	if err != nil {
		return 0, nil, err
	}
	out := make([]deviceJSON, len(ds))
	for i, d := range ds {
		out[i] = deviceJSON{ID: d.ID, ExternalUser: d.ExternalUser, Computer: d.Computer,
			CreatedAt: timeOut(d.CreatedAt), LastUsedAt: timeOut(d.LastUsedAt), ExpiresAt: timeOut(d.ExpiresAt)}
	}
	return http.StatusOK, map[string]any{"devices": out}, nil
}

// apiRevokeDevice ends one of the account's device sign-ons and the session it started:
// that desktop asks for the password at its next start.
func (h *Handler) apiRevokeDevice(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	if err := decodeBody(r, &struct{}{}); err != nil {
		return 0, nil, err
	}
	if err := h.cfg.Store.RevokeDevice(r.Context(), r.s.Account.ID, id); err != nil {
		return 0, nil, err
	}
	h.log.Info("device sign-on revoked", "outcome", "revoked", "device", id)
	return http.StatusOK, map[string]any{"revoked": id}, nil
}
