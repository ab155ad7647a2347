package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/personspec"
)

// pipeArgs decodes JSON the way the pipe does, numbers as json.Number.
func pipeArgs(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		name, method, args string
		want               map[string]any
		wantErr            string // substring; "" = accepted
	}{
		{"version", "Version", `{}`, map[string]any{}, ""},
		{"hide ignores args", "HIDE", `{"x":1}`, map[string]any{"x": json.Number("1")}, ""},
		{"unknown", "Frobnicate", `{}`, nil, `unknown command "frobnicate"`},
		{"workouts by customid", "GetWorkoutsForClient", `{"customId":"P-1"}`, map[string]any{"customid": "P-1"}, ""},
		{"workouts by string userid", "getworkoutsforclient", `{"UserId":"42","from":"2024-03-05"}`,
			map[string]any{"userid": int64(42), "from": "2024-03-05"}, ""},
		{"workouts from a time", "getworkoutsforclient", `{"userid":42,"from":"2024-03-05 08:30"}`,
			map[string]any{"userid": int64(42), "from": "2024-03-05T08:30:00Z"}, ""},
		{"workouts from RFC 3339", "getworkoutsforclient", `{"userid":42,"from":"2024-03-05T08:30:00+01:00"}`,
			map[string]any{"userid": int64(42), "from": "2024-03-05T08:30:00+01:00"}, ""},
		{"workouts blank userid is absent", "getworkoutsforclient", `{"customid":"c","userid":""}`, map[string]any{"customid": "c"}, ""},
		{"workouts neither", "getworkoutsforclient", `{}`, nil, "customid: required unless userid is given"},
		// The original's rule: userid when above 0, else customid; "0" is no userid.
		{"workouts both", "getworkoutsforclient", `{"customid":"c","userid":1}`, map[string]any{"userid": int64(1)}, ""},
		{"workouts userid 0 and customid", "GetWorkoutsForClient", `{"customId":"c","userId":"0"}`, map[string]any{"customid": "c"}, ""},
		{"workouts userid 0 alone", "getworkoutsforclient", `{"userid":0}`, nil, "customid: required unless userid is given"},
		{"workouts negative userid", "getworkoutsforclient", `{"userid":-3}`, nil, "userid: must be a positive integer"},
		{"workouts bad from", "getworkoutsforclient", `{"customid":"c","from":"05.03.2024"}`, nil, "from: must be a date yyyy-MM-dd"},
		{"workouts userid not a number", "getworkoutsforclient", `{"userid":"x"}`, nil, "userid: must be an integer"},
		{"workouts userid fraction", "getworkoutsforclient", `{"userid":1.5}`, nil, "userid: must be an integer"},
		{"workouts customid object", "getworkoutsforclient", `{"customid":{}}`, nil, "customid: must be a string or a number"},
		{"workouts customid control", "getworkoutsforclient", `{"customid":"a\u0000b"}`, nil, "customid: contains a control character"},
		{"openworkout", "OpenWorkout", `{"Id":"7"}`, map[string]any{"id": int64(7)}, ""},
		{"openworkout missing", "openworkout", `{}`, nil, "openworkout: id: required"},
		{"openworkout negative", "openworkout", `{"id":-1}`, nil, "id: must be a positive integer"},
		{"getlistofusers", "GetListOfUsers", `{}`, map[string]any{}, ""},
		{"getlistofusers numeric customid", "getlistofusers", `{"customid":1001}`, map[string]any{"customid": "1001"}, ""},
		{"setcustomid", "SetCustomId", `{"userId":"5","customId":"X"}`, map[string]any{"userid": int64(5), "customid": "X"}, ""},
		{"setcustomid missing both", "setcustomid", `{}`, nil, "setcustomid: userid: required; customid: required"},
		{"twice after lower-casing", "setcustomid", `{"userid":5,"customid":"a","customId":"b"}`, nil, "customid: given twice"},
		{"twice, the first blank", "setcustomid", `{"userid":"","UserId":5,"customid":"a"}`, nil, "userid: given twice"},
		{"twice in selectperson", "selectperson", `{"customid":"a","firstName":"A","firstname":"B","lastname":"C"}`, nil, "firstname: given twice"},
		{"selectperson", "SelectPerson", `{"userid":"0","id":"1001","firstname":"Åsa","lastname":"Ørnø","gender":"K","source":"EHR"}`,
			map[string]any{"userid": int64(0), "id": "1001", "firstname": "Åsa", "lastname": "Ørnø", "gender": "female", "source": "EHR"}, ""},
		{"selectperson userid only", "selectperson", `{"userid":42,"firstname":"A","lastname":"B"}`,
			map[string]any{"userid": int64(42), "firstname": "A", "lastname": "B"}, ""},
		{"selectperson no ids", "selectperson", `{"firstname":"A","lastname":"B"}`, nil, "customid: required when userid is 0"},
		{"selectperson no names", "selectperson", `{"customid":"c"}`, nil, "selectperson: firstname: required; lastname: required"},
		{"selectperson gender Kvinne", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","gender":"Kvinne"}`,
			map[string]any{"customid": "c", "firstname": "A", "lastname": "B", "gender": "female"}, ""},
		{"selectperson gender mann", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","Gender":"mann"}`,
			map[string]any{"customid": "c", "firstname": "A", "lastname": "B", "gender": "male"}, ""},
		{"selectperson gender other left out", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","gender":"x"}`,
			map[string]any{"customid": "c", "firstname": "A", "lastname": "B"}, ""},
		{"selectperson birth date ISO", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","dateOfBirth":"1950-07-01"}`,
			map[string]any{"customid": "c", "firstname": "A", "lastname": "B", "dateofbirth": "1950-07-01"}, ""},
		{"selectperson birth date unreadable left out", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","dateOfBirth":"someday"}`,
			map[string]any{"customid": "c", "firstname": "A", "lastname": "B"}, ""},
		{"selectperson profile date", "selectperson",
			`{"customid":"c","firstname":"A","lastname":"B","profiledata":[{"key":"w","date":"2024-03-05 08:30:15"},{"key":"h","date":"2024-03-05T08"}]}`,
			nil, "profiledata[1].date: must be"},
		{"signon", "signon", `{"user":"jdoe"}`, map[string]any{"user": "jdoe"}, ""},
		{"signon blank", "signon", `{"user":"  "}`, nil, "user: required"},
		{"queryexercises empty text", "queryexercises", `{"text":""}`, map[string]any{}, ""},
		{"setcase", "setcase", `{"caseid":"C-9"}`, map[string]any{"caseid": "C-9"}, ""},
		// A link's case id may be linkspec.MaxIDLength long; setcase takes the same ids.
		{"setcase longest", "setcase", `{"caseid":"` + strings.Repeat("å", 256) + `"}`, map[string]any{"caseid": strings.Repeat("å", 256)}, ""},
		{"setcase too long", "setcase", `{"caseid":"` + strings.Repeat("x", 257) + `"}`, nil, "caseid: too long (at most 256 characters)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.method, pipeArgs(t, tt.args), FromPipe)
			if tt.wantErr != "" {
				var ce *Error
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ce) {
					t.Fatalf("New(%q, %s) error = %v, want one containing %q", tt.method, tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q, %s) error = %v", tt.method, tt.args, err)
			}
			if !reflect.DeepEqual(c.Args, tt.want) || c.Source != FromPipe {
				t.Fatalf("New(%q, %s) = %#v from %q, want %#v", tt.method, tt.args, c.Args, c.Source, tt.want)
			}
		})
	}
}

func TestSelectPersonProfileKept(t *testing.T) {
	c, err := New("selectperson", pipeArgs(t, `{"customid":"c","firstname":"A","lastname":"B","extra":{"a":[1]},
		"profiledata":[{"key":"weight","value":"72.5","unit":"kg","date":"2024-03-05","device":"scale"}]}`), FromPipe)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Args["profiledata"].([]any); !ok {
		t.Errorf("profiledata = %T, want []any", c.Args["profiledata"])
	}
	if _, ok := c.Args["extra"].(map[string]any); !ok {
		t.Errorf("extra = %T, want the unknown member kept", c.Args["extra"])
	}
}

func TestValidateTyped(t *testing.T) {
	for _, tt := range []struct {
		name    string
		c       Command
		wantErr string
	}{
		{"xml person", Command{Name: SelectPerson, Source: FromXML, Args: map[string]any{
			"customid": "1", "firstname": "A", "lastname": "B", "dateofbirth": "1950-07-01", "email": "a@example.com"}}, ""},
		{"id as a string", Command{Name: OpenWorkout, Args: map[string]any{"id": "7"}}, "id: must be an integer"},
		{"text as a number", Command{Name: SetCase, Args: map[string]any{"caseid": 7}}, "caseid: must be a string"},
		{"unknown", Command{Name: "frobnicate"}, `unknown command "frobnicate"`},
		{"workouts both, made by hand", Command{Name: GetWorkoutsForClient, Args: map[string]any{"userid": int64(1), "customid": "c"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.c)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate(%+v) = %v, want %q", tt.c, err, tt.wantErr)
			}
		})
	}
}

func TestNeedsSignIn(t *testing.T) {
	for n := range fields {
		want := n != Hide && n != Show && n != Version && n != Close && n != SignOn && n != Log
		if got := (Command{Name: n}).NeedsSignIn(); got != want {
			t.Errorf("Command{%q}.NeedsSignIn() = %v, want %v", n, got, want)
		}
	}
}

func TestQueued(t *testing.T) {
	for n := range fields {
		want := n != Hide && n != Show && n != Version && n != Close && n != Log
		if got := (Command{Name: n}).Queued(); got != want {
			t.Errorf("Command{%q}.Queued() = %v, want %v", n, got, want)
		}
	}
}

func TestErrorNeverQuotesValues(t *testing.T) {
	_, err := New("selectperson", pipeArgs(t, `{"customid":"SECRET-ID","firstname":"SECRET","lastname":"","gender":"SECRETG"}`), FromPipe)
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("New error = %v, want one without the values", err)
	}
}

// The original read a date of birth that is not yyyy-MM-dd in the user's culture, as the
// Arguments protocol does, and left out one it could not read; selectperson then still
// runs, with a warning that does not quote the value.
func TestSelectPersonLenient(t *testing.T) {
	wintest.ShortDate(t, "nb_NO.UTF-8", "dd.MM.yyyy")
	c, err := New("SelectPerson", pipeArgs(t, `{"userid":"0","customId":"1","firstName":"A","lastName":"B","dateOfBirth":"01.07.1950","gender":"Kvinne"}`), FromPipe)
	if err != nil || c.Args["dateofbirth"] != "1950-07-01" || c.Args["gender"] != "female" || c.Warnings != nil {
		t.Fatalf("New = %+v, %v; want dateofbirth 1950-07-01, female, no warnings", c, err)
	}
	c, err = New("selectperson", pipeArgs(t, `{"customid":"1","firstname":"A","lastname":"B","dateofbirth":"7/1/1950","gender":"SECRET","profiledata":[
		{"key":"weight","value":"72"},{"name":"no key","value":"SECRET"},{"key":" ","value":"1"},{"KEY":"height","value":"168"}]}`), FromPipe)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Args["dateofbirth"]; ok {
		t.Errorf("dateofbirth = %v, want it left out (not a nb_NO date)", c.Args["dateofbirth"])
	}
	if _, ok := c.Args["gender"]; ok {
		t.Errorf("gender = %v, want it left out", c.Args["gender"])
	}
	if p, _ := c.Args["profiledata"].([]any); len(p) != 2 {
		t.Errorf("profiledata = %v, want the two entries with a key", c.Args["profiledata"])
	}
	want := []string{"gender left out: neither male (M…) nor female (F…, K…)", "dateofbirth left out: must be a date yyyy-MM-dd or in the system's short date format",
		"profiledata[1] left out: it has no key", "profiledata[2] left out: it has no key"}
	if !reflect.DeepEqual(c.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", c.Warnings, want)
	}
	if w := strings.Join(c.Warnings, " "); strings.Contains(w, "SECRET") || strings.Contains(w, "1950") {
		t.Errorf("Warnings quote a value: %q", w)
	}
}

// The wrapper refuses a selectperson larger than the app service's API reads
// (personspec.MaxSelectBody), and accepts one below it: what it accepts, the API accepts.
func TestSelectPersonSizeLimit(t *testing.T) {
	entries := make([]any, 0, 200)
	for i := range 200 {
		entries = append(entries, map[string]any{"key": fmt.Sprintf("k%d", i), "value": strings.Repeat("a", 1024)})
	}
	args := map[string]any{"customid": "1", "firstname": "A", "lastname": "B", "profiledata": entries}
	if _, err := New("selectperson", args, FromPipe); err != nil {
		t.Fatalf("New(200 entries of 1 KiB) = %v, want accepted", err)
	}
	for i := range entries {
		entries[i].(map[string]any)["value"] = strings.Repeat("å", 1024)
		entries[i].(map[string]any)["description"] = strings.Repeat("å", 256)
		entries[i].(map[string]any)["source"] = strings.Repeat("å", 256)
	}
	if _, err := New("selectperson", args, FromPipe); err == nil || !strings.Contains(err.Error(), "args: too large") {
		t.Fatalf("New(over %d bytes) = %v, want args: too large", personspec.MaxSelectBody, err)
	}
}
