"""The host's noise of a run (``faasprof.monitoring.noise``) on a fake /proc, with a fake clock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faasprof.monitoring.noise import NoiseSampler, cpu_times, noise_line, psi_some_us, vmstat_faults

OWN = 1000


class FakeProc:
    """A /proc tree: /proc/stat, pressure files, and processes' stat and cgroup files."""

    def __init__(self, root: Path, psi: bool = True):
        self.root = root
        self.psi = psi
        self.now = 0.0

    def write(
        self, busy: int, idle: int, steal: int, running: int, procs: dict[int, tuple[int, int, str]], psi_us=(0, 0, 0)
    ):
        """``procs``: pid → (parent pid, CPU ticks, cgroup text)."""
        user = busy  # user nice system idle iowait irq softirq steal
        (self.root / "stat").write_text(
            f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4\nprocs_running {running}\nprocs_blocked 0\n"
        )
        pressure = self.root / "pressure"
        if self.psi:
            pressure.mkdir(exist_ok=True)
            for name, total in zip(("cpu", "memory", "io"), psi_us):
                (pressure / name).write_text(
                    f"some avg10=0.00 avg60=0.00 avg300=0.00 total={total}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                )
        else:
            (self.root / "vmstat").write_text(f"pgmajfault {psi_us[1]}\npswpin 0\npswpout 0\n")
        for pid, (parent, ticks, cgroup) in procs.items():
            folder = self.root / str(pid)
            folder.mkdir(exist_ok=True)
            # comm with a space and a parenthesis, as a process may name itself
            (folder / "stat").write_text(
                f"{pid} (py (x) y) S {parent} 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5 0 0\n"
            )
            (folder / "cgroup").write_text(cgroup)

    def clock(self) -> float:
        return self.now


def test_other_work_is_told_from_the_runs_own(tmp_path):
    proc = FakeProc(tmp_path)
    # The run (pid 1000), its child the platform (1001) and a sandbox under it (1002, in a
    # localwhisk cgroup, reparented), and another engineer's process (2000).
    processes = {
        OWN: (1, 0, "0::/user"),
        1001: (OWN, 0, "0::/user"),
        1002: (1, 0, "0::/localwhisk-7/s1"),
        2000: (1, 0, "0::/user"),
    }
    proc.write(busy=1000, idle=1000, steal=0, running=3, procs=processes)
    sampler = NoiseSampler(own_pid=OWN, proc=tmp_path, clock=proc.clock)
    sampler._first = sampler._last = sampler.sample(scan=True)
    # 4 s on 2 CPUs = 800 ticks: 500 busy (100 the run's own, 50 its sandbox's, 350 other work), 40 stolen.
    proc.now = 4.0
    processes.update({OWN: (1, 60, "0::/user"), 1001: (OWN, 40, "0::/user"), 1002: (1, 50, "x"), 2000: (1, 350, "y")})
    proc.write(busy=1500, idle=1260, steal=40, running=5, procs=processes, psi_us=(400_000, 800_000, 0))
    sampler._last = sampler.sample(scan=True)
    noise = sampler.summary()
    assert noise.window_s == 4.0 and noise.samples == 2
    assert noise.own_cpu_share == pytest.approx(150 / 800)
    assert noise.other_cpu_share == pytest.approx(350 / 800)
    assert noise.steal_share == pytest.approx(40 / 800)
    assert noise.runq_mean == pytest.approx(3.0)  # procs_running less the sampler: 2 then 4
    assert noise.psi_cpu_some_share == pytest.approx(0.1) and noise.psi_memory_some_share == pytest.approx(0.2)
    assert noise.memory_faults_per_s is None
    assert "other processes' CPU 44 % (threshold 25 %)" in noise.warning and "steal 5 %" in noise.warning
    assert "memory stall 20 % (threshold 10 %)" in noise.warning
    assert "faasprof run --repeats 5" in noise.warning
    line = noise_line(noise.to_json())
    assert line.startswith("host noise: other CPU 44 % of ") and "steal 5 %" in line and "memory stall 20 %" in line


def test_a_quiet_host_gives_no_warning_and_vmstat_stands_in_for_pressure(tmp_path):
    proc = FakeProc(tmp_path, psi=False)
    processes = {OWN: (1, 0, "")}
    proc.write(busy=100, idle=100, steal=0, running=1, procs=processes)
    sampler = NoiseSampler(own_pid=OWN, proc=tmp_path, clock=proc.clock)
    sampler._first = sampler._last = sampler.sample(scan=True)
    proc.now = 2.0
    proc.write(busy=180, idle=420, steal=0, running=1, procs={OWN: (1, 60, "")}, psi_us=(0, 30, 0))
    sampler._last = sampler.sample(scan=True)
    noise = sampler.summary()
    assert noise.other_cpu_share == pytest.approx(20 / 400) and noise.warning is None
    assert noise.psi_memory_some_share is None and noise.memory_faults_per_s == pytest.approx(15.0)
    assert "major faults and swap 15/s" in noise_line(noise.to_json())


def test_the_thread_samples_the_real_proc_until_stopped():
    sampler = NoiseSampler(interval_s=0.01)
    sampler.start()
    deadline = time.monotonic() + 30
    while len(sampler._runq) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    noise = sampler.summary()
    assert noise.samples >= 6 and noise.window_s > 0
    assert 0.0 <= noise.other_cpu_share <= 1.0 and 0.0 <= noise.own_cpu_share <= 1.0
    assert sampler._thread is None


def test_parsers():
    times, running = cpu_times("cpu  10 1 2 30 4 0 0 3 0 0\nprocs_running 7\n")
    assert (times.busy, times.total, times.steal, running) == (13, 50, 3, 7)
    assert psi_some_us("some avg10=1.00 avg60=0 avg300=0 total=1234\nfull total=0") == 1234
    assert psi_some_us(None) is None
    assert vmstat_faults("pgmajfault 3\npswpin 2\npswpout 1\nnr_free_pages 10\n") == 6


# That every run keeps and prints its host's noise is checked on a real run by
# tests/test_invoker_run.py::test_end_to_end_on_the_embedded_localwhisk (one run serves both).
