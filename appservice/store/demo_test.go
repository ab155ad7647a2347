package store

import (
	"context"
	"errors"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
)

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

// TestSeedDemoMember: the demo Go link's contact is seeded as the link would resolve it,
// with a plan; the Go link then signs in the member that record belongs to, who sees the
// plan, and the main link of the same contact finds the same record. Seeding twice adds
// nothing.
func TestSeedDemoMember(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if err := s.SeedDemoOrganization(ctx, "demo", "org1", "North Clinic", 0); err != nil {
				t.Fatal(err)
			}
			ola := goLink("org1", "contact-1", "ola@example.org")
			ola.Payload.Contact.Firstname, ola.Payload.Contact.Lastname = "Ola", "Nordmann"
			for range 2 {
				if err := s.SeedDemoMember(ctx, "demo", ola.Payload, 0); err != nil {
					t.Fatalf("SeedDemoMember = %v", err)
				}
			}
			persons, _ := s.Persons(ctx, orgOf(t, s, "org1"), "", 0)
			if len(persons) != 5 { // Ola, three demo persons, orgOf's seed person
				t.Errorf("North Clinic has %d persons after seeding Ola twice, want 5", len(persons))
			}
			r := mustResolve(t, s, ola)
			if r.PersonCreated || r.MemberCreated || !r.AccountCreated {
				t.Errorf("Go link after the seed = %+v, want the seeded record and member, and a new account", r)
			}
			plans, err := s.MemberWorkouts(ctx, linkSession(t, s, r))
			if err != nil || len(plans) != 1 || plans[0].Title != DemoMemberPlan || len(plans[0].Items) == 0 ||
				plans[0].Person == nil || plans[0].Person.ID != r.PersonID {
				t.Fatalf("the member's plans = %+v, %v, want one %q with exercises for the seeded record", plans, err, DemoMemberPlan)
			}
			main := mainLink("e1", "org1", "contact-1")
			main.RequestID = "req-3"
			if again := mustResolve(t, s, main); again.PersonID != r.PersonID || again.PersonCreated {
				t.Errorf("main link of the same contact = person %d (created %v), want the seeded %d", again.PersonID, again.PersonCreated, r.PersonID)
			}

			notGo := mainLink("e1", "org1", "contact-2").Payload
			if err := s.SeedDemoMember(ctx, "demo", notGo, 0); !errors.Is(err, errLinkInvalid) {
				t.Errorf("SeedDemoMember(a main-client payload) = %v, want errLinkInvalid", err)
			}
			if err := s.SeedDemoMember(ctx, "demo", &linkspec.Payload{OrganizationID: "org1", OrganizationName: "North Clinic"}, 0); !errors.Is(err, errLinkInvalid) {
				t.Errorf("SeedDemoMember(no contact) = %v, want errLinkInvalid", err)
			}
		})
	}
}
