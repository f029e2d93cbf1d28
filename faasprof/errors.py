"""Typed errors and the exit codes they map to.

Helpers raise these; only the CLI prints them (one line on stderr) and exits. A message names the
file, the field and the fix, for example
``workload.json: instances.i0.rate: must be a number >= 0 (got -5)``.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # failure while running
EXIT_BAD_INPUT = 2  # config, arguments
EXIT_NOT_READY = 3  # environment not ready (tool missing, platform down)


class FaasprofError(Exception):
    """Base of every error the CLI turns into one line and an exit code."""

    exit_code = EXIT_FAILURE


class ConfigError(FaasprofError):
    """Bad input: a workload, a flag, a file the user named.

    ``problems`` holds one line per problem when validation found several; ``str()`` is the
    first one, so the error still reads as one line.
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, problems: list[str] | None = None, warnings: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or [message]
        self.warnings = list(warnings or [])  # what validation also said, not a problem (``Workload.warnings``)


class NotReadyError(FaasprofError):
    """The environment cannot do what was asked: a tool is missing, the platform is down.

    ``problems``, as for ``ConfigError``: one line per missing thing, ``str()`` the first.
    """

    exit_code = EXIT_NOT_READY

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or [message]


class RunError(FaasprofError):
    """Something failed while running (after all input was validated)."""

    exit_code = EXIT_FAILURE


class FolderKindError(ConfigError):
    """A folder of another kind was passed: a study's folder where a run directory is expected,
    or the reverse (``faasprof.rundir.read_manifest``)."""


class FormatError(FaasprofError):
    """A result file is malformed or of a format version this faasprof does not read."""

    exit_code = EXIT_BAD_INPUT
