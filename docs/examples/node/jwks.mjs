// Publishes public keys as the JSON Web Key Set (jwks.json) the gateway fetches, with jose.
// It reads PUBLIC keys only (the PEM of `openssl pkey -pubout`): the set is public, and a
// set holding private material is refused by the gateway as a whole.
// Run: node jwks.mjs es256-public.pem acme-2026-03 ES256 [more PEM KID ALG ...] > jwks.json
// (two keys side by side while you rotate; see "Rotating keys").
import { readFileSync } from "node:fs";
import { exportJWK, importSPKI } from "jose";

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 3 !== 0) {
  console.error("usage: node jwks.mjs PUBLIC_KEY.pem KID ES256|RS256|PS256 [PUBLIC_KEY.pem KID ALG ...]");
  process.exit(2);
}
const keys = [];
for (let i = 0; i < args.length; i += 3) {
  const [file, kid, alg] = args.slice(i, i + 3);
  // importSPKI takes a public key only, of the type alg needs (ES256: EC P-256).
  const key = await importSPKI(readFileSync(file, "utf8"), alg, { extractable: true });
  const jwk = await exportJWK(key); // kty with crv, x, y (EC) or n, e (RSA): public members
  if (jwk.kty === "RSA" && Buffer.from(jwk.n, "base64url").length < 256) {
    throw new Error(`${file}: the gateway needs RSA keys of 2048 bits or more`);
  }
  keys.push({ ...jwk, kid, alg, use: "sig" }); // kid: what your tokens name; alg binds the key
}
console.log(JSON.stringify({ keys }, null, 2));
