// Mints partnergate link tokens with jose (npm "jose"): header typ, alg and kid; claims iss,
// aud, nbf = iat = now and exp = now + 60, in whole SECONDS; a fresh nonce; the payload.
import { randomBytes } from "node:crypto";
import { SignJWT, importPKCS8 } from "jose";

// LIFETIME_SECONDS is short because the token is used at once; the gateway allows 300.
export const LIFETIME_SECONDS = 60;

// signer reads the private key (PKCS#8 PEM) once and keeps what every token needs: the kid
// under which jwks.json publishes the key, its alg, and the iss and aud agreed with the service.
export async function signer({ privateKeyPEM, kid, alg, iss, aud }) {
  return { key: await importPKCS8(privateKeyPEM, alg), kid, alg, iss, aud };
}

// mintToken signs a new token for one link. Call it for every click, and again for a retry:
// each token carries its own nonce and is accepted once.
export async function mintToken(s, fields) {
  const now = Math.floor(Date.now() / 1000); // seconds: Date.now() counts milliseconds
  return new SignJWT({ ...fields, nonce: randomBytes(32).toString("base64url") }) // a CSPRNG
    .setProtectedHeader({ typ: "JWT", alg: s.alg, kid: s.kid })
    .setIssuer(s.iss)
    .setAudience(s.aud)
    .setNotBefore(now)
    .setIssuedAt(now) // optional; must equal nbf
    .setExpirationTime(now + LIFETIME_SECONDS)
    .sign(s.key);
}

// mainLink is the payload of a link for the main web client: an employee of yours signed
// in, a contact in focus. The employee fields make it a main link.
export function mainLink(employee, organization, contact, caseId) {
  return {
    employeeId: employee.id,
    employeeFirstname: employee.firstname,
    employeeLastname: employee.lastname,
    employeeUsername: employee.username, // optional, as are the undefined values jose leaves out
    employeeEmail: employee.email,
    organizationName: organization.name,
    organizationId: organization.id,
    contact,
    caseId,
  };
}

// goLink is the payload of a link for the member's mobile client (Go): no employee id or
// name, and contact.email is required.
export function goLink(organization, contact) {
  return { organizationName: organization.name, organizationId: organization.id, contact };
}
