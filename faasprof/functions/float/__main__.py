"""float: create ``size`` 3-D points from trigonometric functions, normalise each, and fold
them into their component-wise maximum (many small float objects: allocation-heavy).

Input: ``{"size": 100000}`` (optional). Output: the maximum point, rounded to 9 decimals.
"""

import math

from paramlib import int_param

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
