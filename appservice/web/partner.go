package web

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// forwarded is what partnerLink reads from the gateway's headers.
type forwarded struct {
	linkspec.Forwarded
	requestID string
}

// partnerLink answers a link the gateway verified and forwarded: it proves the request came
// through the gateway, reads the payload from the vouched claims, resolves who it is for
// and answers the one-time login URL (/url) or a page that opens it (/payload).
func (h *Handler) partnerLink(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name, endpoint := r.PathValue("name"), r.PathValue("endpoint")
	fw := h.readForwarded(r)
	fail := func(p problem.Problem) {
		p.RequestID = fw.requestID
		h.failLink(w, endpoint, p)
	}
	if endpoint != "url" && endpoint != "payload" {
		fail(problem.New(problem.CodeNotFound, "The path is not /partner/{name}/url or /partner/{name}/payload."))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(problem.New(problem.CodeMethodNotAllowed, "Partner links are sent with POST."))
		return
	}
	logger := h.log.With("partner", name, "endpoint", endpoint, "request_id", fw.requestID)

	// Everything below trusts only what the assertion binds. The path must agree with it
	// too: a proxy rewriting paths must not turn a link for one partner into another's.
	now := h.cfg.Now()
	err := linkspec.VerifyAssertion(h.cfg.UpstreamSecret, r.Header.Get(h.cfg.HeaderPrefix+linkspec.HeaderAssertion), now, fw.Forwarded)
	switch {
	case err != nil:
	case fw.Partner != name || fw.Endpoint != endpoint:
		err = errors.New("forwarded partner or endpoint differs from the path")
	case fw.RequestID == "" || fw.RequestID != fw.requestID:
		// The gateway's ids are UUIDs; the replay check and the log need that id itself.
		err = errors.New("forwarded request id is not a plain token")
	}
	if err != nil {
		logger.Warn("link refused", "outcome", problem.CodeAssertionInvalid, "reason", err.Error())
		fail(problem.New(problem.CodeAssertionInvalid, "Partner links are accepted only through the gateway, which verifies the token."))
		return
	}

	kind, ok := linkspec.ParseKind(fw.Kind)
	payload, fields := decodeClaims(fw.Claims)
	if ok && fields == nil {
		// Defence in depth: the gateway validated the payload; validate again here, so a
		// gateway bug or a misconfiguration cannot put an invalid identity in the database.
		got, err := payload.Validate(kind)
		var verr *linkspec.Error
		switch {
		case errors.As(err, &verr):
			fields = verr.Fields
		case err != nil || got != kind:
			fields = []linkspec.FieldError{{Field: "kind", Reason: "does not match the payload"}}
		}
	} else if !ok {
		fields = []linkspec.FieldError{{Field: "kind", Reason: "unknown link kind"}}
	}
	if fields != nil {
		logger.Warn("link refused", "outcome", problem.CodePayloadInvalid, "kind", fw.Kind)
		p := problem.New(problem.CodePayloadInvalid, "The link's payload does not fit its kind.")
		// As the gateway's payload_invalid: the kind the payload was checked as (here the
		// one the gateway forwarded), none when the gateway's is unknown.
		p.Fields, p.Kind = fields, string(kind)
		fail(p)
		return
	}

	// The assertion binds the request id: the store takes it once, for as long as the
	// assertion could be accepted (AssertionMaxAge either side of its time), in the
	// transaction that resolves the link.
	res, err := h.cfg.Store.ResolveLink(r.Context(), store.Link{
		Partner: name, Endpoint: endpoint, RequestID: fw.requestID, Kind: kind, Payload: payload,
		OnceUntil: now.Add(2 * linkspec.AssertionMaxAge),
	})
	if errors.Is(err, store.ErrRequestReplayed) {
		logger.Warn("link refused", "outcome", problem.CodeAssertionReplayed)
		fail(problem.New(problem.CodeAssertionReplayed, "This forwarded request was processed before; a new link needs a new token."))
		return
	}
	if err != nil {
		// Nothing was saved, the request id included; the gateway spent the token's nonce,
		// so a retry after Retry-After needs a new token.
		p := h.failure(w, r, "The link could not be processed; nothing was saved. Try again, or give the request id to support.")
		logger.Error("resolving link failed", "outcome", p.Code, "kind", kind, "error", err.Error())
		fail(p)
		return
	}
	if res.SSNConflict {
		// No values: which identity number matched whom is not for the log.
		logger.Warn("link's contact id and identity number point at different people; kept what the id found",
			"kind", kind, "outcome", "ssn_conflict")
	}
	logger.Info("link accepted", "outcome", "accepted", "kind", kind,
		"sign_in_needed", res.AccountID == 0, "person_created", res.PersonCreated,
		"account_created", res.AccountCreated, "duration_ms", time.Since(start).Milliseconds())

	loginURL := h.public.String() + "/app/login?code=" + res.Code
	if endpoint == "payload" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		h.render(w, http.StatusOK, "redirect", map[string]any{"URL": loginURL})
		return
	}
	if acceptsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"url": loginURL})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(loginURL))
}

// readForwarded reads the gateway's headers, decoding the percent-encoded ones: the gateway
// signs the assertion over the decoded values. A header that does not decode is kept as
// sent, so the assertion fails on it.
func (h *Handler) readForwarded(r *http.Request) forwarded {
	get := func(suffix string) string {
		v := r.Header.Get(h.cfg.HeaderPrefix + suffix)
		if d, err := linkspec.DecodeHeaderValue(v); err == nil {
			return d
		}
		return v
	}
	return forwarded{
		Forwarded: linkspec.Forwarded{
			Partner:  get(linkspec.HeaderName),
			Endpoint: get(linkspec.HeaderEndpoint),
			Kind:     get(linkspec.HeaderKind),
			Issuer:   get(linkspec.HeaderIssuer),
			KeyID:    get(linkspec.HeaderKeyID),
			Claims:   r.Header.Get(h.cfg.HeaderPrefix + linkspec.HeaderClaims),

			RequestID: get(linkspec.HeaderRequestID),
		},
		requestID: requestID(get(linkspec.HeaderRequestID)),
	}
}

// decodeClaims reads the payload from the claims header (base64url JSON of the whole claim
// set: the payload's fields are top-level claims, the others are ignored).
func decodeClaims(claims string) (*linkspec.Payload, []linkspec.FieldError) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(claims, "="))
	if err != nil || len(raw) == 0 {
		return nil, []linkspec.FieldError{{Field: "claims", Reason: "not base64url"}}
	}
	// The gateway's decoding rules, not encoding/json's: a claim set with case-variant
	// duplicate names must not be one identity to the gateway and another here.
	p, err := linkspec.DecodePayload(raw)
	if err != nil {
		return nil, []linkspec.FieldError{{Field: "claims", Reason: "not a JSON object of string fields"}}
	}
	return p, nil
}

// requestID keeps the gateway's request id when it is a plain token, so that the app
// service's log line and answer carry the same id as the gateway's; otherwise it makes one.
func requestID(s string) string {
	if s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return s
	}
	b := make([]byte, 8)
	rand.Read(b)
	return "app-" + hex.EncodeToString(b)
}

// acceptsJSON reports whether the client asked for JSON before text.
func acceptsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json":
			return true
		case "text/plain":
			return false
		}
	}
	return false
}
