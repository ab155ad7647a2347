"""Opens a link as a partner's server does, with example data: prints the login URL (url),
the token (token, for `partnerlink check`) or the auto-submitting form page (form).

Run: GATEWAY=https://sso.example.com PARTNER=acme KEY_FILE=es256-private.pem KID=acme-2026-03 \\
  ALG=ES256 ISS=https://acme.example AUD=svc-link python3 link.py url|token|form main|go [fields.json]
"""
import json
import os
import sys

from gateway import LinkRefused, form_page, open_link
from mint import Signer, go_link, main_link

args = sys.argv[1:]
if len(args) not in (2, 3) or args[0] not in ("url", "token", "form") or args[1] not in ("main", "go"):
    sys.exit("usage: python3 link.py url|token|form main|go [fields.json]")
command, kind = args[0], args[1]
env = os.environ
with open(env["KEY_FILE"], "rb") as f:
    signer = Signer(f.read(), env["KID"], env["ALG"], env["ISS"], env["AUD"])

# In your application these come from the signed-in user and the contact on screen.
organization = {"name": "Acme Clinic", "id": "org-17"}
contact = {"id": "c-4711", "firstname": "Åsa", "lastname": "Lind", "email": "asa@example.org", "birthdate": "1980-02-29"}
employee = {"id": "emp-1001", "firstname": "Eva", "lastname": "Berg"}
if len(args) == 3:
    with open(args[2], encoding="utf-8") as f:
        fields = json.load(f)
else:
    fields = main_link(employee, organization, contact) if kind == "main" else go_link(organization, contact)

try:
    if command == "token":
        print(signer.mint(fields))
    elif command == "form":
        sys.stdout.write(form_page(signer, env["GATEWAY"], env["PARTNER"], fields))
    else:
        # A web server would redirect the user's browser to it; this demo prints it.
        print(open_link(signer, env["GATEWAY"], env["PARTNER"], fields, float(env.get("MAX_WAIT_SECONDS", "5"))))
except LinkRefused as err:
    print(err, file=sys.stderr)  # code, status, request id, action: never the token
    print(f"message for the user: {err.user_message()}", file=sys.stderr)
    sys.exit(1)
except (OSError, ValueError) as err:
    # The gateway did not answer (network, TLS, timeout) or answered no URL: alert the team.
    print(f"link failed: {err}", file=sys.stderr)
    print("message for the user: The service cannot be opened right now. Try again later.", file=sys.stderr)
    sys.exit(1)
