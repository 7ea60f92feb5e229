"""Who may use the review app: the rules its HTTP layer applies to every request, as plain
functions over the request's method, headers and query (no web framework here, so each rule is
read and tested on its own).

- **Host** names this server (against DNS rebinding, where a site's own name is made to point at
  this machine so its scripts can read the app): an IP address (a browser sends one only when its
  user typed it, so a rebound name never matches), ``localhost``, this machine's host names when
  the app listens beyond loopback, and the names given with ``--allow-host``. Else 400.
- **Token**, where there is one (always when the app listens beyond loopback): from ``?token=``,
  the cookie it becomes, or ``Authorization: Bearer``. Missing: 401; wrong: 403.
- **Writes** (any method but GET, HEAD, OPTIONS) come from this app's own pages: a browser's
  ``Origin`` must name the same host and port as ``Host``. Else 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import socket
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from vabench.core.errors import VabenchError

TOKEN_PARAM = "token"
TOKEN_ENV = "VABENCH_REVIEW_TOKEN"  # where the review app (and the human player) read a token from
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{16,256}")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOCAL_NAMES = ("localhost",)


class BadAccess(VabenchError, ValueError):
    """A token or host name the app cannot be started with (named, with the fix)."""


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str


@dataclass(frozen=True)
class Access:
    """The rules of one running app: its token (None: no token, loopback only), the host names it
    answers to besides IP addresses, and its port (which names its cookie: cookies are shared
    between the ports of a host, so two apps on one machine keep theirs apart)."""

    token: str | None = None
    names: frozenset[str] = frozenset(LOCAL_NAMES)
    port: int = 0

    @property
    def cookie(self) -> str:
        return f"vabench-review-{self.port}"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def check_token(token: str) -> str:
    if not TOKEN_SHAPE.fullmatch(token):
        raise BadAccess("--token must be 16 to 256 letters, digits or -._~ (leave it out to have one generated)")
    return token


def host_names(extra: list[str] | None, beyond_loopback: bool) -> frozenset[str]:
    """The names the app answers to: localhost, this machine's names when it listens beyond
    loopback (what colleagues type), and ``extra`` (a reverse proxy's or a DNS alias)."""
    names = set(LOCAL_NAMES)
    if beyond_loopback:
        names |= {socket.gethostname(), socket.getfqdn()}
    for name in extra or []:
        if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", name):
            raise BadAccess(f"--allow-host takes a host name such as review.lab.example, not {name!r}")
        names.add(name)
    return frozenset(n.lower().rstrip(".") for n in names)


def host_name(host: str) -> str:
    """The name part of a Host header (``[::1]:8765`` -> ``::1``, ``Example.org.:80`` -> ``example.org``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return (host.rsplit(":", 1)[0] if host.count(":") == 1 else host).rstrip(".")


def host_ok(access: Access, host: str | None) -> bool:
    if not host:
        return False
    name = host_name(host)
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name in access.names


def given_token(query: str, cookies: dict[str, str], authorization: str | None, access: Access) -> str | None:
    """The token a request carries: the URL's first, then the cookie, then a Bearer header."""
    in_url = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == TOKEN_PARAM]
    if in_url:
        return in_url[0]
    if access.cookie in cookies:
        return cookies[access.cookie]
    scheme, _, value = (authorization or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def refusal(access: Access, method: str, headers, token: str | None) -> Refusal | None:
    """Why the request is refused, or None. ``headers``: a case-insensitive mapping."""
    host = headers.get("host")
    if not host_ok(access, host):
        return Refusal(400, f"Host {host!r} does not name this server (start it with --allow-host NAME to add a name)")
    if access.token is not None:
        if not token:
            return Refusal(401, "this review app needs its token: open the URL it printed (…/?token=…)")
        if not hmac.compare_digest(token.encode(), access.token.encode()):
            return Refusal(403, "wrong token: open the URL the review app printed")
    if method.upper() not in SAFE_METHODS and not same_origin(headers):
        return Refusal(403, f"writes from {headers.get('origin') or 'another site'} are refused")
    return None


def same_origin(headers) -> bool:
    """A write from this app's own pages: the browser's Origin names the Host it sent to (a
    client that is not a browser sends no Origin, and is no cross-site request)."""
    origin = headers.get("origin")
    if origin is None:
        return headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")
    return urlsplit(origin).netloc.lower() == (headers.get("host") or "").lower()


def without_token(path: str, query: str) -> str:
    """The address with ``?token=`` dropped (where the app sends a browser once the token is its cookie)."""
    rest = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != TOKEN_PARAM])
    return path + (f"?{rest}" if rest else "")
