"""Publishes public keys as the JSON Web Key Set (jwks.json) the gateway fetches.

It reads PUBLIC keys only (the PEM of `openssl pkey -pubout`): the set is public, and a
set holding private material is refused by the gateway as a whole. Debian: python3-cryptography.
Run: python3 jwks.py es256-public.pem acme-2026-03 ES256 [more PEM KID ALG ...] > jwks.json
(two keys side by side while you rotate; see "Rotating keys").
"""
import base64
import json
import sys

from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key


def b64url_uint(n, size):
    return base64.urlsafe_b64encode(n.to_bytes(size, "big")).rstrip(b"=").decode()


def public_jwk(pem, kid, alg):
    key = load_pem_public_key(pem)  # refuses a private key
    if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
        n = key.public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": b64url_uint(n.x, 32), "y": b64url_uint(n.y, 32)}
    elif alg in ("RS256", "PS256") and isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048:
        n = key.public_numbers()
        jwk = {"kty": "RSA", "n": b64url_uint(n.n, (key.key_size + 7) // 8), "e": b64url_uint(n.e, (n.e.bit_length() + 7) // 8)}
    else:
        raise SystemExit(f"{alg} needs an EC P-256 key (ES256) or an RSA key of 2048 bits or more (RS256, PS256)")
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}  # kid: what your tokens name; alg binds the key


args = sys.argv[1:]
if not args or len(args) % 3:
    raise SystemExit("usage: python3 jwks.py PUBLIC_KEY.pem KID ES256|RS256|PS256 [PUBLIC_KEY.pem KID ALG ...]")
keys = []
for i in range(0, len(args), 3):
    with open(args[i], "rb") as f:
        keys.append(public_jwk(f.read(), args[i + 1], args[i + 2]))
print(json.dumps({"keys": keys}, indent=2))
