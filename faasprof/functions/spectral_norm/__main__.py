"""spectral_norm: the spectral norm of the infinite matrix A(i,j) = 1/((i+j)(i+j+1)/2+i+1),
truncated to ``size`` x ``size``, by 10 rounds of the power method on A^T A.

Input: ``{"size": 120}`` (optional). Output: the norm to 9 decimals (size 100 gives 1.274219991).
"""

import math

from paramlib import int_param

DEFAULT_SIZE = 120


def a(i, j):
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


def times(v, n):
    return [sum(a(i, j) * v[j] for j in range(n)) for i in range(n)]


def times_transposed(v, n):
    return [sum(a(j, i) * v[j] for j in range(n)) for i in range(n)]


def at_times_a(v, n):
    return times_transposed(times(v, n), n)


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
