package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/partnergate/partnergate/personspec"
)

func TestCaseExports(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			org := orgOf(t, s, "org1")
			s.EnsureInstructor(ctx, "coach", "", "Coach Carter", "pw")
			var acct int64
			queryRow(t, s, "SELECT id FROM accounts WHERE username = 'coach'", nil, &acct)
			p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "p1", Firstname: "A", Lastname: "B"})
			w, err := s.CreateWorkout(ctx, org, acct, p.ID, 0, "Plan")
			if err != nil {
				t.Fatal(err)
			}
			pdf := []byte("%PDF-1.4\x00\xff binary")
			sum := sha256.Sum256(pdf)
			e, err := s.AddCaseExport(ctx, org, acct, CaseExport{CaseID: "case-7", WorkoutID: w.ID, Filename: "plan.pdf"}, pdf)
			if err != nil {
				t.Fatalf("AddCaseExport = %v", err)
			}
			if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != len(pdf) || e.PersonID != p.ID || e.CreatedBy != "Coach Carter" || e.Filename != "plan.pdf" {
				t.Errorf("export = %+v", e)
			}
			c.Add(1e9)
			s.AddCaseExport(ctx, org, acct, CaseExport{CaseID: "case-7", WorkoutID: w.ID, Filename: "plan-2.pdf"}, pdf)
			s.AddCaseExport(ctx, org, acct, CaseExport{CaseID: "case-8", WorkoutID: w.ID, Filename: "other.pdf"}, pdf)
			list, err := s.CaseExports(ctx, org, "case-7")
			if err != nil || len(list) != 2 || list[0].Filename != "plan-2.pdf" {
				t.Errorf("CaseExports(case-7) = %+v, %v, want two, newest first", list, err)
			}
			got, body, err := s.CaseExportPDF(ctx, org, e.ID)
			if err != nil || !bytes.Equal(body, pdf) || got.ID != e.ID {
				t.Errorf("CaseExportPDF = %+v, %q, %v, want the bytes back", got, body, err)
			}
		})
	}
}
