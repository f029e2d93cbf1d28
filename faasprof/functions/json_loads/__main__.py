"""json_loads: parse a JSON text of ``size`` records ``repeat`` times.

The text is generated once per process (kept warm between invocations, as a warm container
would); the measured work is parsing. Input: ``{"size": 100, "repeat": 5}`` (optional).
Output: the number of records parsed and a checksum over their ids and values.
"""

import json

from paramlib import int_param

DEFAULT_SIZE = 100
DEFAULT_REPEAT = 5

_TEXTS = {}  # type: dict[int, str]  # a comment, not an annotation: the payload also runs on old python:3 images


def text_for(size):
    if size not in _TEXTS:
        records = [
            {
                "id": i,
                "label": "item %d" % i,
                "value": i * 0.5,
                "flags": [i % 2 == 0, i % 3 == 0],
                "meta": {"depth": i % 4},
            }
            for i in range(size)
        ]
        _TEXTS[size] = json.dumps({"records": records})
    return _TEXTS[size]


def main(args):
    try:
        size = int_param(args, "size", DEFAULT_SIZE, 0, 1000000)
        repeat = int_param(args, "repeat", DEFAULT_REPEAT, 0, 100000)
    except ValueError as error:
        return {"error": str(error)}
    text = text_for(size)
    checksum = 0.0
    parsed = 0
    for _ in range(repeat):
        document = json.loads(text)
        for record in document["records"]:
            checksum += record["id"] + record["value"] + record["meta"]["depth"]
            parsed += 1
    return {"benchmark": "json_loads", "size": size, "repeat": repeat, "records_parsed": parsed, "checksum": checksum}
