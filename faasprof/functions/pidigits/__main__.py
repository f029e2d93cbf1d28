"""pidigits: the first ``size`` decimal digits of pi with Gibbons' unbounded spigot (big ints).

Input: ``{"size": 2000}`` (digits; optional). Output: the first 20 and last 20 digits and a
digit sum.
"""

from paramlib import int_param

DEFAULT_SIZE = 2000


def pi_digits(count):
    """Digits of pi as a string, by the unbounded spigot (linear fractional transformations)."""
    q, r, t, k, n, odd = 1, 0, 1, 1, 3, 3
    out = []
    while len(out) < count:
        if 4 * q + r - t < n * t:
            out.append(n)
            q, r, n = 10 * q, 10 * (r - n * t), (10 * (3 * q + r)) // t - 10 * n
        else:
            q, r, t, k, n, odd = (
                q * k,
                (2 * q + r) * odd,
                t * odd,
                k + 1,
                (q * (7 * k + 2) + r * odd) // (t * odd),
                odd + 2,
            )
    return "".join(map(str, out))


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
