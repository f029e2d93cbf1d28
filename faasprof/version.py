"""faasprof's version: the one string that pyproject.toml (``tool.setuptools.dynamic``), every
manifest (``faasprof.version``), ``faasprof --version`` and localwhisk's ``GET /`` (``build``) state."""

__version__ = "0.1.0"
