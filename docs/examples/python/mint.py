"""Mints partnergate link tokens with PyJWT (Debian: python3-jwt python3-cryptography).

Header typ, alg and kid; claims iss, aud, nbf = iat = now and exp = now + 60, in whole
SECONDS; a fresh nonce; the payload fields.
"""
import secrets
import time

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_private_key

# LIFETIME_SECONDS is short because the token is used at once; the gateway allows 300.
LIFETIME_SECONDS = 60


class Signer:
    """The private key (PKCS#8 PEM) and what every token needs: the kid under which
    jwks.json publishes the key, its alg, and the iss and aud agreed with the service."""

    def __init__(self, private_key_pem, kid, alg, iss, aud):
        if alg not in ("ES256", "RS256", "PS256"):
            raise ValueError(f"alg {alg}: the gateway accepts ES256, RS256 and PS256")
        self.key = load_pem_private_key(private_key_pem, password=None)
        self.kid, self.alg, self.iss, self.aud = kid, alg, iss, aud

    def mint(self, fields):
        """Signs a new token for one link. Call it for every click, and again for a retry:
        each token carries its own nonce and is accepted once."""
        now = int(time.time())  # whole seconds
        claims = {
            **fields,
            "iss": self.iss,
            "aud": self.aud,
            "nbf": now,
            "iat": now,  # optional; must equal nbf
            "exp": now + LIFETIME_SECONDS,
            "nonce": secrets.token_urlsafe(32),  # fresh for every token, from a CSPRNG
        }
        return jwt.encode(claims, self.key, algorithm=self.alg, headers={"typ": "JWT", "kid": self.kid})


def _present(d):
    return {k: v for k, v in d.items() if v is not None}  # an optional field is left out, never null


def main_link(employee, organization, contact, case_id=None):
    """The payload of a link for the main web client: an employee of yours signed in, a
    contact in focus. The employee fields make it a main link."""
    return _present({
        "employeeId": employee["id"],
        "employeeFirstname": employee["firstname"],
        "employeeLastname": employee["lastname"],
        "employeeUsername": employee.get("username"),
        "employeeEmail": employee.get("email"),
        "organizationName": organization["name"],
        "organizationId": organization["id"],
        "contact": _present(contact),
        "caseId": case_id,
    })


def go_link(organization, contact):
    """The payload of a link for the member's mobile client (Go): no employee id or name,
    and contact["email"] is required."""
    return {"organizationName": organization["name"], "organizationId": organization["id"], "contact": _present(contact)}
