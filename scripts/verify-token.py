#!/usr/bin/env python3
"""Verifies a `guestmode serve` access token as another service would: with PyJWT, knowing only the
server's key set URL, its issuer and its audience. The token is read from standard input (never an
argument, which `ps` shows). Prints {"kid": ..., "claims": {...}} and exits 0 when the token verifies;
prints why not on standard error and exits 1 when it does not.

    python3 scripts/verify-token.py http://127.0.0.1:8080/.well-known/jwks.json ISSUER AUDIENCE < token

Needs PyJWT and cryptography (`make deps`). The end-to-end tests run it (ServerSigningKeyTests)."""
import json
import sys

import jwt


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    url, issuer, audience = sys.argv[1:]
    token = sys.stdin.read().strip()
    # No cache: each run reads the key set as it is now, as a verifier meeting an unknown kid does.
    client = jwt.PyJWKClient(url, cache_keys=False, cache_jwk_set=False)
    try:
        key = client.get_signing_key_from_jwt(token)
        claims = jwt.decode(
            token, key.key, algorithms=["ES256"], issuer=issuer, audience=audience,
            options={"require": ["iss", "aud", "sub", "iat", "exp"]})
    except jwt.exceptions.PyJWTError as error:
        print("refused: %s" % error, file=sys.stderr)
        return 1
    print(json.dumps({"kid": jwt.get_unverified_header(token)["kid"], "claims": claims}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
