package lifecycle

import "testing"

func TestCultureURL(t *testing.T) {
	for _, tt := range []struct{ url, culture, want string }{
		{"http://localhost:8080/app/signin", "nb-NO", "http://localhost:8080/app/signin?culture=nb-NO"},
		{"https://svc.example/app/signin?x=1", "sv-SE", "https://svc.example/app/signin?culture=sv-SE&x=1"},
		{"https://svc.example/app/signin?culture=de", "da-DK", "https://svc.example/app/signin?culture=da-DK"},
		{"https://svc.example/app/signin#top", " de-DE ", "https://svc.example/app/signin?culture=de-DE#top"},
		{"https://svc.example/app/signin", "", "https://svc.example/app/signin"},
		{"https://svc.example/app/signin", "a&b=c", "https://svc.example/app/signin?culture=a%26b%3Dc"},
		{"%zz", "nb-NO", "%zz"},
	} {
		if got := cultureURL(tt.url, tt.culture); got != tt.want {
			t.Errorf("cultureURL(%q, %q) = %q, want %q", tt.url, tt.culture, got, tt.want)
		}
	}
}

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

func TestSessionKey(t *testing.T) {
	a := sessionKey(`CLINIC\asa`)
	if a == "" || a != sessionKey(`clinic\ASA`) {
		t.Errorf("sessionKey differs for one user in another case: %q", a)
	}
	if b := sessionKey(`CLINIC\bo`); b == a || b == "" {
		t.Errorf("sessionKey(bo) = %q, want a key of its own", b)
	}
	if sessionKey("") != "" {
		t.Errorf("sessionKey(\"\") = %q, want the one session without an external user", sessionKey(""))
	}
}
