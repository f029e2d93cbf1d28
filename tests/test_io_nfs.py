"""NFS as shared storage on the testbed (setup/roles/tools/tasks/nfs.yml, enabled with
``./setup.sh --testbed --tools-only -- -e tools_nfs=true``): the io-object function moves a
chunk through the NFS mount with the file backend, its time counted as network. Marked
``hardware``: these development machines have no NFS in the kernel (run with -m hardware)."""

from __future__ import annotations

import os
import uuid

import pytest

from faasprof.experiments import native
from faasprof.functions.catalogue import lookup

NFS_MOUNT = os.environ.get("FAASPROF_NFS_MOUNT", "/mnt/faasprof-nfs")

pytestmark = pytest.mark.hardware


def _nfs_mounted(path: str) -> bool:
    with open("/proc/mounts") as handle:
        return any(line.split()[1] == path and line.split()[2].startswith("nfs") for line in handle)


def test_object_upload_and_download_through_the_nfs_mount(tmp_path):
    assert _nfs_mounted(NFS_MOUNT), (
        f"{NFS_MOUNT} is not an NFS mount; run ./setup.sh --testbed --tools-only -- -e tools_nfs=true"
    )
    bucket = f"faasprof-nfs-{uuid.uuid4().hex[:8]}"
    params = {
        "backend": "file",
        "shared_dir": NFS_MOUNT,
        "shared_is_network": True,
        "bucket": bucket,
        "key": "chunk",
        "size_bytes": 8 << 20,
        "local_dir": str(tmp_path),
    }
    try:
        up = native.call_once(lookup("io-object"), {**params, "op": "upload"}, timeout_s=120)
        down = native.call_once(lookup("io-object"), {**params, "op": "download"}, timeout_s=120)
        assert up["ok"] and down["ok"]
        result = down["result"]
        assert result["complete"] and result["breakdown"]["network_ms"] > 0
        assert result["breakdown"]["bytes"]["disk_write"] == 8 << 20
    finally:
        for root, _, files in os.walk(os.path.join(NFS_MOUNT, bucket), topdown=False):
            for name in files:
                os.remove(os.path.join(root, name))
            os.rmdir(root)
