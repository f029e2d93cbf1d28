"""A function whose cold start loads its padding, as one with large dependencies loads them.

The padding is ``/padding/filler.bin`` in a padded container image, else ``padding/filler.bin``
beside this file in a padded zip (faasprof/experiments/padding.py builds both). It is read once, at
import, inside the platform's initTime; each activation returns the bytes it loaded.
"""

import os

_CANDIDATES = ("/padding/filler.bin", os.path.join(os.path.dirname(os.path.abspath(__file__)), "padding", "filler.bin"))


def _load_padding():
    total = 0
    for path in _CANDIDATES:
        if os.path.exists(path):
            with open(path, "rb") as handle:
                while True:
                    chunk = handle.read(4 * 1024 * 1024)
                    if not chunk:
                        break
                    total += len(chunk)
    return total


PADDING_BYTES = _load_padding()


def main(args):
    return {"padding_bytes": PADDING_BYTES}
