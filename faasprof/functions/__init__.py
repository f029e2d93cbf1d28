"""The benchmark functions, their manifest (``manifest.json``), packaging into OpenWhisk action
archives (``package``), and running them natively (``native``, ``faasprof native``).

Each function lives in its own folder and follows the standard OpenWhisk conventions, so the same
code runs on OpenWhisk, on localwhisk and natively: Python actions are a zip with ``__main__.py``
defining ``main(args) -> dict``; Node.js actions are a zip with ``package.json`` whose ``main``
file exports ``main(params)``. Nothing of faasprof is imported inside a function.
"""
