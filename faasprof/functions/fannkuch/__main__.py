"""fannkuch: for every permutation of 1..size, count pancake flips until 1 is in front.

Permutations are visited in the order of the classic fannkuch-redux counting scheme, so the
alternating-sign checksum matches the published figures (size 7: checksum 228, 16 flips at most).
Input: ``{"size": 9}`` (optional). Output: checksum and maximum number of flips.
"""

from paramlib import int_param

DEFAULT_SIZE = 9


def fannkuch(n):
    perm1 = list(range(n))
    count = [0] * n
    max_flips = 0
    checksum = 0
    sign = 1
    r = n
    permutation_index = 0
    while True:
        while r != 1:
            count[r - 1] = r
            r -= 1
        if perm1[0] != 0:
            perm = perm1[:]
            flips = 0
            first = perm[0]
            while first != 0:
                perm[: first + 1] = perm[first::-1]
                flips += 1
                first = perm[0]
            if flips > max_flips:
                max_flips = flips
            checksum += sign * flips
        sign = -sign
        permutation_index += 1
        # Next permutation: rotate the first r+1 elements left until a counter is not exhausted.
        while True:
            if r == n:
                return checksum, max_flips, permutation_index
            first = perm1[0]
            perm1[:r] = perm1[1 : r + 1]
            perm1[r] = first
            count[r] -= 1
            if count[r] > 0:
                break
            r += 1


def main(args):
    try:
        n = int_param(args, "size", DEFAULT_SIZE, 1, 12)
    except ValueError as error:
        return {"error": str(error)}
    checksum, max_flips, permutations = fannkuch(n)
    return {
        "benchmark": "fannkuch",
        "size": n,
        "checksum": checksum,
        "max_flips": max_flips,
        "permutations": permutations,
    }
