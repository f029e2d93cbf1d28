"""json_loads: parse a JSON text of ``size`` records ``repeat`` times.

The text is generated once per process (kept warm between invocations, as a warm container
would); the measured work is parsing. Input: ``{"size": 100, "repeat": 5}`` (optional).
Output: the number of records parsed and a checksum over their ids and values.
"""

import json

DEFAULT_SIZE = 100
DEFAULT_REPEAT = 5

_TEXTS = {}


def text_for(size):
    if size not in _TEXTS:
        records = [
            {"id": i, "label": "item %d" % i, "value": i * 0.5, "flags": [i % 2 == 0, i % 3 == 0], "meta": {"depth": i % 4}}
            for i in range(size)
        ]
        _TEXTS[size] = json.dumps({"records": records})
    return _TEXTS[size]


def int_param(args, name, default, low, high):
    """``args[name]`` as an integer in [low, high]; missing or null gives ``default``. A whole
    number may come as a float or a string ("100", "1e3"), as CLIs and param files send it.
    Anything else raises ValueError with a message naming the parameter and its range."""
    value = args.get(name)
    if value is None:
        return default
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, (float, str)):
        try:
            as_float = float(value)
        except ValueError:
            as_float = None
        # finite (inf - inf and nan - nan are nan) and whole
        if as_float is not None and as_float - as_float == 0 and as_float == int(as_float):
            digits = isinstance(value, str) and value.strip().lstrip("+-").isdigit()
            number = int(value) if digits else int(as_float)  # "123456789012345678901" stays exact
    if number is None or not low <= number <= high:
        raise ValueError("%s: expected a whole number from %d to %d (got %r)" % (name, low, high, value))
    return number


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
