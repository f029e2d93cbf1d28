"""One hop of a STeLLAR-style function chain (faasprof/analyzer/chains.py analyses its results).

Parameters: ``hops`` (how many functions are left in the chain, this one included; default 1),
``payload_bytes`` (P), ``mode`` (``inline``: the payload travels in the next invocation's
parameters; ``storage``: the producer writes an object and passes its key, the consumer reads
and deletes it), ``backend`` (``s3``: the workload's object store; ``file``: its shared
directory; default s3 when the workload's ``storage`` block passed ``s3``; the block's ``s3``,
``shared_dir`` and ``bucket`` reach the head, which hands them down as ``storage``), ``next``
(optional list of action names to call in turn; default: this action again), and from the
producer ``payload`` or ``object_key`` plus ``sent_ns``. A hop reports its transfer mode as
``inline``, ``storage:s3`` or ``storage:file``.

Each hop calls the next through OpenWhisk's REST API (``__OW_API_HOST``, ``__OW_API_KEY``,
blocking) and returns its own wall-clock timestamps (ns, ``time.time_ns``) and those of every
hop after it, so the transfer of hop k is ``received_ns[k+1] - send_start_ns[k]`` on one host's
clock. The payload is random bytes (incompressible), base64 text inline.
"""

import base64
import json
import os
import time
import urllib.request

import iolib

_SERVED = [0]  # activations this process has run: 0 means this one is its cold start


def _produce(payload_bytes):
    return os.urandom(payload_bytes)


def _store(storage):
    return iolib.store_from_params(storage)[0]


def _store_put(storage, key, data):
    _store(storage).put(storage["bucket"], key, data)


def _store_get(storage, key):
    store = _store(storage)
    data = store.get(storage["bucket"], key)
    # consumed: a chain never leaves its objects behind
    if storage["backend"] == "s3":
        store.request("DELETE", f"/{storage['bucket']}/{key}")
    else:
        os.unlink(store._path(storage["bucket"], key))
    return data


def _storage_of(args):
    """Where storage hand-overs go: the workload's storage block (s3, shared_dir, bucket), once
    read by the head and passed along the chain."""
    if args.get("storage"):
        return args["storage"]
    backend = args.get("backend") or ("s3" if args.get("s3") else "file")
    return {
        "backend": backend,
        "s3": args.get("s3"),
        "shared_dir": args.get("shared_dir"),
        "bucket": args.get("bucket", "faasprof-io"),
    }


def _invoke(action, params):
    host = os.environ["__OW_API_HOST"].rstrip("/")
    key = os.environ.get("__OW_API_KEY", "")
    namespace = os.environ.get("__OW_NAMESPACE", "_")
    url = f"{host}/api/v1/namespaces/{namespace}/actions/{action}?blocking=true&result=true"
    request = urllib.request.Request(url, data=json.dumps(params).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", "Basic " + base64.b64encode(key.encode()).decode())
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def main(args):
    start_ns = time.time_ns()
    cold = _SERVED[0] == 0
    _SERVED[0] += 1
    hops = int(args.get("hops", 1))
    payload_bytes = int(args.get("payload_bytes", 0))
    mode = args.get("mode", "inline")
    storage = _storage_of(args) if mode == "storage" else {}
    received = 0
    if "payload" in args:
        received = len(base64.b64decode(args["payload"]))
    elif "object_key" in args:
        received = len(_store_get(storage, args["object_key"]))
    received_ns = time.time_ns()
    me = {
        "activation_id": os.environ.get("__OW_ACTIVATION_ID", ""),
        "start_ns": start_ns,
        "sent_ns": args.get("sent_ns"),
        "received_ns": received_ns,
        "received_bytes": received,
        "mode": mode if mode != "storage" else f"storage:{storage['backend']}",
        "payload_bytes": payload_bytes,
        "hops_left": hops,
        "cold": cold,
    }
    if hops <= 1:
        me["end_ns"] = time.time_ns()
        return {"hops": [me]}
    names = list(args.get("next") or [])
    action = names.pop(0) if names else os.environ.get("__OW_ACTION_NAME", "").rsplit("/", 1)[-1]
    params = {"hops": hops - 1, "payload_bytes": payload_bytes, "mode": mode, "storage": storage, "next": names}
    send_start_ns = time.time_ns()
    data = _produce(payload_bytes)
    if mode == "storage":
        key = f"chain-{me['activation_id'] or send_start_ns}-{hops}"
        _store_put(storage, key, data)
        params["object_key"] = key
    else:
        params["payload"] = base64.b64encode(data).decode("ascii")
    params["sent_ns"] = send_start_ns
    me["send_start_ns"] = send_start_ns
    me["invoke_ns"] = time.time_ns()
    result = _invoke(action, params)
    me["returned_ns"] = time.time_ns()
    me["end_ns"] = me["returned_ns"]
    if not isinstance(result, dict) or "hops" not in result:
        return {"hops": [me], "error": f"next hop {action} answered without hops: {str(result)[:300]}"}
    return {"hops": [me, *result["hops"]]}
