package web

//go:generate go run gen_icons.go

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/appservice/web/internal/goicon"
	"github.com/partnergate/partnergate/i18n"
)

// Go on the phone (docs/appservice.md, Go on the phone): Go installs as a web app, from
// its manifest, and its service worker keeps the last plans a member saw readable without
// a connection. The worker keeps a member's answers only under the key offlineOwnerHeader
// carries, and forgets them when an answer comes without it or with another.

// offlineOwnerHeader names, on the Go shell and on every API answer to a member's session,
// whose data the answer is: a key of the account, the session's scope and organization,
// which tells nothing about them. The service worker keeps answers under it, and forgets
// what it kept when the key changes (another member, or another clinic's view of the
// same one) or an answer comes without one (signed out, session ended, another role).
const offlineOwnerHeader = "Go-Offline-Owner"

// goScope is the part of the site the Go app is: the manifest's scope and start URL, and
// the service worker's scope.
const goScope = "/go"

// workerCSP is the service worker's own policy: it runs no other script and fetches from
// its own origin only (connect-src; the shell's policy does not cover the worker).
const workerCSP = "default-src 'none'; connect-src 'self'"

// offlineOwner is the key the service worker keeps a member session's answers under, or ""
// when s is no member's session.
func (h *Handler) offlineOwner(s *store.Session) string {
	if s == nil || s.Pending || s.ConfirmLink || s.Account == nil || s.Account.Role != store.RoleMember {
		return ""
	}
	org := int64(0)
	if s.Organization != nil {
		org = s.Organization.ID
	}
	m := hmac.New(sha256.New, deriveKey(h.cfg.AppSecret, "partnergate-go-offline-v1"))
	fmt.Fprintf(m, "%d|%s|%d", s.Account.ID, s.Scope, org)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// setOfflineOwner sets offlineOwnerHeader for a member's session.
func (h *Handler) setOfflineOwner(w http.ResponseWriter, s *store.Session) {
	if k := h.offlineOwner(s); k != "" {
		w.Header().Set(offlineOwnerHeader, k)
	}
}

// manifestIcon is one icon of the web app manifest.
type manifestIcon struct {
	Src     string `json:"src"`
	Sizes   string `json:"sizes"`
	Type    string `json:"type"`
	Purpose string `json:"purpose"`
}

// webManifest is Go's web app manifest (W3C Web Application Manifest).
type webManifest struct {
	ID              string         `json:"id"`
	Name            string         `json:"name"`
	ShortName       string         `json:"short_name"`
	Description     string         `json:"description"`
	Lang            string         `json:"lang"`
	Dir             string         `json:"dir"`
	StartURL        string         `json:"start_url"`
	Scope           string         `json:"scope"`
	Display         string         `json:"display"`
	BackgroundColor string         `json:"background_color"`
	ThemeColor      string         `json:"theme_color"`
	Icons           []manifestIcon `json:"icons"`
}

// themeColor is the manifest's theme colour, the icon's background (the application's
// --brand); backgroundColor the page's background (--bg), shown while Go starts.
var (
	themeColor      = fmt.Sprintf("#%02x%02x%02x", goicon.Brand.R, goicon.Brand.G, goicon.Brand.B)
	backgroundColor = "#f5f7fa"
)

// goManifest answers Go's web app manifest in the language the lang parameter names (the
// shell links it with its own), else in the request's (docs/appservice.md, Languages).
// The manifest is the same for every member: it holds no session's data.
func (h *Handler) goManifest(w http.ResponseWriter, r *http.Request) {
	lang := answerLanguage(w)
	if l := r.URL.Query().Get("lang"); i18n.Supported(l) {
		lang = l
	}
	w.Header().Set("Content-Language", lang)
	m := webManifest{
		ID: goScope, Name: i18n.T(lang, "go.app_name"), ShortName: "Go", Description: i18n.T(lang, "go.app_description"),
		Lang: lang, Dir: "ltr", StartURL: goScope, Scope: goScope, Display: "standalone",
		BackgroundColor: backgroundColor, ThemeColor: themeColor,
	}
	for _, purpose := range []string{"any", "maskable"} {
		for _, size := range goicon.Sizes {
			n := strconv.Itoa(size)
			m.Icons = append(m.Icons, manifestIcon{Src: "/app/static/go/icon-" + n + ".png", Sizes: n + "x" + n, Type: "image/png", Purpose: purpose})
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/manifest+json")
	w.Write(body)
}

// goWorker answers Go's service worker (static/go/sw.js) at /go/sw.js, where its scope may
// be /go: the Service-Worker-Allowed header widens the scope a script at /go/ has by
// default (/go/) to the start URL /go itself. Its own CSP lets it fetch from the site.
func (h *Handler) goWorker(w http.ResponseWriter, r *http.Request) {
	src, err := staticFS.ReadFile("static/go/sw.js")
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Content-Security-Policy", workerCSP)
	w.Header().Set("Service-Worker-Allowed", goScope)
	w.Write(src)
}
