package config

import (
	"encoding/xml"
	"slices"
	"sync"
)

// configuration is the part of a .NET config file the wrapper reads.
type configuration struct {
	XMLName             xml.Name `xml:"configuration"`
	AppSettings         []add    `xml:"appSettings>add"`
	UserSettings        group    `xml:"userSettings"`
	ApplicationSettings group    `xml:"applicationSettings"`
}

// group holds settings sections, one element per settings class.
type group struct {
	Sections []section `xml:",any"`
}

type add struct {
	Key   string `xml:"key,attr"`
	Value string `xml:"value,attr"`
}

// section is a settings class's element, named after the class.
type section struct {
	XMLName  xml.Name
	Settings []settingXML `xml:"setting"`
}

type settingXML struct {
	Name        string `xml:"name,attr"`
	SerializeAs string `xml:"serializeAs,attr"`
	Value       value  `xml:"value"`
}

// value keeps a String setting's text and any other setting's XML as it was, so that
// settings the wrapper does not know survive a save.
type value struct {
	Text string `xml:",chardata"`
	Raw  string `xml:",innerxml"`
}

func (s settingXML) text() string { return s.Value.Text }

// userDoc is user.config as the wrapper writes it.
type userDoc struct {
	XMLName      xml.Name `xml:"configuration"`
	UserSettings group    `xml:"userSettings"`
}

// userFile is user.config's settings sections, kept in file order.
type userFile struct {
	// mu guards sections: the wrapper reads settings in its goroutines while its main
	// goroutine sets and saves the window's geometry at shutdown.
	mu       sync.RWMutex
	sections []section
}

func (u *userFile) ours() *section {
	for i := range u.sections {
		if u.sections[i].XMLName.Local == Section {
			return &u.sections[i]
		}
	}
	u.sections = append(u.sections, section{XMLName: xml.Name{Local: Section}})
	return &u.sections[len(u.sections)-1]
}

func (u *userFile) get(name string) string {
	u.mu.RLock()
	defer u.mu.RUnlock()
	for _, s := range u.sections {
		if s.XMLName.Local != Section {
			continue
		}
		for _, v := range s.Settings {
			if v.Name == name {
				return v.text()
			}
		}
	}
	return ""
}

func (u *userFile) set(name, v string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.ours()
	for i := range s.Settings {
		if s.Settings[i].Name == name {
			s.Settings[i].SerializeAs = "String"
			s.Settings[i].Value = value{Text: v}
			return
		}
	}
	s.Settings = append(s.Settings, settingXML{Name: name, SerializeAs: "String", Value: value{Text: v}})
}

// marshal encodes the settings sections as user.config's document.
func (u *userFile) marshal(enc *xml.Encoder) error {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return enc.Encode(userDoc{UserSettings: group{Sections: u.sections}})
}

// MarshalXML writes a value read from the file as it was, and a value set since as
// escaped text.
func (v value) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if v.Raw != "" {
		return e.EncodeElement(struct {
			Raw string `xml:",innerxml"`
		}{v.Raw}, start)
	}
	return e.EncodeElement(struct {
		Text string `xml:",chardata"`
	}{v.Text}, start)
}

func sortedNames() []string {
	names := make([]string, 0, len(settings))
	for n := range settings {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
