"""Whether a host name or address is this machine's loopback.

Shared by localwhisk (it refuses to listen anywhere else without a key) and the analyzer (a
platform whose API is on the loopback runs on the machine that ran faasprof).
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``); a name is not resolved."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
