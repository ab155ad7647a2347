package linkflow

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/partnergate/partnergate/partnerkit"
)

// Link signs payload with the partner kit's client and sends it to the gateway's /url
// endpoint, as a partner's back end does, and returns the login URL it answers: one on the
// gateway's own site, or an error.
func Link(ctx context.Context, partner *partnerkit.Client, payload *partnerkit.Payload) (string, error) {
	if partner.Signer == nil {
		return "", fmt.Errorf("the partner's client has no signer")
	}
	token, err := partner.Signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return Send(ctx, partner, token)
}

// Send sends a signed token to the gateway's /url endpoint and returns the login URL it
// answers, as Link does; for a token signed elsewhere (a test's, with a payload the
// partner kit would refuse to sign but the gateway accepts).
func Send(ctx context.Context, partner *partnerkit.Client, token string) (string, error) {
	endpoint, err := partner.Endpoint("url")
	if err != nil {
		return "", err
	}
	u, err := partner.PostToken(ctx, endpoint, token)
	if err != nil {
		return "", err
	}
	if want := strings.TrimSuffix(partner.Gateway, "/") + "/app/login?code="; !strings.HasPrefix(u, want) {
		return "", fmt.Errorf("the gateway answered %q, not a login URL on %s", u, partner.Gateway)
	}
	return u, nil
}

// Check is the whole link flow from a partner's link to the member's plan, as the demo's
// self-test walks it: the main-client link (signing in with the service account and
// linking the partner user, the first time), a plan for the contact in focus through the
// JSON API (from the template library, unless the contact has one), the contact's Go link,
// the plans the member sees, and each login URL refused on its second use in another
// browser.
type Check struct {
	// Partner sends the links.
	Partner *partnerkit.Client
	// Main is a main-client payload and Go a Go payload for the same contact.
	Main, Go *partnerkit.Payload
	// Login and Password are the service account that a first main link is linked to.
	Login, Password string
	// Transport carries the browsers' requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Report, when not nil, is told each step that passed, in words ("main link → /app ok").
	Report func(step string)
}

// Run walks the flow and returns the first step that failed. It returns the number of
// plans with exercises that the member saw.
func (c *Check) Run(ctx context.Context) (plans int, err error) {
	report := c.Report
	if report == nil {
		report = func(string) {}
	}

	mainURL, err := Link(ctx, c.Partner, c.Main)
	if err != nil {
		return 0, fmt.Errorf("sending the main link: %w", err)
	}
	instructor, err := c.browser()
	if err != nil {
		return 0, err
	}
	p, err := instructor.OpenLogin(ctx, mainURL)
	if err != nil {
		return 0, fmt.Errorf("opening the main login URL: %w", err)
	}
	if p.Status == http.StatusOK && p.Path() == "/app/signin" {
		// The first link of the employee: the service account signs in, then links the
		// partner user to itself.
		if p, err = instructor.SignIn(ctx, c.Login, c.Password); err != nil {
			return 0, fmt.Errorf("signing in as %s: %w", c.Login, err)
		}
		if p.Status != http.StatusOK || p.Path() != "/app/link" {
			return 0, fmt.Errorf("signing in as %s answered %s, want the link page /app/link", c.Login, p)
		}
		if p, err = instructor.ConfirmLink(ctx); err != nil {
			return 0, fmt.Errorf("linking the partner user: %w", err)
		}
		if p.Status != http.StatusOK || p.Path() != "/app" {
			return 0, fmt.Errorf("linking the partner user answered %s, want /app", p)
		}
	} else if p.Status != http.StatusOK || p.Path() != "/app" {
		return 0, fmt.Errorf("the main login URL answered %s, want /app or the sign-in page", p)
	}
	report("main link → /app ok")

	// The contact in focus gets a plan from a template, unless they have one already (an
	// earlier check on the same data).
	st, err := instructor.Status(ctx)
	if err != nil {
		return 0, err
	}
	if st.Person == nil || st.CSRFToken == "" {
		return 0, fmt.Errorf("the application's status has no contact in focus")
	}
	existing, err := instructor.Plans(ctx, st.Person.ID)
	if err != nil {
		return 0, err
	}
	if len(existing) == 0 {
		templates, err := instructor.Templates(ctx, 1)
		if err != nil {
			return 0, err
		}
		if len(templates) == 0 {
			return 0, fmt.Errorf("the template library is empty")
		}
		if _, err := instructor.NewPlan(ctx, st.Person.ID, templates[0].ID); err != nil {
			return 0, fmt.Errorf("creating a plan: %w", err)
		}
	}
	report("the contact in focus has a plan ok")
	if err := c.usedOnce(ctx, "main", mainURL); err != nil {
		return 0, err
	}
	report("main login URL refused on second use ok")

	goURL, err := Link(ctx, c.Partner, c.Go)
	if err != nil {
		return 0, fmt.Errorf("sending the Go link: %w", err)
	}
	member, err := c.browser()
	if err != nil {
		return 0, err
	}
	if p, err = member.OpenLogin(ctx, goURL); err != nil {
		return 0, fmt.Errorf("opening the Go login URL: %w", err)
	}
	if p.Status != http.StatusOK || p.Path() != "/go" {
		return 0, fmt.Errorf("the Go login URL answered %s, want /go", p)
	}
	report("Go link → /go ok")
	mine, err := member.MyPlans(ctx)
	if err != nil {
		return 0, err
	}
	for _, w := range mine {
		if w.ExerciseCount > 0 {
			plans++
		}
	}
	if plans == 0 {
		return 0, fmt.Errorf("the Go member sees no plan with exercises (%d plans)", len(mine))
	}
	report(fmt.Sprintf("the Go member sees %d plan(s) ok", plans))
	if err := c.usedOnce(ctx, "go", goURL); err != nil {
		return 0, err
	}
	report("go login URL refused on second use ok")
	return plans, nil
}

// usedOnce opens a login URL that was used, in a fresh browser (a copied link): it must
// be refused with 410.
func (c *Check) usedOnce(ctx context.Context, kind, u string) error {
	b, err := c.browser()
	if err != nil {
		return err
	}
	p, err := b.OpenLogin(ctx, u)
	if err != nil {
		return fmt.Errorf("opening the %s login URL again: %w", kind, err)
	}
	if p.Status != http.StatusGone {
		return fmt.Errorf("the %s login URL answered %s on second use, want 410", kind, p)
	}
	return nil
}

func (c *Check) browser() (*Browser, error) {
	return NewBrowser(c.Partner.Gateway, c.Transport)
}
