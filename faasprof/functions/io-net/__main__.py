"""io-net: network bandwidth with the iperf3 client (FunctionBench's iperf3 test), upload
(client sends) or download (``-R``, the server sends), for a duration or a byte count.

Input: ``iperf3`` {host, port} (faasprof's storage block passes its server); ``direction``
"upload" | "download"; ``seconds`` (default 1) or ``bytes`` (``-n``); ``parallel`` streams
(default 1). Without ``iperf3`` the function starts a one-off server on the sandbox's own
loopback (``iperf3 -s -1``): the bandwidth of the sandbox's network stack alone.
Output: direction, bits/s sent and received as iperf3 reports them, bytes moved, retransmits,
and the breakdown (iolib): the client run is network time, parsing its report compute time.
"""

import json
import os
import select
import shutil
import socket
import subprocess
import time

import iolib


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_listening(proc, timeout_s=5.0):
    # Read its banner, never probe the port: a probe connection would be the one test -1 allows.
    deadline = time.monotonic() + timeout_s
    seen = b""
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.1)[0]:
            seen += os.read(proc.stdout.fileno(), 4096)  # raw reads: a buffered reader would hide lines from select
            if b"listening" in seen.lower():
                return True
    return False


def main(params):
    direction = params.get("direction", "upload")
    if direction not in ("upload", "download"):
        return {"error": f"direction {direction!r}: use upload or download"}
    binary = shutil.which("iperf3") or "/usr/bin/iperf3"
    server = None
    target = params.get("iperf3")
    if not target:
        port = _free_port()
        server = subprocess.Popen(
            [binary, "-s", "-1", "--forceflush", "-B", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        if not _wait_listening(server):
            server.kill()
            return {"error": "the one-off iperf3 server did not start"}
        target = {"host": "127.0.0.1", "port": port}
    argv = [
        binary,
        "-c",
        str(target["host"]),
        "-p",
        str(int(target["port"])),
        "-J",
        "-P",
        str(int(params.get("parallel", 1))),
    ]
    argv += ["-n", str(int(params["bytes"]))] if params.get("bytes") else ["-t", str(params.get("seconds", 1))]
    if direction == "download":
        argv.append("-R")
    bd = iolib.Breakdown()
    try:
        with bd.phase("network"):
            done = subprocess.run(argv, capture_output=True, timeout=float(params.get("seconds", 1)) + 30)
    finally:
        if server is not None:
            server.stdout.close()
            try:
                server.wait(5)
            except subprocess.TimeoutExpired:
                server.kill()
    with bd.phase("compute"):
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = {"error": done.stderr.decode(errors="replace")[-300:] or "iperf3 printed no report"}
        if report.get("error"):
            return {"error": f"iperf3: {report['error']}", "direction": direction}
        end = report["end"]
        sent, received = end["sum_sent"], end["sum_received"]
    # The bytes this function moved: what it sent (upload), what it received (download, -R).
    moved = int(sent["bytes"] if direction == "upload" else received["bytes"])
    bd.add_bytes("network_out" if direction == "upload" else "network_in", moved)
    return bd.result(
        direction=direction,
        sent_bits_per_s=sent["bits_per_second"],
        received_bits_per_s=received["bits_per_second"],
        moved_bytes=moved,
        retransmits=sent.get("retransmits"),
        self_served=server is not None,
    )
