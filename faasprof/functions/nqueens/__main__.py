"""nqueens: count the ways to place ``size`` non-attacking queens on a size x size board.

Plain backtracking over rows with sets for the occupied columns and diagonals (size 8: 92, size 9: 352).
Input: ``{"size": 9}`` (optional). Output: the number of solutions and the first one found.
"""

from paramlib import int_param

DEFAULT_SIZE = 9


def solve(n):
    solutions = 0
    first = None
    columns, diag_down, diag_up = set(), set(), set()
    placement = []

    def place(row):
        nonlocal solutions, first
        if row == n:
            solutions += 1
            if first is None:
                first = list(placement)
            return
        for col in range(n):
            if col in columns or (row - col) in diag_down or (row + col) in diag_up:
                continue
            columns.add(col)
            diag_down.add(row - col)
            diag_up.add(row + col)
            placement.append(col)
            place(row + 1)
            placement.pop()
            columns.discard(col)
            diag_down.discard(row - col)
            diag_up.discard(row + col)

    place(0)
    return solutions, first


def main(args):
    try:
        n = int_param(args, "size", DEFAULT_SIZE, 0, 20)
    except ValueError as error:
        return {"error": str(error)}
    solutions, first = solve(n)
    return {"benchmark": "nqueens", "size": n, "solutions": solutions, "first_solution": first}
