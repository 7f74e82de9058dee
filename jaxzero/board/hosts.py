"""Which requests the board answers, by their ``Host`` header, whatever address it is bound to.

    names = allowed_names("0.0.0.0", allow=("board.example",))
    app = HostCheck(app, names, port=8765)   # a request naming another host: 400
    exposure("192.0.2.7")                    # the start-up warning, or None on loopback

A page of another site can point a name of its own at the board's address (DNS
rebinding); its script's requests then reach the board naming that site in ``Host``. So
the board answers only requests naming, with the port it is bound to,

* the address it is bound to;
* ``localhost``, ``127.0.0.1`` or ``[::1]``, when that address is a loopback one (any
  127.x.y.z, ``::1``, ``localhost``) or every address (``0.0.0.0``, ``::``);
* bound to every address: this machine's own names (its host name, that name
  ``.local``, its full name), the addresses they resolve to, and the address it reaches
  other machines from, so that another machine can use any of them;
* a name the user allows (``allow``: a name of this machine that none of these find).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
OTHER_HOST = (
    "the board answers requests to its own address only, and this one names another "
    "host (reach it by the address it printed)"
)
_PROBES = ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1"))  # documentation


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost``, 127.x.y.z or ``::1``."""
    if host.lower().rstrip(".") == "localhost":
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` serves every address of the machine (``0.0.0.0``, ``::``)."""
    address = _address(host)
    return host == "" or (address is not None and address.is_unspecified)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def exposure(host: str) -> str | None:
    """The start-up warning for serving on ``host``; None when it is this machine only."""
    if is_loopback(host):
        return None
    return (
        f"serving on {host}: whoever reaches this machine there can play and load positions "
        "(the default 127.0.0.1 is this machine only)"
    )


def allowed_names(host: str, allow: Iterable[str] = ()) -> frozenset[str]:
    """The names a request to a board bound to ``host`` may give in ``Host`` (lowercase,
    IPv6 addresses without brackets; see the module docstring)."""
    names = {host, *allow}
    if is_loopback(host) or is_wildcard(host):
        names.update(LOOPBACK_NAMES)
    if is_wildcard(host):
        names.update(machine_names())
    return frozenset(name.strip("[]").lower().rstrip(".") for name in names if name)


def machine_names() -> set[str]:
    """This machine's host name (and ``NAME.local``), its full name, the addresses they
    resolve to and the address it reaches other machines from (none sent a packet)."""
    host = socket.gethostname()
    names = {host, f"{host}.local", socket.getfqdn(host)}
    for name in list(names):
        try:
            names.update(str(found[4][0]) for found in socket.getaddrinfo(name, None))
        except (OSError, UnicodeError):
            continue  # a name nothing resolves: the name alone
    for family, probe in _PROBES:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))  # a datagram socket only picks its route
                names.add(str(udp.getsockname()[0]))
        except OSError:
            continue  # no route of that family
    return names


def host_and_port(header: str | None) -> tuple[str, int | None] | None:
    """(name, port or None) of a ``Host`` header; None when it is no host (a path, a user,
    a bad port)."""
    if not header or not header.isascii():
        return None
    try:
        parts = urlsplit("//" + header)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.path or parts.query or parts.fragment or "@" in header:
        return None
    return parts.hostname.rstrip("."), port


class HostCheck:
    """ASGI middleware: a request whose ``Host`` is not one of ``names`` at ``port``
    (any port when None; none given means 80) is answered 400, :data:`OTHER_HOST`."""

    def __init__(self, app: ASGIApp, names: frozenset[str], port: int | None = None):
        self.app, self.names, self.port = app, names, port

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is for this board."""
        parsed = host_and_port(header)
        if parsed is None or parsed[0] not in self.names:
            return False
        return self.port is None or (parsed[1] or 80) == self.port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.allows(
            Headers(scope=scope).get("host")
        ):
            await JSONResponse({"error": OTHER_HOST}, status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)
