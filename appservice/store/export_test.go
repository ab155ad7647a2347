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

func TestSeedDemo(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := orgOf(t, s, "org1")
			for range 2 {
				if err := s.SeedDemo(ctx, org, 0); err != nil {
					t.Fatalf("SeedDemo = %v", err)
				}
			}
			persons, _ := s.Persons(ctx, org, "", 0)
			plans, _ := s.Workouts(ctx, org, WorkoutQuery{})
			if len(persons) != 4 || len(plans) != 4 { // the link's seed person and three demo persons
				t.Errorf("after SeedDemo twice: %d persons, %d plans, want 4 and 4", len(persons), len(plans))
			}
			for _, w := range plans {
				if len(w.Items) == 0 || w.Person == nil {
					t.Errorf("demo plan %+v, want exercises and a person", w)
				}
			}
		})
	}
}

// TestSeedDemoOrganization: the demo partner's organization is seeded before any link, and
// the partner's first link lands in it, populated.
func TestSeedDemoOrganization(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			for range 2 {
				if err := s.SeedDemoOrganization(ctx, "demo", "org1", "North Clinic", 0); err != nil {
					t.Fatalf("SeedDemoOrganization = %v", err)
				}
			}
			r := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			persons, _ := s.Persons(ctx, r.OrganizationID, "", 0)
			plans, _ := s.Workouts(ctx, r.OrganizationID, WorkoutQuery{})
			if len(persons) != 4 || len(plans) != 4 { // the link's person and three demo persons
				t.Errorf("the link's organization has %d persons, %d plans, want 4 and 4", len(persons), len(plans))
			}
			other := mustResolve(t, s, mainLink("e1", "org2", "c2"))
			if ps, _ := s.Persons(ctx, other.OrganizationID, "", 0); len(ps) != 1 {
				t.Errorf("another organization has %d persons, want only its link's", len(ps))
			}
		})
	}
}
