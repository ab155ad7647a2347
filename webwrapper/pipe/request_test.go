package pipe

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/webwrapper/command"
)

func TestDecodeRequest(t *testing.T) {
	for _, tt := range []struct {
		name, msg string
		want      command.Command
		wantErr   string
	}{
		{"sample client", `{"Method":"GetWorkoutsForClient","Args":{"customId":"1001","from":"2024-01-31"}}`,
			command.Command{Name: command.GetWorkoutsForClient, Args: map[string]any{"customid": "1001", "from": "2024-01-31"}}, ""},
		{"lower-case members, string id", `{"method":"openworkout","args":{"id":"7"}}`,
			command.Command{Name: command.OpenWorkout, Args: map[string]any{"id": int64(7)}}, ""},
		{"no args", `{"Method":"Version"}`, command.Command{Name: command.Version, Args: map[string]any{}}, ""},
		{"null args", `{"Method":"show","Args":null}`, command.Command{Name: command.Show, Args: map[string]any{}}, ""},
		{"BOM", "\xEF\xBB\xBF" + `{"Method":"hide"}`, command.Command{Name: command.Hide, Args: map[string]any{}}, ""},
		{"extra members ignored", `{"Method":"close","Id":3}`, command.Command{Name: command.Close, Args: map[string]any{}}, ""},
		{"selectperson", `{"Method":"SelectPerson","Args":{"userid":"0","customId":"1001","firstName":"Åsa","lastName":"Ørnø","dateOfBirth":"1950-07-01","source":"EHR"}}`,
			command.Command{Name: command.SelectPerson, Args: map[string]any{"userid": int64(0), "customid": "1001", "firstname": "Åsa",
				"lastname": "Ørnø", "dateofbirth": "1950-07-01", "source": "EHR"}}, ""},
		{"not JSON", `hello`, command.Command{}, "request is not a JSON object"},
		{"array", `[]`, command.Command{}, "request is not a JSON object"},
		{"null", `null`, command.Command{}, "request is not a JSON object"},
		{"no method", `{"Args":{}}`, command.Command{}, "request needs Method"},
		{"method not a string", `{"Method":3}`, command.Command{}, "request needs Method"},
		{"method twice", `{"Method":"show","method":"hide"}`, command.Command{}, `request member "method" appears twice`},
		// encoding/json keeps the last of two identical names: the wrapper would close.
		{"identical method twice", `{"Method":"show","Method":"close"}`, command.Command{}, `request member "method" appears twice`},
		{"identical args twice", `{"Method":"show","Args":{},"Args":{}}`, command.Command{}, `request member "args" appears twice`},
		{"identical argument twice", `{"Method":"openworkout","Args":{"id":1,"id":2}}`, command.Command{}, `request member "id" appears twice`},
		{"profile entry member twice", `{"Method":"selectperson","Args":{"customid":"1","firstname":"A","lastname":"B","profiledata":[{"key":"a","KEY":"b"}]}}`,
			command.Command{}, `request member "key" appears twice`},
		{"same name in two objects", `{"Method":"openworkout","Args":{"id":1,"x":{"id":2}}}`,
			command.Command{Name: command.OpenWorkout, Args: map[string]any{"id": int64(1), "x": map[string]any{"id": json.Number("2")}}}, ""},
		{"too deep", `{"Method":"show","Args":{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`, command.Command{}, "nested deeper"},
		{"args not an object", `{"Method":"show","Args":"x"}`, command.Command{}, "request Args must be a JSON object"},
		{"unknown method", `{"Method":"Format"}`, command.Command{}, `unknown command "format"`},
		{"invalid args", `{"Method":"openworkout","Args":{}}`, command.Command{}, "openworkout: id: required"},
		{"invalid UTF-8", "{\"Method\":\"show\xff\"}", command.Command{}, "not valid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.msg))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeRequest(%q) error = %v, want %q", tt.msg, err, tt.wantErr)
				}
				return
			}
			tt.want.Source = command.FromPipe
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DecodeRequest(%q) = %#v, %v; want %#v", tt.msg, got, err, tt.want)
			}
		})
	}
}

func TestReplyError(t *testing.T) {
	for _, tt := range []struct {
		reply, want string
		ok          bool
	}{
		{`{"error":"Timeout. No response."}`, "Timeout. No response.", true},
		{`{ "error": "" }`, "", true},
		{`[{"id":1}]`, "", false},
		{`2.1.4.19787`, "", false},
		{`{"errors":"x"}`, "", false},
		{``, "", false},
	} {
		if got, ok := ReplyError([]byte(tt.reply)); got != tt.want || ok != tt.ok {
			t.Errorf("ReplyError(%q) = %q, %v; want %q, %v", tt.reply, got, ok, tt.want, tt.ok)
		}
	}
}
