"""pidigits: the first ``size`` decimal digits of pi with Gibbons' unbounded spigot (big ints).

Input: ``{"size": 2000}`` (digits; optional). Output: the first 20 and last 20 digits and a
digit sum.
"""

DEFAULT_SIZE = 2000


def pi_digits(count):
    """Digits of pi as a string, by the unbounded spigot (linear fractional transformations)."""
    q, r, t, k, n, l = 1, 0, 1, 1, 3, 3
    out = []
    while len(out) < count:
        if 4 * q + r - t < n * t:
            out.append(n)
            q, r, n = 10 * q, 10 * (r - n * t), (10 * (3 * q + r)) // t - 10 * n
        else:
            q, r, t, k, n, l = q * k, (2 * q + r) * l, t * l, k + 1, (q * (7 * k + 2) + r * l) // (t * l), l + 2
    return "".join(map(str, out))


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
        size = int_param(args, "size", DEFAULT_SIZE, 1, 100000)
    except ValueError as error:
        return {"error": str(error)}
    digits = pi_digits(size)
    return {
        "benchmark": "pidigits",
        "size": size,
        "first20": digits[:20],
        "last20": digits[-20:],
        "digit_sum": sum(map(int, digits)),
    }
