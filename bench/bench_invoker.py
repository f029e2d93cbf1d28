"""Benchmark of the open-loop send path against nginx: how late does faasprof send?

nginx on 127.0.0.1 answers every POST with 202 and an activation id (header and body), the
cheapest OpenWhisk-like server, so what is measured is the invoker. For each rate, a Poisson
stream runs for ``--duration`` seconds through the same dispatcher, sender and invocation log as
``faasprof run`` (POST /api/v1/namespaces/guest/actions/noop?blocking=false with basic auth), and
the script prints lateness p50/p99/max, sent vs planned, wall time vs duration and invoker CPU.

    .venv/bin/python bench/bench_invoker.py                       # 200, 1000, 2000, 5000/s for 30 s
    .venv/bin/python bench/bench_invoker.py --rates 1000 --duration 10
    .venv/bin/python bench/bench_invoker.py --micro                  # CPU per parsed response and per journaled send

Needs nginx (``FAASPROF_DEV=1 ./setup.sh --dev`` installs it through setup/steps/40-invoker.sh).
Prints figures only; there is no pass/fail.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from faasprof.rundir import InvocationLog, read_invocations  # noqa: E402
from platforms.openwhisk import Connection  # noqa: E402
from invoker.dispatch import DispatchOptions, Dispatcher, new_event_loop  # noqa: E402
from invoker.sender import _LlhttpResponse, _PyResponse, _httptools, ensure_fd_budget  # noqa: E402
from platforms.registry import prepare_request  # noqa: E402

# nginx's answer in the benchmark, as the sender reads it.
NGINX_202 = (b"HTTP/1.1 202 Accepted\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 12:00:00 GMT\r\nContent-Type: application/json\r\n"
             b"Content-Length: 51\r\nConnection: keep-alive\r\nx-openwhisk-activation-id: 0123456789abcdef0123456789abcdef\r\n\r\n"
             b'{"activationId":"0123456789abcdef0123456789abcdef"}')

NGINX_CONF = """\
worker_processes 1;
daemon off;
error_log {tmp}/error.log warn;
pid {tmp}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            default_type application/json;
            add_header x-openwhisk-activation-id $request_id always;
            return 202 '{{"activationId":"$request_id"}}';
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_nginx(tmp: Path) -> tuple[subprocess.Popen, int]:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx is None:
        sys.exit("bench_invoker: nginx not found; install it (FAASPROF_DEV=1 bash setup/steps/40-invoker.sh)")
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port))
    # Its own process group, so that stopping it also stops its worker even if the master is killed.
    proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(tmp)], stdout=subprocess.DEVNULL, stderr=open(tmp / "nginx.stderr", "wb"),
                            start_new_session=True)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    stop_nginx(proc)
    sys.exit(f"bench_invoker: nginx did not start; see {tmp}/nginx.stderr and {tmp}/error.log")


def stop_nginx(proc: subprocess.Popen) -> None:
    """SIGQUIT (graceful) to nginx's process group, then SIGKILL to the group."""
    for sig in (signal.SIGQUIT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # a worker may outlive its master
        except ProcessLookupError:
            pass
        return


def poisson_ns(rate: float, duration_s: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(rate * duration_s * 1.5 + 100)
    times = np.cumsum(rng.exponential(1.0 / rate, count))
    times = times[times < duration_s]
    return (times * 1e9).astype(np.int64)


def run_rate(port: int, rate: float, duration_s: float, tmp: Path, max_connections: int, realtime: int | None = None) -> dict:
    connection = Connection(apihost=f"http://127.0.0.1:{port}", auth="23bc46b1-71f6-4ed5-8c54-816aa4f8c502:benchkey", namespace="guest", source="flags")
    instance = SimpleNamespace(
        name="i0", function="noop", endpoint="local_openwhisk", blocking=False, params={"n": 1},
        data_file=None, data_mode="web", content_type=None, url=None, data=None,
    )
    request = prepare_request(instance, connection)
    ensure_fd_budget(max_connections)
    intended = poisson_ns(rate, duration_s, seed=int(rate))
    run_dir = Path(tempfile.mkdtemp(prefix=f"rate{int(rate)}-", dir=tmp))
    log = InvocationLog(run_dir)
    # As faasprof run: every send journaled (sends.csv) as well as every row written.
    dispatcher = Dispatcher(
        intended, np.zeros(intended.size, dtype=np.int32), [("i0", "noop")], [request], log.append,
        DispatchOptions(max_connections=max_connections, lateness_warn_ms=None, realtime_priority=realtime), say=None, duration_s=duration_s,
        journal=log.sent,
    )
    loop = new_event_loop()
    try:
        zero = time.monotonic_ns() + 50_000_000
        result = loop.run_until_complete(dispatcher.run(zero))
    finally:
        loop.close()
        log.close()
    rows = read_invocations(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"rate": rate, "planned": result.planned, "sent": result.sent, "rows": len(rows), "ok": result.outcomes.get("ok", 0),
            "lateness": result.lateness_ms, "send_wall_s": result.send_wall_s, "total_wall_s": result.total_wall_s, "cpu": result.cpu_percent,
            "peak_connections": result.peak_connections, "last_intended_s": intended[-1] / 1e9 if intended.size else 0.0}


def parser_cost_us(parser, count: int = 100_000, repeats: int = 7) -> float:
    """CPU microseconds to parse one nginx 202 answer (the least of ``repeats`` runs: others' load only adds)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(count):
            response = parser(False)
            response.feed(NGINX_202)
        best = min(best, (time.process_time() - started) / count * 1e6)
    return best


def journal_cost_us(tmp: Path, count: int = 200_000, repeats: int = 5) -> tuple[float, float]:
    """CPU microseconds per send of the send journal: on the send thread (``InvocationLog.sent``)
    and in the flush thread (formatting, writing and fsyncing its line), least of ``repeats``."""
    on_send, in_flush = float("inf"), float("inf")
    for attempt in range(repeats):
        run_dir = tmp / f"journal-{attempt}"
        run_dir.mkdir()
        log = InvocationLog(run_dir, flush_interval_s=3600)  # flushed by hand below, measured apart
        sent = log.sent
        started = time.process_time()
        for seq in range(count):
            sent(seq, seq)
        on_send = min(on_send, (time.process_time() - started) / count * 1e6)
        started = time.process_time()
        log.flush()
        in_flush = min(in_flush, (time.process_time() - started) / count * 1e6)
        log.close()
        shutil.rmtree(run_dir)
    return on_send, in_flush


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[200, 1000, 2000, 5000], help="invocations per second")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per rate (default 30)")
    parser.add_argument("--max-connections", type=int, default=512)
    parser.add_argument("--realtime", type=int, metavar="PRIORITY", help="send thread under SCHED_FIFO at this priority (as faasprof run --realtime)")
    parser.add_argument("--micro", action="store_true", help="only measure CPU per parsed response (per parser) and per journaled send")
    args = parser.parse_args()
    if args.micro:
        print(f"response parser, pure Python (_PyResponse): {parser_cost_us(_PyResponse):.2f} us CPU per response")
        if _httptools is not None:
            print(f"response parser, llhttp via httptools {_httptools.__version__} (_LlhttpResponse, used by faasprof run): {parser_cost_us(_LlhttpResponse):.2f} us CPU per response")
        tmp = Path(tempfile.mkdtemp(prefix="faasprof-bench-"))
        try:
            on_send, in_flush = journal_cost_us(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"send journal: {on_send:.3f} us CPU per send on the send thread, {in_flush:.3f} us in the flush thread")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="faasprof-bench-"))
    proc, port = start_nginx(tmp)
    try:
        import uvloop  # noqa: F401
        loop_name = "uvloop"
    except ImportError:
        loop_name = "asyncio"
    print(f"nginx on 127.0.0.1:{port}; Poisson streams of {args.duration:g} s; event loop {loop_name}; {os.cpu_count()} CPUs;"
          f" load average {os.getloadavg()[0]:.2f}; send thread {'SCHED_FIFO ' + str(args.realtime) if args.realtime else 'normal policy'}")
    print(f"{'rate/s':>7} {'planned':>8} {'sent':>8} {'ok':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'send wall s':>11} {'total wall s':>12} {'cpu %':>6} {'conns':>5}")
    try:
        for rate in args.rates:
            r = run_rate(port, rate, args.duration, tmp, args.max_connections, args.realtime)
            lat = r["lateness"]
            print(
                f"{rate:7.0f} {r['planned']:8d} {r['sent']:8d} {r['ok']:8d} {lat['p50'] or 0:8.3f} {lat['p99'] or 0:8.3f} {lat['max'] or 0:8.3f}"
                f" {r['send_wall_s']:11.2f} {r['total_wall_s']:12.2f} {r['cpu']:6.0f} {r['peak_connections']:5d}",
                flush=True,
            )
            if r["rows"] != r["planned"]:
                print(f"        rows written {r['rows']} != planned {r['planned']}")
    finally:
        stop_nginx(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f} (other processes on this host make the tail worse)")
    print("send wall s: the run's zero to the last request written (the schedule's last instant is just under the duration);")
    print("total wall s: to the last response; cpu %: the invoker process (all threads) as a share of one core.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
