"""Cache (CAT) and memory-bandwidth (MBA) allocation for sweeps, through resctrl or pqos.

A sweep point such as "4 LLC ways and 50 % memory bandwidth for the CPUs that run the functions"
becomes one Intel RDT class of service (CLOS). This package finds out what the host can do,
checks the requested settings against it before anything runs, applies them, reads back what the
hardware really took (that is what goes into the manifest), and always puts the previous
allocation back.

Use::

    caps = discover(root="/")                      # never raises; caps.describe() for doctor
    plans = check_sweep_values(caps, llc_ways=[11, 4, 1], mba_percent=[100, 35])   # up front
    with Allocation(caps, plan_allocation(caps, llc_ways=4, control_plane_cpus=[0, 1])) as alloc:
        manifest.allocation = alloc.applied        # read back from the group's schemata / pqos -s
        ...                                        # run the point
    # at the start of every sweep, after a crash of an earlier one:
    for line in cleanup_leftovers(root="/"):
        print(line, file=sys.stderr)

Interfaces. resctrl (``/sys/fs/resctrl``) is used when it is mounted; otherwise ``pqos``
(intel-cmt-cat) with ``-e``/``-a``. The choice is made once, in ``discover``. An allocation is tied
to CPUs (resctrl ``cpus_list``, pqos ``-a core:``), so the sweep must keep the functions on those
CPUs and may leave the platform's control-plane CPUs (``control_plane_cpus``) out of it.

One module a job, each importing only those before it here:

* ``model``: the host's capabilities, CPU lists, a backend's read-back, how a tool is run.
* ``plan``: every request validated against the capabilities (the kernel's own checks).
* ``journal``: the state file written before the host is touched and deleted after the restore.
* ``resctrl``, ``pqos``: the two backends, each probing, applying, reading back and restoring
  (their docstrings give the order of operations and why).
* ``probe``: ``discover``, which backend, and what it offers.
* ``restore``: a state file undone, for one allocation or for the leftovers of a crash.
* ``apply``: ``Allocation``, the context manager that applies, checks and always restores.

This ``__init__`` imports every public name, so ``from monitoring import allocation`` reaches them.
"""

from __future__ import annotations

from faasprof.monitoring.allocation.apply import Allocation
from faasprof.monitoring.allocation.journal import STATE_FORMAT_VERSION, default_state_dir
from faasprof.monitoring.allocation.model import (
    ALLOCATION_FLAGS,
    GROUP_PREFIX,
    MOUNT_HINT,
    PQOS_TIMEOUT_S,
    RESCTRL_MOUNTPOINT,
    BandwidthCaps,
    CacheCaps,
    Capabilities,
    Readback,
    Runner,
    format_cpu_list,
    parse_cpu_list,
)
from faasprof.monitoring.allocation.plan import (
    AllocationPlan,
    check_mask,
    check_sweep_values,
    llc_mask,
    mask_is_contiguous,
    mba_step,
    plan_allocation,
    require,
)
from faasprof.monitoring.allocation.pqos import PQOS_ASSOC_TYPE, parse_pqos_capabilities, parse_pqos_show
from faasprof.monitoring.allocation.probe import discover
from faasprof.monitoring.allocation.resctrl import ResctrlFs, parse_schemata
from faasprof.monitoring.allocation.restore import cleanup_leftovers
