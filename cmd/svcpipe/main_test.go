package main

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/pipe"
)

func TestRun(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	srv, err := pipe.Listen(31337)
	if err != nil {
		t.Fatal(err)
	}
	wintest.PrimePipe(srv.Path())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	got := make(chan command.Command, 10)
	go func() {
		done <- srv.Serve(ctx, func(ctx context.Context, c command.Command) ([]byte, bool, error) {
			got <- c
			switch c.Name {
			case command.Version:
				return []byte("2.1.4.19787"), true, nil
			case command.GetListOfUsers:
				return nil, false, errors.New("nobody is signed in")
			}
			return nil, false, nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for _, tt := range []struct {
		name     string
		argv     []string
		code     int
		stdout   string
		stderr   string
		wantArgs map[string]any
	}{
		{"version by pid", []string{"-pid", "31337", "version"}, exitOK, "2.1.4.19787\n", "", map[string]any{}},
		{"key=value as strings", []string{"-path", srv.Path(), "OpenWorkout", "id=7"}, exitOK, "", "", map[string]any{"id": int64(7)}},
		{"JSON arguments", []string{"-pid", "31337", "selectperson",
			`{"customid":"1","firstname":"A","lastname":"B","profiledata":[{"key":"w","value":72}]}`}, exitOK, "", "", nil},
		{"error reply", []string{"-pid", "31337", "getlistofusers"}, exitFailed, `{"error":"nobody is signed in"}` + "\n", "answered an error", map[string]any{}},
		{"refused by the wrapper", []string{"-pid", "31337", "openworkout"}, exitFailed, `{"error":"openworkout: id: required"}` + "\n", "", nil},
		{"no wrapper", []string{"-pid", "1", "-timeout", "1s", "version"}, exitFailed, "", "svcpipe: calling", nil},
		{"no method", []string{"-pid", "31337"}, exitUsage, "", "Methods:", nil},
		{"pid and path", []string{"-pid", "1", "-path", "x", "version"}, exitUsage, "", "Methods:", nil},
		{"bad pair", []string{"-pid", "1", "show", "x"}, exitUsage, "", "key=value or one JSON object", nil},
		{"bad JSON", []string{"-pid", "1", "show", "{x"}, exitUsage, "", "reading the JSON arguments", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.argv, &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("run(%q) = %d, stdout %q, stderr %q; want %d, %q, %q", tt.argv, code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
			if tt.wantArgs != nil {
				select {
				case c := <-got:
					if !reflect.DeepEqual(c.Args, tt.wantArgs) {
						t.Fatalf("the wrapper got %v, want %v", c.Args, tt.wantArgs)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the wrapper got nothing")
				}
			}
			for len(got) > 0 {
				<-got
			}
		})
	}
}
