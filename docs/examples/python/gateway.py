"""Opens partnergate links from the partner's server: POSTs a fresh token to
/partner/<name>/url and returns the login URL, acting on every code the gateway answers;
or renders the page that POSTs the token to /partner/<name>/payload from a browser.
Standard library only, besides mint.py.
"""
import html
import json
import time
import urllib.error
import urllib.parse
import urllib.request

# ACTIONS says what this program does with each code the gateway answers (docs/partners.md,
# section 4). Every code is in exactly one group; a code missing here is a bug.
ACTIONS = {
    # Our configuration, clock or code is wrong: retrying cannot help. Alert the team that
    # runs this program (the log line has the code and request id), and tell the user the
    # link is unavailable.
    "fix_configuration": [
        "not_found", "partner_unknown", "method_not_allowed", "unsupported_media_type",
        "body_too_large", "token_missing", "token_duplicated", "token_in_query",
        "token_malformed", "header_invalid", "algorithm_not_allowed", "key_id_missing",
        "key_unknown", "signature_invalid", "claims_invalid", "time_in_milliseconds", "issuer_invalid",
        "audience_invalid", "lifetime_too_long", "nonce_missing", "nonce_invalid",
        "kind_not_allowed",
        "origin_not_allowed",  # a /payload form from a page the service has not registered (a browser sees it)
        "token_not_yet_valid", "token_expired",  # our clock is off: synchronise it (NTP)
    ],
    # This token cannot be used, a new one can: mint a fresh token and send it once more.
    "retry_new_token": ["token_replayed", "token_before_store_start", "body_unreadable"],
    # The gateway cannot check tokens right now, or the service behind it failed after taking
    # the token: wait Retry-After seconds, then send a fresh token.
    "wait_and_retry": ["keys_unavailable", "nonce_store_unavailable", "nonce_store_full",
                       "upstream_unavailable",  # the token is spent: never resend it
                       "dry_run_rate_limited"],
    # The link's data or the service: show the user a message (payload_invalid names the fields).
    "tell_user": ["payload_invalid", "internal_error"],
}

WHAT_TO_DO = {
    "fix_configuration": "fix the configuration and alert the team",
    "retry_new_token": "mint a fresh token and retry once",
    "wait_and_retry": "wait Retry-After and retry with a fresh token",
    "tell_user": "show the user a message",
}


def action_of(code):
    """The group of code; an answer without a known code (a proxy's error page, a code
    added after this program) is shown to the user."""
    return next((a for a, codes in ACTIONS.items() if code in codes), "tell_user")


class LinkRefused(Exception):
    """A link the gateway did not open: code, status, action, detail, the failing fields'
    names (never values) and the request id to quote to the service."""

    def __init__(self, status, problem, retry_after):
        self.status, self.retry_after = status, retry_after
        self.code = problem.get("code", "")
        self.action = action_of(self.code)
        self.detail = problem.get("detail", "no detail")
        self.request_id = problem.get("request_id")
        self.fields = [f.get("field") for f in problem.get("fields", [])]
        super().__init__(f"link refused: {self.code or 'no code'} ({status}, request id {self.request_id or 'none'}): "
                         f"{WHAT_TO_DO[self.action]}: {self.detail}")

    def user_message(self):
        """What to show the person who clicked."""
        if self.code == "payload_invalid":
            return (f"The service needs these details, which are missing or not valid: {', '.join(self.fields)}. "
                    "Complete them and try again.")
        if self.action in ("wait_and_retry", "retry_new_token"):
            return "The service is busy. Try again in a minute."
        return f"The service cannot be opened right now. If this persists, quote {self.request_id or 'the time'} to support."


def _endpoint(gateway, partner, name):
    return f"{gateway}/partner/{urllib.parse.quote(partner, safe='')}/{name}"


def post_url(gateway, partner, token):
    """Sends one token to /url and returns the login URL. From your server only: the
    browser must never hold your key, and the gateway sends no CORS headers."""
    req = urllib.request.Request(_endpoint(gateway, partner, "url"), data=token.encode(),
                                 headers={"Content-Type": "text/plain"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            login_url = res.read().decode().strip()
    except urllib.error.HTTPError as err:
        problem = {}
        if (err.headers.get("Content-Type") or "").startswith("application/problem+json"):
            try:
                problem = json.loads(err.read())
            except ValueError:
                pass  # a broken problem document is an answer without a code
        retry_after = err.headers.get("Retry-After")
        raise LinkRefused(err.code, problem, int(retry_after) if (retry_after or "").isdigit() else None) from None
    if urllib.parse.urlsplit(login_url).scheme not in ("https", "http"):
        raise ValueError("the gateway answered no web address")
    return login_url


def open_link(signer, gateway, partner, fields, max_wait_seconds=5):
    """Mints a token for fields and returns the login URL for the user's browser. Open it
    at once (redirect the user's tab, or set the iframe's src): it works once, within 60
    seconds. Never log it or cache it. It retries once where the code says a retry can
    help, waiting at most max_wait_seconds for Retry-After, since a person is waiting."""
    for attempt in (1, 2):
        try:
            return post_url(gateway, partner, signer.mint(fields))  # a fresh token each time
        except LinkRefused as err:
            if attempt == 2:
                raise
            if err.action == "wait_and_retry" and err.retry_after is not None and err.retry_after <= max_wait_seconds:
                time.sleep(err.retry_after)
            elif err.action != "retry_new_token":
                raise


FORM_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="strict-origin">
<title>Opening the service</title>
</head>
<body>
<form id="link" method="post" action="{action}">
<input type="hidden" name="payload" value="{token}">
<noscript><button type="submit">Continue</button></noscript>
</form>
<script>document.getElementById("link").submit();</script>
</body>
</html>
"""


def form_page(signer, gateway, partner, fields):
    """The page that POSTs a fresh token to /payload as soon as it loads, for a browser
    (tab, iframe, web control) that should show the result itself. Serve it with
    Cache-Control: no-store, one page per click: its token works once, for 60 seconds. Its
    referrer policy, strict-origin, sends the gateway your site's origin and no path: the
    gateway refuses a form whose Origin is not one of your registered pages."""
    return FORM_PAGE.format(action=html.escape(_endpoint(gateway, partner, "payload")),
                            token=html.escape(signer.mint(fields)))
