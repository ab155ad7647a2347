package provider

import (
	"fmt"
	"slices"

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

// argumentsProvider is B-ARG: key=value arguments, dates in the user's culture. It honours
// culture= and signon=, as the original's Arguments provider did; an .xml file argument
// is ignored.
type argumentsProvider struct{}

func (argumentsProvider) Read(args []string) (Start, error) {
	p, err := arguments.Parse(args, culture.ShortDatePattern())
	if err != nil {
		return Start{Warnings: p.Warnings}, err
	}
	if p.XMLPath != "" {
		p.Warnings = append(p.Warnings, "an .xml file argument is ignored: the Arguments provider reads key=value only")
	}
	cmds := p.Commands
	return Start{
		Culture:  p.Culture,
		SignOn:   p.SignOn,
		Args:     slices.Clone(args),
		Warnings: p.Warnings,
		Commands: func() ([]command.Command, []string, error) { return cmds, nil, nil },
	}, nil
}

// xmlProvider is B-XML: the input.xml named by the first argument that names an .xml
// file, in any position, as the original took it (provider=… C:\export\input.xml works).
// Of the key=value arguments it honours culture=, which the original read whatever the
// provider; the others, signon= among them (the original's XML provider named no sign-on
// user), belong to the Arguments provider and are ignored with a warning.
type xmlProvider struct{}

func (xmlProvider) Read(args []string) (Start, error) {
	xml, path := arguments.XMLArg(args)
	s := Start{XMLPath: path, Args: slices.Clone(args)}
	for i, a := range args {
		k, v, ok := arguments.Pair(a)
		switch {
		case i == xml:
			s.Args[i] = path
		case !ok:
			s.Warnings = append(s.Warnings, fmt.Sprintf("argument %d is not key=value nor the first .xml file: ignored", i+1))
		case k == "culture":
			s.Culture = v
		case k != "provider":
			s.Warnings = append(s.Warnings, fmt.Sprintf("argument %q ignored: the XML provider reads only the file and culture (provider=%q reads arguments)", k, Arguments))
		}
	}
	if path != "" {
		s.Commands = func() ([]command.Command, []string, error) { return legacyxml.Read(path) }
	}
	return s, nil
}
