package personspec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeSelect feeds arbitrary bytes to the selectperson decoder: it must not panic,
// must give exactly one kind of answer, and what it accepts must meet the rules and come
// back the same when written out as selectperson arguments and decoded again.
func FuzzDecodeSelect(f *testing.F) {
	for _, s := range []string{
		`{"userid":0,"customid":"P-1","firstname":"Åsa","lastname":"Ørnø","gender":"K","dateofbirth":"1950-07-01"}`,
		`{"UserId":"12","FirstName":"A","LastName":"B","profileData":[{"key":"weight","value":72.5,"unit":"kg","date":"2024-03-05 08:30","Device":"x"}]}`,
		`{"id":"old","firstname":"A","lastname":"B","extra":{"nested":[1,"two",null]},"note":"  x  "}`,
		`{"customid":"c","firstname":"A","lastname":"B","profiledata":[{"key":"k","KEY":"j"}]}`,
		`{"customid":"c","customId":"d"}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sel, errs, err := DecodeSelect(data)
		switch {
		case err != nil:
			if sel != nil || errs != nil {
				t.Fatalf("DecodeSelect(%q) = %+v, %v with error %v", data, sel, errs, err)
			}
			return
		case errs != nil:
			if sel != nil {
				t.Fatalf("DecodeSelect(%q) = %+v with field errors %v", data, sel, errs)
			}
			for _, e := range errs {
				if e.Reason == "" {
					t.Fatalf("DecodeSelect(%q) field error %+v has no reason", data, e)
				}
			}
			return
		case sel == nil:
			t.Fatalf("DecodeSelect(%q) = nil with no error", data)
		}
		checkSelect(t, data, sel)

		again, errs, err := DecodeSelect(encodeSelect(t, sel))
		if err != nil || errs != nil {
			t.Fatalf("DecodeSelect(encoded %+v) = %v, %v; want it accepted", sel, errs, err)
		}
		if !reflect.DeepEqual(compacted(t, again), compacted(t, sel)) {
			t.Fatalf("DecodeSelect(encoded) =\n%+v, want\n%+v", again, sel)
		}
	})
}

// checkSelect asserts the rules an accepted Select meets.
func checkSelect(t *testing.T, data []byte, sel *Select) {
	t.Helper()
	if sel.Firstname == "" || sel.Lastname == "" || sel.UserID < 0 || (sel.UserID == 0 && sel.CustomID == "") {
		t.Fatalf("DecodeSelect(%q) accepted %+v without its required members", data, sel)
	}
	if sel.Gender != "" && sel.Gender != "female" && sel.Gender != "male" {
		t.Fatalf("DecodeSelect(%q) gender = %q", data, sel.Gender)
	}
	if sel.DateOfBirth != "" {
		if _, err := time.Parse(dateLayout, sel.DateOfBirth); err != nil {
			t.Fatalf("DecodeSelect(%q) date of birth = %q", data, sel.DateOfBirth)
		}
	}
	for _, s := range []string{sel.CustomID, sel.Firstname, sel.Lastname, sel.Email, sel.Address, sel.PhoneHome,
		sel.PhoneWork, sel.Mobile, sel.Country, sel.Zipcode, sel.Location} {
		if utf8.RuneCountInString(s) > MaxText || !utf8.ValidString(s) {
			t.Fatalf("DecodeSelect(%q) accepted %q", data, s)
		}
	}
	if len(sel.Profile) > maxProfile || len(sel.Extra) > maxExtra {
		t.Fatalf("DecodeSelect(%q) accepted %d profile entries, %d extra members", data, len(sel.Profile), len(sel.Extra))
	}
	for _, e := range sel.Profile {
		if e.Key == "" || utf8.RuneCountInString(e.Value) > maxProfileValue || len(e.Extra) > maxExtra {
			t.Fatalf("DecodeSelect(%q) accepted profile entry %+v", data, e)
		}
		if !e.Date.IsZero() && (e.Date.Location() != time.UTC || e.Date.Year() < minParsedYear) {
			t.Fatalf("DecodeSelect(%q) profile date = %v", data, e.Date)
		}
	}
	for name, raw := range sel.Extra {
		if !json.Valid(raw) || utf8.RuneCountInString(name) > MaxText {
			t.Fatalf("DecodeSelect(%q) kept extra member %q = %q", data, name, raw)
		}
	}
}

// encodeSelect writes sel as selectperson arguments, as the desktop wrapper would send them.
func encodeSelect(t *testing.T, sel *Select) []byte {
	t.Helper()
	m := map[string]any{
		"userid": sel.UserID, "customid": sel.CustomID, "firstname": sel.Firstname, "lastname": sel.Lastname,
		"email": sel.Email, "address": sel.Address, "phonehome": sel.PhoneHome, "phonework": sel.PhoneWork,
		"mobile": sel.Mobile, "country": sel.Country, "zipcode": sel.Zipcode, "location": sel.Location,
		"gender": sel.Gender, "dateofbirth": sel.DateOfBirth,
	}
	var profile []map[string]string
	for _, e := range sel.Profile {
		entry := map[string]string{}
		for k, v := range e.Extra {
			entry[k] = v
		}
		for k, v := range map[string]string{"key": e.Key, "name": e.Name, "value": e.Value, "unit": e.Unit,
			"date": FormatProfileDate(e.Date), "source": e.Source, "description": e.Description} {
			entry[k] = v
		}
		profile = append(profile, entry)
	}
	m["profiledata"] = profile
	for k, v := range sel.Extra {
		m[k] = v
	}
	// No HTML escaping, which would rewrite '<' in the extra members kept verbatim.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatalf("encoding %+v: %v", sel, err)
	}
	return b.Bytes()
}

// compacted returns sel with its extra members in compact form, as encoding them gives.
func compacted(t *testing.T, sel *Select) *Select {
	t.Helper()
	c := *sel
	if sel.Extra != nil {
		c.Extra = map[string]json.RawMessage{}
		for k, v := range sel.Extra {
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				t.Fatalf("compacting extra member %q: %v", k, err)
			}
			c.Extra[k] = b.Bytes()
		}
	}
	return &c
}

// FuzzParseProfileDate checks that an accepted date is UTC, from 1900 on, in one of the
// three layouts, and that formatting and parsing it again gives the same instant.
func FuzzParseProfileDate(f *testing.F) {
	for _, s := range []string{"2024-03-05 08:30:15", "2024-03-05 08:30", "2024-03-05", "2024-03-05 8:30", "2024-03-05 08:30:15.5", "1899-12-31"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseProfileDate(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC || got.Year() < minParsedYear || got.Nanosecond() != 0 {
			t.Fatalf("ParseProfileDate(%q) = %v", s, got)
		}
		if got.Format(dateLayout) != s && got.Format(minuteLayout) != s && got.Format(secondLayout) != s {
			t.Fatalf("ParseProfileDate(%q) = %v, which no layout writes as the input", s, got)
		}
		formatted := FormatProfileDate(got)
		again, err := ParseProfileDate(formatted)
		if err != nil || !again.Equal(got) {
			t.Fatalf("ParseProfileDate(FormatProfileDate(%v) = %q) = %v, %v", got, formatted, again, err)
		}
	})
}
