"""Rebuild the fake /proc + /sys trees used by tests/test_monitoring_host.py (run from anywhere).

* ``this_vm``: copied from the development VM (AMD EPYC guest, 2 CPUs, no PMU, no RDT,
  cgroups v1 + a v2 mount) on 2026-11-21 by this script's ``copy_this_vm`` (files listed there).
  Regenerating it on another machine copies that machine instead: do not, unless that is the point.
* ``xeon_11way``, ``xeon_20way``: constructed, not copied. The values are the real data points of
  a published `pqos -s -v` of a Skylake-class Xeon (tests/data/resctrl/README.md: a Xeon with 16 L3 CLOSes and 11 ways, cbm_mask
  7ff, shareable 0x600, MBA 8 CLOSes min 10 step 10; another with 20 ways, mask fffff); the file
  layout is the kernel's (Documentation/arch/x86/resctrl.rst, sysfs cpu topology and cpufreq).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def copy_this_vm(root: Path) -> None:
    files = [
        "/proc/cpuinfo",
        "/proc/mounts",
        "/proc/filesystems",
        "/proc/meminfo",
        "/proc/self/mountinfo",
        "/proc/sys/kernel/perf_event_paranoid",
        "/proc/sys/kernel/nmi_watchdog",
        "/proc/sys/kernel/osrelease",
        "/sys/devices/system/cpu/online",
        "/sys/devices/system/cpu/smt/control",
        "/sys/devices/system/cpu/smt/active",
    ]
    for cpu in range(os.cpu_count() or 1):
        for name in ("physical_package_id", "core_id"):
            files.append(f"/sys/devices/system/cpu/cpu{cpu}/topology/{name}")
    for path in files:
        try:
            write(root, path, Path(path).read_text())
        except OSError:
            pass
    write(root, "/proc/sys/kernel/hostname", "vm\n")
    for name in os.listdir("/sys/bus/event_source/devices"):
        (root / "sys/bus/event_source/devices" / name).mkdir(parents=True, exist_ok=True)
    for line in Path("/proc/mounts").read_text().splitlines():
        point = line.split()[1]
        if point.startswith("/sys/fs/cgroup/"):
            (root / point.lstrip("/")).mkdir(parents=True, exist_ok=True)
    # The root disk: /sys/dev/block/MAJ:MIN -> the device directory, with its trace/ directory.
    for entry in os.listdir("/sys/dev/block"):
        real = os.path.realpath(f"/sys/dev/block/{entry}")
        if os.path.basename(real) != "vda":
            continue
        device_dir = root / real.lstrip("/")
        (device_dir / "trace").mkdir(parents=True, exist_ok=True)
        link = root / "sys/dev/block" / entry
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(device_dir, link.parent))
        (root / "sys/block").mkdir(parents=True, exist_ok=True)
        block_link = root / "sys/block/vda"
        if not block_link.is_symlink():
            block_link.symlink_to(os.path.relpath(device_dir, block_link.parent))


INTEL_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe "
    "syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf "
    "pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe "
    "popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single "
    "pti intel_ppin ssbd mba ibrs ibpb stibp tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep "
    "bmi2 erms invpcid rtm cqm mpx rdt_a avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl "
    "xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts pku ospke md_clear flush_l1d"
)


def keep_empty_dirs(root: Path) -> None:
    """git does not keep empty directories: give each one a ``.keep`` file."""
    for directory, subdirs, files in os.walk(root):
        if not subdirs and not files and not os.path.islink(directory):
            Path(directory, ".keep").write_text("")


def xeon(
    root: Path,
    model: str,
    pmu_name: str,
    ways: int,
    sockets: int,
    cores: int,
    smt: bool,
    resctrl_mounted: bool,
    governor: str,
    no_turbo: int,
    cgroup_v2_only: bool,
) -> None:
    threads = 2 if smt else 1
    n = sockets * cores * threads
    blocks = []
    for cpu in range(n):
        blocks.append(
            f"processor\t: {cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
            f"model name\t: {model}\nflags\t\t: {INTEL_FLAGS}\n\n"
        )
        package = cpu // (cores * threads) if not smt else (cpu % (sockets * cores)) // cores
        core = cpu % cores
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{package}\n")
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id", f"{core}\n")
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", governor + "\n")
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_driver", "intel_pstate\n")
    write(root, "/proc/cpuinfo", "".join(blocks))
    write(root, "/sys/devices/system/cpu/online", f"0-{n - 1}\n")
    write(root, "/sys/devices/system/cpu/smt/control", "on\n" if smt else "off\n")
    write(root, "/sys/devices/system/cpu/smt/active", "1\n" if smt else "0\n")
    write(root, "/sys/devices/system/cpu/intel_pstate/no_turbo", f"{no_turbo}\n")
    write(root, "/proc/sys/kernel/perf_event_paranoid", "2\n")
    write(root, "/proc/sys/kernel/nmi_watchdog", "1\n")
    write(root, "/proc/sys/kernel/osrelease", "5.15.0-91-generic\n")
    write(root, "/proc/sys/kernel/hostname", "xeon\n")
    write(root, "/proc/meminfo", "MemTotal:       196608000 kB\nMemFree:        180000000 kB\n")
    write(root, "/sys/bus/event_source/devices/cpu/caps/pmu_name", pmu_name + "\n")
    for name in ("software", "tracepoint", "uncore_imc_0", "msr"):
        (root / "sys/bus/event_source/devices" / name).mkdir(parents=True, exist_ok=True)
    write(
        root,
        "/proc/filesystems",
        "nodev\tsysfs\nnodev\tproc\nnodev\tcgroup\nnodev\tcgroup2\nnodev\tdebugfs\nnodev\tresctrl\n\text4\n",
    )
    mounts = [
        "/dev/sda2 / ext4 rw,relatime 0 0",
        "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
        "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0",
        "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0",
    ]
    if cgroup_v2_only:
        mounts.append(
            "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0"
        )
        write(root, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    else:
        for controller in ("cpu,cpuacct", "memory", "freezer", "perf_event"):
            mounts.append(f"cgroup /sys/fs/cgroup/{controller} cgroup rw,nosuid,nodev,noexec,relatime,{controller} 0 0")
            (root / "sys/fs/cgroup" / controller).mkdir(parents=True, exist_ok=True)
    if resctrl_mounted:
        mounts.append("resctrl /sys/fs/resctrl resctrl rw,relatime 0 0")
        mask = format((1 << ways) - 1, "x")
        write(root, "/sys/fs/resctrl/info/L3/num_closids", "16\n")
        write(root, "/sys/fs/resctrl/info/L3/cbm_mask", mask + "\n")
        write(root, "/sys/fs/resctrl/info/L3/min_cbm_bits", "1\n")
        write(root, "/sys/fs/resctrl/info/L3/shareable_bits", "600\n" if ways == 11 else "0\n")
        write(root, "/sys/fs/resctrl/info/MB/num_closids", "8\n")
        write(root, "/sys/fs/resctrl/info/MB/min_bandwidth", "10\n")
        write(root, "/sys/fs/resctrl/info/MB/bandwidth_gran", "10\n")
        write(root, "/sys/fs/resctrl/info/MB/delay_linear", "1\n")
        write(root, "/sys/fs/resctrl/info/L3_MON/num_rmids", "176\n")
        write(root, "/sys/fs/resctrl/info/L3_MON/mon_features", "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n")
        write(root, "/sys/fs/resctrl/info/last_cmd_status", "ok\n")
        write(root, "/sys/fs/resctrl/cpus_list", f"0-{n - 1}\n")
        write(
            root,
            "/sys/fs/resctrl/schemata",
            "    L3:"
            + ";".join(f"{s}={mask}" for s in range(sockets))
            + "\n    MB:"
            + ";".join(f"{s}=100" for s in range(sockets))
            + "\n",
        )
        (root / "sys/fs/resctrl/mon_groups").mkdir(parents=True, exist_ok=True)
        for s in range(sockets):
            write(root, f"/sys/fs/resctrl/mon_data/mon_L3_{s:02d}/llc_occupancy", "16234000\n")
            write(root, f"/sys/fs/resctrl/mon_data/mon_L3_{s:02d}/mbm_total_bytes", "0\n")
            write(root, f"/sys/fs/resctrl/mon_data/mon_L3_{s:02d}/mbm_local_bytes", "0\n")
    write(root, "/proc/mounts", "\n".join(mounts) + "\n")
    write(root, "/proc/self/mountinfo", "27 1 8:2 / / rw,relatime - ext4 /dev/sda2 rw\n")
    device_dir = root / "sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    (device_dir / "trace").mkdir(parents=True, exist_ok=True)
    (device_dir / "sda2").mkdir(parents=True, exist_ok=True)
    (device_dir / "sda2" / "partition").write_text("2\n")
    (root / "sys/dev/block").mkdir(parents=True, exist_ok=True)
    (root / "sys/block").mkdir(parents=True, exist_ok=True)
    for link, target in (
        (root / "sys/dev/block/8:2", device_dir / "sda2"),
        (root / "sys/dev/block/8:0", device_dir),
        (root / "sys/block/sda", device_dir),
    ):
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(target, link.parent))


def main() -> None:
    which = sys.argv[1:] or ["xeon_11way", "xeon_20way", "this_vm"]
    for name in which:
        root = HERE / name
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        if name == "this_vm":
            copy_this_vm(root)
        elif name == "xeon_11way":
            xeon(
                root, "Intel(R) Xeon(R) Gold 6142 CPU @ 2.60GHz", "skylake", 11, 2, 4, True, True, "powersave", 0, False
            )
        elif name == "xeon_20way":
            xeon(
                root,
                "Intel(R) Xeon(R) CPU E5-2699 v4 @ 2.20GHz",
                "broadwell",
                20,
                1,
                4,
                False,
                False,
                "performance",
                1,
                True,
            )
        keep_empty_dirs(root)


if __name__ == "__main__":
    main()
