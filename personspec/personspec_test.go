package personspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeSelect(t *testing.T) {
	measured := time.Date(2024, 3, 5, 8, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want *Select
	}{
		{"customid only", `{"customid":"P-17","firstname":"Åsa","lastname":"Ørnø"}`,
			&Select{CustomID: "P-17", Firstname: "Åsa", Lastname: "Ørnø"}},
		{"names case-insensitive", `{"customId":"7","FirstName":"A","LASTNAME":"B","dateOfBirth":"1980-02-29","phoneHome":"1","PhoneWork":"2","ZipCode":"0150"}`,
			&Select{CustomID: "7", Firstname: "A", Lastname: "B", DateOfBirth: "1980-02-29", PhoneHome: "1", PhoneWork: "2", Zipcode: "0150"}},
		{"userid as string", `{"userid":"42","firstname":"A","lastname":"B"}`,
			&Select{UserID: 42, Firstname: "A", Lastname: "B"}},
		{"userid as number", `{"userid":42,"firstname":"A","lastname":"B"}`,
			&Select{UserID: 42, Firstname: "A", Lastname: "B"}},
		{"userid 0 with customid", `{"userid":0,"customid":"c","firstname":"A","lastname":"B"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B"}},
		{"userid empty string", `{"userid":"","customid":"c","firstname":"A","lastname":"B"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B"}},
		{"customid as number", `{"customid":1234,"firstname":"A","lastname":"B"}`,
			&Select{CustomID: "1234", Firstname: "A", Lastname: "B"}},
		{"obsolete id", `{"id":"old","firstname":"A","lastname":"B"}`,
			&Select{CustomID: "old", Firstname: "A", Lastname: "B"}},
		{"customid wins over id", `{"id":"old","customid":"new","firstname":"A","lastname":"B"}`,
			&Select{CustomID: "new", Firstname: "A", Lastname: "B"}},
		{"trimmed", `{"customid":" c ","firstname":" A\t","lastname":"B "}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B"}},
		{"nulls are absent", `{"customid":"c","firstname":"A","lastname":"B","email":null,"gender":null,"profiledata":null,"userid":null}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B"}},
		{"all contact fields", `{"customid":"c","firstname":"A","lastname":"B","email":"a@example.com","address":"Gate 1","mobile":"+47 1","country":"NO","location":"Oslo"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Email: "a@example.com", Address: "Gate 1", Mobile: "+47 1", Country: "NO", Location: "Oslo"}},
		{"gender F", `{"customid":"c","firstname":"A","lastname":"B","gender":"F"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Gender: "female"}},
		{"gender k", `{"customid":"c","firstname":"A","lastname":"B","gender":"k"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Gender: "female"}},
		{"gender Male", `{"customid":"c","firstname":"A","lastname":"B","gender":"Male"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Gender: "male"}},
		{"gender m", `{"customid":"c","firstname":"A","lastname":"B","gender":"m"}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Gender: "male"}},
		{"extra members kept", `{"customid":"c","firstname":"A","lastname":"B","Diagnosis":{"code":"M17"},"x":[1, 2]}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Extra: map[string]json.RawMessage{
				"diagnosis": json.RawMessage(`{"code":"M17"}`), "x": json.RawMessage(`[1, 2]`)}}},
		{"profile data", `{"customid":"c","firstname":"A","lastname":"B","profileData":[
			{"key":"weight","name":"Weight","value":72.5,"unit":"kg","date":"2024-03-05 08:30","source":"EHR","description":"morning","Device":"scale 2","count":3},
			{"key":"height","value":"180","date":""}]}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Profile: []ProfileEntry{
				{Key: "weight", Name: "Weight", Value: "72.5", Unit: "kg", Date: measured, Source: "EHR", Description: "morning",
					Extra: map[string]string{"device": "scale 2", "count": "3"}},
				{Key: "height", Value: "180"},
			}}},
		{"empty profile", `{"customid":"c","firstname":"A","lastname":"B","profiledata":[]}`,
			&Select{CustomID: "c", Firstname: "A", Lastname: "B", Profile: nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs, err := DecodeSelect([]byte(tt.in))
			if err != nil || errs != nil {
				t.Fatalf("DecodeSelect(%s) = errors %v, %v; want none", tt.in, errs, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeSelect(%s) =\n%+v, want\n%+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeSelectFieldErrors(t *testing.T) {
	long := strings.Repeat("é", 257)
	manyProfile := "[" + strings.TrimSuffix(strings.Repeat(`{"key":"k"},`, 201), ",") + "]"
	var manyExtra strings.Builder
	for i := range 51 {
		fmt.Fprintf(&manyExtra, `,"x%d":1`, i)
	}
	tests := []struct {
		name string
		in   string
		want []FieldError
	}{
		{"nothing", `{}`, []FieldError{{"firstname", "required"}, {"lastname", "required"}, {"customid", "required when userid is 0"}}},
		{"blank names", `{"customid":"c","firstname":"  ","lastname":""}`, []FieldError{{"firstname", "required"}, {"lastname", "required"}}},
		{"negative userid", `{"userid":-1,"firstname":"A","lastname":"B"}`,
			[]FieldError{{"userid", "must be an integer of 0 or more"}, {"customid", "required when userid is 0"}}},
		{"fractional userid", `{"userid":1.5,"customid":"c","firstname":"A","lastname":"B"}`, []FieldError{{"userid", "must be an integer of 0 or more"}}},
		{"userid not a number", `{"userid":"abc","customid":"c","firstname":"A","lastname":"B"}`, []FieldError{{"userid", "must be an integer of 0 or more"}}},
		{"userid bool", `{"userid":true,"customid":"c","firstname":"A","lastname":"B"}`, []FieldError{{"userid", "must be an integer"}}},
		{"userid overflow", `{"userid":"9223372036854775808","customid":"c","firstname":"A","lastname":"B"}`, []FieldError{{"userid", "must be an integer of 0 or more"}}},
		{"firstname object", `{"customid":"c","firstname":{},"lastname":"B"}`, []FieldError{{"firstname", "must be a string"}}},
		{"too long", `{"customid":"c","firstname":"A","lastname":"B","email":"` + long + `"}`, []FieldError{{"email", "too long (at most 256 characters)"}}},
		{"NUL", `{"customid":"c","firstname":"A\u0000","lastname":"B"}`, []FieldError{{"firstname", "contains a control character"}}},
		{"gender other", `{"customid":"c","firstname":"A","lastname":"B","gender":"x"}`, []FieldError{{"gender", "must be female, male, F, M or K"}}},
		{"birth date format", `{"customid":"c","firstname":"A","lastname":"B","dateofbirth":"03.05.1980"}`, []FieldError{{"dateofbirth", "must be a date yyyy-MM-dd"}}},
		{"birth date invalid day", `{"customid":"c","firstname":"A","lastname":"B","dateofbirth":"1981-02-29"}`, []FieldError{{"dateofbirth", "must be a date yyyy-MM-dd"}}},
		{"profile not array", `{"customid":"c","firstname":"A","lastname":"B","profiledata":{}}`, []FieldError{{"profiledata", "must be an array"}}},
		{"profile too many", `{"customid":"c","firstname":"A","lastname":"B","profiledata":` + manyProfile + `}`, []FieldError{{"profiledata", "too many entries (at most 200)"}}},
		{"profile entry problems", `{"customid":"c","firstname":"A","lastname":"B","profiledata":[1,{"name":"n","date":"2024-03-05T08:30:00Z"},{"key":"k","value":"` + strings.Repeat("v", 1025) + `","x":[]}]}`,
			[]FieldError{{"profiledata[0]", "must be an object with distinct member names"},
				{"profiledata[1].date", "must be yyyy-MM-dd HH:mm:ss, yyyy-MM-dd HH:mm or yyyy-MM-dd"}, {"profiledata[1].key", "required"},
				{"profiledata[2].value", "too long (at most 1024 characters)"}, {"profiledata[2].x", "must be a string"}}},
		{"profile entry with a repeated member", `{"customid":"c","firstname":"A","lastname":"B","profiledata":[{"key":"k","KEY":"j"}]}`,
			[]FieldError{{"profiledata[0]", "must be an object with distinct member names"}}},
		{"too many extra", `{"customid":"c","firstname":"A","lastname":"B"` + manyExtra.String() + `}`, []FieldError{{"x50", "too many unknown members (at most 50)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs, err := DecodeSelect([]byte(tt.in))
			if err != nil || got != nil {
				t.Fatalf("DecodeSelect(%.80s) = %+v, %v; want field errors only", tt.in, got, err)
			}
			if !reflect.DeepEqual(errs, tt.want) {
				t.Errorf("DecodeSelect(%.80s) field errors = %v, want %v", tt.in, errs, tt.want)
			}
		})
	}
}

func TestDecodeSelectRefusesInput(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"a":1,}`, `{"a" 1}`, `{} {}`, `{}x`,
		`{"customid":"c","CustomID":"d","firstname":"A","lastname":"B"}`,
		"{\"customid\":\"\xff\",\"firstname\":\"A\",\"lastname\":\"B\"}",
	} {
		if got, errs, err := DecodeSelect([]byte(in)); err == nil {
			t.Errorf("DecodeSelect(%q) = %+v, %v, nil; want an error", in, got, errs)
		}
	}
}

func TestParseProfileDate(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time // zero: refused
	}{
		{"2024-03-05 08:30:15", time.Date(2024, 3, 5, 8, 30, 15, 0, time.UTC)},
		{"2024-03-05 08:30", time.Date(2024, 3, 5, 8, 30, 0, 0, time.UTC)},
		{"2024-03-05", time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"1900-01-01", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2023-02-29", time.Time{}},
		{"2024-13-01", time.Time{}},
		{"2024-03-05 24:00", time.Time{}},
		{"2024-03-05 23:60", time.Time{}},
		{"2024-03-05 23:59:60", time.Time{}},
		{"2024-03-05 8:30", time.Time{}},
		{"2024-03-05 08:30:15.5", time.Time{}},
		{"2024-03-05T08:30:15", time.Time{}},
		{"2024-03-05 08:30:15Z", time.Time{}},
		{"2024-3-5", time.Time{}},
		{"24-03-05", time.Time{}},
		{"05.03.2024", time.Time{}},
		{" 2024-03-05", time.Time{}},
		{"1899-12-31", time.Time{}},
		{"0001-01-01", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		got, err := ParseProfileDate(tt.in)
		switch {
		case tt.want.IsZero() && err == nil:
			t.Errorf("ParseProfileDate(%q) = %v, want an error", tt.in, got)
		case !tt.want.IsZero() && (err != nil || !got.Equal(tt.want) || got.Location() != time.UTC):
			t.Errorf("ParseProfileDate(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatProfileDate(t *testing.T) {
	oslo := time.FixedZone("CET", 3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Time{}, ""},
		{time.Date(2024, 3, 5, 8, 30, 0, 0, time.UTC), "2024-03-05 08:30:00"},
		{time.Date(2024, 3, 5, 9, 30, 0, 0, oslo), "2024-03-05 08:30:00"},
	}
	for _, tt := range tests {
		if got := FormatProfileDate(tt.in); got != tt.want {
			t.Errorf("FormatProfileDate(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseGender(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"female", "female", true},
		{"Female", "female", true},
		{" F ", "female", true},
		{"f", "female", true},
		{"K", "female", true},
		{"k\t", "female", true},
		{"male", "male", true},
		{"MALE", "male", true},
		{"m", "male", true},
		{" M\n", "male", true},
		{"", "", true},
		{"   ", "", true},
		{"x", "", false},
		{"kvinne", "", false},
		{"mann", "", false},
		{"fe male", "", false},
	}
	for _, tt := range tests {
		if got, ok := ParseGender(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("ParseGender(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestShorten(t *testing.T) {
	forty := strings.Repeat("å", 40)
	tests := []struct{ in, want string }{
		{"", ""},
		{"name", "name"},
		{forty, forty},
		{forty + "x", forty + "…"},
		{strings.Repeat("ø", 300), strings.Repeat("ø", 40) + "…"},
	}
	for _, tt := range tests {
		if got := Shorten(tt.in); got != tt.want {
			t.Errorf("Shorten(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
