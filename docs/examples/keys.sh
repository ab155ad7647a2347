# Makes a key pair with plain OpenSSL (1.1.1 or 3.x): a private key in PKCS#8 PEM, which
# stays on your server, and its public key in PEM, which jwks.mjs or jwks.py publishes.
umask 077 # the private keys are readable by you only

# ES256 (recommended): an EC key on the P-256 curve.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out es256-private.pem
openssl pkey -in es256-private.pem -pubout -out es256-public.pem

# RS256 (or PS256): an RSA key of 3072 bits.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out rs256-private.pem
openssl pkey -in rs256-private.pem -pubout -out rs256-public.pem
