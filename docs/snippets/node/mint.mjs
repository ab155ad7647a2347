// Mints a partnergate link token with jose (npm "jose"), and prints it.
// Run: KEY_FILE=private.pem KID=acme-2026-03 ALG=ES256 ISS=https://acme.example AUD=svc-link node mint.mjs
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { SignJWT, importPKCS8 } from "jose";

const { KEY_FILE, KID, ALG, ISS, AUD } = process.env;
const key = await importPKCS8(readFileSync(KEY_FILE, "utf8"), ALG); // PKCS#8 PEM

// The payload fields are top-level claims. A main-client link; for a Go link leave out the
// employee fields and give contact.email.
const payload = {
  employeeId: "emp-1001",
  employeeFirstname: "Eva",
  employeeLastname: "Berg",
  organizationName: "Acme Clinic",
  organizationId: "org-17",
  contact: { id: "c-4711", firstname: "Åsa", lastname: "Lind", birthdate: "1980-02-29" },
  nonce: randomBytes(32).toString("base64url"), // fresh for every token, from a CSPRNG
};

const now = Math.floor(Date.now() / 1000);
const token = await new SignJWT(payload)
  .setProtectedHeader({ typ: "JWT", alg: ALG, kid: KID })
  .setIssuer(ISS)
  .setAudience(AUD)
  .setNotBefore(now) // nbf is the issued time
  .setIssuedAt(now) // optional; must equal nbf
  .setExpirationTime(now + 120) // at most 5 minutes after nbf
  .sign(key);
console.log(token);
