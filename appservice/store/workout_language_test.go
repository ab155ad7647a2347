package store

import (
	"context"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/personspec"
)

// TestCatalogueLanguages: every global exercise and template reads in each language the
// pages speak (migration 0013), search finds an exercise by its name in the reader's
// language, and an organization's own exercise stays as its author wrote it.
func TestCatalogueLanguages(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := orgOf(t, s, "org1")
			english, err := s.Exercises(ctx, org, ExerciseQuery{Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			englishTemplates, err := s.Workouts(ctx, org, WorkoutQuery{Templates: true, Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			for _, lang := range []string{"nb", "sv", "da", "de"} {
				lctx := WithLanguage(ctx, lang)
				all, err := s.Exercises(lctx, org, ExerciseQuery{Limit: 500})
				if err != nil || len(all) != len(english) {
					t.Fatalf("%s: Exercises() = %d, %v, want %d", lang, len(all), err, len(english))
				}
				byID := map[int64]Exercise{}
				for _, e := range english {
					byID[e.ID] = e
				}
				for _, e := range all {
					en := byID[e.ID]
					if e.Name == en.Name || e.Instructions == en.Instructions || e.Category == "" || e.BodyPart == "" || e.Equipment == "" || len(e.Instructions) < 80 {
						t.Errorf("%s: exercise %q = %+v, want it translated from %+v", lang, en.Name, e, en)
					}
				}
				templates, err := s.Workouts(lctx, org, WorkoutQuery{Templates: true, Limit: 500})
				if err != nil || len(templates) != len(englishTemplates) {
					t.Fatalf("%s: templates = %d, %v, want %d", lang, len(templates), err, len(englishTemplates))
				}
				for i, w := range templates {
					en := englishTemplates[i]
					if w.ID != en.ID || w.Title == en.Title || w.Notes == en.Notes {
						t.Errorf("%s: template %q = %q / %q, want it translated", lang, en.Title, w.Title, w.Notes)
					}
					for j, it := range w.Items {
						eit := en.Items[j]
						if (eit.Note != "" && it.Note == eit.Note) || (eit.Load != "" && it.Load == eit.Load) || it.Exercise.Name == eit.Exercise.Name {
							t.Errorf("%s: template %q item %d = %q, %q, %q, want it translated from %q, %q, %q", lang, en.Title, j+1,
								it.Exercise.Name, it.Load, it.Note, eit.Exercise.Name, eit.Load, eit.Note)
						}
					}
				}
			}

			// The seeded squat as a Norwegian reads it, found by its Norwegian name in any case.
			nb := WithLanguage(ctx, "nb")
			for _, q := range []ExerciseQuery{{Text: "knebøy"}, {Text: "KNEBØY"}, {Text: "Kneb", Category: "styrke", BodyPart: "Bein", Equipment: "ingen"},
				{Text: "kneb", Category: "strength", BodyPart: "legs", Equipment: "none"}} {
				es, err := s.Exercises(nb, org, q)
				if err != nil || len(es) != 1 {
					t.Fatalf("Exercises(nb, %+v) = %+v, %v, want Knebøy", q, es, err)
				}
				e := es[0]
				if e.Name != "Knebøy" || e.Category != "styrke" || e.BodyPart != "bein" || e.Equipment != "ingen" ||
					!strings.HasPrefix(e.Instructions, "Stå med føttene i hoftebreddes avstand") {
					t.Errorf("Exercises(nb, %+v) = %+v, want Knebøy · styrke · bein · ingen in Norwegian", q, e)
				}
				one, err := s.Exercise(nb, org, e.ID)
				if err != nil || *one != e {
					t.Errorf("Exercise(nb, %d) = %+v, %v, want %+v", e.ID, one, err, e)
				}
			}
			// German capitalizes its nouns: search folds the case of Ü as of U.
			if es, err := s.Exercises(WithLanguage(ctx, "de"), org, ExerciseQuery{Text: "PENDELÜBUNG"}); err != nil || len(es) != 1 || es[0].Name != "Pendelübung" {
				t.Errorf("Exercises(de, PENDELÜBUNG) = %+v, %v, want Pendelübung", es, err)
			}
			// The English name is what an English reader finds; a Norwegian finds the Norwegian.
			if es, err := s.Exercises(nb, org, ExerciseQuery{Text: "squat"}); err != nil || len(es) != 0 {
				t.Errorf("Exercises(nb, squat) = %+v, %v, want none: the page shows Knebøy", es, err)
			}

			// An organization's own exercise, with words that the catalogue translates, stays
			// as its author wrote it in every language.
			var own int64
			queryRow(t, s, `INSERT INTO exercises (organization_id, name, category, body_part, equipment, instructions, created_at)
VALUES (?, 'Squat to box', 'strength', 'legs', 'none', 'Sit down to the box and stand up.', 0) RETURNING id`, []any{org}, &own)
			want := Exercise{ID: own, Name: "Squat to box", Category: "strength", BodyPart: "legs", Equipment: "none", Instructions: "Sit down to the box and stand up."}
			for _, lang := range []string{"en", "nb", "de"} {
				e, err := s.Exercise(WithLanguage(ctx, lang), org, own)
				if err != nil || *e != want {
					t.Errorf("Exercise(%s, own) = %+v, %v, want %+v", lang, e, err, want)
				}
			}
			if es, err := s.Exercises(nb, org, ExerciseQuery{Text: "squat to"}); err != nil || len(es) != 1 || es[0] != want {
				t.Errorf("Exercises(nb, squat to) = %+v, %v, want the organization's own as written", es, err)
			}

			// A plan made from a global template by a Norwegian-speaking instructor starts with
			// the template's Norwegian texts, which are then the plan's own; its exercises are
			// references, read in each reader's language.
			p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "p1", Firstname: "Kari", Lastname: "Nordmann"})
			var knee int64
			for _, w := range englishTemplates {
				if w.Title == "Knee rehabilitation, week 1" {
					knee = w.ID
				}
			}
			plan, err := s.CreateWorkout(nb, org, 0, p.ID, knee, "")
			if err != nil {
				t.Fatal(err)
			}
			if plan.Title != "Kneopptrening, uke 1" || !strings.HasPrefix(plan.Notes, "Tidlige øvelser") || plan.Items[0].Note != "Flere ganger om dagen" ||
				plan.Items[0].Exercise.Name != "Ankelpumpe" {
				t.Errorf("plan from the knee template in nb = %q, %q, %+v", plan.Title, plan.Notes, plan.Items[0])
			}
			for lang, name := range map[string]string{"en": "Ankle pumps", "nb": "Ankelpumpe", "de": "Fußwippen"} {
				got, err := s.Workout(WithLanguage(ctx, lang), org, plan.ID)
				if err != nil || got.Title != "Kneopptrening, uke 1" || got.Items[0].Note != "Flere ganger om dagen" || got.Items[0].Exercise.Name != name {
					t.Errorf("Workout(%s) = %+v, %v, want the plan's own Norwegian texts and the exercise %q", lang, got, err, name)
				}
			}
			// The template search matches the titles as the reader reads them.
			if ws, err := s.Workouts(nb, org, WorkoutQuery{Templates: true, Text: "kneopptrening"}); err != nil || len(ws) != 1 || ws[0].ID != knee {
				t.Errorf("Workouts(nb, kneopptrening) = %d, %v, want the knee template", len(ws), err)
			}
		})
	}
}
