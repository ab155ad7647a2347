package e2e

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/linkspec"
)

// TestLongestCaseIDExported: a link may carry a case id of linkspec.MaxIDLength
// characters; the application keeps it as the session's case, exports a plan to it and
// lists that case's exports, in the editor and through the API. The API and the editor
// once bounded a case id at 128, so the export was made and its listing refused.
func TestLongestCaseIDExported(t *testing.T) {
	s := startStack(t)
	ctx := newBrowser(t)

	caseID := "case-" + strings.Repeat("ø", 100) + strings.Repeat("9", linkspec.MaxIDLength-105)
	payload := mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29")
	payload["caseId"] = caseID
	signInFirstSight(t, s, ctx, payload)
	waitView(t, ctx, "person")

	var status struct {
		CaseID string `json:"caseId"`
		Person struct {
			ID int64 `json:"id"`
		} `json:"person"`
	}
	a := api(t, ctx, "GET", "/app/api/status", "")
	if err := json.Unmarshal(a.Body, &status); err != nil || a.Status != 200 {
		t.Fatalf("GET /app/api/status = %d %s (%v)", a.Status, a.Body, err)
	}
	if status.CaseID != caseID || status.Person.ID == 0 {
		t.Fatalf("status has case %q and person %d, want the link's case of %d characters and its contact", status.CaseID, status.Person.ID, linkspec.MaxIDLength)
	}
	a = api(t, ctx, "POST", "/app/api/workouts", `{"personId":`+strconv.FormatInt(status.Person.ID, 10)+`,"title":"Long case plan"}`)
	var plan struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(a.Body, &plan); err != nil || a.Status != 201 {
		t.Fatalf("POST /app/api/workouts = %d %s (%v)", a.Status, a.Body, err)
	}

	// The editor offers the session's case whole, exports to it and lists the export.
	step(t, ctx, "open plan", chromedp.Navigate(s.gateway.URL+"/app/workouts/"+strconv.FormatInt(plan.ID, 10)))
	waitFor(t, ctx, "editor", `document.getElementById("export-case-id")`)
	if got := eval[string](t, ctx, `document.getElementById("export-case-id").value`); got != caseID {
		t.Errorf("export case field = %q, want the link's case", got)
	}
	step(t, ctx, "export", chromedp.Click(chromedp.ID("export-button")))
	waitFor(t, ctx, "exported", `document.getElementById("export-done") && document.querySelector('#case-exports [data-testid="case-export"]')`)

	// The API lists it under the case.
	a = api(t, ctx, "GET", "/app/api/cases/"+url.PathEscape(caseID)+"/exports", "")
	var list struct {
		Exports []struct {
			CaseID string `json:"caseId"`
		} `json:"exports"`
	}
	if err := json.Unmarshal(a.Body, &list); err != nil || a.Status != 200 {
		t.Fatalf("GET /app/api/cases/{case}/exports = %d %s (%v)", a.Status, a.Body, err)
	}
	if len(list.Exports) != 1 || list.Exports[0].CaseID != caseID {
		t.Errorf("the case lists %+v, want the one export", list.Exports)
	}
}

// TestHeaderPrefix: with the gateway's header_prefix set to something else than the
// default, and the app service told the same, links pass through: the app service reads
// the forwarded headers and the assertion under the operator's prefix. The app service
// once had no way to be told, and refused every link (gateway_assertion_invalid).
func TestHeaderPrefix(t *testing.T) {
	s := startStackWith(t, appstack.Config{HeaderPrefix: "X-Acme-"})
	ctx := newBrowser(t)
	signInFirstSight(t, s, ctx, mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29"))
	waitView(t, ctx, "person")
	if got := textOf(t, ctx, "#person-name"); got != "Zoë Þórsdóttir" {
		t.Errorf("the link's contact shows as %q, want Zoë Þórsdóttir", got)
	}
}
