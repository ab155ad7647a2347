// Command caddy is Caddy with the standard modules and partnergate's, the main package that
// xcaddy would generate. xcaddy.sh builds it as the main package of a separate module that
// requires this one, so that `caddy list-modules --versions` shows partnergate's version;
// the tests build it in place (no version shown), which is quicker.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/partnergate/partnergate/caddymodule"
)

func main() {
	caddycmd.Main()
}
