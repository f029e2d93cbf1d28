"""Cold start against function size (STeLLAR's image-size study): padded images and padded code.

Two kinds of padding, both incompressible (``os.urandom``) so that no layer or zip compression
hides it:

- **container images** (localwhisk ``isolation: docker``): ``ensure_padded_image(mb)`` builds
  ``faasprof/stellar-padded-python:<mb>mb`` FROM ``faasprof/action-python-v3.11`` with one filler
  layer holding ``/padding/filler.bin`` (``mb`` MiB); the image carries the labels
  ``faasprof.stellar.padding=true`` and ``faasprof.stellar.padding_mb=<mb>`` and is reused while
  it exists; ``remove_padded_images()`` removes every image with that label (and no other).
  0 MB is the base image itself.
- **zip actions**: ``padded_source(source, mb, out_dir)`` copies a function folder and adds
  ``padding/filler.bin``, so the action's code grows toward the platform's code limit (48 MB on
  OpenWhisk: the zip travels base64 in /init).

Both are built in the ``padding/`` folder of the user's cache (``faasprof.paths.cache_dir``): the
padded copies stay there between sweeps, an image's build context only while docker builds it.

The sweep parameter ``image_padding_mb`` runs each point on a localwhisk whose Python actions use
the padded image (localwhisk setting ``docker_images``); ``faasprof/functions/padded_hello`` reads its
padding at import, as a function with large dependencies loads them at its cold start (a layer
nobody reads costs a container nothing with overlay2). ``cold_start_vs_size(sweep_dir)`` gives,
per padding, the cold starts' client latency, waitTime and initTime
(``cold_start_vs_size.json`` and ``.csv`` in the sweep directory, written after every such sweep).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.analyzer.compare import ensure_analyzed
from faasprof.errors import ConfigError, NotReadyError
from faasprof.paths import cache_dir
from faasprof.workload.access import Grants

BASE_IMAGE = "faasprof/action-python-v3.11"
PADDED_REPOSITORY = "faasprof/stellar-padded-python"
LABEL = "faasprof.stellar.padding"
PADDING_PATH = "/padding/filler.bin"
MIB = 1024 * 1024
CHUNK = 4 * MIB
BUILD_TIMEOUT_S = 600
PADDING_PARAMETERS = ("image_padding_mb", "code_padding_mb")
COLD_START_FORMAT_VERSION = 1
COLD_START_FILE = "cold_start_vs_size.json"


def padded_tag(padding_mb: int) -> str:
    """The image the Python actions run in for ``padding_mb`` (the base image for 0)."""
    return BASE_IMAGE if int(padding_mb) == 0 else f"{PADDED_REPOSITORY}:{int(padding_mb)}mb"


def _docker(*args: str, input_bytes: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["docker", *args], input=input_bytes, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        raise NotReadyError(
            "docker: command not found; install Docker (./setup.sh --with docker) for padded images"
        ) from None


def image_exists(tag: str) -> bool:
    return _docker("image", "inspect", tag).returncode == 0


def _write_filler(handle, size_bytes: int) -> None:
    left = size_bytes
    while left > 0:
        chunk = min(left, CHUNK)
        handle.write(os.urandom(chunk))
        left -= chunk


def ensure_padded_image(padding_mb: int) -> str:
    """Build the padded image unless it exists; return its tag. Raises NotReadyError."""
    padding_mb = int(padding_mb)
    if padding_mb < 0:
        raise ConfigError(f"image_padding_mb: must be >= 0 (got {padding_mb})")
    tag = padded_tag(padding_mb)
    if image_exists(tag):
        return tag
    if not image_exists(BASE_IMAGE):
        raise NotReadyError(f"docker image {BASE_IMAGE} is missing; build it with ./setup.sh --with docker")
    # In the cache, not /tmp: the filler is as large as the padding, and /tmp is often memory.
    with tempfile.TemporaryDirectory(prefix=f"image-{padding_mb}mb-", dir=cache_dir("padding")) as context:
        root = Path(context)
        (root / "Dockerfile").write_text(
            f'FROM {BASE_IMAGE}\nCOPY filler.bin {PADDING_PATH}\nLABEL {LABEL}="true" {LABEL}_mb="{padding_mb}"\n'
        )
        with open(root / "filler.bin", "wb") as handle:
            _write_filler(handle, padding_mb * MIB)
        result = _docker("build", "-q", "-t", tag, str(root), timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        raise NotReadyError(
            f"docker build of {tag} failed: {result.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
        )
    return tag


def padded_images() -> list[str]:
    """Tags of the images built here (label ``faasprof.stellar.padding``)."""
    result = _docker("images", "--filter", f"label={LABEL}=true", "--format", "{{.Repository}}:{{.Tag}}")
    return sorted(line for line in result.stdout.decode().split() if line and not line.endswith(":<none>"))


def remove_padded_images() -> list[str]:
    """Remove every padded image built here (and only those); return their tags."""
    tags = padded_images()
    for tag in tags:
        _docker("rmi", "-f", tag)
    return tags


def padded_source(source: Path, padding_mb: float, out_dir: Path) -> Path:
    """A copy of the function folder ``source`` with ``padding/filler.bin`` of ``padding_mb`` MiB."""
    source = Path(source)
    if not source.is_dir():
        raise ConfigError(f"{source}: code padding needs a function folder (with __main__.py or package.json)")
    target = Path(out_dir) / f"{source.name}-pad{padding_mb:g}mb"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "node_modules", "padding"))
    (target / "padding").mkdir()
    with open(target / "padding" / "filler.bin", "wb") as handle:
        _write_filler(handle, int(padding_mb * MIB))
    return target


def _same_files(source: Path, target: Path) -> bool:
    for path in source.rglob("*"):
        if (
            path.is_file()
            and "__pycache__" not in path.parts
            and path.relative_to(source).parts[0] not in ("padding", "node_modules")
        ):
            copy = target / path.relative_to(source)
            if not copy.is_file() or copy.read_bytes() != path.read_bytes():
                return False
    return True


def ensure_padded_source(source: Path, padding_mb: float, out_dir: Path | None = None) -> Path:
    """``padded_source`` kept between sweeps in ``out_dir`` (default: the cache's ``padding/``):
    reused while the function's files are unchanged and its filler has the size asked for (same
    bytes, so a redeploy finds the action unchanged)."""
    out_dir = cache_dir("padding") if out_dir is None else out_dir
    target = Path(out_dir) / f"{Path(source).name}-pad{padding_mb:g}mb"
    filler = target / "padding" / "filler.bin"
    if filler.is_file() and filler.stat().st_size == int(padding_mb * MIB) and _same_files(Path(source), target):
        return target
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return padded_source(source, padding_mb, out_dir)


def pad_code(point_dict: dict, workload, values: dict) -> dict:
    """A sweep point's workload with every selected instance's ``source`` replaced by its copy
    padded with ``code_padding_mb`` MiB (zip actions); unchanged without that parameter."""
    if "code_padding_mb" not in values:
        return point_dict
    selected = (workload.sweep or {}).get("instances") or list(point_dict["instances"])
    sources = {instance.name: instance.source for instance in workload.instances}
    for name in selected:
        source = sources.get(name)
        if source is None:
            raise ConfigError(
                f"{workload.origin}: instances.{name}: code_padding_mb pads the zip of a function of yours; give the instance a source folder, or name the padded ones in sweep.instances"
            )
        point_dict["instances"][name]["source"] = str(
            ensure_padded_source(Path(source), float(values["code_padding_mb"]))
        )
    return point_dict


def point_grants(workload, values: dict) -> Grants:
    """What a sweep point's workload may reach: what the user allowed the sweep's workload, and,
    with ``code_padding_mb``, the padded copies faasprof made of its sources in the cache."""
    if "code_padding_mb" not in values:
        return workload.grants
    return replace(workload.grants, allow_files=(*workload.grants.allow_files, cache_dir("padding").resolve()))


def cold_start_vs_size(sweep_dir: str | os.PathLike, parameter: str | None = None) -> pd.DataFrame:
    """Per padding value: cold starts (count, client latency, waitTime, initTime medians and means)
    over every analysed run of the sweep whose point set ``parameter``."""
    rows = []
    for run_dir in sorted(path for path in Path(sweep_dir).glob("*") if rundir.is_run_dir(path)):
        values = (rundir.read_manifest(run_dir).sweep_point or {}).get("values") or {}
        parameter = parameter or next((p for p in PADDING_PARAMETERS if p in values), None)
        if parameter is None or parameter not in values:
            continue
        ensure_analyzed(run_dir)
        frame = pd.read_parquet(run_dir / "analysis" / "invocations.parquet")
        cold = frame[(frame["start_class"] == "cold") & frame["outcome"].isin(["ok", "app_error"])]
        rows.append(
            {
                "run": run_dir.name,
                parameter: values[parameter],
                "cold_starts": len(cold),
                **{
                    f"{c}_{s}": getattr(cold[c], s)() if len(cold) else np.nan
                    for c in ("client_latency_ms", "wait_ms", "init_ms")
                    for s in ("median", "mean")
                },
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return (
        frame.groupby(parameter, as_index=False)
        .agg(
            runs=("run", "count"),
            cold_starts=("cold_starts", "sum"),
            **{
                f"{c}_{s}": (f"{c}_{s}", "mean")
                for c in ("client_latency_ms", "wait_ms", "init_ms")
                for s in ("median", "mean")
            },
        )
        .sort_values(parameter)
    )


def point_settings(values: dict) -> dict:
    """localwhisk settings of one sweep point: the padded image for the Python actions."""
    if "image_padding_mb" not in values:
        return {}
    return {"docker_images": f"python={ensure_padded_image(int(values['image_padding_mb']))}"}


def check_image_padding(workload_raw: dict, origin: str, connection) -> list[str]:
    """Problems with an ``image_padding_mb`` sweep (one line each, naming the field and the fix)."""
    problems = []
    if connection is not None:
        problems.append(
            f"{origin}: sweep.parameters.image_padding_mb: applies to the embedded localwhisk with isolation docker; "
            "on a real OpenWhisk deploy blackbox actions of the padded images instead (faasprof.stellar padded images: faasprof/experiments/padding.py)"
        )
    isolation = ((workload_raw.get("platform") or {}).get("localwhisk") or {}).get("isolation")
    if isolation != "docker":
        problems.append(
            f'{origin}: platform.localwhisk.isolation: image_padding_mb pads container images; set it to "docker"'
        )
    return problems


def write_cold_start_vs_size(sweep_dir: Path) -> Path | None:
    """``cold_start_vs_size.json`` and ``.csv`` in the sweep directory when it swept a padding."""
    frame = cold_start_vs_size(sweep_dir)
    if frame.empty:
        return None
    frame.to_csv(sweep_dir / "cold_start_vs_size.csv", index=False)
    rows = [
        {
            k: (None if isinstance(v, float) and not np.isfinite(v) else (v.item() if hasattr(v, "item") else v))
            for k, v in row.items()
        }
        for row in frame.to_dict("records")
    ]
    path = sweep_dir / COLD_START_FILE
    parameter = next(p for p in PADDING_PARAMETERS if p in frame.columns)
    path.write_text(
        json.dumps({"format_version": COLD_START_FORMAT_VERSION, "parameter": parameter, "rows": rows}, indent=1) + "\n"
    )
    return path
