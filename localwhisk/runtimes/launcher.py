"""Python launcher: loads an action once, then serves activations over pipes (actionloop-like).

Protocol (all lines are JSON, replies go to fd ``$__LW_FD``, default 3):
- at start the launcher replies ``{"ok": true}`` (the sandbox is up: "container created");
- ``{"init": {"main": "main", "code": "<source>" | null, "dir": "<extracted zip>" | null, "env": {...}}}``
  → ``{"ok": true}`` or ``{"init_error": "<message>"}``;
- ``{"value": {...}, "activation_id": ..., ...}`` → ``{"result": <object or array>}`` (an exception in
  ``main`` is an application error ``{"result": {"error": "..."}}``, as in OpenWhisk's Python
  runtime) or ``{"developer_error": "<message>"}`` for a result that is not a dictionary or array.
After each init or run the launcher prints the sentinel on stdout and stderr, then replies, so the
server has the activation's complete logs when the reply arrives.
This file must not import anything from localwhisk: it runs in the sandbox process.
"""

import json
import os
import sys
import types

if sys.flags.no_site:
    # localwhisk starts launchers with -S: skipping site's .pth processing saves ~20 ms per cold
    # start. Packages installed in the interpreter's (or its venv's) site-packages stay importable.
    def _add_site_packages():
        version = "python%d.%d" % sys.version_info[:2]
        prefixes = []
        venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
        cfg = os.path.join(venv, "pyvenv.cfg")
        include_base = True
        if os.path.exists(cfg):
            prefixes.append(venv)
            with open(cfg, encoding="utf-8") as handle:
                for line in handle:
                    key, _, value = line.partition("=")
                    if key.strip() == "include-system-site-packages":
                        include_base = value.strip().lower() == "true"
        if include_base:
            prefixes.append(sys.base_prefix)
        for prefix in prefixes:
            site = os.path.join(prefix, "lib", version, "site-packages")
            if os.path.isdir(site) and site not in sys.path:
                sys.path.append(site)

    _add_site_packages()

SENTINEL = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
OOM_EXIT_CODE = 86  # a MemoryError under rlimits: tell the server "memory exhausted"


def main_loop():
    reply_fd = int(os.environ.pop("__LW_FD", "3"))
    workdir = os.environ.pop("__LW_CWD", "")
    if workdir:
        os.chdir(workdir)
    stdin = sys.stdin.buffer
    stdout = sys.stdout
    stderr = sys.stderr

    def reply(obj):
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            n = os.write(reply_fd, view)
            view = view[n:]

    def end_of_activation():
        stdout.write(SENTINEL + "\n")
        stdout.flush()
        stderr.write(SENTINEL + "\n")
        stderr.flush()

    action = None
    reply({"ok": True})
    for line in stdin:
        try:
            message = json.loads(line)
        except ValueError as error:
            end_of_activation()
            reply({"developer_error": "localwhisk launcher: bad request line: %s" % error})
            continue
        if "init" in message:
            init = message["init"]
            try:
                action = load(init)
            except MemoryError:
                os._exit(OOM_EXIT_CODE)
            except BaseException as error:  # the action's import failed: an init failure
                print_exc()
                end_of_activation()
                reply({"init_error": "%s: %s" % (type(error).__name__, error)})
                continue
            end_of_activation()
            reply({"ok": True})
            continue
        if action is None:
            end_of_activation()
            reply({"developer_error": "The action was not initialized."})
            continue
        for key, value in message.items():
            if key != "value":
                os.environ["__OW_" + key.upper()] = value if isinstance(value, str) else json.dumps(value)
        try:
            result = action(message.get("value", {}))
        except MemoryError:
            os._exit(OOM_EXIT_CODE)
        except BaseException as error:
            print_exc()
            result = {"error": str(error)}
        end_of_activation()
        if not isinstance(result, (dict, list)):
            reply({"developer_error": "The action did not return a dictionary or array."})
            continue
        try:
            reply({"result": result})
        except (TypeError, ValueError) as error:
            reply({"developer_error": "The action did not produce a valid JSON response: %s" % error})


def print_exc():
    import traceback  # only on errors: keeps the launcher's start-up (a cold start) short

    traceback.print_exc()


def load(init):
    for key, value in (init.get("env") or {}).items():
        os.environ[key] = value if isinstance(value, str) else json.dumps(value)
    main_name = init.get("main") or "main"
    module = types.ModuleType("main__")
    sys.modules["main__"] = module
    directory = init.get("dir")
    if directory:
        os.chdir(directory)
        sys.path.insert(0, directory)
        venv = os.path.join(directory, "virtualenv", "lib")
        if os.path.isdir(venv):
            for name in os.listdir(venv):
                site = os.path.join(venv, name, "site-packages")
                if os.path.isdir(site):
                    sys.path.insert(1, site)
        path = os.path.join(directory, "__main__.py")
        if not os.path.exists(path):
            raise ImportError("Zip file does not include mandatory files.")
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        module.__file__ = path
    else:
        source = init.get("code") or ""
        path = "__main__.py"
    exec(compile(source, path, "exec"), module.__dict__)
    function = module.__dict__.get(main_name)
    if not callable(function):
        raise NameError("name '%s' is not defined" % main_name)
    return function


if __name__ == "__main__":
    main_loop()
