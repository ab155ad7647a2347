// Opens partnergate links from the partner's server: POSTs a fresh token to
// /partner/<name>/url and returns the login URL, acting on every code the gateway answers;
// or renders the page that POSTs the token to /partner/<name>/payload from a browser.
import { mintToken } from "./mint.mjs";

// ACTIONS says what this program does with each code the gateway answers (docs/partners.md,
// section 4). Every code is in exactly one group; a code missing here is a bug.
export const ACTIONS = {
  // Our configuration, clock or code is wrong: retrying cannot help. Alert the team that
  // runs this program (the log line has the code and request id), and tell the user the
  // link is unavailable.
  fix_configuration: [
    "not_found", "partner_unknown", "method_not_allowed", "unsupported_media_type",
    "body_too_large", "token_missing", "token_duplicated", "token_in_query",
    "token_malformed", "header_invalid", "algorithm_not_allowed", "key_id_missing",
    "key_unknown", "signature_invalid", "claims_invalid", "time_in_milliseconds", "issuer_invalid",
    "audience_invalid", "lifetime_too_long", "nonce_missing", "nonce_invalid",
    "kind_not_allowed",
    "origin_not_allowed", // a /payload form from a page the service has not registered (a browser sees it)
    "token_not_yet_valid", "token_expired", // our clock is off: synchronise it (NTP)
  ],
  // This token cannot be used, a new one can: mint a fresh token and send it once more.
  retry_new_token: ["token_replayed", "token_before_store_start", "body_unreadable"],
  // The gateway cannot check tokens right now, or the service behind it failed after taking
  // the token: wait Retry-After seconds, then send a fresh token.
  wait_and_retry: ["keys_unavailable", "nonce_store_unavailable", "nonce_store_full",
    "upstream_unavailable", // the token is spent: never resend it
    "dry_run_rate_limited", // only a test gateway's /check answers it
  ],
  // The link's data or the service: show the user a message (payload_invalid names the fields).
  tell_user: ["payload_invalid", "internal_error"],
};

const WHAT_TO_DO = {
  fix_configuration: "fix the configuration and alert the team",
  retry_new_token: "mint a fresh token and retry once",
  wait_and_retry: "wait Retry-After and retry with a fresh token",
  tell_user: "show the user a message",
};

// actionOf returns the group of code; an answer without a known code (a proxy's error page,
// a code added after this program) is shown to the user.
export function actionOf(code) {
  return Object.keys(ACTIONS).find((a) => ACTIONS[a].includes(code)) ?? "tell_user";
}

// LinkRefused is a link the gateway did not open: code, status, action, detail, the failing
// fields' names (never values) and the request id to quote to the service.
export class LinkRefused extends Error {
  constructor(status, problem, retryAfter) {
    const code = problem.code ?? "";
    const action = actionOf(code);
    super(`link refused: ${code || "no code"} (${status}, request id ${problem.request_id ?? "none"}): ` +
      `${WHAT_TO_DO[action]}: ${problem.detail ?? "no detail"}`);
    Object.assign(this, { status, code, action, detail: problem.detail, requestId: problem.request_id,
      fields: (problem.fields ?? []).map((f) => f.field), retryAfter });
  }

  // userMessage is what to show the person who clicked.
  userMessage() {
    if (this.code === "payload_invalid") {
      return `The service needs these details, which are missing or not valid: ${this.fields.join(", ")}. Complete them and try again.`;
    }
    if (this.action === "wait_and_retry" || this.action === "retry_new_token") {
      return "The service is busy. Try again in a minute.";
    }
    return `The service cannot be opened right now. If this persists, quote ${this.requestId ?? "the time"} to support.`;
  }
}

// postURL sends one token to /url and returns the login URL. From your server only: the
// browser must never hold your key, and the gateway sends no CORS headers.
export async function postURL(gateway, partner, token) {
  const res = await fetch(`${gateway}/partner/${encodeURIComponent(partner)}/url`, {
    method: "POST",
    headers: { "Content-Type": "text/plain" },
    body: token,
    redirect: "error",
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.text();
  if (res.ok) {
    const loginURL = new URL(body.trim()); // throws on anything but a URL
    if (loginURL.protocol !== "https:" && loginURL.protocol !== "http:") throw new Error("the gateway answered no web address");
    return loginURL.href;
  }
  let problem = {};
  if ((res.headers.get("Content-Type") ?? "").startsWith("application/problem+json")) {
    try {
      problem = JSON.parse(body);
    } catch {} // a broken problem document is an answer without a code
  }
  throw new LinkRefused(res.status, problem, Number(res.headers.get("Retry-After") ?? NaN));
}

// openLink mints a token for fields and returns the login URL for the user's browser. Open
// it at once (redirect the user's tab, or set the iframe's src): it works once, within 60
// seconds. Never log it or cache it. It retries once where the code says a retry can help,
// waiting at most maxWaitSeconds for Retry-After, since a person is waiting.
export async function openLink(s, gateway, partner, fields, { maxWaitSeconds = 5 } = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await postURL(gateway, partner, await mintToken(s, fields)); // a fresh token each time
    } catch (err) {
      if (!(err instanceof LinkRefused) || attempt > 1) throw err;
      if (err.action === "wait_and_retry" && err.retryAfter <= maxWaitSeconds) {
        await new Promise((resolve) => setTimeout(resolve, err.retryAfter * 1000));
      } else if (err.action !== "retry_new_token") {
        throw err;
      }
    }
  }
}

const escapeHTML = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// formPage returns the page that POSTs a fresh token to /payload as soon as it loads, for a
// browser (tab, iframe, web control) that should show the result itself. Serve it with
// Cache-Control: no-store, one page per click: its token works once, for 60 seconds. Its
// referrer policy, strict-origin, sends the gateway your site's origin and no path: the
// gateway refuses a form whose Origin is not one of your registered pages.
export async function formPage(s, gateway, partner, fields) {
  const action = `${gateway}/partner/${encodeURIComponent(partner)}/payload`;
  const token = await mintToken(s, fields);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="strict-origin">
<title>Opening the service</title>
</head>
<body>
<form id="link" method="post" action="${escapeHTML(action)}">
<input type="hidden" name="payload" value="${escapeHTML(token)}">
<noscript><button type="submit">Continue</button></noscript>
</form>
<script>document.getElementById("link").submit();</script>
</body>
</html>
`;
}
