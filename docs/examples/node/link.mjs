// Opens a link as a partner's server does, with example data: prints the login URL (url),
// the token (token, for `partnerlink check`) or the auto-submitting form page (form).
// Run: GATEWAY=https://sso.example.com PARTNER=acme KEY_FILE=es256-private.pem KID=acme-2026-03 \
//   ALG=ES256 ISS=https://acme.example AUD=svc-link node link.mjs url|token|form main|go [fields.json]
import { readFileSync } from "node:fs";
import { goLink, mainLink, mintToken, signer } from "./mint.mjs";
import { LinkRefused, formPage, openLink } from "./gateway.mjs";

const [command, kind, fieldsFile] = process.argv.slice(2);
if (!["url", "token", "form"].includes(command) || !["main", "go"].includes(kind)) {
  console.error("usage: node link.mjs url|token|form main|go [fields.json]");
  process.exit(2);
}
const env = process.env;
const s = await signer({ privateKeyPEM: readFileSync(env.KEY_FILE, "utf8"), kid: env.KID, alg: env.ALG, iss: env.ISS, aud: env.AUD });

// In your application these come from the signed-in user and the contact on screen.
const organization = { name: "Acme Clinic", id: "org-17" };
const contact = { id: "c-4711", firstname: "Åsa", lastname: "Lind", email: "asa@example.org", birthdate: "1980-02-29" };
const employee = { id: "emp-1001", firstname: "Eva", lastname: "Berg" };
const fields = fieldsFile ? JSON.parse(readFileSync(fieldsFile, "utf8"))
  : kind === "main" ? mainLink(employee, organization, contact) : goLink(organization, contact);

try {
  if (command === "token") console.log(await mintToken(s, fields));
  if (command === "form") process.stdout.write(await formPage(s, env.GATEWAY, env.PARTNER, fields));
  if (command === "url") {
    const maxWaitSeconds = env.MAX_WAIT_SECONDS === undefined ? 5 : Number(env.MAX_WAIT_SECONDS);
    // A web server would redirect the user's browser to it; this demo prints it.
    console.log(await openLink(s, env.GATEWAY, env.PARTNER, fields, { maxWaitSeconds }));
  }
} catch (err) {
  if (err instanceof LinkRefused) {
    console.error(err.message); // code, status, request id, action: never the token
    console.error(`message for the user: ${err.userMessage()}`);
  } else {
    // The gateway did not answer (network, TLS, timeout) or answered no URL: alert the team.
    console.error(`link failed: ${err.cause?.message ?? err.message}`);
    console.error("message for the user: The service cannot be opened right now. Try again later.");
  }
  process.exit(1);
}
