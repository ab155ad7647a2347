package command

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
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
		{"workouts both", "getworkoutsforclient", `{"customid":"c","userid":1}`, nil, "userid: give customid or userid, not both"},
		{"workouts userid 0", "getworkoutsforclient", `{"userid":0}`, nil, "userid: must be a positive integer"},
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
			map[string]any{"userid": int64(0), "id": "1001", "firstname": "Åsa", "lastname": "Ørnø", "gender": "K", "source": "EHR"}, ""},
		{"selectperson userid only", "selectperson", `{"userid":42,"firstname":"A","lastname":"B"}`,
			map[string]any{"userid": int64(42), "firstname": "A", "lastname": "B"}, ""},
		{"selectperson no ids", "selectperson", `{"firstname":"A","lastname":"B"}`, nil, "customid: required when userid is 0"},
		{"selectperson no names", "selectperson", `{"customid":"c"}`, nil, "selectperson: firstname: required; lastname: required"},
		{"selectperson gender", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","gender":"x"}`, nil, "gender: must be female, male, F, M or K"},
		{"selectperson birth date", "selectperson", `{"customid":"c","firstname":"A","lastname":"B","dateOfBirth":"01.07.1950"}`, nil, "dateofbirth: must be a date yyyy-MM-dd"},
		{"selectperson profile date", "selectperson",
			`{"customid":"c","firstname":"A","lastname":"B","profiledata":[{"key":"w","date":"2024-03-05 08:30:15"},{"key":"h","date":"2024-03-05T08"}]}`,
			nil, "profiledata[1].date: must be"},
		{"signon", "signon", `{"user":"jdoe"}`, map[string]any{"user": "jdoe"}, ""},
		{"signon blank", "signon", `{"user":"  "}`, nil, "user: required"},
		{"queryexercises empty text", "queryexercises", `{"text":""}`, map[string]any{}, ""},
		{"setcase", "setcase", `{"caseid":"C-9"}`, map[string]any{"caseid": "C-9"}, ""},
		{"setcase too long", "setcase", `{"caseid":"` + strings.Repeat("x", 129) + `"}`, nil, "caseid: too long"},
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
		{"unknown", Command{Name: "log"}, `unknown command "log"`},
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
		want := n != Hide && n != Show && n != Version && n != Close && n != SignOn
		if got := (Command{Name: n}).NeedsSignIn(); got != want {
			t.Errorf("Command{%q}.NeedsSignIn() = %v, want %v", n, got, want)
		}
	}
}

func TestErrorNeverQuotesValues(t *testing.T) {
	_, err := New("selectperson", pipeArgs(t, `{"customid":"SECRET-ID","firstname":"SECRET","lastname":"","gender":"SECRETG"}`), FromPipe)
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("New error = %v, want one without the values", err)
	}
}
