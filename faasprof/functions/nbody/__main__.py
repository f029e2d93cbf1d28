"""nbody: the Jovian planets and the Sun, advanced ``size`` time steps (symplectic Euler, dt 0.01).

Input: ``{"size": 40000}`` (steps; optional). Output: the system's energy before and after.
With 1000 steps the energies are -0.169075164 and -0.169087605 (the figures the well-known
n-body benchmark publishes for this system).
"""

import math

from paramlib import int_param

DEFAULT_SIZE = 40000
PI = math.pi
SOLAR_MASS = 4 * PI * PI
DAYS_PER_YEAR = 365.24


def initial_bodies():
    """[position, velocity, mass] for Sun, Jupiter, Saturn, Uranus, Neptune (AU, AU/year)."""
    planets = [
        (
            [4.84143144246472090e00, -1.16032004402742839e00, -1.03622044471123109e-01],
            [1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05],
            9.54791938424326609e-04,
        ),
        (
            [8.34336671824457987e00, 4.12479856412430479e00, -4.03523417114321381e-01],
            [-2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05],
            2.85885980666130812e-04,
        ),
        (
            [1.28943695621391310e01, -1.51111514016986312e01, -2.23307578892655734e-01],
            [2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05],
            4.36624404335156298e-05,
        ),
        (
            [1.53796971148509165e01, -2.59193146099879641e01, 1.79258772950371181e-01],
            [2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05],
            5.15138902046611451e-05,
        ),
    ]
    bodies = [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], SOLAR_MASS]]
    for position, velocity, mass in planets:
        bodies.append([list(position), [v * DAYS_PER_YEAR for v in velocity], mass * SOLAR_MASS])
    return bodies


def offset_momentum(bodies):
    px = py = pz = 0.0
    for _, (vx, vy, vz), mass in bodies:
        px -= vx * mass
        py -= vy * mass
        pz -= vz * mass
    sun_v = bodies[0][1]
    sun_m = bodies[0][2]
    sun_v[0], sun_v[1], sun_v[2] = px / sun_m, py / sun_m, pz / sun_m


def energy(bodies):
    e = 0.0
    for i, ((x1, y1, z1), (vx, vy, vz), m1) in enumerate(bodies):
        e += 0.5 * m1 * (vx * vx + vy * vy + vz * vz)
        for (x2, y2, z2), _, m2 in bodies[i + 1 :]:
            dx, dy, dz = x1 - x2, y1 - y2, z1 - z2
            e -= m1 * m2 / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(bodies, steps, dt=0.01):
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies)) for j in range(i + 1, len(bodies))]
    for _ in range(steps):
        for (p1, v1, m1), (p2, v2, m2) in pairs:
            dx = p1[0] - p2[0]
            dy = p1[1] - p2[1]
            dz = p1[2] - p2[2]
            d2 = dx * dx + dy * dy + dz * dz
            mag = dt / (d2 * math.sqrt(d2))
            b1 = m1 * mag
            b2 = m2 * mag
            v1[0] -= dx * b2
            v1[1] -= dy * b2
            v1[2] -= dz * b2
            v2[0] += dx * b1
            v2[1] += dy * b1
            v2[2] += dz * b1
        for p, v, _ in bodies:
            p[0] += dt * v[0]
            p[1] += dt * v[1]
            p[2] += dt * v[2]


def main(args):
    try:
        steps = int_param(args, "size", DEFAULT_SIZE, 0, 100000000)
    except ValueError as error:
        return {"error": str(error)}
    bodies = initial_bodies()
    offset_momentum(bodies)
    before = energy(bodies)
    advance(bodies, steps)
    after = energy(bodies)
    return {"benchmark": "nbody", "size": steps, "energy_before": round(before, 9), "energy_after": round(after, 9)}
