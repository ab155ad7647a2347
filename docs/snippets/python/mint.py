"""Mints a partnergate link token with PyJWT (Debian: python3-jwt python3-cryptography).

Run: KEY_FILE=private.pem KID=acme-2026-03 ALG=ES256 ISS=https://acme.example AUD=svc-link python3 mint.py
"""
import os
import secrets
import time

import jwt

with open(os.environ["KEY_FILE"], "rb") as f:
    key = f.read()  # PKCS#8 PEM

now = int(time.time())
claims = {
    "iss": os.environ["ISS"],
    "aud": os.environ["AUD"],
    "nbf": now,  # the issued time
    "iat": now,  # optional; must equal nbf
    "exp": now + 120,  # at most 5 minutes after nbf
    "nonce": secrets.token_urlsafe(32),  # fresh for every token, from a CSPRNG
    # The payload fields are top-level claims. A Go (mobile client) link; for a main-client
    # link add employeeId, employeeFirstname and employeeLastname.
    "organizationName": "Acme Clinic",
    "organizationId": "org-17",
    "contact": {"id": "c-4711", "firstname": "Åsa", "lastname": "Lind", "email": "asa@example.org"},
}

token = jwt.encode(claims, key, algorithm=os.environ["ALG"], headers={"typ": "JWT", "kid": os.environ["KID"]})
print(token)
