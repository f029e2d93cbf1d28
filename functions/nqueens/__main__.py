"""nqueens: count the ways to place ``size`` non-attacking queens on a size x size board.

Plain backtracking over rows with sets for the occupied columns and diagonals (size 8: 92, size 9: 352).
Input: ``{"size": 9}`` (optional). Output: the number of solutions and the first one found.
"""

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
        n = int_param(args, "size", DEFAULT_SIZE, 0, 20)
    except ValueError as error:
        return {"error": str(error)}
    solutions, first = solve(n)
    return {"benchmark": "nqueens", "size": n, "solutions": solutions, "first_solution": first}
