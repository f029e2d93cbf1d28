"""The storage servers for studies and chains: an S3 object store (versitygw), an iperf3 server
and a shared directory, started on loopback. The implementation lives in ``faasprof.invoker.storage``
(``faasprof run`` starts a workload's ``storage`` block itself); this is the stable import for
``experiments`` code. See ``faasprof.invoker.storage`` for how a function reaches them::

    from faasprof.experiments.storage import start_object_store
    with start_object_store(data_dir) as store:
        store.bucket("chain-data")
        params = {"s3": store.params(), "bucket": "chain-data"}   # what a function receives
"""

from faasprof.invoker.storage import (  # noqa: F401  (re-exported API)
    Iperf3Server,
    ObjectStore,
    Storage,
    check_spec,
    start_iperf3_server,
    start_object_store,
    start_storage,
)

__all__ = [
    "Iperf3Server",
    "ObjectStore",
    "Storage",
    "check_spec",
    "start_iperf3_server",
    "start_object_store",
    "start_storage",
]
