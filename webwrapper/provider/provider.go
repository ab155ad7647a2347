// Package provider is the registry of the wrapper's protocol providers (SVC-8), keyed by
// the .NET type names the interface gives them, which the ProtocolProvider setting and
// the provider= argument name. The original loaded a .NET component by that name; here
// a Go package registers its Provider in its init function, as Caddy modules do, and a
// program that imports it can use it.
package provider

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/partnergate/partnergate/webwrapper/arguments"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// The providers of the interface. XML is the default, as ProtocolProvider's.
const (
	XML       = "Svc.Desktop.Legacy3.Component, Svc.Desktop"
	Arguments = "Svc.Desktop.Arguments.Component, Svc.Desktop"
	Default   = XML
)

// Provider reads one command line (without the program name, provider= included): what
// it asks of the start and its commands. The program takes from a start only what its
// provider returns, so that what a protocol honours is decided in one place.
type Provider interface {
	// Read reads args. It runs nothing and reads no file: a second start reads its
	// command line too, only to hand it over. An error (a value no command accepts) means
	// nothing of the command line counts, neither its options nor its commands.
	Read(args []string) (Start, error)
}

// Start is one command line as its provider reads it.
type Start struct {
	// Culture is the window's language when this start opens the window (culture=),
	// instead of the Culture setting; "" keeps the setting. A running window keeps its
	// language.
	Culture string
	// SignOn is the external user this start signs on as (signon=, B-SSO): the window's
	// kept session and the directory sign-in's login hint are that user's; "" for none,
	// upon which the operating-system user counts with SignonWithWindowsUser.
	SignOn string
	// XMLPath is the input.xml this start names (B-XML), made absolute; "" for none.
	XMLPath string
	// Args is the command line as the running instance is to read it when this is a
	// second start: XMLPath in place of the path as given, since the running instance's
	// working folder differs.
	Args []string
	// Warnings name what the provider ignored; never a value.
	Warnings []string
	// Commands returns the commands in the order they are to run, and warnings about
	// what they left out; nil has none. The XML provider reads input.xml here (and
	// deletes it, as its delete attribute says), so the running instance calls it once,
	// with its window open. An error means none of them runs; the options still count.
	Commands func() (cmds []command.Command, warnings []string, err error)
}

var (
	mu        sync.RWMutex
	providers = map[string]entry{} // by normalised name
)

type entry struct {
	name string // as registered, for messages
	p    Provider
}

// Register adds a provider under its type name. It is meant for init functions and
// panics on an empty or taken name, as caddy.RegisterModule does: both are programming
// errors.
func Register(name string, p Provider) {
	key := normalise(name)
	if key == "" || p == nil {
		panic("provider: Register with an empty name or a nil provider")
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := providers[key]; dup {
		panic("provider: " + name + " registered twice")
	}
	providers[key] = entry{strings.TrimSpace(name), p}
}

// Lookup returns the provider of a type name; "" is Default. An unknown name is an
// error listing the known ones, upon which the program exits with status 2.
func Lookup(name string) (Provider, error) {
	if strings.TrimSpace(name) == "" {
		name = Default
	}
	mu.RLock()
	defer mu.RUnlock()
	if e, ok := providers[normalise(name)]; ok {
		return e.p, nil
	}
	var known []string
	for _, e := range providers {
		known = append(known, e.name)
	}
	slices.Sort(known)
	return nil, fmt.Errorf("unknown protocol provider %q (known: %s)", name, strings.Join(known, "; "))
}

// ForArgs returns the provider that a command line asks for with provider=, else the one
// configured (the ProtocolProvider setting), else Default.
func ForArgs(args []string, configured string) (Provider, error) {
	name := configured
	for _, a := range args {
		if k, v, ok := arguments.Pair(a); ok && k == "provider" {
			name = v
		}
	}
	return Lookup(name)
}

// normalise lets a name match as .NET's Type.GetType reads an assembly-qualified type
// name: "Type, Assembly" followed by any of the assembly's attributes (", Version=2.1.5.0,
// Culture=neutral, PublicKeyToken=null"), which do not choose the provider here: a build
// carries one version of each. The spaces around the commas and the case do not count
// either (.NET's type names are case-sensitive, but no two providers differ in case only).
// A part after the assembly that is not Name=Value keeps the whole name, which then
// matches nothing.
func normalise(name string) string {
	parts := strings.Split(strings.ToLower(name), ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if len(parts) == 1 || (len(parts) == 2 && parts[1] == "") {
		return parts[0]
	}
	for _, attr := range parts[2:] {
		k, v, ok := strings.Cut(attr, "=")
		if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
			return strings.Join(parts, ", ")
		}
	}
	return parts[0] + ", " + parts[1]
}
