package localsock

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// An endpoint answers its owner's Dial; a second Listen on the same name while it is
// open is refused with ErrInUse, and once it is closed the name can be listened on again.
func TestListenDialInUse(t *testing.T) {
	path := testPath(t, "roundtrip")
	ln, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen(%q) = %v", path, err)
	}
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = c.Write([]byte("hello"))
		done <- err
	}()
	primeTestPipe(path)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatalf("Dial(%q) = %v", path, err)
	}
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want %q", got, err, "hello")
	}
	if err := <-done; err != nil {
		t.Fatalf("Accept and write: %v", err)
	}

	if again, err := Listen(path); !errors.Is(err, ErrInUse) {
		if again != nil {
			again.Close()
		}
		t.Fatalf("Listen(%q) while in use = %v, want ErrInUse", path, err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err = Listen(path)
	if err != nil {
		t.Fatalf("Listen(%q) after Close = %v", path, err)
	}
	ln.Close()
}

// Dial of a name nobody listens on fails rather than waiting.
func TestDialNobody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := Dial(ctx, testPath(t, "nobody")); err == nil {
		c.Close()
		t.Fatal("Dial of a name nobody listens on succeeded")
	}
}
