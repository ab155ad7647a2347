// Command caddy is Caddy with the standard modules and partnergate's, the main package that
// xcaddy would generate; xcaddy.sh builds it where xcaddy is not installed.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/partnergate/partnergate/caddymodule"
)

func main() {
	caddycmd.Main()
}
