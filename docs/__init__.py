"""The documents faasprof reads at run time (``faasprof reproduce`` quotes
``localwhisk-vs-openwhisk.md``), shipped with the package; nothing here is code."""
