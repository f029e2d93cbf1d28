"""The blktrace collector: ``blktrace -d DEV... -D raw`` during the run, ``blkparse`` per device
after it stops; a marker message written at a known time ties trace times to the run clock.

Raw output: ``<disk>.blkparse.txt`` (parsed by ``faasprof.monitoring.parsers.blkparse``) and ``raw/``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from faasprof.monitoring.collectors.base import (
    INFO,
    NO,
    OK,
    Finding,
    ParseArgument,
    ParseKind,
    Plot,
    ProcessCollector,
    read_output,
    tail,
)
from faasprof.monitoring.host import Root
from faasprof.monitoring.parsers.blkparse import blk_intervals
from faasprof.monitoring.tools import (
    BLK_MARKER,
    DOCKER_DATA,
    blkparse_argv,
    blktrace_argv,
    blktrace_devices,
    data_device,
    is_root,
    write_blk_marker,
)
from faasprof.rundir import Manifest

__all__ = ["BlktraceCollector", "data_device"]


def _parse_blkparse(text: str, args: argparse.Namespace):
    return blk_intervals(text, (getattr(args, "interval_ms", None) or 1000.0) / 1000.0)


class BlktraceCollector(ProcessCollector):
    """``blktrace -d DEV... -D raw`` during the run, ``blkparse`` per device after it stops."""

    name = "blktrace"
    summary = "Block I/O traced with blktrace, parsed offline with blkparse."
    tool = "`blktrace -d DEV -D raw` on the named disks (default: the disk holding /var/lib/docker), `blkparse` after the run"
    raw_outputs = "`<disk>.blkparse.txt`, `raw/`"
    version_commands = {"blktrace": ["blktrace", "-V"], "blkparse": ["blkparse", "-V"]}
    defaults = {"devices": "auto", "required": False}
    options_schema = {
        "devices": {
            "anyOf": [
                {"const": "auto"},
                {"type": "array", "items": {"type": "string", "pattern": "^/dev/"}, "minItems": 1},
            ],
            "description": "Block devices to trace; auto: the device holding Docker's data (or the root filesystem).",
        },
    }
    plots = (Plot("read_mbps", "read", "MB/s"), Plot("write_mbps", "written", "MB/s"))
    parse_kinds = (
        ParseKind(
            "blktrace",
            "`blkparse` default text output → per-interval MB/s, IOPS and D2C latency",
            _parse_blkparse,
            (ParseArgument("--interval-ms", "bucket width (default 1000)", {"type": float}),),
        ),
    )

    def __init__(self, block: dict, context: dict):
        super().__init__(block, context)
        self.devices: list[str] = []
        self.marker_wall_ns: int | None = None
        self.marker_monotonic_ns: int | None = None

    def _check(self) -> str | None:
        self.devices, reason = blktrace_devices(self.root, self.block.get("devices", "auto"))
        return reason

    def _start(self) -> None:
        assert self.dir is not None
        (self.dir / "raw").mkdir(exist_ok=True)
        self._launch(blktrace_argv(self.devices, self._bound_s()))
        self.outputs = [f"{os.path.basename(d)}.blkparse.txt" for d in self.devices]
        self._startup_check(0.3)
        if self.status == "failed":
            return
        self.marker_wall_ns, self.marker_monotonic_ns, warning = write_blk_marker(self.root, self.devices)
        if warning:
            self.warnings.append(warning)

    def _after_stop(self) -> None:
        assert self.dir is not None
        with open(self.dir / "blkparse.log", "ab") as log:
            for device in self.devices:
                name = os.path.basename(device)
                argv = blkparse_argv(device)
                log.write(("$ " + shlex.join(argv) + "\n").encode())
                log.flush()
                try:
                    done = subprocess.run(argv, cwd=self.dir, stdout=log, stderr=log, timeout=600)
                    if done.returncode != 0:
                        self.errors.append(
                            f"blktrace: blkparse {name} exited with {done.returncode}; see monitors/blktrace/blkparse.log"
                        )
                except (OSError, subprocess.TimeoutExpired) as error:
                    self.errors.append(f"blktrace: blkparse {name} failed ({error})")
        dropped = tail(self.dir / "stderr.log")
        if "dropped" in dropped.lower():
            self.warnings.append(f"blktrace: {dropped}")

    def describe(self) -> dict:
        data = super().describe()
        data["devices"] = list(self.devices)
        data["marker"] = BLK_MARKER
        data["marker_wall_ns"] = self.marker_wall_ns
        data["marker_monotonic_ns"] = self.marker_monotonic_ns
        return data

    @classmethod
    def load_frame(cls, directory: Path, meta: dict, offset_s: float, manifest: Manifest, interval_s: float = 1.0):
        import pandas as pd  # only when a trace is loaded: collectors start without pandas

        frames = []
        marker = meta.get("marker")
        marker_offset = 0.0
        if meta.get("marker_monotonic_ns") and meta.get("monotonic_ns_at_start"):
            marker_offset = (int(meta["marker_monotonic_ns"]) - int(meta["monotonic_ns_at_start"])) / 1e9
        for name in meta.get("outputs") or sorted(p.name for p in directory.glob("*.blkparse.txt")):
            text = read_output(directory / name)
            if text is None:
                continue
            frame = blk_intervals(text, interval_s, marker=marker)
            if frame.empty:
                continue
            # With the marker, trace time 0 is the marker; without, the first event (an estimate).
            base = offset_s + (marker_offset if frame.attrs.get("marker_s") is not None else 0.0)
            frame.insert(0, "t_s", base + frame["elapsed_s"] + interval_s)
            frame["aligned_by"] = "marker" if frame.attrs.get("marker_s") is not None else "first_event"
            frames.append(frame)
        if not frames:
            return None
        return pd.concat(frames, ignore_index=True)

    @classmethod
    def doctor(cls, root: Root, host: dict, live: bool, block: dict | None) -> list[Finding]:
        findings = []
        for tool in ("blktrace", "blkparse"):
            if shutil.which(tool) is None:
                findings.append(
                    Finding("blktrace", NO, f"{tool} is not installed", "apt-get install blktrace", ("blktrace",))
                )
        if not host.get("debugfs_mounted"):
            findings.append(
                Finding(
                    "blktrace",
                    NO,
                    "debugfs is not mounted at /sys/kernel/debug",
                    "mount -t debugfs debugfs /sys/kernel/debug",
                    ("blktrace",),
                )
            )
        else:
            findings.append(Finding("blktrace", OK, "debugfs mounted"))
        if not is_root():
            findings.append(
                Finding(
                    "blktrace", NO, "not root: BLKTRACESETUP needs CAP_SYS_ADMIN", "run faasprof as root", ("blktrace",)
                )
            )
        devices = (block or {}).get("devices", "auto")
        if devices == "auto":
            found = data_device(root)
            devices = [found] if found else []
            if not found:
                findings.append(
                    Finding(
                        "blktrace",
                        NO,
                        f"no block device found holding {DOCKER_DATA} or /",
                        "name devices in monitoring.blktrace.devices",
                        ("blktrace",),
                    )
                )
        # A disk is only "can be traced" when blktrace itself can run here (tools, debugfs, root).
        runnable = not any(finding.state == NO for finding in findings)
        for device in devices:
            name = os.path.basename(device)
            if root.exists(f"/sys/block/{name}/trace") and runnable:
                findings.append(Finding("blktrace", OK, f"{device} can be traced"))
            elif root.exists(f"/sys/block/{name}/trace"):
                findings.append(
                    Finding(
                        "blktrace",
                        INFO,
                        f"{device} has a trace interface; it can be traced once the problems above are fixed",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "blktrace",
                        NO,
                        f"{device}: /sys/block/{name}/trace missing (not a whole disk, or no CONFIG_BLK_DEV_IO_TRACE)",
                        "name a whole disk such as /dev/sda",
                        ("blktrace",),
                    )
                )
        return findings
