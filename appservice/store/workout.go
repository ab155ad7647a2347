package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// The global catalogue and template library (organization_id NULL, migration 0004) are
// written in English in their own tables, and in the other languages the pages speak in
// exercise_texts, workout_texts and workout_item_texts (migration 0013), one row per entry
// and language. A read takes the language of its context (WithLanguage): a global entry
// shows its text in that language, English where it has none; an organization's own
// exercises and plans have no such rows and read as their author wrote them.

type languageKey struct{}

// WithLanguage returns ctx with lang, an i18n code, as the language the catalogue's texts
// are read in: names, instructions, the category, body part and equipment words, and the
// global templates' titles, notes and their items' loads and notes. Without it they are
// English.
func WithLanguage(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, languageKey{}, lang)
}

// languageOf is the language WithLanguage gave ctx, or "en".
func languageOf(ctx context.Context) string {
	if lang, ok := ctx.Value(languageKey{}).(string); ok && lang != "" {
		return lang
	}
	return "en"
}

// exerciseFrom joins an exercise's texts in one language (the query's first argument) to
// exercises e; exerciseShown are its columns as they are shown.
const (
	exerciseFrom  = `exercises e LEFT JOIN exercise_texts x ON x.exercise_id = e.id AND x.language = ?`
	exerciseShown = `e.id, COALESCE(x.name, e.name), COALESCE(x.category, e.category), COALESCE(x.body_part, e.body_part),
	COALESCE(x.equipment, e.equipment), COALESCE(x.instructions, e.instructions)`
)

// Exercise is an exercise of the global catalogue or of one organization.
type Exercise struct {
	ID           int64
	Name         string
	Category     string
	BodyPart     string
	Equipment    string
	Instructions string
}

// ExerciseQuery selects exercises: Text matches name, category, body part or equipment
// (case-insensitive, part of a word); the others match exactly, any case; empty matches all.
// They match the texts as shown, in the context's language (WithLanguage); Category,
// BodyPart and Equipment also match the English word a global exercise has.
type ExerciseQuery struct {
	Text      string
	Category  string
	BodyPart  string
	Equipment string
	Limit     int // at most 500; 50 when not positive
}

// likePattern makes a LIKE pattern that finds text anywhere, with LIKE's own wildcards in
// text taken literally (the queries say ESCAPE '\').
func likePattern(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(text)) + "%"
}

// Exercises searches the exercises orgID sees: the global catalogue and its own, by name,
// in the context's language.
func (s *Store) Exercises(ctx context.Context, orgID int64, q ExerciseQuery) ([]Exercise, error) {
	where := []string{`(e.organization_id IS NULL OR e.organization_id = ?)`}
	args := []any{languageOf(ctx), orgID}
	if q.Text != "" {
		where = append(where, `(LOWER(COALESCE(x.name, e.name)) LIKE ? ESCAPE '\' OR LOWER(COALESCE(x.category, e.category)) LIKE ? ESCAPE '\'
	OR LOWER(COALESCE(x.body_part, e.body_part)) LIKE ? ESCAPE '\' OR LOWER(COALESCE(x.equipment, e.equipment)) LIKE ? ESCAPE '\')`)
		p := likePattern(q.Text)
		args = append(args, p, p, p, p)
	}
	for _, f := range []struct{ col, v string }{{"category", q.Category}, {"body_part", q.BodyPart}, {"equipment", q.Equipment}} {
		if f.v != "" {
			where = append(where, `(LOWER(COALESCE(x.`+f.col+`, e.`+f.col+`)) = ? OR LOWER(e.`+f.col+`) = ?)`)
			args = append(args, strings.ToLower(f.v), strings.ToLower(f.v))
		}
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+exerciseShown+` FROM `+exerciseFrom+`
WHERE `+strings.Join(where, " AND ")+` ORDER BY COALESCE(x.name, e.name), e.id LIMIT ?`), append(args, clampLimit(q.Limit, 50, 500))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Exercise{}
	for rows.Next() {
		var e Exercise
		if err := rows.Scan(&e.ID, &e.Name, &e.Category, &e.BodyPart, &e.Equipment, &e.Instructions); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Exercise returns an exercise that orgID sees, in the context's language.
func (s *Store) Exercise(ctx context.Context, orgID, id int64) (*Exercise, error) {
	e := &Exercise{}
	err := s.db.QueryRowContext(ctx, s.q(`SELECT `+exerciseShown+` FROM `+exerciseFrom+`
WHERE e.id = ? AND (e.organization_id IS NULL OR e.organization_id = ?)`), languageOf(ctx), id, orgID).
		Scan(&e.ID, &e.Name, &e.Category, &e.BodyPart, &e.Equipment, &e.Instructions)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return e, err
}

// Item is one exercise of a workout plan, with its dose.
type Item struct {
	ID          int64
	ExerciseID  int64
	Exercise    *Exercise // filled when read
	Position    int       // 1-based, the order of the plan
	Sets        int
	Reps        int
	HoldSeconds int
	RestSeconds int
	Load        string // e.g. "5 kg"
	Note        string
}

// Workout is a workout plan, or a template when Template is set.
type Workout struct {
	ID       int64
	Title    string
	Notes    string
	Template bool
	PersonID int64   // the executor, the plan's organization's record; 0 for templates
	Person   *Person // the executor as the plan's organization knows them
	// OrganizationName is the name of the plan's organization (the clinic); empty for a
	// global template.
	OrganizationName string
	OwnerAccountID   int64
	OwnerName        string
	Items            []Item
	CreatedAt        time.Time
	UpdatedAt        time.Time
	orgID            int64
}

// WorkoutQuery selects workout plans of an organization: Templates selects the template
// library (the organization's and the global ones) instead of plans; PersonID the plans of
// one person; ChangedSince those changed on or after it; Text matches title or notes.
type WorkoutQuery struct {
	Text         string
	Templates    bool
	PersonID     int64
	ChangedSince time.Time
	Limit        int // at most 500; 100 when not positive
}

const workoutColumns = `w.id, w.organization_id, COALESCE(o.name, ''), COALESCE(wt.title, w.title), COALESCE(wt.notes, w.notes), w.is_template, w.person_id, w.owner_account_id,
	COALESCE(a.display_name, ''), w.created_at, w.updated_at`

// workoutRows reads the workouts selected by where (on workouts w, and wt, their texts in
// the context's language), with their items and executors.
func (s *Store) workoutRows(ctx context.Context, q queryer, where string, args ...any) ([]Workout, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT `+workoutColumns+`
FROM workouts w LEFT JOIN accounts a ON a.id = w.owner_account_id LEFT JOIN organizations o ON o.id = w.organization_id
	LEFT JOIN workout_texts wt ON wt.workout_id = w.id AND wt.language = ?
WHERE `+where), append([]any{languageOf(ctx)}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Workout{}
	for rows.Next() {
		var w Workout
		var org, person, owner sql.NullInt64
		var tmpl int
		var created, updated int64
		if err := rows.Scan(&w.ID, &org, &w.OrganizationName, &w.Title, &w.Notes, &tmpl, &person, &owner, &w.OwnerName, &created, &updated); err != nil {
			return nil, err
		}
		w.orgID, w.PersonID, w.OwnerAccountID, w.Template = org.Int64, person.Int64, owner.Int64, tmpl == 1
		w.CreatedAt, w.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	for i := range out {
		w := &out[i]
		if w.Items, err = s.items(ctx, q, w.ID); err != nil {
			return nil, err
		}
		if w.PersonID != 0 {
			if w.Person, err = s.readPerson(ctx, q, w.orgID, w.PersonID); err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
		}
	}
	return out, nil
}

func (s *Store) items(ctx context.Context, q queryer, workoutID int64) ([]Item, error) {
	lang := languageOf(ctx)
	rows, err := q.QueryContext(ctx, s.q(`SELECT i.id, i.position, i.sets, i.reps, i.hold_seconds, COALESCE(it.load, i.load), i.rest_seconds,
	COALESCE(it.note, i.note), `+exerciseShown+`
FROM workout_items i LEFT JOIN workout_item_texts it ON it.item_id = i.id AND it.language = ?
	JOIN exercises e ON e.id = i.exercise_id LEFT JOIN exercise_texts x ON x.exercise_id = e.id AND x.language = ?
WHERE i.workout_id = ? ORDER BY i.position, i.id`), lang, lang, workoutID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Item{}
	for rows.Next() {
		it := Item{Exercise: &Exercise{}}
		e := it.Exercise
		if err := rows.Scan(&it.ID, &it.Position, &it.Sets, &it.Reps, &it.HoldSeconds, &it.Load, &it.RestSeconds, &it.Note,
			&e.ID, &e.Name, &e.Category, &e.BodyPart, &e.Equipment, &e.Instructions); err != nil {
			return nil, err
		}
		it.ExerciseID = e.ID
		out = append(out, it)
	}
	return out, rows.Err()
}

// visibleWorkout is the condition on w for what orgID sees: its own plans and templates, and
// the global templates.
const visibleWorkout = `(w.organization_id = ? OR (w.organization_id IS NULL AND w.is_template = 1))`

// Workouts searches the workout plans (or templates) of orgID, most recently changed first.
// A PersonID of another organization is ErrNotFound.
func (s *Store) Workouts(ctx context.Context, orgID int64, q WorkoutQuery) ([]Workout, error) {
	where := []string{`w.organization_id = ?`, `w.is_template = 0`}
	args := []any{orgID}
	if q.Templates {
		where = []string{visibleWorkout, `w.is_template = 1`}
	}
	if q.PersonID != 0 {
		if _, err := s.readPerson(ctx, s.db, orgID, q.PersonID); err != nil {
			return nil, err
		}
		where = append(where, `w.person_id = ?`)
		args = append(args, q.PersonID)
	}
	if !q.ChangedSince.IsZero() {
		where = append(where, `w.updated_at >= ?`)
		args = append(args, q.ChangedSince.UnixMilli())
	}
	if q.Text != "" {
		where = append(where, `(LOWER(COALESCE(wt.title, w.title)) LIKE ? ESCAPE '\' OR LOWER(COALESCE(wt.notes, w.notes)) LIKE ? ESCAPE '\')`)
		p := likePattern(q.Text)
		args = append(args, p, p)
	}
	return s.workoutRows(ctx, s.db, strings.Join(where, " AND ")+` ORDER BY w.updated_at DESC, w.id DESC LIMIT ?`,
		append(args, clampLimit(q.Limit, 100, 500))...)
}

// Workout returns a workout plan or template that orgID sees.
func (s *Store) Workout(ctx context.Context, orgID, id int64) (*Workout, error) {
	return s.oneWorkout(ctx, s.db, visibleWorkout+` AND w.id = ?`, orgID, id)
}

func (s *Store) oneWorkout(ctx context.Context, q queryer, where string, args ...any) (*Workout, error) {
	ws, err := s.workoutRows(ctx, q, where, args...)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, ErrNotFound
	}
	return &ws[0], nil
}

// CreateWorkout creates a workout plan of orgID for personID, owned by ownerAccountID, or a
// template of orgID when personID is 0. With templateID (a template orgID sees), the plan
// starts as a copy of the template's notes and items, and its title when title is empty: a
// global template's texts in the context's language (WithLanguage), which the plan then
// keeps as its own, as its author may change them. The items' exercises are references,
// read in each reader's language. Ids of another organization are ErrNotFound.
func (s *Store) CreateWorkout(ctx context.Context, orgID, ownerAccountID, personID, templateID int64, title string) (*Workout, error) {
	var out *Workout
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if personID != 0 {
			if _, err := s.readPerson(ctx, tx, orgID, personID); err != nil {
				return err
			}
		}
		notes := ""
		var items []Item
		if templateID != 0 {
			t, err := s.oneWorkout(ctx, tx, visibleWorkout+` AND w.is_template = 1 AND w.id = ?`, orgID, templateID)
			if err != nil {
				return err
			}
			notes, items = t.Notes, t.Items
			if title == "" {
				title = t.Title
			}
		}
		if title = strings.TrimSpace(title); title == "" {
			title = "Workout plan"
		}
		person := sql.NullInt64{Int64: personID, Valid: personID != 0}
		owner := sql.NullInt64{Int64: ownerAccountID, Valid: ownerAccountID != 0}
		tmpl := 0
		if personID == 0 {
			tmpl = 1
		}
		var id int64
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO workouts (organization_id, person_id, owner_account_id, title, notes, is_template, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), orgID, person, owner, title, notes, tmpl, now, now).Scan(&id); err != nil {
			return err
		}
		if err := s.step("workout"); err != nil {
			return err
		}
		if err := s.insertItems(ctx, tx, orgID, id, items); err != nil {
			return err
		}
		var err error
		out, err = s.oneWorkout(ctx, tx, `w.id = ?`, id)
		return err
	})
	return out, err
}

// UpdateWorkout sets the title, notes and items of a workout plan or template of orgID
// (global templates cannot be changed: ErrNotFound), replacing the items in the order
// given. Each item's exercise must be one orgID sees.
func (s *Store) UpdateWorkout(ctx context.Context, orgID, id int64, title, notes string, items []Item) (*Workout, error) {
	var out *Workout
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE workouts SET title = ?, notes = ?, updated_at = ? WHERE id = ? AND organization_id = ?`),
			strings.TrimSpace(title), notes, s.now(), id, orgID)
		if err := oneRow(res, err); err != nil {
			return err
		}
		if err := s.step("workout"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM workout_items WHERE workout_id = ?`), id); err != nil {
			return err
		}
		if err := s.insertItems(ctx, tx, orgID, id, items); err != nil {
			return err
		}
		out, err = s.oneWorkout(ctx, tx, `w.id = ?`, id)
		return err
	})
	return out, err
}

func (s *Store) insertItems(ctx context.Context, tx *sql.Tx, orgID, workoutID int64, items []Item) error {
	for i, it := range items {
		if err := s.step("item"); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO workout_items (workout_id, position, exercise_id, sets, reps, hold_seconds, load, rest_seconds, note)
SELECT ?, ?, e.id, ?, ?, ?, ?, ?, ? FROM exercises e WHERE e.id = ? AND (e.organization_id IS NULL OR e.organization_id = ?)`),
			workoutID, i+1, it.Sets, it.Reps, it.HoldSeconds, it.Load, it.RestSeconds, it.Note, it.ExerciseID, orgID)
		if err := oneRow(res, err); err != nil {
			return err
		}
	}
	return nil
}

// accountMember is the member of a member account; a retired account (migration 0005) has
// none and is ErrNotFound.
func (s *Store) accountMember(ctx context.Context, memberAccountID int64) (int64, error) {
	var member sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT member_id FROM accounts WHERE id = ? AND role = ?`), memberAccountID, RoleMember).Scan(&member)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !member.Valid) {
		return 0, ErrNotFound
	}
	return member.Int64, err
}

// memberPlans is the condition on w for the plans made for a member: for any of its
// records, in every organization of its partner.
const memberPlans = `w.is_template = 0 AND w.person_id IN (SELECT id FROM persons WHERE member_id = ?)`

// provenPlans is the condition on w for the plans made for the human whose national
// identity number a member carries: the member's own, and those of every other partner's
// member with the same number (members are one per partner). A member without a number
// has its own only.
const provenPlans = `w.is_template = 0 AND w.person_id IN (SELECT p.id FROM persons p JOIN members m ON m.id = p.member_id
WHERE m.id = ? OR m.ssn_hash = (SELECT ssn_hash FROM members WHERE id = ?))`

// sessionPlans is the condition on w, and its arguments, for the plans a member's session
// sees: the member's plans of the session's organization, or with ScopeMember (the holder
// proved the member's number with a national eID) the plans of every organization of every
// partner for that number. Any other session, and a retired member account (migration
// 0005), is ErrNotFound.
func (s *Store) sessionPlans(ctx context.Context, sess *Session) (string, []any, error) {
	if sess == nil || sess.Account == nil || sess.Account.Role != RoleMember {
		return "", nil, ErrNotFound
	}
	member, err := s.accountMember(ctx, sess.Account.ID)
	if err != nil {
		return "", nil, err
	}
	switch {
	case sess.Scope == ScopeMember:
		return provenPlans, []any{member, member}, nil
	case sess.Organization != nil:
		return memberPlans + ` AND w.organization_id = ?`, []any{member, sess.Organization.ID}, nil
	}
	return "", nil, ErrNotFound
}

// MemberWorkouts lists the workout plans a member's session sees (sessionPlans), most
// recently changed first; each plan's Person is its organization's record and
// OrganizationName its organization's name.
func (s *Store) MemberWorkouts(ctx context.Context, sess *Session) ([]Workout, error) {
	where, args, err := s.sessionPlans(ctx, sess)
	if err != nil {
		return nil, err
	}
	return s.workoutRows(ctx, s.db, where+` ORDER BY w.updated_at DESC, w.id DESC`, args...)
}

// MemberWorkout returns a workout plan a member's session sees (sessionPlans); another is
// ErrNotFound.
func (s *Store) MemberWorkout(ctx context.Context, sess *Session, id int64) (*Workout, error) {
	where, args, err := s.sessionPlans(ctx, sess)
	if err != nil {
		return nil, err
	}
	return s.oneWorkout(ctx, s.db, where+` AND w.id = ?`, append(args, id)...)
}
