"""Whether a host name or address is this machine's loopback.

Shared by localwhisk (it refuses to listen anywhere else without a key) and the analyzer (a
platform whose API is on the loopback runs on the machine that ran faasprof).
"""

from __future__ import annotations

import ipaddress
import urllib.parse


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``); a name is not resolved."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user or password (``http://user:secret@host``)."""
    try:
        parts = urllib.parse.urlsplit(url if "://" in url else "https://" + url)
    except ValueError:
        return "@" in url
    return parts.username is not None or parts.password is not None


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``(redacted)`` (``http://(redacted)@host:port/path``):
    what any line or file may show of a URL someone wrote with a password in it."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return url
    host = authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}(redacted)@{host}{slash}{path}"


def url_host(url: str) -> str | None:
    """The host name or address ``url`` names (a scheme-less ``HOST[:PORT]`` taken as https); None
    when it names none."""
    try:
        return urllib.parse.urlsplit(url if "://" in url else "https://" + url).hostname
    except ValueError:
        return None
