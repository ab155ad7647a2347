package legacyxml

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
)

const person = `<source_customerno>1001</source_customerno>
  <firstname>Åsa</firstname>
  <lastname>Ørnø-Müller</lastname>
  <born>1950-07-01</born>
  <email>asa@example.com</email>`

var wantPerson = map[string]any{"customid": "1001", "firstname": "Åsa", "lastname": "Ørnø-Müller",
	"dateofbirth": "1950-07-01", "email": "asa@example.com"}

// write saves content as input.xml in a fresh folder and returns its path.
func write(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(wintest.TempDir(t), "input.xml")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestReadEncodings(t *testing.T) {
	doc := func(decl string) string {
		return decl + "\n<exorinput>\n  " + person + "\n</exorinput>\n"
	}
	latin1, err := charmap.ISO8859_1.NewEncoder().String(doc(`<?xml version="1.0" encoding="ISO-8859-1"?>`))
	if err != nil {
		t.Fatal(err)
	}
	cp1252, err := charmap.Windows1252.NewEncoder().String(doc(`<?xml version="1.0" encoding="windows-1252"?>`))
	if err != nil {
		t.Fatal(err)
	}
	utf16le, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(doc(`<?xml version="1.0" encoding="utf-16"?>`))
	if err != nil {
		t.Fatal(err)
	}
	utf16be, err := unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewEncoder().String(doc(`<?xml version="1.0" encoding="UTF-16"?>`))
	if err != nil {
		t.Fatal(err)
	}
	utf16noBOM, err := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewEncoder().String(doc(`<?xml version="1.0" encoding="UTF-16"?>`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		content string
	}{
		{"utf-8 undeclared", doc("")},
		{"utf-8 declared", doc(`<?xml version="1.0" encoding="utf-8"?>`)},
		{"utf-8 with BOM", "\xEF\xBB\xBF" + doc(`<?xml version="1.0" encoding="UTF-8"?>`)},
		{"iso-8859-1", latin1},
		{"windows-1252", cp1252},
		{"utf-16 LE with BOM", utf16le},
		{"utf-16 BE with BOM", utf16be},
		{"utf-16 LE without BOM", utf16noBOM},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, []byte(tt.content))
			cmds, warnings, err := Read(path)
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			if len(cmds) != 1 || cmds[0].Name != command.SelectPerson || !reflect.DeepEqual(cmds[0].Args, wantPerson) || cmds[0].Source != command.FromXML {
				t.Fatalf("Read = %+v, want selectperson %v", cmds, wantPerson)
			}
			if warnings != nil || exists(path) {
				t.Fatalf("Read left the file (warnings %q), want it deleted", warnings)
			}
		})
	}
}

func TestReadDeleteAndQueries(t *testing.T) {
	for _, tt := range []struct {
		attrs   string
		deleted bool
		names   []command.Name
	}{
		{``, true, []command.Name{command.SelectPerson}},
		{`delete="true"`, true, []command.Name{command.SelectPerson}},
		{`delete="True" exercisequery="knee"`, true, []command.Name{command.SelectPerson, command.QueryExercises}},
		{`delete="false" workoutquery="rehab" exercisequery="hip"`, false,
			[]command.Name{command.SelectPerson, command.QueryExercises, command.QueryWorkouts}},
		{`Delete="0" exerciseQuery=""`, false, []command.Name{command.SelectPerson}},
	} {
		t.Run(tt.attrs, func(t *testing.T) {
			path := write(t, []byte("<exorinput "+tt.attrs+">"+person+"</exorinput>"))
			cmds, _, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			var names []command.Name
			for _, c := range cmds {
				names = append(names, c.Name)
			}
			if !reflect.DeepEqual(names, tt.names) || exists(path) == tt.deleted {
				t.Fatalf("Read(%s) = %v, file kept %v; want %v, deleted %v", tt.attrs, names, exists(path), tt.names, tt.deleted)
			}
		})
	}
}

func TestReadErrorsKeepTheFile(t *testing.T) {
	without := func(element string) string {
		var lines []string
		for _, l := range strings.Split(person, "\n") {
			if !strings.Contains(l, "<"+element+">") {
				lines = append(lines, l)
			}
		}
		return "<exorinput>" + strings.Join(lines, "\n") + "</exorinput>"
	}
	for _, tt := range []struct {
		name, content, want string
	}{
		{"born missing", without("born"), "element born is missing or empty"},
		{"firstname missing", without("firstname"), "element firstname is missing or empty"},
		{"customer number missing", without("source_customerno"), "element source_customerno is missing or empty"},
		{"lastname empty", strings.Replace("<exorinput>"+person+"</exorinput>", "Ørnø-Müller", " ", 1), "element lastname is missing or empty"},
		{"born in no format", strings.Replace("<exorinput>"+person+"</exorinput>", "1950-07-01", "1950/31/31", 1), "element born must be a date YYYY-MM-dd"},
		{"firstname too long", strings.Replace("<exorinput>"+person+"</exorinput>", "Åsa", strings.Repeat("a", 300), 1), "element firstname: too long"},
		{"element twice", "<exorinput>" + person + "<born>1950-07-01</born></exorinput>", "element born appears twice"},
		{"nested", strings.Replace("<exorinput>"+person+"</exorinput>", "Åsa", "<b>Åsa</b>", 1), "element firstname must hold text only"},
		{"other root", "<input>" + person + "</input>", "the root element must be exorinput"},
		{"bad delete", "<exorinput delete='maybe'>" + person + "</exorinput>", "attribute delete must be true or false"},
		{"not XML", "exorinput", "no exorinput element"},
		{"unclosed", "<exorinput>" + person, "not well-formed XML"},
		{"two roots", "<exorinput>" + person + "</exorinput><exorinput/>", "more than one root element"},
		{"unknown encoding", `<?xml version="1.0" encoding="koi8-r"?><exorinput>` + person + "</exorinput>", `encoding "koi8-r" is not supported`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, []byte(tt.content))
			cmds, _, err := Read(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || cmds != nil {
				t.Fatalf("Read = %v, %v; want error %q and no commands", cmds, err, tt.want)
			}
			if !exists(path) {
				t.Fatalf("Read deleted the file after error %v", err)
			}
			// The path is the test's temporary folder, whose random digits may hold "1001".
			if msg := strings.ReplaceAll(err.Error(), path, ""); strings.Contains(msg, "Åsa") || strings.Contains(msg, "1001") {
				t.Fatalf("Read error %q quotes a value", err)
			}
		})
	}
}

// born is read as dateofbirth: ISO 8601, else in the user's culture.
func TestReadBornInCulture(t *testing.T) {
	wintest.ShortDate(t, "nb_NO.UTF-8", "dd.MM.yyyy")
	path := write(t, []byte(strings.Replace("<exorinput>"+person+"</exorinput>", "1950-07-01", "01.07.1950", 1)))
	cmds, _, err := Read(path)
	if err != nil || len(cmds) == 0 || cmds[0].Args["dateofbirth"] != "1950-07-01" {
		t.Fatalf("Read(born 01.07.1950 in nb_NO) = %v, %v; want dateofbirth 1950-07-01", cmds, err)
	}
}

func TestReadMissingFileAndSize(t *testing.T) {
	if _, _, err := Read(filepath.Join(wintest.TempDir(t), "input.xml")); err == nil || !strings.Contains(err.Error(), "reading input file") {
		t.Errorf("Read(missing) = %v", err)
	}
	path := write(t, []byte("<exorinput>"+person+strings.Repeat(" ", maxFile)+"</exorinput>"))
	if _, _, err := Read(path); err == nil || !strings.Contains(err.Error(), "larger than") || !exists(path) {
		t.Errorf("Read(large) = %v, kept %v", err, exists(path))
	}
}
