"""The host's lock (tests/helpers.py's ``host_lock``, taken by tests/conftest.py for every test):
a host_exclusive test gets it once the tests running at that moment end, not when none runs."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.helpers import host_lock


def holder(lock: Path, exclusive: bool, held: threading.Event, release: threading.Event) -> threading.Thread:
    def hold() -> None:
        with host_lock(lock, exclusive):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    return thread


def test_a_test_starting_while_an_exclusive_one_waits_waits_behind_it(tmp_path):
    lock = tmp_path / "host.lock"
    running, running_done = threading.Event(), threading.Event()
    exclusive, exclusive_done = threading.Event(), threading.Event()
    later, later_done = threading.Event(), threading.Event()
    threads = [holder(lock, False, running, running_done)]
    assert running.wait(10)
    threads.append(holder(lock, True, exclusive, exclusive_done))
    assert not exclusive.wait(0.3), "a test is running"
    threads.append(holder(lock, False, later, later_done))
    # With flock alone the later test got the lock at once, and the exclusive one waited for it too.
    assert not later.wait(0.3), "the later test waits behind the exclusive one"
    running_done.set()
    assert exclusive.wait(10) and not later.is_set()
    exclusive_done.set()
    assert later.wait(10)
    later_done.set()
    for thread in threads:
        thread.join(10)
