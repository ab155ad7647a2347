// Package legacyxml reads the wrapper's input.xml file (interface part B, B-XML, provider
// "Svc.Desktop.Legacy3.Component, Svc.Desktop"), the protocol of an older desktop
// application: a root exorinput whose children name one person, and whose attributes ask
// for searches and say whether the file is deleted once read.
package legacyxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/culture"
)

// maxFile bounds what Read loads; an input.xml holds one person.
const maxFile = 1 << 20

// input is the content of an input.xml.
type input struct {
	delete        bool
	exerciseQuery string
	workoutQuery  string
	elements      map[string]string // the children below, by lower-case name
}

// The children of exorinput, and the selectperson argument each becomes.
var children = []struct{ element, arg string }{
	{"source_customerno", "customid"},
	{"firstname", "firstname"},
	{"lastname", "lastname"},
	{"born", "dateofbirth"},
	{"email", "email"},
}

// Read reads the input.xml at path and returns its commands: selectperson, then the
// exercise and the workout search when asked for. A file that cannot be read, or lacks a
// valid required element, is an error naming the element; nothing is then to be run and
// the file is kept, so that the calling program or its user can see what was wrong. After
// a successful read the file is deleted unless delete="false"; a failure to delete is a
// warning, since the commands are good.
func Read(path string) (cmds []command.Command, warnings []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading input file: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("reading input file: %v", err)
	}
	if len(data) > maxFile {
		return nil, nil, fmt.Errorf("reading %s: larger than %d bytes", path, maxFile)
	}
	in, err := parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %v", path, err)
	}
	cmds, err = in.commands()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %v", path, err)
	}
	if in.delete {
		if err := os.Remove(path); err != nil {
			warnings = append(warnings, fmt.Sprintf("input file not deleted: %v", err))
		}
	}
	return cmds, warnings, nil
}

// parse reads the document in its declared encoding. Element and attribute names are
// matched case-insensitively; unknown ones are ignored.
func parse(data []byte) (input, error) {
	data, err := toUTF8(data)
	if err != nil {
		return input{}, err
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.CharsetReader = charsetReader
	in := input{delete: true, elements: map[string]string{}}
	depth, roots := 0, 0
	var current string // the child being read; "" outside one
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return input{}, fmt.Errorf("not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := strings.ToLower(t.Name.Local)
			switch depth {
			case 1:
				if roots++; roots > 1 {
					return input{}, errors.New("more than one root element")
				}
				if name != "exorinput" {
					return input{}, errors.New("the root element must be exorinput")
				}
				if err := in.attributes(t.Attr); err != nil {
					return input{}, err
				}
			case 2:
				if _, dup := in.elements[name]; dup {
					return input{}, fmt.Errorf("element %s appears twice", personspec.Shorten(name))
				}
				current = name
				text.Reset()
			default:
				if isChild(current) {
					return input{}, fmt.Errorf("element %s must hold text only", current)
				}
			}
		case xml.CharData:
			if depth == 2 {
				text.Write(t)
			}
		case xml.EndElement:
			if depth == 2 {
				in.elements[current] = strings.TrimSpace(text.String())
				current = ""
			}
			depth--
		}
	}
	if roots != 1 || depth != 0 {
		return input{}, errors.New("no exorinput element")
	}
	return in, nil
}

func isChild(name string) bool {
	for _, c := range children {
		if c.element == name {
			return true
		}
	}
	return false
}

// attributes reads exorinput's attributes; delete is an xs:boolean, as .NET wrote it.
func (in *input) attributes(attrs []xml.Attr) error {
	for _, a := range attrs {
		v := strings.TrimSpace(a.Value)
		switch strings.ToLower(a.Name.Local) {
		case "delete":
			switch strings.ToLower(v) {
			case "true", "1":
				in.delete = true
			case "false", "0":
				in.delete = false
			default:
				return errors.New("attribute delete must be true or false")
			}
		case "exercisequery":
			in.exerciseQuery = v
		case "workoutquery":
			in.workoutQuery = v
		}
	}
	return nil
}

// commands turns the input into selectperson and the searches, checking the required
// elements first so that an error names the element, not the command's argument.
func (in input) commands() ([]command.Command, error) {
	args := map[string]any{}
	for _, c := range children {
		v := in.elements[c.element]
		if v == "" {
			if c.element == "email" {
				continue
			}
			return nil, fmt.Errorf("element %s is missing or empty", c.element)
		}
		args[c.arg] = v
	}
	// born is read as dateofbirth is: ISO 8601, else the user's culture. It is required
	// by the interface's table, so one that reads in no format refuses the file (which is
	// kept) rather than being left out.
	born, err := culture.ParseDate(in.elements["born"], culture.ShortDatePattern())
	if err != nil {
		return nil, errors.New("element born must be a date YYYY-MM-dd or in the system's short date format")
	}
	args["dateofbirth"] = born.Format(time.DateOnly)
	person, err := command.New(string(command.SelectPerson), args, command.FromXML)
	if err != nil {
		return nil, elementError(err)
	}
	cmds := []command.Command{person}
	for _, q := range []struct {
		name command.Name
		text string
	}{{command.QueryExercises, in.exerciseQuery}, {command.QueryWorkouts, in.workoutQuery}} {
		if q.text == "" {
			continue
		}
		c, err := command.New(string(q.name), map[string]any{"text": q.text}, command.FromXML)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// elementError renames a selectperson argument in err back to its element.
func elementError(err error) error {
	var ce *command.Error
	if !errors.As(err, &ce) || len(ce.Fields) == 0 {
		return err
	}
	f := ce.Fields[0]
	for _, c := range children {
		if c.arg == f.Field {
			return fmt.Errorf("element %s: %s", c.element, f.Reason)
		}
	}
	return fmt.Errorf("%s: %s", f.Field, f.Reason)
}

// toUTF8 turns a UTF-16 document (by its byte order mark, or by the first character '<'
// when there is none) into UTF-8 and drops a UTF-8 byte order mark; encoding/xml reads
// neither. Declared 8-bit encodings are charsetReader's.
func toUTF8(data []byte) ([]byte, error) {
	var enc encoding.Encoding
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return data[3:], nil
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		enc = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM) // the mark decides the order
	case bytes.HasPrefix(data, []byte{'<', 0}):
		enc = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case bytes.HasPrefix(data, []byte{0, '<'}):
		enc = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	default:
		return data, nil
	}
	out, _, err := transform.Bytes(enc.NewDecoder(), data)
	if err != nil {
		return nil, fmt.Errorf("decoding UTF-16: %v", err)
	}
	return out, nil
}

// charsetReader gives encoding/xml a decoder for the declared encodings the original read.
// UTF-16 is already UTF-8 by then (toUTF8).
func charsetReader(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-16", "utf-16le", "utf-16be", "unicode":
		return r, nil
	case "iso-8859-1", "iso8859-1", "latin1", "l1", "iso_8859-1":
		return transform.NewReader(r, charmap.ISO8859_1.NewDecoder()), nil
	case "windows-1252", "cp1252":
		return transform.NewReader(r, charmap.Windows1252.NewDecoder()), nil
	case "us-ascii", "ascii":
		return r, nil
	}
	return nil, fmt.Errorf("encoding %q is not supported (UTF-8, UTF-16, ISO-8859-1 or windows-1252)", personspec.Shorten(label))
}
