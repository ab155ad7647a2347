package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/engine"
)

// call runs a command that needs the page as its svcApp function. The reply is the
// page's answer as JSON, but for the commands whose clients read none (openworkout,
// selectperson) and the workouts, which get the original's field names.
func (a *App) call(ctx context.Context, eng engine.Engine, c command.Command) result {
	var (
		fn      string
		args    []any
		noReply bool
	)
	str := func(k string) string { s, _ := c.Args[k].(string); return s }
	switch c.Name {
	case command.SelectPerson:
		fn, args, noReply = "selectPerson", []any{c.Args}, true
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
	if c.Name == command.GetWorkoutsForClient {
		out, err := pascalWorkouts(raw)
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
// Pascal-case names. Decoding ignores case, so the page's camelCase records fill it.
type workout struct {
	ID            int64           `json:"Id"`
	Name          string          `json:"Name"`
	Description   string          `json:"Description"`
	LastChangedAt string          `json:"LastChangedAt"`
	Owner         json.RawMessage `json:"Owner"`
	Executor      json.RawMessage `json:"Executor"`
	ExerciseCount int             `json:"ExerciseCount"`
	Exercises     []exercise      `json:"Exercises"`
}

type exercise struct {
	ID   int64   `json:"Id"`
	Name string  `json:"Name"`
	Data []datum `json:"Data"`
}

type datum struct {
	Key   string          `json:"Key"`
	Value json.RawMessage `json:"Value"`
	Unit  string          `json:"Unit"`
}

// pascalWorkouts maps the page's workout records to the original's field names; the
// page's other members (personId, template, the dose fields) are left out, as the
// original had none of them.
func pascalWorkouts(raw json.RawMessage) ([]byte, error) {
	ws := []workout{}
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, fmt.Errorf("reading the page's workouts: %w", err)
	}
	for i := range ws {
		w := &ws[i]
		w.Owner, w.Executor = orNull(w.Owner), orNull(w.Executor)
		if w.Exercises == nil {
			w.Exercises = []exercise{}
		}
		for j := range w.Exercises {
			e := &w.Exercises[j]
			if e.Data == nil {
				e.Data = []datum{}
			}
			for k := range e.Data {
				e.Data[k].Value = orNull(e.Data[k].Value)
			}
		}
	}
	return json.Marshal(ws)
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}
