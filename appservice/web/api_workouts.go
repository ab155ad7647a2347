package web

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/personspec"
)

type exerciseJSON struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Category     string `json:"category"`
	BodyPart     string `json:"bodyPart"`
	Equipment    string `json:"equipment"`
	Instructions string `json:"instructions"`
}

func exerciseOut(e *store.Exercise) exerciseJSON {
	return exerciseJSON{ID: e.ID, Name: e.Name, Category: e.Category, BodyPart: e.BodyPart, Equipment: e.Equipment, Instructions: e.Instructions}
}

// workoutJSON is a workout plan as the desktop wrapper hands it to desktop programs: the
// original's record (name, description, owner, executor, exercises with their dose as
// key/value/unit data), with the dose also as plain members for the editor, and the name of
// the plan's organization, which a member's plans from several clinics are told apart by.
type workoutJSON struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Description   string     `json:"description"`
	LastChangedAt string     `json:"lastChangedAt"`
	Owner         string     `json:"owner"`
	OwnerID       int64      `json:"ownerId"` // the owner's account id: the desktop wrapper's Owner
	Executor      string     `json:"executor"`
	Organization  string     `json:"organization"`
	PersonID      int64      `json:"personId"`
	Template      bool       `json:"template"`
	ExerciseCount int        `json:"exerciseCount"`
	Exercises     []itemJSON `json:"exercises"`
}

type itemJSON struct {
	ID           int64      `json:"id"`
	ExerciseID   int64      `json:"exerciseId"`
	Name         string     `json:"name"`
	Instructions string     `json:"instructions"`
	Data         []dataJSON `json:"data"`
	Sets         int        `json:"sets"`
	Reps         int        `json:"reps"`
	HoldSeconds  int        `json:"holdSeconds"`
	Load         string     `json:"load"`
	RestSeconds  int        `json:"restSeconds"`
	Note         string     `json:"note"`
}

type dataJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Unit  string `json:"unit"`
}

// loadUnit splits a load such as "5 kg" or "2.5kg" into value and unit; any other load
// ("light band") is the value alone.
var loadUnit = regexp.MustCompile(`^([0-9]+(?:[.,][0-9]+)?)\s*([\pL%]+)$`)

// doseData is an item's dose as the original's key/value/unit data, the non-empty only.
func doseData(it store.Item) []dataJSON {
	d := []dataJSON{}
	num := func(key string, n int, unit string) {
		if n != 0 {
			d = append(d, dataJSON{key, strconv.Itoa(n), unit})
		}
	}
	num("sets", it.Sets, "")
	num("reps", it.Reps, "")
	num("hold", it.HoldSeconds, "s")
	if it.Load != "" {
		if m := loadUnit.FindStringSubmatch(it.Load); m != nil {
			d = append(d, dataJSON{"load", m[1], m[2]})
		} else {
			d = append(d, dataJSON{"load", it.Load, ""})
		}
	}
	num("rest", it.RestSeconds, "s")
	if it.Note != "" {
		d = append(d, dataJSON{"note", it.Note, ""})
	}
	return d
}

func workoutOut(w *store.Workout) workoutJSON {
	out := workoutJSON{ID: w.ID, Name: w.Title, Description: w.Notes, LastChangedAt: timeOut(w.UpdatedAt), Owner: w.OwnerName, OwnerID: w.OwnerAccountID,
		Organization: w.OrganizationName, PersonID: w.PersonID, Template: w.Template, ExerciseCount: len(w.Items), Exercises: make([]itemJSON, len(w.Items))}
	if w.Person != nil {
		out.Executor = w.Person.Name()
	}
	for i, it := range w.Items {
		x := itemJSON{ID: it.ID, ExerciseID: it.ExerciseID, Data: doseData(it), Sets: it.Sets, Reps: it.Reps,
			HoldSeconds: it.HoldSeconds, Load: it.Load, RestSeconds: it.RestSeconds, Note: it.Note}
		if it.Exercise != nil {
			x.Name, x.Instructions = it.Exercise.Name, it.Exercise.Instructions
		}
		out.Exercises[i] = x
	}
	return out
}

func workoutsOut(ws []store.Workout) []workoutJSON {
	out := make([]workoutJSON, len(ws))
	for i := range ws {
		out[i] = workoutOut(&ws[i])
	}
	return out
}

func (h *Handler) apiExercises(r *apiRequest) (int, any, error) {
	var fe fieldErrors
	q := store.ExerciseQuery{
		Text:      queryText(r, &fe, "q", 200),
		Category:  queryText(r, &fe, "category", 200),
		BodyPart:  queryText(r, &fe, "bodyPart", 200),
		Equipment: queryText(r, &fe, "equipment", 200),
		Limit:     int(queryInt(r, &fe, "limit", 1, 1000)),
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	es, err := h.cfg.Store.Exercises(r.Context(), r.org(), q)
	if err != nil {
		return 0, nil, err
	}
	out := make([]exerciseJSON, len(es))
	for i := range es {
		out[i] = exerciseOut(&es[i])
	}
	return http.StatusOK, map[string]any{"exercises": out}, nil
}

func (h *Handler) apiExercise(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	e, err := h.cfg.Store.Exercise(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, exerciseOut(e), nil
}

// apiWorkouts searches the organization's plans or templates. customId selects the plans
// of the most recently changed person with that custom id (custom ids are not unique), as
// the wrapper's getWorkoutsForClient does; from, those changed on or after a date.
func (h *Handler) apiWorkouts(r *apiRequest) (int, any, error) {
	var fe fieldErrors
	q := store.WorkoutQuery{
		Text:     queryText(r, &fe, "q", 200),
		PersonID: queryInt(r, &fe, "personId", 1, 1<<62),
		Limit:    int(queryInt(r, &fe, "limit", 1, 1000)),
	}
	customID := queryText(r, &fe, "customId", personspec.MaxText)
	switch v := r.URL.Query().Get("template"); v {
	case "", "false":
	case "true":
		q.Templates = true
	default:
		fe.add("template", "must be true or false")
	}
	if v := r.URL.Query().Get("from"); v != "" {
		var err error
		if q.ChangedSince, err = parseFrom(v); err != nil {
			fe.add("from", "must be a date yyyy-MM-dd or an RFC 3339 time")
		}
	}
	if customID != "" && q.PersonID != 0 {
		fe.add("customId", "give customId or personId, not both")
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if customID != "" {
		ps, err := h.cfg.Store.Persons(r.Context(), r.org(), customID, 1)
		if err != nil {
			return 0, nil, err
		}
		if len(ps) == 0 {
			return 0, nil, store.ErrNotFound
		}
		q.PersonID = ps[0].ID
	}
	ws, err := h.cfg.Store.Workouts(r.Context(), r.org(), q)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"workouts": workoutsOut(ws)}, nil
}

// parseFrom reads the from argument: a date (the start of that day, UTC) or a time.
func parseFrom(v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, v)
}

// apiWorkout answers an instructor a plan or template of the organization, a member a plan
// made for them that the session sees: the link's organization's (store.Scope).
func (h *Handler) apiWorkout(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var w *store.Workout
	if r.s.Account.Role == store.RoleMember {
		w, err = h.cfg.Store.MemberWorkout(r.Context(), r.s, id)
	} else {
		w, err = h.cfg.Store.Workout(r.Context(), r.org(), id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, workoutOut(w), nil
}

func (h *Handler) apiMyWorkouts(r *apiRequest) (int, any, error) {
	ws, err := h.cfg.Store.MemberWorkouts(r.Context(), r.s)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"workouts": workoutsOut(ws)}, nil
}

// Limits of a plan's text, as the editor's inputs have them.
const (
	maxTitle    = 200
	maxNotes    = 4000
	maxItems    = 100
	maxLoad     = 64
	maxItemNote = 500
)

func (h *Handler) apiCreateWorkout(r *apiRequest) (int, any, error) {
	var in struct {
		PersonID   int64  `json:"personId"`
		TemplateID int64  `json:"templateId"`
		Title      string `json:"title"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	if in.PersonID <= 0 {
		fe.add("personId", "must be a positive integer")
	}
	if in.TemplateID < 0 {
		fe.add("templateId", "must be 0 (an empty plan) or a template's id")
	}
	fe.text("title", in.Title, maxTitle, false)
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if in.TemplateID == 0 && strings.TrimSpace(in.Title) == "" {
		// An empty plan's title, which its author may change, in the page's language.
		in.Title = i18n.T(h.apiLanguage(r), "workout.untitled")
	}
	w, err := h.cfg.Store.CreateWorkout(r.Context(), r.org(), r.s.Account.ID, in.PersonID, in.TemplateID, in.Title)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, workoutOut(w), nil
}

type itemIn struct {
	ExerciseID  int64  `json:"exerciseId"`
	Sets        int    `json:"sets"`
	Reps        int    `json:"reps"`
	HoldSeconds int    `json:"holdSeconds"`
	Load        string `json:"load"`
	RestSeconds int    `json:"restSeconds"`
	Note        string `json:"note"`
}

// apiUpdateWorkout replaces a plan's title, notes and exercises. Each exercise is checked
// first, so an exercise the organization does not see is a failing field, not a 404 that
// would read as "no such plan".
func (h *Handler) apiUpdateWorkout(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Title *string  `json:"title"`
		Notes string   `json:"notes"`
		Items []itemIn `json:"items"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	switch {
	case in.Title == nil || *in.Title == "":
		fe.add("title", "required")
	default:
		fe.text("title", *in.Title, maxTitle, false)
	}
	fe.text("notes", in.Notes, maxNotes, true)
	if len(in.Items) > maxItems {
		fe.add("items", "at most "+strconv.Itoa(maxItems)+" exercises")
		in.Items = nil
	}
	items := make([]store.Item, len(in.Items))
	known := map[int64]bool{}
	for i, it := range in.Items {
		f := "items[" + strconv.Itoa(i) + "]."
		if it.ExerciseID <= 0 {
			fe.add(f+"exerciseId", "must be a positive integer")
		} else if ok, seen := known[it.ExerciseID]; !seen {
			_, err := h.cfg.Store.Exercise(r.Context(), r.org(), it.ExerciseID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return 0, nil, err
			}
			known[it.ExerciseID] = err == nil
			if err != nil {
				fe.add(f+"exerciseId", "no such exercise")
			}
		} else if !ok {
			fe.add(f+"exerciseId", "no such exercise")
		}
		fe.intRange(f+"sets", it.Sets, 0, 100)
		fe.intRange(f+"reps", it.Reps, 0, 1000)
		fe.intRange(f+"holdSeconds", it.HoldSeconds, 0, 3600)
		fe.intRange(f+"restSeconds", it.RestSeconds, 0, 3600)
		fe.text(f+"load", it.Load, maxLoad, false)
		fe.text(f+"note", it.Note, maxItemNote, false)
		items[i] = store.Item{ExerciseID: it.ExerciseID, Sets: it.Sets, Reps: it.Reps, HoldSeconds: it.HoldSeconds,
			Load: it.Load, RestSeconds: it.RestSeconds, Note: it.Note}
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	w, err := h.cfg.Store.UpdateWorkout(r.Context(), r.org(), id, *in.Title, in.Notes, items)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, workoutOut(w), nil
}
