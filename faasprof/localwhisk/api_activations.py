"""Activation records read back: the list (``since``/``upto``/``limit``/``skip``/``docs``/``name``/
``count``), one record, its ``/result`` and its ``/logs``, as OpenWhisk answers them from the store."""

from __future__ import annotations

import re

from aiohttp import web

from faasprof.localwhisk.api_base import RESOURCE_DOES_NOT_EXIST, ApiBase, limit_skip


class Activations(ApiBase):
    """The handlers of ``.../activations`` and ``.../activations/ID[/result|/logs]``."""

    async def activations_list(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        q = request.query
        limit, skip, problem = limit_skip(q, "activations")
        if problem:
            return self.error(400, problem)
        docs = q.get("docs", "false") == "true"
        count = q.get("count", "false") == "true"
        if docs and count:
            return self.error(400, "The parameter 'docs' is not permitted with 'count'.")
        bounds = {}
        for key in ("since", "upto"):
            if key in q:
                try:
                    bounds[key] = int(q[key])
                except ValueError:
                    return self.error(400, f"Parameter is not a valid value for epoch seconds: {q[key]}")
        name = q.get("name")
        if name is not None and (name.count("/") > 1 or not name.strip("/")):
            return self.error(400, f"Parameter may be a 'simple' name or 'package-name/simple' name: {name}")
        rows = await self.store.list_activations(
            ns, name.strip("/") if name else None, bounds.get("since"), bounds.get("upto"), limit, skip, count
        )
        if count:
            return self.ok({"activations": rows})
        if docs:
            return self.ok([doc for doc, _ in rows])
        return self.ok([_summary(doc, code) for doc, code in rows])

    async def activation(self, request: web.Request) -> web.Response:
        ns = self.resolve_namespace(request.match_info["ns"])
        if ns is None:
            return self.error(
                403, f"The supplied authentication is not authorized to access '{request.match_info['ns']}'."
            )
        activation_id = request.match_info["id"]
        if not re.fullmatch(r"[0-9a-fA-F]{32}", activation_id):
            return self.error(400, "The activation id is not valid.")
        record = await self.store.get_activation(ns, activation_id.lower())
        if record is None:
            return self.error(404, RESOURCE_DOES_NOT_EXIST)
        what = request.match_info.get("what")
        if what is None:
            return self.ok(record)
        if what == "result":
            return self.ok(record["response"])
        if what == "logs":
            return self.ok({"logs": record["logs"]})
        return self.error(404, RESOURCE_DOES_NOT_EXIST)


def _summary(doc: dict, status_code: int) -> dict:
    """The ``docs=false`` list entry (OpenWhisk's activations view)."""
    out = {
        k: doc[k]
        for k in ("namespace", "name", "version", "publish", "annotations", "activationId", "start", "end", "duration")
        if k in doc
    }
    if "cause" in doc:
        out["cause"] = doc["cause"]
    out["statusCode"] = status_code
    return out
