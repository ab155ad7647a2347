package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/linkflow"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// TestLinkFlowOverHTTP walks the flow of ./run.sh --check (internal/linkflow.Check) over
// HTTP through the gateway in front of the app service, as a browser without a script
// does: the first main link signs in with the service account and links the partner
// user, the contact in focus gets a plan from a template, the contact's Go link shows the
// member that plan, and each login URL is refused on its second use. The demo's check and
// this test walk the same code, so a change of the flow breaks both.
func TestLinkFlowOverHTTP(t *testing.T) {
	s := startStack(t)
	main := testpayload.Main()
	contact := main["contact"].(map[string]any)
	goLink := map[string]any{
		"organizationName": main["organizationName"],
		"organizationId":   main["organizationId"],
		"contact": map[string]any{
			"id": contact["id"], "firstname": contact["firstname"], "lastname": contact["lastname"],
			"birthdate": contact["birthdate"], "email": contact["email"],
		},
	}
	var steps []string
	check := &linkflow.Check{
		Partner: s.partnerClient(t),
		Main:    partnerPayload(t, main), Go: partnerPayload(t, goLink),
		Login: "instructor", Password: password,
		Transport: s.gateway.Transport,
		Report:    func(step string) { steps = append(steps, step) },
	}
	plans, err := check.Run(context.Background())
	if err != nil {
		t.Fatalf("the link flow failed after %q: %v", steps, err)
	}
	if plans != 1 {
		t.Errorf("the Go member sees %d plans with exercises, want the 1 made for them", plans)
	}
	want := []string{"main link → /app ok", "the contact in focus has a plan ok", "main login URL refused on second use ok",
		"Go link → /go ok", "the Go member sees 1 plan(s) ok", "go login URL refused on second use ok"}
	if strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps = %q, want %q", steps, want)
	}

	// A second walk on the same data: the employee is linked already, so the main link goes
	// straight in (after the question of a browser new to the account), and the contact's
	// plan is there.
	steps = nil
	if _, err := check.Run(context.Background()); err != nil {
		t.Fatalf("the second walk failed after %q: %v", steps, err)
	}
}
