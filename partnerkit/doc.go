// Package partnerkit is what a partner developer uses to open the service's web
// application with a link token: key generation and the jwks.json to publish (keys.go), the
// payload of both link kinds (payload.go), a Signer that sets every header member and claim
// the gateway checks (signer.go), a Client for the two link endpoints and a test
// gateway's dry run (client.go), and Check, which explains rule by rule why the gateway
// would accept or reject a token (check.go). Check's Report is linktoken's, which the
// gateway's dry run answers with too.
//
// The payload types and their validation come from linkspec, and Check's verdict is
// linktoken's: the gateway uses the same two packages, so a payload the kit accepts is one
// the gateway accepts, and Check gives the gateway's code. The package imports no web
// server: a partner's program does not pull in Caddy.
package partnerkit
