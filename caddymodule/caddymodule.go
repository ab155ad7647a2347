// Package caddymodule registers every partnergate Caddy module. Build Caddy with it:
//
//	xcaddy build --with github.com/partnergate/partnergate/caddymodule
package caddymodule

import (
	// plugins register themselves in their init functions
	_ "github.com/partnergate/partnergate/plugins/droptrailers"
	_ "github.com/partnergate/partnergate/plugins/jwtpartner"
	_ "github.com/partnergate/partnergate/plugins/nonce"
)
