"""Authentication for `xerj-tools mcp --http`: bearer tokens by hash, and OAuth 2.1 access tokens.

One `TokenVerifier` (the MCP SDK's protocol; the SDK's bearer middleware calls it for every
request) answers both kinds:

- a token whose SHA-256 is in the callers file (`_callers`) is that caller;
- otherwise, with an issuer configured, the token is read as a JWT access token: its signature
  is checked against the issuer's keys (JWKS, fetched over HTTP and cached; fetched again when a
  token names a key id not seen yet, at most once every 30 s), then `iss`, `aud` (this server's
  resource URL), `exp` and `nbf`; the claim named by `claim` (default `sub`) picks the caller.

The SDK publishes the protected-resource metadata (RFC 9728) and answers 401 with a
``WWW-Authenticate`` that points to it. PyJWT (with `cryptography`) comes with the MCP SDK.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.server.auth.provider import AccessToken

from ..._exceptions import ConfigurationError
from ._callers import Caller, CallersFile

__all__ = ["CallerVerifier", "OAuthSettings", "caller_of"]

logger = logging.getLogger("xerj_tools")

_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
_REFETCH_SECONDS = 30.0
_LEEWAY_SECONDS = 30  # on `exp` and `nbf`: clocks of the issuer and this server disagree a little


@dataclass(frozen=True)
class OAuthSettings:
    """This server as an OAuth 2.1 resource server.

    `issuer`: the authorization server (tokens' `iss`); `resource`: this server's public URL,
    e.g. ``https://mcp.example.com/mcp`` (tokens' `aud`, and the protected-resource metadata);
    `jwks_uri`: the issuer's keys, else read from its metadata
    (``/.well-known/oauth-authorization-server``, then ``/.well-known/openid-configuration``);
    `claim`: the claim matched against each caller's ``oauth_subject``; `scopes`: scopes every
    token must carry."""

    issuer: str
    resource: str
    jwks_uri: str | None = None
    claim: str = "sub"
    scopes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("issuer", "resource"):
            value = getattr(self, name)
            if not value.startswith(("https://", "http://")):
                raise ConfigurationError(f"--oauth-{name} must be an http(s) URL; got {value!r}")


def _scopes(claim: Any) -> list[str] | None:
    """A token's scopes: ``scope`` is space-separated text (RFC 9068); some issuers send a list
    (``scp``). Absent: none. Any other shape is not a scope claim (None)."""
    if claim is None:
        return []
    if isinstance(claim, str):
        return claim.split()
    if isinstance(claim, list) and all(isinstance(s, str) for s in claim):
        return list(claim)
    return None


def caller_of(token: AccessToken | None) -> str | None:
    """The caller name a verified token carries (set by `CallerVerifier`)."""
    if token is None or not token.claims:
        return None
    name = token.claims.get("xerj_caller")
    return name if isinstance(name, str) else None


class CallerVerifier:
    """The SDK's `TokenVerifier`: a token -> the `AccessToken` of a known caller, else None."""

    def __init__(self, callers: CallersFile, oauth: OAuthSettings | None = None) -> None:
        self.callers = callers
        self.oauth = oauth
        self._keys: dict[str, Any] = {}
        self._fetched_at = -_REFETCH_SECONDS
        self._jwks_uri = oauth.jwks_uri if oauth else None
        self._lock = asyncio.Lock()

    def caller(self, name: str) -> Caller | None:
        """The caller of that name in the callers file as it is now."""
        self.callers.refresh()
        return self.callers.callers().get(name)

    async def verify_token(self, token: str) -> AccessToken | None:
        await self.callers.settled()  # a change being written is waited for, not read half-done
        caller = self.callers.for_token(token)
        if caller is not None:
            # The operator's file admits it: it holds whatever scopes OAuth tokens must carry
            # (the SDK demands them of every token), and it is its caller's, nobody else's.
            scopes = list(self.oauth.scopes) if self.oauth is not None else []
            return AccessToken(
                token=token,
                client_id=caller.name,
                scopes=scopes,
                claims={"xerj_caller": caller.name},
            )
        if self.oauth is None or token.count(".") != 2:
            return None
        return await self._verify_jwt(token, self.oauth)

    async def _verify_jwt(self, token: str, oauth: OAuthSettings) -> AccessToken | None:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if key is None:
            logger.warning("an OAuth token names a key the issuer does not publish")
            return None
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(_ALGORITHMS),
                audience=oauth.resource,
                issuer=oauth.issuer,
                leeway=_LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
            expires_at = int(claims["exp"]) + _LEEWAY_SECONDS
        # Past the library's own errors: what a signed token of odd claims raises (an `exp` of
        # Infinity, which Python's JSON reads) is a refusal too, never a 500.
        except (jwt.PyJWTError, ValueError, TypeError, OverflowError) as exc:
            logger.info("an OAuth token was refused: %s", type(exc).__name__)
            return None
        scopes = _scopes(claims.get("scope", claims.get("scp")))
        if scopes is None:
            logger.warning("an OAuth token was refused: its scope claim is neither text nor a list")
            return None
        if not set(oauth.scopes) <= set(scopes):
            logger.info("an OAuth token lacks a required scope")
            return None
        subject = claims.get(oauth.claim)
        caller = self.callers.for_subject(subject) if isinstance(subject, str) else None
        if caller is None:
            logger.warning(
                "an OAuth token was verified, but its %s is no caller's oauth_subject", oauth.claim
            )
            return None
        client_id = claims.get("client_id", claims.get("azp"))
        sub = claims.get("sub")
        return AccessToken(
            token=token,
            client_id=client_id if isinstance(client_id, str) and client_id else caller.name,
            scopes=scopes,
            # The SDK refuses a token once `expires_at` has passed: the leeway given to the
            # signature check above applies there too.
            expires_at=expires_at,
            resource=oauth.resource,
            # A session belongs to the (client_id, iss, subject) that opened it: the subject
            # names the caller too, so two callers whose tokens share `sub` and `client_id`
            # (one user or machine client in two tenants, matched by another claim) never
            # share a session.
            subject=json.dumps([caller.name, sub if isinstance(sub, str) else None]),
            claims={"iss": claims.get("iss"), "xerj_caller": caller.name},
        )

    def _known(self, kid: str | None) -> Any:
        if kid is None:  # a token without a key id: only an issuer with one key can sign it
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _key(self, kid: str | None) -> Any:
        if (key := self._known(kid)) is not None:
            return key
        async with self._lock:  # a key id not seen yet: the issuer may have rotated its keys
            if self._known(kid) is None and time.monotonic() - self._fetched_at >= _REFETCH_SECONDS:
                await self._fetch_keys()
        return self._known(kid)

    async def _fetch_keys(self) -> None:
        import jwt

        assert self.oauth is not None
        self._fetched_at = time.monotonic()
        try:
            async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False) as client:
                if self._jwks_uri is None:
                    self._jwks_uri = await _discover_jwks(client, self.oauth.issuer)
                reply = await client.get(self._jwks_uri)
                reply.raise_for_status()
                keys = jwt.PyJWKSet.from_dict(reply.json())
        except (httpx2.HTTPError, ValueError, jwt.PyJWTError, ConfigurationError) as exc:
            logger.error("cannot read the OAuth issuer's keys: %s", type(exc).__name__)
            return
        self._keys = {k.key_id or "": k for k in keys.keys}
        logger.info("OAuth issuer keys read: %d", len(self._keys))


async def _discover_jwks(client: httpx2.AsyncClient, issuer: str) -> str:
    base = issuer.rstrip("/")
    for suffix in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        try:
            reply = await client.get(base + suffix)
            if reply.status_code == 200 and isinstance(uri := reply.json().get("jwks_uri"), str):
                return uri
        except (httpx2.HTTPError, ValueError, AttributeError):
            continue
    raise ConfigurationError(f"the issuer {issuer} publishes no jwks_uri; pass --oauth-jwks URL")
