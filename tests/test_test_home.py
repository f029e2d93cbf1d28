"""The suite never reads the user's platform: every test runs under a HOME of the session's own.

A `faasprof local start` left running by the user (its connection under
~/.local/share/faasprof) or their ~/.wskprops would otherwise become the platform a test
measures: an OpenWhisk standalone left on port 3233 once answered the slowdown tests.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from faasprof.platforms.openwhisk.connection import local_props_path


def test_home_is_the_sessions_own():
    home = Path(os.environ["HOME"])
    assert home.name.startswith("faasprof-test-home-") and home.parent == Path(tempfile.gettempdir())
    assert Path.home() == home and "WSK_CONFIG_FILE" not in os.environ


def test_a_local_start_left_running_by_the_user_is_not_seen():
    assert local_props_path().is_relative_to(Path.home())
    assert not local_props_path().exists() and not (Path.home() / ".wskprops").exists()
