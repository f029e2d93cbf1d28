"""io-wordcount: a MapReduce word count over text blocks in storage (FunctionBench's MapReduce),
in one invocation: map each block (fetch, count), spill each partial count to local disk, reduce
the spills into one count and upload it.

Input: ``backend``/``s3``/``shared_dir``/``bucket`` as io-object; ``prefix`` of the blocks
(default ``blocks/``); ``blocks`` (default 4) of ``words_per_block`` (default 20000) words;
``prepare``: generate missing blocks first (``setup_ms``), from a fixed vocabulary with a seeded
generator, so a count is checkable; ``top`` words to report (default 5); ``local_dir`` (/tmp).
Output: words counted, distinct words, the most frequent ones, the result's key, the breakdown.
"""

import json
import os
import random
import uuid
from collections import Counter

import iolib

VOCABULARY = (
    "serverless function cold warm start memory network disk storage object bucket invoke "
    "latency throughput container sandbox runtime action trigger queue event batch"
).split()


def text_block(index, words):
    rng = random.Random(index)
    # A skewed choice, so the top words are well separated.
    return " ".join(VOCABULARY[min(int(rng.expovariate(0.25)), len(VOCABULARY) - 1)] for _ in range(words)).encode()


def main(params):
    bucket = params.get("bucket", "faasprof-io")
    prefix = params.get("prefix", "blocks/")
    count = int(params.get("blocks", 4))
    words = int(params.get("words_per_block", 20000))
    local_dir = params.get("local_dir", "/tmp")
    store, transfer = iolib.store_from_params(params)
    keys = [f"{prefix}{index:04d}.txt" for index in range(count)]
    bd = iolib.Breakdown()
    if params.get("prepare"):
        with bd.phase("setup"):
            store.create_bucket(bucket)
            for index, key in enumerate(keys):
                block = text_block(index, words)
                if store.head_size(bucket, key) != len(block):
                    store.put(bucket, key, block)
    work = os.path.join(local_dir, f"io-wordcount-{uuid.uuid4().hex}")
    with bd.phase("disk"):
        os.makedirs(work)
    try:
        spills = []
        for index, key in enumerate(keys):  # map
            with bd.phase(transfer):
                data = store.get(bucket, key)
            bd.add_bytes("network_in" if transfer == "network" else "disk_read", len(data))
            with bd.phase("compute"):
                spill = json.dumps(Counter(data.decode().split())).encode()
            path = os.path.join(work, f"map-{index:04d}.json")
            with bd.phase("disk"):
                with open(path, "wb") as handle:
                    handle.write(spill)
            bd.add_bytes("disk_write", len(spill))
            spills.append(path)
        total = Counter()
        for path in spills:  # reduce
            with bd.phase("disk"):
                with open(path, "rb") as handle:
                    spill = handle.read()
            bd.add_bytes("disk_read", len(spill))
            with bd.phase("compute"):
                total.update(json.loads(spill))
        with bd.phase("compute"):
            result = json.dumps(dict(sorted(total.items()))).encode()
        out_key = f"results/wordcount-{uuid.uuid4().hex[:8]}.json"
        with bd.phase(transfer):
            store.put(bucket, out_key, result)
        bd.add_bytes("network_out" if transfer == "network" else "disk_write", len(result))
    finally:
        with bd.phase("disk"):
            for name in os.listdir(work):
                os.remove(os.path.join(work, name))
            os.rmdir(work)
        if hasattr(store, "close"):
            store.close()
    top = int(params.get("top", 5))
    return bd.result(
        blocks=count,
        words=sum(total.values()),
        distinct=len(total),
        top=[[word, n] for word, n in total.most_common(top)],
        result_key=out_key,
    )
