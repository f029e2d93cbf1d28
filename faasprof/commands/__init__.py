"""The ``faasprof`` subcommands, one module each (``faasprof/cli.py`` reads their table).

The command layer: arguments, printing and exit codes. A command may import anything; nothing but
another command imports one.
"""
