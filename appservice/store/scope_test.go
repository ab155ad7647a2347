package store

import (
	"context"
	"errors"
	"testing"

	"github.com/partnergate/partnergate/personspec"
)

// TestOrganizationScoping: every operation given organization A's id and an id of
// organization B answers ErrNotFound (or leaves B's rows out of a list), never B's data.
func TestOrganizationScoping(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			ra := mustResolve(t, s, goLink("org-a", "pa", "a@example.com"))
			rb := mustResolve(t, s, goLink("org-b", "pb", "b@example.com"))
			orgA, orgB := ra.OrganizationID, rb.OrganizationID
			exA, err := s.ExchangeCode(ctx, ra.Code)
			if err != nil {
				t.Fatal(err)
			}
			pB, _, _ := mustSelect(t, s, orgB, personspec.Select{CustomID: "shared", Firstname: "B", Lastname: "Person",
				Profile: []personspec.ProfileEntry{{Key: "k", Value: "secret"}}})
			pA, _, _ := mustSelect(t, s, orgA, personspec.Select{CustomID: "a", Firstname: "A", Lastname: "Person"})
			wB, _ := s.CreateWorkout(ctx, orgB, 0, pB.ID, 0, "B's plan")
			wA, _ := s.CreateWorkout(ctx, orgA, 0, pA.ID, 0, "A's plan")
			tB, _ := s.CreateWorkout(ctx, orgB, 0, 0, 0, "B's template")
			var exerciseB int64
			queryRow(t, s, `INSERT INTO exercises (organization_id, name, category, body_part, equipment, instructions, created_at)
VALUES (?, 'B only', 'strength', 'legs', 'none', 'B', 0) RETURNING id`, []any{orgB}, &exerciseB)
			xB, err := s.AddCaseExport(ctx, orgB, rb.AccountID, CaseExport{CaseID: "case-b", WorkoutID: wB.ID, Filename: "b.pdf"}, []byte("pdf"))
			if err != nil {
				t.Fatal(err)
			}

			for _, tt := range []struct {
				op  string
				err error
			}{
				{"Person", func() error { _, err := s.Person(ctx, orgA, pB.ID); return err }()},
				{"SetCustomID", s.SetCustomID(ctx, orgA, pB.ID, "x")},
				{"Profile", func() error { _, err := s.Profile(ctx, orgA, pB.ID); return err }()},
				{"SelectPerson", func() error {
					_, _, _, err := s.SelectPerson(ctx, orgA, &personspec.Select{UserID: pB.ID, Firstname: "X", Lastname: "Y"})
					return err
				}()},
				{"Exercise", func() error { _, err := s.Exercise(ctx, orgA, exerciseB); return err }()},
				{"Workouts by person", func() error { _, err := s.Workouts(ctx, orgA, WorkoutQuery{PersonID: pB.ID}); return err }()},
				{"Workout", func() error { _, err := s.Workout(ctx, orgA, wB.ID); return err }()},
				{"Workout (template)", func() error { _, err := s.Workout(ctx, orgA, tB.ID); return err }()},
				{"CreateWorkout for person", func() error { _, err := s.CreateWorkout(ctx, orgA, 0, pB.ID, 0, ""); return err }()},
				{"CreateWorkout from template", func() error { _, err := s.CreateWorkout(ctx, orgA, 0, pA.ID, tB.ID, ""); return err }()},
				{"UpdateWorkout", func() error { _, err := s.UpdateWorkout(ctx, orgA, wB.ID, "x", "", nil); return err }()},
				{"UpdateWorkout with exercise", func() error {
					_, err := s.UpdateWorkout(ctx, orgA, wA.ID, "x", "", []Item{{ExerciseID: exerciseB}})
					return err
				}()},
				{"SetSessionPerson", s.SetSessionPerson(ctx, exA.Token, orgA, pB.ID)},
				{"SetSessionPerson (session of A, org B)", s.SetSessionPerson(ctx, exA.Token, orgB, pB.ID)},
				{"AddCaseExport", func() error {
					_, err := s.AddCaseExport(ctx, orgA, ra.AccountID, CaseExport{CaseID: "c", WorkoutID: wB.ID}, []byte("x"))
					return err
				}()},
				{"CaseExportPDF", func() error { _, _, err := s.CaseExportPDF(ctx, orgA, xB.ID); return err }()},
				{"MemberWorkout", func() error { _, err := s.MemberWorkout(ctx, exA.Session, wB.ID); return err }()},
			} {
				if !errors.Is(tt.err, ErrNotFound) {
					t.Errorf("%s with an id of another organization = %v, want ErrNotFound", tt.op, tt.err)
				}
			}

			if ps, err := s.Persons(ctx, orgA, "shared", 0); err != nil || len(ps) != 0 {
				t.Errorf("Persons(A, B's custom id) = %+v, %v, want none", ps, err)
			}
			if ps, _ := s.Persons(ctx, orgA, "", 0); len(ps) != 2 {
				t.Errorf("Persons(A) = %d, want A's 2", len(ps))
			}
			if es, _ := s.Exercises(ctx, orgA, ExerciseQuery{Text: "B only"}); len(es) != 0 {
				t.Errorf("Exercises(A) finds B's own exercise: %+v", es)
			}
			if es, _ := s.Exercises(ctx, orgB, ExerciseQuery{Text: "B only"}); len(es) != 1 {
				t.Errorf("Exercises(B) = %+v, want B's own exercise", es)
			}
			if ws, _ := s.Workouts(ctx, orgA, WorkoutQuery{}); len(ws) != 1 || ws[0].ID != wA.ID {
				t.Errorf("Workouts(A) = %+v, want A's plan only", ws)
			}
			if ws, _ := s.Workouts(ctx, orgA, WorkoutQuery{Templates: true, Text: "B's"}); len(ws) != 0 {
				t.Errorf("templates of A include B's: %+v", ws)
			}
			if xs, err := s.CaseExports(ctx, orgA, "case-b"); err != nil || len(xs) != 0 {
				t.Errorf("CaseExports(A, B's case) = %+v, %v, want none", xs, err)
			}
			if ws, _ := s.MemberWorkouts(ctx, exA.Session); len(ws) != 0 {
				t.Errorf("MemberWorkouts(A's member) = %+v, want none (plans are for other persons)", ws)
			}
			if p, _ := s.Person(ctx, orgB, pB.ID); p.CustomID != "shared" {
				t.Errorf("B's person custom id = %q after A's SetCustomID, want unchanged", p.CustomID)
			}
			if sess, _ := s.Session(ctx, exA.Token); sess.Person == nil || sess.Person.ID != ra.PersonID {
				t.Errorf("session person after refused SetSessionPerson = %+v, want the link's", sess.Person)
			}
			if err := s.SetSessionPerson(ctx, exA.Token, orgA, pA.ID); err != nil {
				t.Errorf("SetSessionPerson(own) = %v", err)
			}
			if err := s.SetSessionCase(ctx, exA.Token, "case-new"); err != nil {
				t.Errorf("SetSessionCase = %v", err)
			}
			if sess, _ := s.Session(ctx, exA.Token); sess.Person == nil || sess.Person.ID != pA.ID || sess.CaseID != "case-new" {
				t.Errorf("session = %+v, want person %d and case-new", sess, pA.ID)
			}
			if err := s.SetSessionCase(ctx, "no-such-token", "x"); !errors.Is(err, ErrNoSession) {
				t.Errorf("SetSessionCase(unknown token) = %v, want ErrNoSession", err)
			}
		})
	}
}
