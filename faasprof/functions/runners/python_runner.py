"""Native runner for a Python function: load it once, then call ``main`` once per request.

Usage: ``python python_runner.py FUNCTION_FILE MAIN_NAME`` with env ``FAASPROF_RESULT_FD`` (a
pipe to the parent). Like OpenWhisk's action loop, requests arrive one JSON object per line on
stdin (``{"params": {...}}``) and each answer is one JSON line on the result pipe, so whatever
the function prints on stdout/stderr cannot corrupt the protocol. The first answer is
``{"ready": true, "load_ns": ...}`` (import time: the native analogue of a cold start's init).

Each answer: ``ok``, ``result`` or ``error``, ``exec_ns`` (perf_counter around ``main``),
``rusage`` deltas (user/system CPU ms, minor/major faults, voluntary/involuntary context
switches: the kernel's software counters for this process) and ``result_bytes``.
This file imports nothing of faasprof: it runs under the function's interpreter only.
"""

import importlib.util
import json
import os
import resource
import sys
import time
import traceback


def rusage_delta(before, after):
    return {
        "user_ms": round((after.ru_utime - before.ru_utime) * 1000, 3),
        "sys_ms": round((after.ru_stime - before.ru_stime) * 1000, 3),
        "minflt": after.ru_minflt - before.ru_minflt,
        "majflt": after.ru_majflt - before.ru_majflt,
        "nvcsw": after.ru_nvcsw - before.ru_nvcsw,
        "nivcsw": after.ru_nivcsw - before.ru_nivcsw,
    }


def main():
    function_file, main_name = sys.argv[1], sys.argv[2]
    out = os.fdopen(int(os.environ["FAASPROF_RESULT_FD"]), "w", encoding="utf-8")

    def send(message):
        out.write(json.dumps(message, default=str) + "\n")
        out.flush()

    start = time.perf_counter_ns()
    try:
        # The action's folder goes first on sys.path, as OpenWhisk's launcher does for zip actions.
        sys.path.insert(0, os.path.dirname(os.path.abspath(function_file)))
        spec = importlib.util.spec_from_file_location("main__", function_file)
        module = importlib.util.module_from_spec(spec)
        sys.modules["main__"] = module
        spec.loader.exec_module(module)
        function = getattr(module, main_name)
    except BaseException as failure:  # report any import failure to the parent, then stop
        send(
            {"ready": False, "error": "%s: %s" % (type(failure).__name__, failure), "traceback": traceback.format_exc()}
        )
        return 1
    send(
        {
            "ready": True,
            "load_ns": time.perf_counter_ns() - start,
            "pid": os.getpid(),
            "interpreter": sys.version.split()[0],
        }
    )

    for line in sys.stdin:
        if not line.strip():
            continue
        params = json.loads(line).get("params") or {}
        usage_before = resource.getrusage(resource.RUSAGE_SELF)
        begin = time.perf_counter_ns()
        try:
            result = function(params)
            error = None
        except Exception as exc:
            result, error = None, "%s: %s" % (type(exc).__name__, exc)
        exec_ns = time.perf_counter_ns() - begin
        usage = rusage_delta(usage_before, resource.getrusage(resource.RUSAGE_SELF))
        if error is None and not isinstance(result, (dict, list)):
            error = "the function did not return a dictionary (got %s)" % type(result).__name__
        if error is None and isinstance(result, dict) and "error" in result:
            error = str(result["error"])  # OpenWhisk: a result with an error field is an application error
        try:
            text = json.dumps(result)
        except (TypeError, ValueError) as exc:
            text, error = "null", "the result is not JSON-serialisable: %s" % exc
        sys.stdout.flush()
        sys.stderr.flush()
        out.write(
            '{"ok": %s, "error": %s, "exec_ns": %d, "rusage": %s, "result_bytes": %d, "result": %s}\n'
            % ("true" if error is None else "false", json.dumps(error), exec_ns, json.dumps(usage), len(text), text)
        )
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
