//go:build !windows

package localsock

import "testing"

func TestSessionOf(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DISPLAY": ":0"}, "x11-_0"},
		{map[string]string{"DISPLAY": ":0.0"}, "x11-_0"},
		{map[string]string{"DISPLAY": "localhost:10.0"}, "x11-localhost_10"},
		{map[string]string{"DISPLAY": ":1", "XDG_SESSION_ID": "3"}, "x11-_1"},
		{map[string]string{"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "wayland-wayland-0"},
		{map[string]string{"XDG_SESSION_ID": "c2"}, "session-c2"},
		{map[string]string{"WAYLAND_DISPLAY": "/run/user/1000/w/../x"}, "wayland-_run_user_1000_w_.._x"},
		{nil, ""},
	} {
		if got := sessionOf(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("sessionOf(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
