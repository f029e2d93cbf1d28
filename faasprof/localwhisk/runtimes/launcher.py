"""Python launcher: loads an action once, then serves activations over pipes (actionloop-like).

Protocol (all lines are JSON, replies go to fd ``$__LW_FD``, default 3):
- at start the launcher replies ``{"ok": true, "tmp": "private" | "shared: <why>"}`` (the sandbox is
  up: "container created"; ``tmp`` says whether it has a /tmp of its own, see ``private_tmp``);
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

# mount(2) flags and unshare(2)'s CLONE_NEWNS (linux/mount.h, linux/sched.h).
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE, CLONE_NEWNS = 2, 4, 4096, 16384, 1 << 18, 0x00020000


def private_tmp(workdir, folders=(), opened=None):
    """Give this sandbox a /tmp of its own, as each OpenWhisk container has: a mount namespace in
    which the sandbox's own folder (``$__LW_TMP``) is bind-mounted on /tmp. Functions that write
    fixed names there (FunctionBench's /tmp files) then never collide between concurrent sandboxes.
    The sandbox's working folder stays reachable at its path when it lies under /tmp (a data dir
    in /tmp): it is bound at the same place inside the new /tmp first, and the two are mounted on
    /tmp together. Needs CAP_SYS_ADMIN (root); without it ``TMPDIR`` points at that folder
    (``tempfile`` and Node's ``os.tmpdir()`` follow it, a literal "/tmp/x" does not) and the reply
    says why /tmp is shared."""
    directory = os.environ.pop("__LW_TMP", "")
    if not directory:
        return "shared: no folder of its own was given"
    os.environ["TMPDIR"] = directory
    try:
        import ctypes  # only here: the launcher imports nothing it does not need at once

        libc = ctypes.CDLL(None, use_errno=True)

        def bind(source, target, flags=0):
            return libc.mount(source.encode(), target.encode(), None, MS_BIND | flags, None)

        def hold_folders():
            # Held in this namespace (a mount of another cannot be bound here) before /tmp is replaced.
            for folder in folders:
                opened.append((folder, os.open(folder, os.O_PATH | os.O_CLOEXEC)))
            return 0

        steps = [
            ("unshare", lambda: libc.unshare(CLONE_NEWNS)),
            ("mount --make-rprivate /", lambda: libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)),
            ("open the interpreter's folders", hold_folders),
        ]
        real = os.path.realpath(workdir) if workdir else ""
        if real.startswith("/tmp/"):
            inside = os.path.join(directory, real[len("/tmp/") :])
            steps += [
                ("mkdir " + inside, lambda: os.makedirs(inside, exist_ok=True) or 0),
                ("mount --bind %s %s" % (real, inside), lambda: bind(real, inside)),
            ]
        steps.append(("mount --rbind %s /tmp" % directory, lambda: bind(directory, "/tmp", MS_REC)))
        for what, call in steps:
            if call() != 0:
                return "shared: %s failed (%s)" % (what, os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as error:
        return "shared: %s" % error
    os.environ["TMPDIR"] = "/tmp"
    return "private"


def interpreter_folders():
    """The interpreter's folders (its venv, as ``_add_site_packages`` finds it, and its base
    installation) that a sandbox user must reach, for ``reach_interpreter``; none when the
    launcher will not drop to a sandbox user."""
    if not os.environ.get("__LW_UID"):
        return []
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    found = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    if os.path.exists(os.path.join(venv, "pyvenv.cfg")):
        found.add(os.path.realpath(venv))
    # A folder inside another is reached with it.
    return sorted(p for p in found if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in found))


def _blocked_at(path, uid):
    """The first folder on ``path``'s way (or ``path`` itself) that is missing in this mount
    namespace or that user ``uid`` (no groups) cannot pass through; None when it reaches it."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts) + 1):
        folder = "/" + "/".join(parts[:depth])
        try:
            info = os.stat(folder)
        except FileNotFoundError:
            return folder
        if not info.st_mode & (0o100 if info.st_uid == uid else 0o001):
            return folder
    return None


def reach_interpreter(folders, uid):
    """Let the sandbox's user reach the interpreter's folders (``(path, O_PATH descriptor)``, held
    by ``private_tmp``), each at its own path, in this sandbox's mount namespace. A folder closed to other users on the
    way (a venv or pyenv under /root, 0700) is covered with an empty tmpfs that others may pass
    through (0711: nothing else of it is shown), and each interpreter folder is bound back in at
    its path; a folder the private /tmp hides is made again inside it. Returns None, or why the
    sandbox cannot run as its own user."""
    try:
        import ctypes  # only here, as in private_tmp

        libc = ctypes.CDLL(None, use_errno=True)
        for path, fd in folders:
            blocked = _blocked_at(path, uid)
            if blocked is not None and os.path.isdir(blocked):
                flags = MS_NOSUID | MS_NODEV
                if libc.mount(b"tmpfs", blocked.encode(), b"tmpfs", flags, b"mode=0711,size=1m") != 0:
                    return "mount of a tmpfs on %s failed (%s)" % (blocked, os.strerror(ctypes.get_errno()))
            if blocked is not None:
                os.makedirs(path, mode=0o711, exist_ok=True)
                source = ("/proc/self/fd/%d" % fd).encode()
                if libc.mount(source, path.encode(), None, MS_BIND | MS_REC, None) != 0:
                    return "mount --bind of %s failed (%s)" % (path, os.strerror(ctypes.get_errno()))
            os.close(fd)
            if _blocked_at(path, uid) is not None:  # a folder inside it is closed: a bind keeps its mode
                return "its interpreter's folder %s is closed to other users (%s)" % (path, _blocked_at(path, uid))
    except (OSError, AttributeError) as error:
        return str(error)
    return None


def drop_to_sandbox_user():
    """Become the sandbox's own user (``$__LW_UID``, given when the server is root), after the
    mount namespace is made: from here on the action holds no privilege (docs/security.md)."""
    uid = os.environ.pop("__LW_UID", "")
    if uid:
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))


def reply_line(reply_fd, obj):
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    view = memoryview(data)
    while view:
        n = os.write(reply_fd, view)
        view = view[n:]


SENTINEL = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
OOM_EXIT_CODE = 86  # a MemoryError under rlimits: tell the server "memory exhausted"


def main_loop():
    # The folders made below for the sandbox's user must be open to it whatever the server's
    # umask (077 under a command that writes run directories).
    os.umask(0o022)
    reply_fd = int(os.environ.pop("__LW_FD", "3"))
    workdir = os.environ.pop("__LW_CWD", "")
    folders = interpreter_folders()
    held = []
    tmp = private_tmp(workdir, folders, held)
    if folders:
        why = reach_interpreter(held, int(os.environ["__LW_UID"])) if tmp == "private" else tmp
        if why:
            # Never run an action as root: the sandbox does not start (docs/security.md).
            reply_line(reply_fd, {"ok": False, "error": "python sandboxes cannot run as a user of their own: %s" % why})
            os._exit(1)
    if workdir:
        os.chdir(workdir)
    drop_to_sandbox_user()
    stdin = sys.stdin.buffer
    stdout = sys.stdout
    stderr = sys.stderr

    def reply(obj):
        reply_line(reply_fd, obj)

    def end_of_activation():
        stdout.write(SENTINEL + "\n")
        stdout.flush()
        stderr.write(SENTINEL + "\n")
        stderr.flush()

    action = None
    reply({"ok": True, "tmp": tmp})
    for line in stdin:
        try:
            message = json.loads(line)
        except ValueError as error:
            answer = {"developer_error": "localwhisk launcher: bad request line: %s" % error}
        else:
            if "init" in message:
                loaded, answer = init_reply(message["init"])
                action = loaded or action
            elif action is None:
                answer = {"developer_error": "The action was not initialized."}
            else:
                answer = run_reply(action, message)
        end_of_activation()
        try:
            reply(answer)
        except (TypeError, ValueError) as error:
            reply({"developer_error": "The action did not produce a valid JSON response: %s" % error})


def init_reply(init):
    """Load the action: (its function, the reply), or (None, the init error) when its code fails."""
    try:
        return load(init), {"ok": True}
    except MemoryError:
        os._exit(OOM_EXIT_CODE)
    except BaseException as error:  # the action's import failed: an init failure
        print_exc()
        return None, {"init_error": "%s: %s" % (type(error).__name__, error)}


def run_reply(action, message):
    """Run one activation: the reply (its result, or a developer error for a result that is not
    a dictionary or array; an exception in the action is an application error, as OpenWhisk's)."""
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
    if not isinstance(result, (dict, list)):
        return {"developer_error": "The action did not return a dictionary or array."}
    return {"result": result}


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
