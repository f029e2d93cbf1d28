"""Pure parsers: raw tool output (text) in, tidy pandas frames out; no I/O besides the text given.

Each parser is tested against recorded real outputs in ``tests/data/monitoring/``.
"""
