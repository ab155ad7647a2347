package main

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
