package harness

import (
	"fmt"
	"strings"
)

// Gateway describes a Config.Caddyfile of one site whose /partner/* route runs jwt_partner
// in front of another handler: the one shape every gateway test starts, told by what sets
// it apart. Its text is a template like any Config.Caddyfile ({{.Port}}, {{.Vars.x}}).
type Gateway struct {
	// Global are lines of the global options block besides admin ({{.Admin}}, or off).
	Global []string
	// AdminOff turns the admin endpoint off instead of {{.Admin}}.
	AdminOff bool
	// Partners are the partner blocks (PartnerBlock), or template text that makes them.
	Partners []string
	// Handler are jwt_partner's own lines after the partner blocks.
	Handler []string
	// Next is the route's handler after jwt_partner; reverse_proxy {{.Vars.upstream}}
	// when empty.
	Next string
	// Site are lines of the site block after the route.
	Site []string
	// More is text after the site block: further sites.
	More string
}

// Caddyfile is g's text.
func (g Gateway) Caddyfile() string {
	var b strings.Builder
	admin := "{{.Admin}}"
	if g.AdminOff {
		admin = "off"
	}
	fmt.Fprintf(&b, "{\n\tadmin %s\n", admin)
	lines(&b, 1, g.Global)
	b.WriteString("}\n\nhttp://127.0.0.1:{{.Port}} {\n\troute /partner/* {\n\t\tjwt_partner {\n")
	for _, p := range g.Partners {
		b.WriteString(p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteByte('\n')
		}
	}
	lines(&b, 3, g.Handler)
	next := g.Next
	if next == "" {
		next = "reverse_proxy {{.Vars.upstream}}"
	}
	b.WriteString("\t\t}\n")
	lines(&b, 2, strings.Split(next, "\n"))
	b.WriteString("\t}\n")
	lines(&b, 1, g.Site)
	b.WriteString("}\n")
	if g.More != "" {
		b.WriteString("\n" + g.More)
	}
	return b.String()
}

// lines writes each of ls (each may hold several lines) indented by depth tabs.
func lines(b *strings.Builder, depth int, ls []string) {
	for _, l := range ls {
		for _, one := range strings.Split(l, "\n") {
			b.WriteString(strings.Repeat("\t", depth) + one + "\n")
		}
	}
}

// PartnersCaddyfile is a Config.Caddyfile of one site whose /partner/* route runs
// jwt_partner with the partner blocks in {{.Vars.partners}} (see PartnerBlock) in front of
// reverse_proxy to {{.Vars.upstream}}, with everything else at Caddy's defaults.
var PartnersCaddyfile = Gateway{Partners: []string{"{{.Vars.partners}}"}}.Caddyfile()

// PartnerBlock returns the block of partner name for a Gateway's Partners, one line per
// subdirective ("jwks_file /tmp/jwks.json", "issuer https://…", …).
func PartnerBlock(name string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t\t\tpartner %s {\n", name)
	for _, l := range lines {
		fmt.Fprintf(&b, "\t\t\t\t%s\n", l)
	}
	b.WriteString("\t\t\t}\n")
	return b.String()
}
