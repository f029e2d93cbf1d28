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
import time
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
    is_root,
    read_output,
    tail,
)
from faasprof.monitoring.host import Root, mounts
from faasprof.monitoring.parsers.blkparse import blk_intervals
from faasprof.rundir import Manifest

DOCKER_DATA = "/var/lib/docker"
BLK_MARKER = "faasprof-start"


def data_device(root: Root, path: str = DOCKER_DATA) -> str | None:
    """The whole-disk block device (``/dev/sda``) holding ``path`` (or its nearest existing
    ancestor), from ``/proc/self/mountinfo`` and ``/sys/dev/block``; None if not a block device."""
    probe = path
    while probe != "/" and not root.exists(probe):
        probe = os.path.dirname(probe) or "/"
    best: tuple[int, str] | None = None
    for line in (root.read("/proc/self/mountinfo") or "").splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        point, devnum = parts[4], parts[2]
        if probe == point or probe.startswith(point.rstrip("/") + "/") or point == "/":
            if best is None or len(point) > best[0]:
                best = (len(point), devnum)
    if best is None:
        return None
    sys_path = root.path(f"/sys/dev/block/{best[1]}")
    if not sys_path.exists():
        return None
    real = Path(os.path.realpath(sys_path))
    name = real.name
    if (real / "partition").exists():
        name = real.parent.name
    return f"/dev/{name}"


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
        for tool in ("blktrace", "blkparse"):
            if shutil.which(tool) is None:
                return f"blktrace: {tool} is not installed; apt-get install blktrace (or drop monitoring.blktrace)"
        if not is_root():
            return "blktrace: needs root (BLKTRACESETUP); run faasprof as root"
        if not any(fstype == "debugfs" for _, point, fstype, _ in mounts(self.root) if point == "/sys/kernel/debug"):
            return "blktrace: debugfs is not mounted at /sys/kernel/debug; `mount -t debugfs debugfs /sys/kernel/debug`"
        devices = self.block.get("devices", "auto")
        if devices == "auto":
            found = data_device(self.root)
            if found is None:
                return f"blktrace: could not find the block device holding {DOCKER_DATA} (or /); name it in monitoring.blktrace.devices"
            devices = [found]
        for device in devices:
            name = os.path.basename(device)
            if not self.root.exists(f"/sys/block/{name}/trace"):
                return f"blktrace: {device} cannot be traced (/sys/block/{name}/trace missing: not a whole disk, or a kernel without CONFIG_BLK_DEV_IO_TRACE); name a whole disk such as /dev/sda"
        self.devices = list(devices)
        return None

    def _start(self) -> None:
        assert self.dir is not None
        (self.dir / "raw").mkdir(exist_ok=True)
        argv = ["blktrace"]
        for device in self.devices:
            argv += ["-d", device]
        argv += ["-D", "raw", "-w", str(int(self._bound_s()))]
        self._launch(argv)
        self.outputs = [f"{os.path.basename(d)}.blkparse.txt" for d in self.devices]
        self._startup_check(0.3)
        if self.status == "failed":
            return
        self._write_marker()

    def _write_marker(self) -> None:
        """A message event in the trace at a known wall-clock time: blkparse's times count from the
        first event, so this is what ties them to the run clock."""
        for device in self.devices:
            msg = self.root.path(f"/sys/kernel/debug/block/{os.path.basename(device)}/msg")
            deadline = time.monotonic() + 1.0
            while not msg.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                self.marker_wall_ns, self.marker_monotonic_ns = time.time_ns(), time.monotonic_ns()
                msg.write_text(BLK_MARKER + "\n")
            except OSError as error:
                self.marker_wall_ns = self.marker_monotonic_ns = None
                self.warnings.append(
                    f"blktrace: could not write the time marker to {msg} ({error.strerror}); times count from the first event"
                )

    def _after_stop(self) -> None:
        assert self.dir is not None
        with open(self.dir / "blkparse.log", "ab") as log:
            for device in self.devices:
                name = os.path.basename(device)
                argv = ["blkparse", "-D", "raw", "-i", name, "-o", f"{name}.blkparse.txt"]
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
