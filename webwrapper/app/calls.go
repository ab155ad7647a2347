package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/engine"
)

// call runs a command that needs the page as its svcApp function. The reply is the
// page's answer as JSON, but for openworkout, whose clients read none, and the records the
// original's clients read by its member names: workouts (getworkoutsforclient) and users
// (getlistofusers, setcustomid, selectperson), mapped to those names here, in the pipe's
// protocol layer, so that the page's API keeps its own.
func (a *App) call(ctx context.Context, eng engine.Engine, c command.Command) result {
	var (
		fn      string
		args    []any
		noReply bool
	)
	str := func(k string) string { s, _ := c.Args[k].(string); return s }
	switch c.Name {
	case command.SelectPerson:
		fn, args = "selectPerson", []any{c.Args}
	case command.QueryExercises:
		fn, args = "queryExercises", []any{str("text")}
	case command.QueryWorkouts:
		fn, args = "queryWorkouts", []any{str("text")}
	case command.GetWorkoutsForClient:
		q := map[string]any{}
		if v, ok := c.Args["customid"]; ok {
			q["customId"] = v
		}
		if v, ok := c.Args["userid"]; ok {
			q["userId"] = v
		}
		if v, ok := c.Args["from"]; ok {
			q["from"] = v
		}
		fn, args = "getWorkoutsForClient", []any{q}
	case command.OpenWorkout:
		fn, args, noReply = "openWorkout", []any{c.Args["id"]}, true
	case command.GetListOfUsers:
		fn, args = "getListOfUsers", []any{map[string]any{"customId": str("customid")}}
	case command.SetCustomID:
		fn, args = "setCustomId", []any{c.Args["userid"], str("customid")}
	case command.SetCase:
		fn, args = "setCase", []any{str("caseid")}
	default:
		return result{err: fmt.Errorf("command %s has no page function", c.Name)}
	}
	cctx, cancel := context.WithTimeout(ctx, a.o.Wait)
	defer cancel()
	var raw json.RawMessage
	if err := eng.Call(cctx, fn, args, &raw); err != nil {
		return result{err: callError(err, cctx)}
	}
	if noReply {
		return result{}
	}
	var mapped func(json.RawMessage) ([]byte, error)
	switch c.Name {
	case command.GetWorkoutsForClient:
		mapped = pascalWorkouts
	case command.GetListOfUsers:
		mapped = userRecords
	case command.SetCustomID:
		mapped = userRecord
	case command.SelectPerson:
		mapped = selectedUser
	}
	if mapped != nil {
		out, err := mapped(raw)
		if err != nil {
			return result{err: err}
		}
		return result{reply: out, hasReply: true}
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return result{reply: raw, hasReply: true}
}

// callError turns a failed page call into the pipe's error text: the page's stable code,
// its message and the refused fields (which never quote a value), or the timeout.
func callError(err error, ctx context.Context) error {
	var pe *engine.PageError
	switch {
	case errors.As(err, &pe):
		msg := pe.Code
		if pe.Message != "" {
			msg += ": " + pe.Message
		}
		if len(pe.Fields) > 0 {
			parts := make([]string, len(pe.Fields))
			for i, f := range pe.Fields {
				parts[i] = f.Field + ": " + f.Reason
			}
			msg += " (" + strings.Join(parts, "; ") + ")"
		}
		return errors.New(msg)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errTimeout
	}
	return err
}

// workout is a workout as the original wrapper returned it: integrators read these
// Pascal-case names into the original's Workout class, whose Owner and Executor are user
// ids (integers), not names. The names come along as OwnerName and ExecutorName, which no
// member of that class matches in any case.
type workout struct {
	ID            int64      `json:"Id"`
	Name          string     `json:"Name"`
	Description   string     `json:"Description"`
	LastChangedAt string     `json:"LastChangedAt"`
	Owner         int64      `json:"Owner"`
	Executor      int64      `json:"Executor"`
	ExerciseCount int        `json:"ExerciseCount"`
	Exercises     []exercise `json:"Exercises"`
	OwnerName     string     `json:"OwnerName"`
	ExecutorName  string     `json:"ExecutorName"`
}

// pageWorkout is the page's workout record, the members the mapping reads.
type pageWorkout struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Description   string     `json:"description"`
	LastChangedAt string     `json:"lastChangedAt"`
	OwnerID       int64      `json:"ownerId"`
	Owner         string     `json:"owner"`
	PersonID      int64      `json:"personId"`
	Executor      string     `json:"executor"`
	ExerciseCount int        `json:"exerciseCount"`
	Exercises     []exercise `json:"exercises"`
}

type exercise struct {
	ID   int64   `json:"Id"`
	Name string  `json:"Name"`
	Data []datum `json:"Data"`
}

type datum struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
	Unit  string `json:"Unit"`
}

// pascalWorkouts maps the page's workout records to the original's: the owner's and the
// executor's ids as Owner and Executor; the page's other members (template, the item's
// exerciseId and dose fields) are left out, as the original had none of them. Decoding an
// exercise ignores case, so the page's id, name and data fill it.
func pascalWorkouts(raw json.RawMessage) ([]byte, error) {
	var page []pageWorkout
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("reading the page's workouts: %w", err)
	}
	ws := make([]workout, len(page))
	for i, p := range page {
		ws[i] = workout{ID: p.ID, Name: p.Name, Description: p.Description, LastChangedAt: p.LastChangedAt,
			Owner: p.OwnerID, Executor: p.PersonID, ExerciseCount: p.ExerciseCount, Exercises: p.Exercises,
			OwnerName: p.Owner, ExecutorName: p.Executor}
		if ws[i].Exercises == nil {
			ws[i].Exercises = []exercise{}
		}
		for j := range ws[i].Exercises {
			if ws[i].Exercises[j].Data == nil {
				ws[i].Exercises[j].Data = []datum{}
			}
		}
	}
	return json.Marshal(ws)
}

// The original's user record, which its sample client reads through a case-sensitive
// dynamic object: these six names, from the page's person record's members.
var userNames = []struct{ original, page string }{
	{"Id", "id"},
	{"CustomId", "customId"},
	{"DateOfBirth", "birthDate"},
	{"Firstname", "firstname"},
	{"Lastname", "lastname"},
	{"Email", "email"},
}

// noDate is how .NET writes DateTime.MinValue, which the original sent for a person
// without a birth date; its sample client tests for the leading "000".
const noDate = "0001-01-01T00:00:00"

// userRecord maps one page person to the original's user record: the six names of
// userNames first, DateOfBirth as .NET writes a date ("1950-07-01T00:00:00", noDate for
// none); then the page's other members under their own names, so nothing is lost, except
// a name that equals one of the six in any case (Newtonsoft would fill the member twice).
func userRecord(raw json.RawMessage) ([]byte, error) {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(raw, &page); err != nil || page == nil {
		return nil, errors.New("reading the page's person: not an object")
	}
	return marshalUser(page, nil)
}

func marshalUser(page map[string]json.RawMessage, more map[string]json.RawMessage) ([]byte, error) {
	taken := map[string]bool{}
	var b bytes.Buffer
	b.WriteByte('{')
	member := func(name string, v json.RawMessage) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		n, _ := json.Marshal(name)
		b.Write(n)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, u := range userNames {
		taken[strings.ToLower(u.original)], taken[u.page] = true, true
		v := page[u.page]
		if u.original == "DateOfBirth" {
			var d string
			_ = json.Unmarshal(v, &d)
			if t, err := time.Parse(time.DateOnly, d); err == nil {
				d = t.Format("2006-01-02T15:04:05")
			} else {
				d = noDate
			}
			v, _ = json.Marshal(d)
		}
		if len(v) == 0 || string(v) == "null" {
			v = json.RawMessage(`""`)
			if u.original == "Id" {
				v = json.RawMessage(`0`)
			}
		}
		member(u.original, v)
	}
	for _, m := range []map[string]json.RawMessage{page, more} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if taken[name] || taken[strings.ToLower(name)] {
				continue
			}
			taken[name] = true
			member(name, m[name])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// userRecords maps the page's list of persons (getlistofusers).
func userRecords(raw json.RawMessage) ([]byte, error) {
	var page []json.RawMessage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, errors.New("reading the page's persons: not an array")
	}
	out := make([]json.RawMessage, len(page))
	for i, p := range page {
		u, err := userRecord(p)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return json.Marshal(out)
}

// selectedUser maps the page's selectPerson answer {person, created, matched} to the user
// record of the person selected, with created and matched beside the record's members:
// the original wrote its page's answer, which its sample client reads.
func selectedUser(raw json.RawMessage) ([]byte, error) {
	var ans struct {
		Person  map[string]json.RawMessage `json:"person"`
		Created json.RawMessage            `json:"created"`
		Matched json.RawMessage            `json:"matched"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Person == nil {
		return nil, errors.New("reading the page's selected person: no person")
	}
	more := map[string]json.RawMessage{}
	if ans.Created != nil {
		more["created"] = ans.Created
	}
	if ans.Matched != nil {
		more["matched"] = ans.Matched
	}
	return marshalUser(ans.Person, more)
}
