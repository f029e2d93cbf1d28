"""float: create ``size`` 3-D points from trigonometric functions, normalise each, and fold
them into their component-wise maximum (many small float objects: allocation-heavy).

Input: ``{"size": 100000}`` (optional). Output: the maximum point, rounded to 9 decimals.
"""

import math

DEFAULT_SIZE = 100000


class Point:
    __slots__ = ("x", "y", "z")

    def __init__(self, i):
        self.x = x = math.sin(i)
        self.y = math.cos(i) * 3
        self.z = (x * x) / 2

    def normalize(self):
        norm = math.sqrt(self.x * self.x + self.y * self.y + self.z * self.z)
        self.x /= norm
        self.y /= norm
        self.z /= norm

    def maximize(self, other):
        self.x = self.x if self.x > other.x else other.x
        self.y = self.y if self.y > other.y else other.y
        self.z = self.z if self.z > other.z else other.z
        return self


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
        n = int_param(args, "size", DEFAULT_SIZE, 1, 10000000)
    except ValueError as error:
        return {"error": str(error)}
    points = [Point(i) for i in range(n)]
    for point in points:
        point.normalize()
    best = points[0]
    for point in points[1:]:
        best = best.maximize(point)
    return {"benchmark": "float", "size": n, "max": [round(best.x, 9), round(best.y, 9), round(best.z, 9)]}
