package main

import "testing"

func TestAdfsURL(t *testing.T) {
	for _, tc := range []struct{ adfs, key, value, want string }{
		{"https://gw.example/app/directory/clinic/signin", "signon", "anna@clinic.example", "https://gw.example/app/directory/clinic/signin?signon=anna%40clinic.example"},
		{"https://gw.example/app/directory/clinic/signin", "signout", "1", "https://gw.example/app/directory/clinic/signin?signout=1"},
		{"https://gw.example/app/directory/clinic/signin?x=1", "signout", "1", "https://gw.example/app/directory/clinic/signin?signout=1&x=1"},
		{"https://gw.example/app/directory/clinic/signin", "signon", "", "https://gw.example/app/directory/clinic/signin"},
	} {
		if got := adfsURL(tc.adfs, tc.key, tc.value); got != tc.want {
			t.Errorf("adfsURL(%q, %q, %q) = %q, want %q", tc.adfs, tc.key, tc.value, got, tc.want)
		}
	}
}

func TestStartSignon(t *testing.T) {
	if got := startSignon([]string{"signon=anna"}, "osuser"); got != "anna" {
		t.Errorf("startSignon(signon=anna) = %q, want anna", got)
	}
	if got := startSignon(nil, "osuser"); got != "osuser" {
		t.Errorf("startSignon() = %q, want the operating-system user", got)
	}
}
