package linktoken_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/problem"
)

// TestReportJSON: a report's JSON has the verdict, the code and status the link endpoint
// answers (a rejection only), and every rule with id, text, result and code, the nonce rule
// last and not checked; it decodes to the same report.
func TestReportJSON(t *testing.T) {
	set := linktokentest.KeySet(t)
	for _, tc := range tableCases() {
		t.Run(tc.name, func(t *testing.T) {
			v, err := linktoken.NewVerifier(tc.rules, linktoken.WithClock(func() time.Time { return tc.now }))
			if err != nil {
				t.Fatal(err)
			}
			tr := v.Trace(context.Background(), []byte(tc.token(t)), set)
			r := tr.Report("not checked here")
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Verdict string `json:"verdict"`
				Code    string `json:"code"`
				Status  int    `json:"status"`
				Rules   []map[string]any
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			code := linktoken.CodeOf(tr.Err)
			wantVerdict, wantStatus := "accepted", 0
			if tr.Err != nil {
				wantVerdict, wantStatus = "rejected", problem.Status(code)
			}
			if doc.Verdict != wantVerdict || doc.Code != string(code) || doc.Status != wantStatus {
				t.Errorf("verdict, code, status = %q %q %d, want %q %q %d", doc.Verdict, doc.Code, doc.Status, wantVerdict, code, wantStatus)
			}
			if len(doc.Rules) != len(r.Steps) || len(r.Steps) != linktoken.NumRules+1 {
				t.Fatalf("%d rules, report has %d steps, want %d: every rule and the nonce", len(doc.Rules), len(r.Steps), linktoken.NumRules+1)
			}
			for i, rule := range doc.Rules {
				for _, k := range []string{"id", "text", "result", "code"} {
					if _, ok := rule[k]; !ok {
						t.Errorf("rules[%d] has no %q: %v", i, k, rule)
					}
				}
				switch rule["result"] {
				case "passed", "failed", "not_reached", "not_checked":
				default:
					t.Errorf("rules[%d].result = %v, want passed, failed, not_reached or not_checked", i, rule["result"])
				}
			}
			if last := doc.Rules[len(doc.Rules)-1]; last["result"] != "not_checked" || last["id"] != "LIM-2" || last["detail"] != "not checked here" {
				t.Errorf("last rule = %v, want LIM-2 not_checked with the detail given", last)
			}
			var back linktoken.Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&back, r) {
				t.Errorf("decoded report = %+v, want %+v", back, *r)
			}
		})
	}
	var r linktoken.Report
	if err := json.Unmarshal([]byte(`{"verdict":"maybe","rules":[]}`), &r); err == nil {
		t.Error("a report with verdict maybe decoded without error")
	}
}
