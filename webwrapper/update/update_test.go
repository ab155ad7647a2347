package update

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"2.1.5.1", "2.1.4.19787", 1},
		{"2.1.4.19787", "2.1.5.1", -1},
		{"2.1.4.19787", "2.1.4.19787", 0},
		{"2.1", "2.1.0.0", 0},
		{"10.0.0.0", "9.9.9.9", 1},
		{"2.1.4.020", "2.1.4.19", 1},
	}
	for _, tt := range tests {
		if got, err := Compare(tt.a, tt.b); err != nil || got != tt.want {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d", tt.a, tt.b, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "2.1.x", "1.2.3.4.5", "-1.0", "+1.0", "1..2"} {
		if _, err := Compare(bad, "1.0"); err == nil {
			t.Errorf("Compare(%q, 1.0) = nil error", bad)
		}
	}
}

func TestFeedURL(t *testing.T) {
	tests := []struct{ site, path, want string }{
		{"https://dl.example/wrapper/", "", "https://dl.example/wrapper/stable.json"},
		{"https://dl.example/wrapper", "beta", "https://dl.example/wrapper/beta.json"},
		{"https://dl.example/wrapper", "https://other.example/feed.json", "https://other.example/feed.json"},
		{"https://dl.example/wrapper", "a b", "https://dl.example/wrapper/a%20b.json"},
	}
	for _, tt := range tests {
		if got := FeedURL(tt.site, tt.path); got != tt.want {
			t.Errorf("FeedURL(%q, %q) = %q, want %q", tt.site, tt.path, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		newer  bool
		err    string
	}{
		{"newer", 200, `{"version":"2.1.5.1","url":"https://dl.example/x-2.1.5.1.msi"}`, true, ""},
		{"same", 200, `{"version":"2.1.4.19787","url":"https://dl.example/x.msi"}`, false, ""},
		{"older", 200, `{"version":"2.0","url":"https://dl.example/x.msi"}`, false, ""},
		{"not found", 404, ``, false, "404"},
		{"not json", 200, `<html>`, false, "reading feed"},
		{"bad version", 200, `{"version":"next","url":"https://dl.example/x.msi"}`, false, "dotted numbers"},
		{"script link", 200, `{"version":"9.0","url":"javascript:alert(1)"}`, false, "download link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			r, newer, err := Check(context.Background(), srv.Client(), srv.URL+"/stable.json", "2.1.4.19787")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Check() error = %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || newer != tt.newer {
				t.Fatalf("Check() = %+v, %v, %v; want newer %v", r, newer, err, tt.newer)
			}
			if newer && r.URL != "https://dl.example/x-2.1.5.1.msi" {
				t.Errorf("Check() release = %+v", r)
			}
		})
	}
}

// A feed without url links the channel's MSI of that version, next to the feed.
func TestCheckMSINextToFeed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"version":"2.1.5.8"}`))
	}))
	defer srv.Close()
	r, newer, err := Check(context.Background(), srv.Client(), srv.URL+"/webwrapper/beta.json", "2.1.5.7")
	if err != nil || !newer || r.URL != srv.URL+"/webwrapper/SvcWebwrapper-2.1.5.8.msi" {
		t.Fatalf("Check() = %+v, %v, %v; want SvcWebwrapper-2.1.5.8.msi next to the feed", r, newer, err)
	}
}

// A feed that never answers costs the start nothing: Start returns at once and the
// result is a timeout error.
func TestStartNeverDelays(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	begin := time.Now()
	ch := Start(context.Background(), srv.Client(), srv.URL, "2.1.4.19787", 200*time.Millisecond)
	if d := time.Since(begin); d > 50*time.Millisecond {
		t.Errorf("Start took %v", d)
	}
	select {
	case r := <-ch:
		if r.Err == nil || r.Newer {
			t.Errorf("result = %+v, want a timeout error", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no result after the timeout")
	}
}

func TestStartNewer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"version":"2.1.5.1","url":"https://dl.example/x.msi"}`))
	}))
	defer srv.Close()
	r := <-Start(context.Background(), srv.Client(), srv.URL, "2.1.4.19787", 5*time.Second)
	if r.Err != nil || !r.Newer || r.Release.Version != "2.1.5.1" {
		t.Errorf("result = %+v, want 2.1.5.1 newer", r)
	}
}
