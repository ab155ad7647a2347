package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/harness"
)

// The screenshots of docs/onboarding.md, "What the end user sees", in the order the sheet
// shows them. TestOnboardingScreens takes them; TestOnboardingSheetImages keeps the sheet,
// the folder and this list the same.
var onboardingShots = []string{
	"1-first-sign-in.png",
	"2-link-partner-user.png",
	"3-continue-as.png",
	"4-go-account-created.png",
}

// updateDocs is the variable that makes TestOnboardingScreens write its screenshots into
// docs/images/onboarding/ as well, for a person to review and commit.
const updateDocs = "PARTNERGATE_UPDATE_DOCS"

// idaPassword is the service account password of the instructor in the onboarding screens.
const idaPassword = "onboarding-ida-password"

// idaLink is a main-client link of instructor Ida Berg, partner user id employeeID.
func idaLink(employeeID, username string) map[string]any {
	return map[string]any{
		"employeeId": employeeID, "employeeUsername": username,
		"employeeFirstname": "Ida", "employeeLastname": "Berg", "employeeEmail": "ida@north-clinic.example",
		"organizationName": "North Clinic", "organizationId": "org-1",
		"contact": map[string]any{"id": "contact-1", "firstname": "Ola", "lastname": "Nordmann", "birthdate": "1985-04-17"},
	}
}

// TestOnboardingScreens walks the moments the onboarding sheet tells a partner about, in a
// real browser against the real gateway and app service: an instructor's first link (the
// sign-in prompt), the "link partner user" question after signing in, and a Go link that
// creates the member's account, asked "Continue as …?" in a browser new to it. It asserts
// the words a user reads there, so a change of those pages fails here until the sheet and
// its screenshots are renewed:
//
//	PARTNERGATE_UPDATE_DOCS=1 go test ./integration/e2e -run TestOnboardingScreens
func TestOnboardingScreens(t *testing.T) {
	s := startStack(t)

	// Ida Berg has a service account already (username ida.berg), as an instructor who
	// used the service before the partner's integration does: made here through the
	// application's own "Create my account" form, from a link of another partner user id.
	setup := newBrowser(t)
	step(t, setup, "open the setup link", chromedp.Navigate(s.linkURL(t, idaLink("emp-setup", "ida.berg"))),
		chromedp.WaitVisible(chromedp.ID("signup-password")))
	step(t, setup, "create ida.berg",
		chromedp.SendKeys(chromedp.ID("signup-password"), idaPassword),
		chromedp.SendKeys(chromedp.ID("signup-password2"), idaPassword),
		chromedp.Click(chromedp.ID("signup")),
		chromedp.WaitVisible(chromedp.ID("contact-name")))
	if got := textOf(t, setup, "#username"); got != "ida.berg" {
		t.Fatalf("the account created for the setup is %q, want ida.berg", got)
	}

	// 1. Her first link from the partner application, for partner user emp-1001: the
	// service has never seen that user, so it asks her to sign in (or create an account).
	ctx := newBrowser(t)
	step(t, ctx, "open the first link", chromedp.Navigate(s.linkURL(t, idaLink("emp-1001", "iberg"))),
		chromedp.WaitVisible(chromedp.ID("password")))
	for sel, want := range map[string]string{
		"h1": "Sign in",
		"#first-visit": "Welcome, Ida Berg. This is the first time you open the application from your partner application. " +
			"Sign in with your service account, or create one below: later links will sign you in directly.",
		"#signin-section h2": "Sign in with your service account",
		"#signup-section h2": "Create my account",
		"#signup-who": "No service account yet? Create one for partner user Ida Berg of partner demo (username iberg, id emp-1001). " +
			"Later links of this partner user sign in to it directly, so create it only if this partner user is you.",
	} {
		if got := words(textOf(t, ctx, sel)); got != want {
			t.Errorf("first sign-in page %s = %q, want %q", sel, got, want)
		}
	}
	if got := eval[string](t, ctx, `document.getElementById("login").value`); got != "ida@north-clinic.example" {
		t.Errorf("first sign-in page login field = %q, want the link's e-mail ida@north-clinic.example", got)
	}
	docShot(t, ctx, onboardingShots[0])

	// 2. She signs in with her service account (the prefilled e-mail is one of its logins)
	// and is asked whether the partner user is her before it is linked.
	step(t, ctx, "sign in", chromedp.SendKeys(chromedp.ID("password"), idaPassword), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("link-confirm")))
	for sel, want := range map[string]string{
		"h1":                      "Link partner user?",
		"#link-question":          "Link partner user Ida Berg at North Clinic to your account Ida Berg (ida.berg)?",
		"#link-partner":           "demo",
		"#link-employee-username": "iberg",
		"#link-employee-id":       "emp-1001",
		"#link-confirm":           "Link to my account",
		"#link-decline":           "Not me",
	} {
		if got := words(textOf(t, ctx, sel)); got != want {
			t.Errorf("link question page %s = %q, want %q", sel, got, want)
		}
	}
	if n := count(t, ctx, "#link-email"); n != 0 {
		t.Errorf("link question warns that the e-mail addresses differ, but the link carries the account's")
	}
	docShot(t, ctx, onboardingShots[1])
	step(t, ctx, "link", chromedp.Click(chromedp.ID("link-confirm")), chromedp.WaitVisible(chromedp.ID("contact-name")))
	for sel, want := range map[string]string{"#account": "Ida Berg", "#username": "ida.berg", "#organization": "North Clinic", "#contact-name": "Ola Nordmann"} {
		if got := textOf(t, ctx, sel); got != want {
			t.Errorf("application after linking %s = %q, want %q", sel, got, want)
		}
	}

	// 3. A Go link for a contact the service has no account for: the member account is
	// created; the browser, which has never signed in to it, asks once by name (issue 34),
	// then the member is on their own page.
	mctx := newBrowser(t)
	step(t, mctx, "open the Go link", chromedp.Navigate(s.linkURL(t, map[string]any{
		"organizationName": "North Clinic", "organizationId": "org-1",
		"contact": map[string]any{"id": "contact-2", "firstname": "Kari", "lastname": "Nordmann", "email": "kari@example.org"},
	})), chromedp.WaitVisible(chromedp.ID("ask-continue")))
	for sel, want := range map[string]string{
		"#ask-question": "Continue as Kari Nordmann, North Clinic?",
		"#ask-continue": "Continue",
		"#ask-cancel":   "Cancel",
	} {
		if got := words(textOf(t, mctx, sel)); got != want {
			t.Errorf("question %s = %q, want %q", sel, got, want)
		}
	}
	docShot(t, mctx, onboardingShots[2])
	step(t, mctx, "continue", chromedp.Click(chromedp.ID("ask-continue")), chromedp.WaitVisible(chromedp.ID("member")))
	waitView(t, mctx, "my-plans")
	for sel, want := range map[string]string{
		".brand":          "Go",
		"#member":         "Kari Nordmann",
		"#organization":   "North Clinic",
		"#greeting":       "Hi Kari Nordmann",
		"#my-plans-empty": "No workout plans yet. Your instructor's plans for you appear here.",
	} {
		if got := words(textOf(t, mctx, sel)); got != want {
			t.Errorf("Go member page %s = %q, want %q", sel, got, want)
		}
	}
	if !goAccountCreated(t, s) {
		t.Errorf("the app service did not log a Go link that created an account:\n%s", s.appLogs.String())
	}
	docShot(t, mctx, onboardingShots[3])
}

// words joins the white-space separated words of s with single spaces, as a reader sees
// a paragraph the template wraps over lines.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// goAccountCreated reports whether the app service logged an accepted Go link that created
// the member's account (its "link accepted" line, which carries outcomes and no values).
func goAccountCreated(t *testing.T, s *stack) bool {
	t.Helper()
	for _, line := range strings.Split(s.appLogs.String(), "\n") {
		var l struct {
			Msg            string `json:"msg"`
			Kind           string `json:"kind"`
			AccountCreated bool   `json:"account_created"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "link accepted" && l.Kind == "go" && l.AccountCreated {
			return true
		}
	}
	return false
}

// docShot takes a PNG of the whole page once its fonts have loaded, saves it with the
// test's artefacts (integration/artifacts/onboarding/) and, with PARTNERGATE_UPDATE_DOCS=1,
// writes it to docs/images/onboarding/ too.
func docShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	eval[bool](t, ctx, `document.fonts.ready.then(() => true)`)
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.FullScreenshot(100)) // quality 100 is PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	harness.SaveArtifact(t, "onboarding", name, buf)
	if os.Getenv(updateDocs) != "1" {
		return
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs", "images", "onboarding")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/images/onboarding/%s", name)
}

// imageRef is a Markdown image whose target is a file: ![alt](path).
var imageRef = regexp.MustCompile(`!\[[^\]]*\]\(([^)\s]+)\)`)

// TestOnboardingSheetImages keeps docs/onboarding.md's pictures real: every image it
// references exists and is a PNG of a readable width, they are exactly the screenshots
// TestOnboardingScreens takes (so each can be made again), and the folder holds no other.
func TestOnboardingSheetImages(t *testing.T) {
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(root, "docs")
	sheet, err := os.ReadFile(filepath.Join(docs, "onboarding.md"))
	if err != nil {
		t.Fatal(err)
	}
	var referenced []string
	for _, m := range imageRef.FindAllStringSubmatch(string(sheet), -1) {
		ref := m[1]
		referenced = append(referenced, ref)
		data, err := os.ReadFile(filepath.Join(docs, filepath.FromSlash(ref)))
		if err != nil {
			t.Errorf("docs/onboarding.md shows %s: %v", ref, err)
			continue
		}
		if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("docs/onboarding.md shows %s, which is not a PNG", ref)
			continue
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Errorf("docs/onboarding.md shows %s, which does not decode as a PNG: %v", ref, err)
			continue
		}
		if cfg.Width < 800 || cfg.Width > 1600 {
			t.Errorf("%s is %d px wide, want the browser tests' 1000 px (800 to 1600)", ref, cfg.Width)
		}
	}
	var want []string
	for _, name := range onboardingShots {
		want = append(want, "images/onboarding/"+name)
	}
	if !slices.Equal(referenced, want) {
		t.Errorf("docs/onboarding.md shows %q, want the screenshots TestOnboardingScreens takes, in its order: %q", referenced, want)
	}
	files, err := filepath.Glob(filepath.Join(docs, "images", "onboarding", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.Contains(onboardingShots, filepath.Base(f)) {
			t.Errorf("docs/images/onboarding/%s is not a screenshot of the sheet: remove it", filepath.Base(f))
		}
	}
}
