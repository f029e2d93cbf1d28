"""chaos: draw an iterated-function-system fractal (Barnsley's fern) by the chaos game.

``size`` points are plotted onto a 256 x 256 grid with a fixed linear congruential generator, so
the picture is the same on every run and interpreter. Input: ``{"size": 100000}`` (optional).
Output: the number of distinct pixels hit and a checksum of the hit pixels.
"""

from paramlib import int_param

DEFAULT_SIZE = 100000
WIDTH = HEIGHT = 256

# (a, b, c, d, e, f, cumulative probability) for x' = a x + b y + e, y' = c x + d y + f
FERN = (
    (0.0, 0.0, 0.0, 0.16, 0.0, 0.0, 0.01),
    (0.85, 0.04, -0.04, 0.85, 0.0, 1.6, 0.86),
    (0.2, -0.26, 0.23, 0.22, 0.0, 1.6, 0.93),
    (-0.15, 0.28, 0.26, 0.24, 0.0, 0.44, 1.0),
)


class Lcg:
    """A 32-bit linear congruential generator (constants from Numerical Recipes)."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def random(self):
        self.state = (1664525 * self.state + 1013904223) & 0xFFFFFFFF
        return self.state / 4294967296.0


def main(args):
    try:
        n = int_param(args, "size", DEFAULT_SIZE, 0, 1000000000)
        seed = int_param(args, "seed", 42, -(2**63), 2**63 - 1)
    except ValueError as error:
        return {"error": str(error)}
    rng = Lcg(seed)
    grid = bytearray(WIDTH * HEIGHT)
    x = y = 0.0
    for _ in range(n):
        r = rng.random()
        for a, b, c, d, e, f, p in FERN:
            if r <= p:
                x, y = a * x + b * y + e, c * x + d * y + f
                break
        # The fern lies in -2.2 < x < 2.7, 0 <= y < 10.
        col = int((x + 2.2) / 4.9 * (WIDTH - 1))
        row = int(y / 10.0 * (HEIGHT - 1))
        if 0 <= col < WIDTH and 0 <= row < HEIGHT:
            grid[row * WIDTH + col] = 1
    hit = 0
    checksum = 0
    for index, value in enumerate(grid):
        if value:
            hit += 1
            checksum = (checksum * 31 + index) % 1000000007
    return {"benchmark": "chaos", "size": n, "pixels_hit": hit, "checksum": checksum}
