package enginetest

import (
	"context"
	"errors"
	"testing"

	"github.com/partnergate/partnergate/webwrapper/engine"
)

func TestFake(t *testing.T) {
	ctx := context.Background()
	e := New()
	if err := e.Start(ctx, engine.Options{URL: "http://app/", Bounds: engine.Bounds{Width: 800, Height: 600}}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := e.Start(ctx, engine.Options{}); err == nil {
		t.Errorf("second Start = nil, want an error")
	}
	e.Handle("status", func([]any) (any, error) { return map[string]any{"signedIn": true}, nil })
	e.Handle("openWorkout", func([]any) (any, error) { return nil, &engine.PageError{Code: "not_found"} })

	var st struct{ SignedIn bool }
	if err := e.Call(ctx, "status", nil, &st); err != nil || !st.SignedIn {
		t.Errorf("Call(status) = %+v, %v; want signedIn", st, err)
	}
	var pe *engine.PageError
	if err := e.Call(ctx, "openWorkout", []any{int64(7)}, nil); !errors.As(err, &pe) || pe.Code != "not_found" {
		t.Errorf("Call(openWorkout) = %v, want PageError not_found", err)
	}
	if err := e.Call(ctx, "missing", nil, nil); err == nil {
		t.Errorf("Call(missing) = nil, want an error")
	}
	if got := e.Calls(); len(got) != 3 || got[1].Fn != "openWorkout" || got[1].Args[0] != int64(7) {
		t.Errorf("Calls() = %+v", got)
	}

	e.Emit("signedIn", map[string]string{"account": "a"})
	if ev := <-e.Events(); ev.Name != "signedIn" || string(ev.Data) != `{"account":"a"}` {
		t.Errorf("event = %s %s", ev.Name, ev.Data)
	}

	_ = e.Minimize(ctx)
	_ = e.Restore(ctx)
	if m, n := e.Minimized(); m || n != 1 {
		t.Errorf("Minimized() = %v, %d; want false, 1", m, n)
	}
	if b, _, _ := e.Bounds(ctx); b.Width != 800 {
		t.Errorf("Bounds() = %+v, want the start bounds", b)
	}
	_ = e.Navigate(ctx, "http://app/x")
	if got := e.Navigated(); len(got) != 1 || got[0] != "http://app/x" {
		t.Errorf("Navigated() = %q", got)
	}
	_ = e.Close()
	_ = e.Close()
	select {
	case <-e.Closed():
	default:
		t.Errorf("Closed() open after Close")
	}
}
