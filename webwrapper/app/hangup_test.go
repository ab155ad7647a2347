//go:build !windows

package app

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/pipe"
)

// A pipe client that writes its command and hangs up at once, as the original's sample
// client does with openworkout, loses nothing: selectperson and openworkout sent before
// the sign-in, behind a command that waits for it, run once someone signs in. Only
// selectperson's reply is dropped.
func TestClientHangsUpBeforeSignIn(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	a, eng := start(t, Options{})
	eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
	eng.Handle("selectPerson", func([]any) (any, error) {
		return map[string]any{"person": map[string]any{"id": 3, "customId": "1001"}, "created": true, "matched": 1}, nil
	})
	eng.Handle("openWorkout", func([]any) (any, error) { return nil, nil })
	srv, err := pipe.Listen(5151)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, a.Do) }()
	t.Cleanup(func() { cancel(); <-served })

	// The first client waits for the sign-in, and stays.
	first := make(chan error, 1)
	go func() {
		cctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		_, err := pipe.Call(cctx, srv.Path(), "getlistofusers", map[string]any{"customid": "1001"})
		first <- err
	}()
	waitRestores(t, eng, 1)

	// Behind it, two clients write and hang up at once.
	for _, req := range []string{
		`{"Method":"SelectPerson","Args":{"userid":"0","customId":"1001","firstName":"A","lastName":"B","source":"EHR"}}`,
		`{"Method":"OpenWorkout","Args":{"id":"12"}}`,
	} {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		if err := pipe.WriteMessage(conn, []byte(req)); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	// Time for a wrapper that dropped a command with its client to do so; one that keeps
	// them passes whatever the wait.
	time.Sleep(300 * time.Millisecond)
	signIn(eng, 7)
	if err := <-first; err != nil {
		t.Fatalf("the waiting client's getlistofusers = %v", err)
	}
	var fns []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fns = fns[:0]
		for _, c := range eng.Calls() {
			fns = append(fns, c.Fn)
		}
		if len(fns) >= 3 {
			break
		}
	}
	// The two connections came at once; which of them the queue took first is not theirs
	// to say.
	if len(fns) != 3 || fns[0] != "getListOfUsers" || !slices.Contains(fns, "selectPerson") || !slices.Contains(fns, "openWorkout") {
		t.Errorf("page calls = %q, want getListOfUsers, then selectPerson and openWorkout: the commands of the clients that hung up run too", fns)
	}
}
