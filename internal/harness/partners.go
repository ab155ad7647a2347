package harness

import (
	"fmt"
	"strings"
)

// PartnersCaddyfile is a Config.Caddyfile of one site whose /partner/* route runs
// jwt_partner with the partner blocks in {{.Vars.partners}} (see PartnerBlock) in front of
// reverse_proxy to {{.Vars.upstream}}, with everything else at Caddy's defaults.
const PartnersCaddyfile = `{
	admin {{.Admin}}
}

http://127.0.0.1:{{.Port}} {
	route /partner/* {
		jwt_partner {
{{.Vars.partners}}
		}
		reverse_proxy {{.Vars.upstream}}
	}
}
`

// PartnerBlock returns the block of partner name for PartnersCaddyfile, one line per
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
