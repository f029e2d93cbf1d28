"""Which platform serves a workload instance, by its ``endpoint``.

A run keeps one platform object per endpoint (``invoker.run``); tests and benchmarks that format
requests without a run use ``prepare_request``, which picks the platform the same way.
"""

from __future__ import annotations

from typing import Any

from platforms.base import Platform, PreparedRequest
from platforms.generic import GenericPlatform
from platforms.openwhisk.connection import Connection
from platforms.openwhisk.platform import OpenWhiskPlatform, prepare_action_request

PLATFORMS: tuple[type[Platform], ...] = (OpenWhiskPlatform, GenericPlatform)


def platform_class(instance: Any) -> type[Platform]:
    """The platform class serving ``instance``; ValueError when none does."""
    for cls in PLATFORMS:
        if cls.serves(instance):
            return cls
    raise ValueError(f"instances.{instance.name}.endpoint: {instance.endpoint!r} names no platform faasprof knows")


def prepare_request(instance: Any, connection: Connection | None = None, web_namespace: str | None = None,
                    origin_name: str = "<workload>") -> PreparedRequest:
    """The request of one instance on its platform: the OpenWhisk of ``connection``, or a platform
    built without settings (tests and benchmarks; a run builds its platforms with ``for_workload``)."""
    cls = platform_class(instance)
    if cls is OpenWhiskPlatform:
        return prepare_action_request(instance, connection, web_namespace, origin_name)
    return cls().prepare_request(instance, origin_name)
