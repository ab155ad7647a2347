package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
)

// DemoMemberPlan is the template SeedDemoMember gives the demo member's record a plan from.
const DemoMemberPlan = "Knee rehabilitation, week 1"

// SeedDemoMember resolves the contact of partner's Go link payload p as the link itself
// would (the organization, the organization's record of the contact, the member behind
// it), without signing anyone in, and gives the record a plan from DemoMemberPlan, owned
// by ownerAccountID, unless it has a plan already. So the member that ./run.sh's printed
// Go link signs in sees a plan, as a member would. A payload that is no valid Go link is
// refused.
func (s *Store) SeedDemoMember(ctx context.Context, partner string, p *linkspec.Payload, ownerAccountID int64) error {
	if p == nil || p.Contact == nil {
		return errLinkInvalid
	}
	if kind, err := p.Validate(linkspec.KindGo); err != nil || kind != linkspec.KindGo {
		return fmt.Errorf("demo member: %w", errLinkInvalid)
	}
	r := &Resolved{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		org, err := s.upsertOrganization(ctx, tx, partner, p.OrganizationID, p.OrganizationName, now)
		if err != nil {
			return err
		}
		r.OrganizationID = org
		hash := s.contactSSN(p.Contact.SSN, now)
		if err := s.resolvePerson(ctx, tx, r, p.Contact, hash, now); err != nil {
			return err
		}
		return s.resolveMemberOf(ctx, tx, r, partner, p.Contact, hash, now)
	})
	if err != nil {
		return err
	}
	if plans, err := s.Workouts(ctx, r.OrganizationID, WorkoutQuery{PersonID: r.PersonID, Limit: 1}); err != nil || len(plans) > 0 {
		return err
	}
	templates, err := s.Workouts(ctx, r.OrganizationID, WorkoutQuery{Templates: true, Limit: 500})
	if err != nil {
		return err
	}
	for _, t := range templates {
		if t.Title == DemoMemberPlan {
			_, err := s.CreateWorkout(ctx, r.OrganizationID, ownerAccountID, r.PersonID, t.ID, "")
			return err
		}
	}
	return fmt.Errorf("demo member: no template %q", DemoMemberPlan)
}

// SeedDemoOrganization seeds the demo data (SeedDemo) into the partner's organization
// partnerOrgID, created when missing, so that the demo partner's first link lands on a
// populated organization.
func (s *Store) SeedDemoOrganization(ctx context.Context, partner, partnerOrgID, name string, ownerAccountID int64) error {
	var org int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		org, err = s.upsertOrganization(ctx, tx, partner, partnerOrgID, name, s.now())
		return err
	})
	if err != nil {
		return err
	}
	return s.SeedDemo(ctx, org, ownerAccountID)
}

// SeedDemo gives orgID demo persons with profile data and workout plans made from the
// template library, owned by ownerAccountID, so that a newcomer's ./run.sh shows a populated
// application. It does nothing when orgID has a person with custom id "demo-1" already.
func (s *Store) SeedDemo(ctx context.Context, orgID, ownerAccountID int64) error {
	if ps, err := s.Persons(ctx, orgID, "demo-1", 1); err != nil || len(ps) > 0 {
		return err
	}
	day := func(d int) time.Time {
		return time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC).AddDate(0, 0, 7*d)
	}
	templates, err := s.Workouts(ctx, orgID, WorkoutQuery{Templates: true})
	if err != nil {
		return err
	}
	byTitle := map[string]int64{}
	for _, t := range templates {
		byTitle[t.Title] = t.ID
	}
	for _, d := range []struct {
		sel   personspec.Select
		plans []string
	}{
		{personspec.Select{CustomID: "demo-1", Firstname: "Åse", Lastname: "Ødegård", Gender: "female", DateOfBirth: "1958-04-12",
			Email: "ase@example.com", Location: "Tromsø", Country: "NO",
			Profile: []personspec.ProfileEntry{
				{Key: "weight", Name: "Weight", Value: "64", Unit: "kg", Date: day(0), Source: "demo"},
				{Key: "weight", Name: "Weight", Value: "63.2", Unit: "kg", Date: day(4), Source: "demo"},
				{Key: "tug", Name: "Timed up and go", Value: "11.5", Unit: "s", Date: day(4), Source: "demo"},
			}}, []string{"Balance for seniors"}},
		{personspec.Select{CustomID: "demo-2", Firstname: "Jonas", Lastname: "Lindqvist", Gender: "male", DateOfBirth: "1987-09-30",
			Mobile: "+46 70 123 45 67", Location: "Uppsala", Country: "SE",
			Profile: []personspec.ProfileEntry{
				{Key: "knee-flexion", Name: "Knee flexion, left", Value: "95", Unit: "degrees", Date: day(1), Source: "demo"},
			}}, []string{"Knee rehabilitation, week 1", "Hip and core strength"}},
		{personspec.Select{CustomID: "demo-3", Firstname: "Mia", Lastname: "Virtanen", Gender: "female", DateOfBirth: "1992-02-17",
			Location: "Turku", Country: "FI"}, []string{"Low back basics"}},
	} {
		p, _, _, err := s.SelectPerson(ctx, orgID, &d.sel)
		if err != nil {
			return err
		}
		for _, title := range d.plans {
			if _, err := s.CreateWorkout(ctx, orgID, ownerAccountID, p.ID, byTitle[title], ""); err != nil {
				return err
			}
		}
	}
	return nil
}
