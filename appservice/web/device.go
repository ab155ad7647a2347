package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
)

// The device cookie (pg_device, __Host-pg_device over HTTPS) lists the accounts that have
// signed in in this browser, and nothing else. A login link opened in a browser that has
// never signed in to the link's account asks first, by name, whether to continue (issue
// 34): a partner user can turn a token of their own into a login URL from a server (/url
// has no Origin to check) and send it to someone, whose browser would otherwise be signed
// in to the sender's account without a word, and what that person then entered would go
// to the sender. The person a link is meant for answers once per browser; after that the
// cookie lets their links straight in, as before.
//
// The cookie is the service's word, not the browser's: its list carries an HMAC under a
// key derived from the app secret, so a value planted by someone who can set cookies for
// the site (a sibling subdomain, a plain-HTTP answer, the browser's own user) lists no
// account. It is renewed (Max-Age again from now) at every sign-in of a listed account, so
// that it ends only in a browser nobody has signed in with for deviceLifetime.
const deviceCookie = "pg_device"

const (
	// deviceLifetime is the cookie's Max-Age, renewed at each sign-in: the longest that
	// browsers keep a cookie (Chromium caps Max-Age at 400 days, as RFC 6265bis asks), so
	// that a person who opens links only now and then is not asked again.
	deviceLifetime = 400 * 24 * time.Hour
	// maxDeviceAccounts bounds the list, most recent first; the account that signed in
	// longest ago drops off. A shared computer at a desk sees a few people, not dozens.
	maxDeviceAccounts = 20
	// maxDeviceCookie bounds a value read before it is decoded: the longest list the
	// service makes (maxDeviceAccounts ids of 9 bytes each) is 286 characters; twenty
	// accounts of a database with fewer than two million are about 125.
	maxDeviceCookie = 300
	// deviceVersion is the first byte of the list, so that a later format can tell its own.
	deviceVersion = 1
)

// deviceAccounts returns the accounts the request's device cookie lists, most recent
// first; none when it has no cookie or one the service did not make.
func (h *Handler) deviceAccounts(r *http.Request) []int64 {
	v := h.cookie(r, deviceCookie)
	if v == "" || len(v) > maxDeviceCookie {
		return nil
	}
	body, mac, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(h.deviceMAC(body))) {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(b) == 0 || b[0] != deviceVersion {
		return nil
	}
	var ids []int64
	for b = b[1:]; len(b) > 0 && len(ids) < maxDeviceAccounts; {
		id, n := binary.Uvarint(b)
		if n <= 0 || id == 0 || id > 1<<62 {
			return nil
		}
		ids, b = append(ids, int64(id)), b[n:]
	}
	return ids
}

// deviceKnows reports whether account has signed in in the request's browser.
func (h *Handler) deviceKnows(r *http.Request, account int64) bool {
	return slices.Contains(h.deviceAccounts(r), account)
}

// rememberDevice adds the account of s, a session just started in this browser, to the
// front of its device cookie and renews the cookie. A session without an account (a
// first-time partner user who has yet to sign in) is not remembered. signedIn calls it for
// every way of signing in.
func (h *Handler) rememberDevice(w http.ResponseWriter, r *http.Request, s *store.Session) {
	if s == nil || s.Account == nil {
		return
	}
	ids := h.deviceAccounts(r)
	ids = slices.DeleteFunc(ids, func(id int64) bool { return id == s.Account.ID })
	ids = append([]int64{s.Account.ID}, ids...)
	if len(ids) > maxDeviceAccounts {
		ids = ids[:maxDeviceAccounts]
	}
	b := []byte{deviceVersion}
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	h.setCookie(w, r, deviceCookie, body+"."+h.deviceMAC(body), int(deviceLifetime/time.Second))
}

// deviceMAC is the HMAC of a device cookie's list under the device key.
func (h *Handler) deviceMAC(body string) string {
	m := hmac.New(sha256.New, h.deviceKey)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
