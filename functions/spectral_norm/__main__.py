"""spectral_norm: the spectral norm of the infinite matrix A(i,j) = 1/((i+j)(i+j+1)/2+i+1),
truncated to ``size`` x ``size``, by 10 rounds of the power method on A^T A.

Input: ``{"size": 120}`` (optional). Output: the norm to 9 decimals (size 100 gives 1.274219991).
"""

import math

DEFAULT_SIZE = 120


def a(i, j):
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


def times(v, n):
    return [sum(a(i, j) * v[j] for j in range(n)) for i in range(n)]


def times_transposed(v, n):
    return [sum(a(j, i) * v[j] for j in range(n)) for i in range(n)]


def at_times_a(v, n):
    return times_transposed(times(v, n), n)


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
        n = int_param(args, "size", DEFAULT_SIZE, 1, 10000)
    except ValueError as error:
        return {"error": str(error)}
    u = [1.0] * n
    v = u
    for _ in range(10):
        v = at_times_a(u, n)
        u = at_times_a(v, n)
    vbv = sum(ui * vi for ui, vi in zip(u, v))
    vv = sum(vi * vi for vi in v)
    return {"benchmark": "spectral_norm", "size": n, "norm": round(math.sqrt(vbv / vv), 9)}
