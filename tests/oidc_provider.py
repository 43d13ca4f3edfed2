"""A local OpenID Connect provider for the sign-in tests: a real HTTP server speaking the
authorization-code flow that Streamlit's ``st.login`` (Authlib) drives, with RS256-signed ID
tokens, a JWKS endpoint and discovery. No network, no mock of the client side: the browser is
redirected here and back exactly as it would be to a company's identity provider.

The test decides who "signs in" next (``provider.next_identity``): the authorize endpoint
approves at once for that identity (a real provider would ask for a password first).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from base64 import b64decode
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID = "golden-studio-test"
CLIENT_SECRET = "test-client-secret-not-real"


class OIDCProvider:
    """``with OIDCProvider() as idp:`` serves on 127.0.0.1 at ``idp.issuer``."""

    def __init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key-1"})
        self.next_identity: dict[str, Any] = {"sub": "u-1", "email": "expert@example.org", "email_verified": True,
                                              "name": "An Expert"}
        self._codes: dict[str, dict[str, Any]] = {}
        self.token_requests: list[dict[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def __enter__(self) -> "OIDCProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def secrets_toml(self, redirect_uri: str, cookie_secret: str) -> str:
        """The ``[auth]`` section a deployment writes into ``.streamlit/secrets.toml``."""
        return (f'[auth]\nredirect_uri = "{redirect_uri}"\ncookie_secret = "{cookie_secret}"\n'
                f'client_id = "{CLIENT_ID}"\nclient_secret = "{CLIENT_SECRET}"\n'
                f'server_metadata_url = "{self.metadata_url}"\n')

    # ---- the protocol ----------------------------------------------------------------------
    def _discovery(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "scopes_supported": ["openid", "profile", "email"]}

    def _authorize(self, query: dict[str, str]) -> str:
        """Approve at once for ``next_identity``: the redirect back to the app with a code."""
        if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
            raise ValueError("bad authorization request")
        code = secrets.token_urlsafe(16)
        self._codes[code] = {"nonce": query.get("nonce"), "redirect_uri": query["redirect_uri"],
                             "identity": dict(self.next_identity)}
        return f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}"

    def _token(self, form: dict[str, str], authorization: str | None) -> dict[str, Any]:
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, client_secret = b64decode(authorization[6:]).decode().partition(":")
        if (client_id, client_secret) != (CLIENT_ID, CLIENT_SECRET):
            raise PermissionError("invalid_client")
        grant = self._codes.pop(form.get("code", ""), None)  # a code is good once
        if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
            raise PermissionError("invalid_grant")
        self.token_requests.append(dict(form))
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300, **grant["identity"]}
        if grant["nonce"]:
            claims["nonce"] = grant["nonce"]
        id_token = jwt.encode({"alg": "RS256", "kid": "test-key-1"}, claims, self.key)
        return {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "expires_in": 300,
                "id_token": id_token}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet test output
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urlparse(self.path)
                if url.path == "/.well-known/openid-configuration":
                    return self._json(200, provider._discovery())
                if url.path == "/jwks":
                    return self._json(200, {"keys": [provider.key.as_dict(private=False)]})
                if url.path == "/authorize":
                    query = {k: v[0] for k, v in parse_qs(url.query).items()}
                    try:
                        target = provider._authorize(query)
                    except (ValueError, KeyError):
                        return self._json(400, {"error": "invalid_request"})
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                    return None
                return self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                if urlparse(self.path).path != "/token":
                    return self._json(404, {"error": "not_found"})
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = {k: v[0] for k, v in parse_qs(body).items()}
                try:
                    return self._json(200, provider._token(form, self.headers.get("Authorization")))
                except PermissionError as exc:
                    return self._json(400, {"error": str(exc)})

        return Handler
