"""Durable storage for actions and activation records (sqlite, WAL).

Records are written off the request path: ``put_activation`` keeps the record in memory and a
flush every ``flush_ms`` (default 50 ms) writes the batch in one transaction on the store's own
thread. A record is readable by id from the moment its activation ended (from memory until it is
written); list queries flush first, so they see every ended activation. A crash of the server
process can lose at most the last unflushed batch; a normal stop flushes everything. OpenWhisk
also stores records asynchronously (after the active-ack), so clients already expect a short
delay there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from faasprof.localwhisk import fastjson
from faasprof.localwhisk.private import private_file

log = logging.getLogger("faasprof.localwhisk.store")

SCHEMA_VERSION = 1
STORE_FILE = "localwhisk.sqlite"  # in the data directory (a run directory's localwhisk/ when embedded)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS actions (
    namespace TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS packages (
    namespace TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS activations (
    activation_id TEXT PRIMARY KEY, namespace TEXT NOT NULL, name TEXT NOT NULL,
    start_ms INTEGER NOT NULL, status_code INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS activations_ns_start ON activations (namespace, start_ms);
CREATE INDEX IF NOT EXISTS activations_ns_name_start ON activations (namespace, name, start_ms);
"""


# A record as it waits for the store: (activation id, namespace, name filter key, start ms, status code, record).
PendingRow = tuple[str, str, str, int, int, dict]


def _encode_record(record: dict) -> str:
    """The record's JSON text; one that cannot be encoded is stored as a whisk internal error
    naming why, so that one bad record never stops the batch it is in (issue 44)."""
    try:
        return fastjson.dumps(record).decode("utf-8")
    except (TypeError, ValueError, RecursionError) as error:
        log.error("activation %s: its record cannot be stored as JSON (%s)", record.get("activationId"), error)
        stand_in = {key: record.get(key) for key in ("namespace", "name", "version", "subject", "activationId")}
        stand_in.update(
            start=record.get("start"),
            end=record.get("end"),
            duration=record.get("duration"),
            response={
                "result": {"error": f"localwhisk could not store this activation's record: {error}"},
                "status": "whisk internal error",
                "success": False,
            },
            logs=[],
            annotations=[],
            publish=False,
        )
        return fastjson.dumps(stand_in).decode("utf-8")


class StoreReadError(Exception):
    """A stopped instance's store cannot be read (missing, not a store, another schema)."""


def read_stored_records(path: Path, wanted: Iterable[str] | None = None) -> dict[str, dict]:
    """The activation records in the store at ``path`` (of a stopped instance), by activation id;
    only those of ``wanted`` when given. Raises StoreReadError saying why it cannot be read.

    Opened read-write first, so that sqlite folds in the write-ahead log a killed server left
    (its committed records are there); read-only when the folder is not writable."""
    path = Path(path)
    if not path.is_file():
        raise StoreReadError(f"{path}: no such store")
    wanted_ids = None if wanted is None else set(wanted)
    found: dict[str, dict] = {}
    try:
        try:
            conn = sqlite3.connect(str(path), timeout=10)
            conn.execute("SELECT 1 FROM activations LIMIT 1")
        except sqlite3.OperationalError:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            for activation_id, doc in conn.execute("SELECT activation_id, doc FROM activations"):
                if wanted_ids is None or activation_id in wanted_ids:
                    found[activation_id] = fastjson.loads(doc)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError) as error:
        raise StoreReadError(f"{path}: cannot read its activation records ({error})") from None
    return found


class Store:
    def __init__(self, path: Path, flush_ms: int = 50):
        self.path = Path(path)
        self.flush_s = max(flush_ms, 1) / 1000.0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localwhisk-store")
        self._conn: sqlite3.Connection | None = None
        self._pending: dict[str, tuple[dict, str, int]] = {}  # id -> (record, name filter key, status code)
        self._queue: list[str] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future | None = None
        self.written = 0
        self._tasks: set[asyncio.Task] = set()  # strong references to scheduled flushes

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"{self.path}: the store is not open")
        return self._conn

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def open(self) -> None:
        await self._run(self._open)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created 0600 before sqlite opens it: its -wal and -shm files take the same mode.
        private_file(self.path)
        for suffix in ("-wal", "-shm"):  # left by an older server that made them readable by all
            if Path(f"{self.path}{suffix}").exists():
                private_file(Path(f"{self.path}{suffix}"))
        conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA)
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path}: database schema version {row[0]} not supported (expected {SCHEMA_VERSION}); use another --data-dir"
            )
        self._conn = conn

    async def close(self) -> None:
        try:
            await self.flush()
        except Exception as error:  # keep stopping (sandboxes, cgroups) even if the disk failed
            log.error("final write of %d activation records failed: %s", len(self._queue), error)
        await self._run(self._db().close)
        self._executor.shutdown(wait=True)

    # -- actions (rare, written synchronously on the store thread) ------------------------------

    async def load_actions(self) -> list[dict]:
        def q():
            return [json.loads(doc) for (doc,) in self._db().execute("SELECT doc FROM actions")]

        return await self._run(q)

    async def put_action(self, namespace: str, name: str, doc: dict) -> None:
        text = json.dumps(doc)
        await self._run(
            lambda: self._db().execute("INSERT OR REPLACE INTO actions VALUES (?,?,?)", (namespace, name, text))
        )

    async def delete_action(self, namespace: str, name: str) -> None:
        await self._run(
            lambda: self._db().execute("DELETE FROM actions WHERE namespace=? AND name=?", (namespace, name))
        )

    # -- packages (as rare as actions) -----------------------------------------------------------

    async def load_packages(self) -> list[dict]:
        def q():
            return [json.loads(doc) for (doc,) in self._db().execute("SELECT doc FROM packages")]

        return await self._run(q)

    async def put_package(self, namespace: str, name: str, doc: dict) -> None:
        text = json.dumps(doc)
        await self._run(
            lambda: self._db().execute("INSERT OR REPLACE INTO packages VALUES (?,?,?)", (namespace, name, text))
        )

    async def delete_package(self, namespace: str, name: str) -> None:
        await self._run(
            lambda: self._db().execute("DELETE FROM packages WHERE namespace=? AND name=?", (namespace, name))
        )

    # -- activations ----------------------------------------------------------------------------

    def put_activation(self, record: dict, name_key: str, status_code: int) -> None:
        """Keep the record readable now; it reaches sqlite within ``flush_ms``."""
        activation_id = record["activationId"]
        self._pending[activation_id] = (record, name_key, status_code)
        self._queue.append(activation_id)
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.flush_s, self._start_flush, loop)

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        self._flush_handle = None
        task = loop.create_task(self.flush())
        self._tasks.add(task)
        task.add_done_callback(self._flush_done)

    def _flush_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("writing activation records failed (they stay in memory and are retried): %s", task.exception())

    async def flush(self) -> None:
        while self._flushing is not None:
            await asyncio.shield(self._flushing)
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._queue:
            return
        ids, self._queue = self._queue, []
        rows: list[PendingRow] = []
        for activation_id in ids:
            record, name_key, status_code = self._pending[activation_id]
            rows.append((activation_id, record["namespace"], name_key, record["start"], status_code, record))
        self._flushing = asyncio.get_running_loop().create_future()
        try:
            await self._run(self._write_rows, rows)
        except BaseException:
            self._queue[:0] = ids  # keep them pending; the next flush retries
            raise
        finally:
            done, self._flushing = self._flushing, None
            done.set_result(None)
        for activation_id in ids:
            self._pending.pop(activation_id, None)

    def _write_rows(self, rows: list[PendingRow]) -> None:
        encoded = [(a, ns, n, s, c, _encode_record(doc)) for a, ns, n, s, c, doc in rows]
        conn = self._db()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT OR REPLACE INTO activations VALUES (?,?,?,?,?,?)", encoded)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self.written += len(rows)

    async def get_activation(self, namespace: str, activation_id: str) -> dict | None:
        pending = self._pending.get(activation_id)
        if pending is not None:
            return pending[0] if pending[0]["namespace"] == namespace else None

        def q():
            return (
                self._db()
                .execute(
                    "SELECT doc FROM activations WHERE activation_id=? AND namespace=?", (activation_id, namespace)
                )
                .fetchone()
            )

        row = await self._run(q)
        return fastjson.loads(row[0]) if row else None

    async def list_activations(
        self,
        namespace: str,
        name: str | None,
        since_ms: int | None,
        upto_ms: int | None,
        limit: int,
        skip: int,
        count: bool = False,
    ):
        """Newest first (by start), ``since``/``upto`` inclusive; returns [(doc, status_code)] or a count."""
        await self.flush()
        where = ["namespace=?"]
        args: list = [namespace]
        if name:
            where.append("name=?")
            args.append(name)
        if since_ms is not None:
            where.append("start_ms>=?")
            args.append(since_ms)
        if upto_ms is not None:
            where.append("start_ms<=?")
            args.append(upto_ms)
        clause = " AND ".join(where)

        def q():
            if count:
                return self._db().execute(f"SELECT COUNT(*) FROM activations WHERE {clause}", args).fetchone()[0]
            rows = (
                self._db()
                .execute(
                    f"SELECT doc, status_code FROM activations WHERE {clause} ORDER BY start_ms DESC, rowid DESC LIMIT ? OFFSET ?",
                    args + [limit, skip],
                )
                .fetchall()
            )
            return [(fastjson.loads(doc), code) for doc, code in rows]

        return await self._run(q)
