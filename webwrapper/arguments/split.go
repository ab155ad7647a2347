package arguments

import "strings"

// Split breaks the arguments part of a Windows command line (after the program name) into
// arguments by the rules of CommandLineToArgvW, which .NET programs follow. Go's runtime
// splits os.Args on Windows by the same rules, so the wrapper's own command line needs no
// call; Split serves a command line held as one string, and pins the rules in tests that
// run on raw strings on every system:
//   - spaces and tabs separate arguments, except inside double quotes;
//   - 2n backslashes before a quote give n backslashes and the quote opens or closes a
//     quoted part; 2n+1 backslashes before a quote give n backslashes and a literal quote;
//   - backslashes not before a quote are literal;
//   - inside a quoted part, "" gives a literal quote and closes the part (the rule of
//     CommandLineToArgvW, older than the msvcrt 2008 one).
func Split(line string) []string {
	var args []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return args
		}
		var arg string
		arg, line = next(line)
		args = append(args, arg)
	}
}

// next reads one argument from the start of line and returns the rest after it.
func next(line string) (arg, rest string) {
	var b strings.Builder
	quoted := false
	slashes := 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes/2))
			switch {
			case slashes%2 == 1:
				b.WriteByte('"')
			case quoted && i+1 < len(line) && line[i+1] == '"':
				b.WriteByte('"')
				i++
				quoted = false
			default:
				quoted = !quoted
			}
			slashes = 0
			continue
		case ' ', '\t':
			if !quoted {
				b.WriteString(strings.Repeat(`\`, slashes))
				return b.String(), line[i+1:]
			}
			fallthrough
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
			slashes = 0
			b.WriteByte(c)
		}
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	return b.String(), ""
}
