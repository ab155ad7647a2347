package provider

import (
	"fmt"

	"github.com/partnergate/partnergate/webwrapper/arguments"
	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/culture"
	"github.com/partnergate/partnergate/webwrapper/legacyxml"
)

// The interface's two providers register here rather than in their own packages, which
// stay free of the registry.
func init() {
	Register(XML, xmlProvider{})
	Register(Arguments, argumentsProvider{})
}

// argumentsProvider is B-ARG: key=value arguments, dates in the user's culture.
type argumentsProvider struct{}

func (argumentsProvider) Commands(args []string) ([]command.Command, []string, error) {
	p, err := arguments.Parse(args, culture.ShortDatePattern())
	if err != nil {
		return nil, p.Warnings, err
	}
	if p.XMLPath != "" {
		p.Warnings = append(p.Warnings, "an .xml file argument is ignored: the Arguments provider reads key=value only")
	}
	return p.Commands, p.Warnings, nil
}

// xmlProvider is B-XML: the input.xml named by the first argument that names an .xml
// file, in any position, as the original took it (provider=… C:\export\input.xml works).
// Other arguments (but provider=) belong to the Arguments provider and are ignored with a
// warning.
type xmlProvider struct{}

func (xmlProvider) Commands(args []string) ([]command.Command, []string, error) {
	var path string
	var warnings []string
	for i, a := range args {
		k, _, ok := arguments.Pair(a)
		switch {
		case !ok && path == "" && arguments.IsXMLPath(a):
			path = a
		case !ok:
			warnings = append(warnings, fmt.Sprintf("argument %d is not key=value nor the first .xml file: ignored", i+1))
		case k != "provider":
			warnings = append(warnings, fmt.Sprintf("argument %q ignored: the XML provider reads only the file (provider=%q reads arguments)", k, Arguments))
		}
	}
	if path == "" {
		return nil, warnings, nil
	}
	cmds, w, err := legacyxml.Read(path)
	return cmds, append(warnings, w...), err
}
