package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/personspec"
)

func TestCatalogueSeeded(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := orgOf(t, s, "org1")
			all, err := s.Exercises(ctx, org, ExerciseQuery{Limit: 500})
			if err != nil || len(all) < 36 {
				t.Fatalf("Exercises() = %d, %v, want at least 36", len(all), err)
			}
			for _, e := range all {
				if e.Category == "" || e.BodyPart == "" || e.Equipment == "" || len(e.Instructions) < 80 {
					t.Errorf("exercise %+v lacks a field or real instructions", e)
				}
			}
			for _, tt := range []struct {
				q    ExerciseQuery
				want string // a name that must be among the results
				max  int
			}{
				{ExerciseQuery{Text: "PLANK"}, "Side plank", 2},
				{ExerciseQuery{Text: "band", BodyPart: "Shoulder"}, "Shoulder external rotation with band", 2},
				{ExerciseQuery{Category: "balance"}, "Tandem walk", 10},
				{ExerciseQuery{Equipment: "chair"}, "Sit-to-stand", 1},
				{ExerciseQuery{Text: "%"}, "", 0},
			} {
				got, err := s.Exercises(ctx, org, tt.q)
				names := []string{}
				for _, e := range got {
					names = append(names, e.Name)
				}
				if err != nil || len(got) > tt.max || (tt.want != "" && !strings.Contains(strings.Join(names, "|"), tt.want)) {
					t.Errorf("Exercises(%+v) = %q, %v, want %q among at most %d", tt.q, names, err, tt.want, tt.max)
				}
			}
			templates, err := s.Workouts(ctx, org, WorkoutQuery{Templates: true})
			if err != nil || len(templates) < 4 {
				t.Fatalf("templates = %d, %v, want at least 4", len(templates), err)
			}
			for _, w := range templates {
				if !w.Template || len(w.Items) < 4 || w.Items[0].Exercise == nil || w.Items[0].Position != 1 {
					t.Errorf("template %q = %+v, want a template with its exercises in order", w.Title, w)
				}
			}
		})
	}
}

func TestWorkouts(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			org := orgOf(t, s, "org1")
			p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "p1", Firstname: "Åse", Lastname: "Ødegård"})
			if _, err := s.EnsureInstructor(ctx, "coach", "", "Coach Carter", "pw"); err != nil {
				t.Fatal(err)
			}
			var owner int64
			queryRow(t, s, "SELECT id FROM accounts WHERE username = 'coach'", nil, &owner)
			templates, _ := s.Workouts(ctx, org, WorkoutQuery{Templates: true, Text: "knee"})
			if len(templates) != 1 {
				t.Fatalf("templates matching knee = %d, want 1", len(templates))
			}
			tmpl := templates[0]

			w, err := s.CreateWorkout(ctx, org, owner, p.ID, tmpl.ID, "")
			if err != nil {
				t.Fatalf("CreateWorkout(from template) = %v", err)
			}
			if w.Template || w.Title != tmpl.Title || w.Notes != tmpl.Notes || len(w.Items) != len(tmpl.Items) || w.PersonID != p.ID ||
				w.Person == nil || w.Person.CustomID != "p1" || w.OwnerName != "Coach Carter" {
				t.Fatalf("plan from template = %+v, want a copy for the person owned by Coach Carter", w)
			}
			for i, it := range w.Items {
				if it.ExerciseID != tmpl.Items[i].ExerciseID || it.Sets != tmpl.Items[i].Sets || it.ID == tmpl.Items[i].ID {
					t.Errorf("item %d = %+v, want a copy of %+v", i, it, tmpl.Items[i])
				}
			}

			t.Run("update replaces items in order", func(t *testing.T) {
				c.Add(time.Minute)
				items := []Item{
					{ExerciseID: w.Items[2].ExerciseID, Sets: 3, Reps: 12, Load: "5 kg", RestSeconds: 60, Note: "slowly"},
					{ExerciseID: w.Items[0].ExerciseID, HoldSeconds: 30},
				}
				got, err := s.UpdateWorkout(ctx, org, w.ID, " Knee, week 2 ", "More load", items)
				if err != nil {
					t.Fatal(err)
				}
				if got.Title != "Knee, week 2" || got.Notes != "More load" || len(got.Items) != 2 || got.Items[0].ExerciseID != items[0].ExerciseID ||
					got.Items[0].Position != 1 || got.Items[0].Load != "5 kg" || got.Items[1].HoldSeconds != 30 || !got.UpdatedAt.After(w.UpdatedAt) {
					t.Errorf("UpdateWorkout = %+v", got)
				}
				again, err := s.Workout(ctx, org, w.ID)
				if err != nil || len(again.Items) != 2 {
					t.Errorf("Workout() after update = %+v, %v", again, err)
				}
			})

			t.Run("global templates cannot be changed", func(t *testing.T) {
				if _, err := s.UpdateWorkout(ctx, org, tmpl.ID, "mine", "", nil); !errors.Is(err, ErrNotFound) {
					t.Errorf("UpdateWorkout(global template) = %v, want ErrNotFound", err)
				}
			})

			t.Run("empty plan and organization template", func(t *testing.T) {
				empty, err := s.CreateWorkout(ctx, org, owner, p.ID, 0, "")
				if err != nil || empty.Title != "Workout plan" || len(empty.Items) != 0 {
					t.Errorf("CreateWorkout(empty) = %+v, %v", empty, err)
				}
				own, err := s.CreateWorkout(ctx, org, owner, 0, 0, "Our warm-up")
				if err != nil || !own.Template || own.PersonID != 0 {
					t.Fatalf("CreateWorkout(no person) = %+v, %v, want an organization template", own, err)
				}
				list, _ := s.Workouts(ctx, org, WorkoutQuery{Templates: true, Text: "warm-up"})
				if len(list) != 1 || list[0].ID != own.ID {
					t.Errorf("templates matching warm-up = %+v, want the organization's", list)
				}
			})

			t.Run("query by person, text and from", func(t *testing.T) {
				c.Add(24 * time.Hour)
				cut := c.Now()
				later, err := s.CreateWorkout(ctx, org, owner, p.ID, 0, "Evening routine")
				if err != nil {
					t.Fatal(err)
				}
				for _, tt := range []struct {
					name string
					q    WorkoutQuery
					want int
				}{
					{"person", WorkoutQuery{PersonID: p.ID}, 3},
					{"from", WorkoutQuery{PersonID: p.ID, ChangedSince: cut}, 1},
					{"from a second later", WorkoutQuery{ChangedSince: cut.Add(time.Second)}, 0},
					{"text", WorkoutQuery{Text: "EVENING"}, 1},
					{"limit", WorkoutQuery{Limit: 1}, 1},
				} {
					got, err := s.Workouts(ctx, org, tt.q)
					if err != nil || len(got) != tt.want {
						t.Errorf("Workouts(%s) = %d, %v, want %d", tt.name, len(got), err, tt.want)
					}
				}
				if got, _ := s.Workouts(ctx, org, WorkoutQuery{}); len(got) == 0 || got[0].ID != later.ID {
					t.Errorf("Workouts() first = %+v, want the most recently changed", got)
				}
			})
		})
	}
}

func TestWorkoutRollsBack(t *testing.T) {
	for _, b := range backends(t) {
		for _, step := range []string{"workout", "item"} {
			t.Run(b.name+"/"+step, func(t *testing.T) {
				ctx := context.Background()
				s := b.open(t, newClock())
				org := orgOf(t, s, "org1")
				p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "p1", Firstname: "A", Lastname: "B"})
				tmpl, _ := s.Workouts(ctx, org, WorkoutQuery{Templates: true, Limit: 1})
				w, err := s.CreateWorkout(ctx, org, 0, p.ID, tmpl[0].ID, "")
				if err != nil {
					t.Fatal(err)
				}
				workouts, items := count(t, s, "workouts"), count(t, s, "workout_items")
				boom := errors.New("injected failure")
				s.hook = func(name string) error {
					if name == step {
						return boom
					}
					return nil
				}
				if _, err := s.CreateWorkout(ctx, org, 0, p.ID, tmpl[0].ID, ""); !errors.Is(err, boom) {
					t.Errorf("CreateWorkout = %v, want the injected failure", err)
				}
				if _, err := s.UpdateWorkout(ctx, org, w.ID, "changed", "", w.Items[:1]); !errors.Is(err, boom) {
					t.Errorf("UpdateWorkout = %v, want the injected failure", err)
				}
				s.hook = nil
				if count(t, s, "workouts") != workouts || count(t, s, "workout_items") != items {
					t.Errorf("rows changed after a failure at %s", step)
				}
				if got, err := s.Workout(ctx, org, w.ID); err != nil || got.Title != w.Title || len(got.Items) != len(w.Items) {
					t.Errorf("plan after a failed update = %+v, %v, want it unchanged", got, err)
				}
			})
		}
	}
}

// TestMemberWorkouts: a member's session sees the plans made for the member's records, and
// nobody else's: a link's session those of the link's organization, a national eID
// session those of every organization.
func TestMemberWorkouts(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			a := mustResolve(t, s, withSSN(goLink("org1", "m1", "m@example.com"), "05053550039"))
			bb := mustResolve(t, s, withSSN(goLink("org2", "m1-b", "m@example.com"), "05053550039"))
			other := mustResolve(t, s, goLink("org1", "m2", "o@example.com"))
			wa, _ := s.CreateWorkout(ctx, a.OrganizationID, 0, a.PersonID, 0, "From clinic one")
			wb, _ := s.CreateWorkout(ctx, bb.OrganizationID, 0, bb.PersonID, 0, "From clinic two")
			wo, _ := s.CreateWorkout(ctx, other.OrganizationID, 0, other.PersonID, 0, "Someone else's")
			s.CreateWorkout(ctx, a.OrganizationID, 0, 0, 0, "A template")

			eid := eidSession(t, s, a.AccountID)
			got, err := s.MemberWorkouts(ctx, eid)
			if err != nil || len(got) != 2 || got[0].ID != wb.ID || got[1].ID != wa.ID {
				t.Errorf("MemberWorkouts(eID session) = %+v, %v, want the two plans of both clinics", got, err)
			}
			if w, err := s.MemberWorkout(ctx, eid, wb.ID); err != nil || w.Title != "From clinic two" {
				t.Errorf("MemberWorkout(eID session, own) = %+v, %v", w, err)
			}
			if _, err := s.MemberWorkout(ctx, eid, wo.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("MemberWorkout(someone else's) = %v, want ErrNotFound", err)
			}
			link := linkSession(t, s, a)
			if got, err := s.MemberWorkouts(ctx, link); err != nil || len(got) != 1 || got[0].ID != wa.ID {
				t.Errorf("MemberWorkouts(org1's link session) = %+v, %v, want org1's plan only", got, err)
			}
			if _, err := s.MemberWorkout(ctx, link, wb.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("MemberWorkout(org1's link session, org2's plan) = %v, want ErrNotFound", err)
			}
			var instructor int64
			s.EnsureInstructor(ctx, "coach", "", "Coach", "pw")
			queryRow(t, s, "SELECT id FROM accounts WHERE username = 'coach'", nil, &instructor)
			if _, err := s.NationalEIDSignIn(ctx, instructor); !errors.Is(err, ErrNotFound) {
				t.Errorf("NationalEIDSignIn(instructor) = %v, want ErrNotFound", err)
			}
			in, err := s.SignIn(ctx, "coach", "pw", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.MemberWorkouts(ctx, in.Session); !errors.Is(err, ErrNotFound) {
				t.Errorf("MemberWorkouts(instructor's session) = %v, want ErrNotFound", err)
			}
		})
	}
}
