"""The layers of ARCHITECTURE.md, checked statically: imports go one way, files form no cycle, and
no project module is imported inside a function (where it would dodge both checks).

Every ``.py`` file of the layered packages is parsed with ``ast`` (nothing is imported). A module
may import modules of its own layer or lower ones; a command module (``*/cmd_*.py``, the CLI entry
points) is the top layer, so nothing below imports one, and it lives in a package whose layer is at
least that of everything it imports. Tests and benchmarks are outside the layers: they may import
anything.

A second check imports the analyzer in a fresh interpreter where ``invoker``, ``localwhisk``,
``aiohttp`` and ``uvloop`` cannot be imported: the analyzer must work on a laptop that holds only
a finished run directory.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("faasprof", "monitoring", "workload", "functions", "platforms", "localwhisk", "invoker", "analyzer", "experiments")

# Bottom to top. The first prefix that matches a module names its layer (longest prefixes first
# where they overlap); command modules are recognised by name before this table is read.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("faasprof",)),
    ("monitoring", ("monitoring",)),
    ("functions", ("functions",)),
    ("platforms and localwhisk", ("platforms", "localwhisk")),
    # The workload model asks each platform the shape of its instances (platforms.registry) and
    # reads the function catalogue, so it sits above both.
    ("workload", ("workload",)),
    ("invoker and analyzer", ("invoker", "analyzer")),
    ("experiments", ("experiments",)),
    ("commands", ()),
)
COMMAND_MODULES = ("faasprof.cli", "faasprof.__main__", "localwhisk.__main__")
# Packages that share a layer but stay independent of each other, both ways: the analyzer runs
# without the invoker (and the invoker's --analyze is orchestrated above both), and localwhisk is
# reached only as an OpenWhisk, through platforms.openwhisk.
APART = (("invoker", "analyzer"), ("platforms", "localwhisk"))


def package_layer(module: str) -> int:
    """The layer of the package ``module`` sits in, a command or not."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return index
    raise KeyError(f"{module}: in no layer; add its package to LAYERS")


def is_command(module: str) -> bool:
    return module in COMMAND_MODULES or module.rsplit(".", 1)[-1].startswith("cmd_")


def _apart(module: str, target: str) -> bool:
    pair = {module.split(".")[0], target.split(".")[0]}
    return any(pair == set(apart) for apart in APART)


def layer_of(module: str) -> int:
    return len(LAYERS) - 1 if is_command(module) else package_layer(module)


def project_sources(root: Path = REPO) -> dict[str, str]:
    """Module name -> source text of every file of the layered packages."""
    sources = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            sources[".".join(parts)] = path.read_text(encoding="utf-8")
    return sources


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, source: str, known: set[str], packages: set[str]) -> list[tuple[str, int, bool]]:
    """(imported project module, line, inside a function) for each import in ``source``.

    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module (a submodule
    import: the package's ``__init__`` runs first for every submodule, which is not an edge)."""
    tree = ast.parse(source)
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            local = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] in packages:
                        found.append((alias.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, module in packages or f"{module}.__init__" in known, child)
                if target.split(".")[0] not in packages:
                    continue
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub if sub in known else target, child.lineno, in_function))
            visit(child, local)

    visit(tree, False)
    return list(dict.fromkeys(found))


def check(sources: dict[str, str]) -> list[str]:
    """Every upward import, file-level import cycle and function-local project import; one line each."""
    known = set(sources)
    packages = {name.split(".")[0] for name in known}
    problems: list[str] = []
    graph: dict[str, set[str]] = {name: set() for name in known}
    for module, source in sorted(sources.items()):
        for target, line, local in imports_of(module, source, known, packages):
            if target not in known:
                problems.append(f"{module}:{line}: imports {target}, which is no project module")
                continue
            if local:
                problems.append(f"{module}:{line}: imports {target} inside a function; import it at the top of the file")
            if target != module:
                graph[module].add(target)
            if layer_of(target) > layer_of(module):
                problems.append(f"{module}:{line}: imports {target} upward ({LAYERS[layer_of(module)][0]} -> {LAYERS[layer_of(target)][0]})")
            elif not is_command(module) and _apart(module, target):
                problems.append(f"{module}:{line}: imports {target}, but {module.split('.')[0]} and {target.split('.')[0]} stay apart")
    for cycle in cycles(graph):
        problems.append("import cycle: " + " -> ".join(cycle + [cycle[0]]))
    return problems


def misplaced_commands(sources: dict[str, str]) -> list[str]:
    """Every command that imports from a package above its own, one line each: a command may import
    anything, but it lives where nothing it imports runs up (``doctor``, which asks the platform,
    belongs to the invoker's package, not to monitoring's)."""
    known = set(sources)
    packages = {name.split(".")[0] for name in known}
    problems = []
    for module, source in sorted(sources.items()):
        if not is_command(module):
            continue
        for target, line, _ in imports_of(module, source, known, packages):
            if target in known and package_layer(target) > package_layer(module):
                problems.append(f"{module}:{line}: imports {target} from {LAYERS[package_layer(target)][0]}, above its package's layer "
                                f"({LAYERS[package_layer(module)][0]}); move the command to a package of that layer")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


# -- run-directory files: named only in faasprof/rundir ---------------------------------------------

RUN_DIR_PACKAGE = "faasprof.rundir"
RUN_DIR_FILES = ("manifest.json", "invocations.csv", "sends.csv", "plan.bin", "activations.jsonl", "activations.columns.npz")
RUN_DIR_CONSTANTS = ("MANIFEST", "INVOCATIONS", "SENDS", "PLAN", "ACTIVATIONS", "MONITORS")  # faasprof.rundir's names for them
_FILE_NAME = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(name) for name in RUN_DIR_FILES) + r")(?![\w.-])")
# (module, file name) pairs that name a file of the same name that is no run directory's, and why.
NOT_RUN_DIR_FILES = {
    ("functions.catalogue", "manifest.json"): "functions/manifest.json, the function catalogue, not a run directory's manifest",
}


def run_dir_files_named(sources: dict[str, str]) -> list[str]:
    """One line for each place outside ``faasprof.rundir`` that names a run-directory file: a string
    (docstrings aside) holding its name, or one of rundir's constants for it joined into a path
    (``/``, a call's argument, or an f-string between slashes)."""
    problems = []
    for module, source in sorted(sources.items()):
        if module == RUN_DIR_PACKAGE or module.startswith(RUN_DIR_PACKAGE + "."):
            continue
        tree = ast.parse(source)
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        modules, constants = _rundir_bindings(tree)
        named: list[tuple[int, str]] = []

        def is_constant(node: ast.AST) -> bool:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                return node.value.id in modules and node.attr in RUN_DIR_CONSTANTS
            return isinstance(node, ast.Name) and node.id in constants

        for node in ast.walk(tree):
            found = []
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found = [name for name in _FILE_NAME.findall(node.value) if (module, name) not in NOT_RUN_DIR_FILES]
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                found = [ast.unparse(side) for side in (node.left, node.right) if is_constant(side)]
            elif isinstance(node, ast.Call):
                found = [ast.unparse(arg) for arg in (*node.args, *(k.value for k in node.keywords)) if is_constant(arg)]
            elif isinstance(node, ast.JoinedStr):
                parts = node.values
                for k, part in enumerate(parts):
                    if isinstance(part, ast.FormattedValue) and is_constant(part.value):
                        before = parts[k - 1] if k else None
                        after = parts[k + 1] if k + 1 < len(parts) else None
                        if (isinstance(before, ast.Constant) and before.value.endswith("/")) or (isinstance(after, ast.Constant) and after.value.startswith("/")):
                            found.append(ast.unparse(part.value))
            named.extend((node.lineno, name) for name in found)
        problems.extend(f"{module}:{line}: names the run-directory file {name}; reach it through a function of faasprof.rundir" for line, name in sorted(named))
    return problems


def _rundir_bindings(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module binds to ``faasprof.rundir`` (or a module of it) and to its file-name constants."""
    modules, constants = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "faasprof":
            modules.update(alias.asname or alias.name for alias in node.names if alias.name == "rundir")
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module + ".").startswith(RUN_DIR_PACKAGE + "."):
            for alias in node.names:
                if alias.name in RUN_DIR_CONSTANTS:
                    constants.add(alias.asname or alias.name)
                elif node.module == RUN_DIR_PACKAGE:
                    modules.add(alias.asname or alias.name)  # a module of the package (layout, ...)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname for alias in node.names if alias.asname and alias.name.startswith(RUN_DIR_PACKAGE))
    return modules, constants


# -- the project -----------------------------------------------------------------------------------


def test_the_project_keeps_its_layers_without_cycles_or_hidden_imports():
    sources = project_sources()
    assert {"analyzer.analysis", "platforms.openwhisk", "workload.spec", "faasprof.rundir"} <= set(sources)
    assert check(sources) == []


def test_every_command_lives_in_a_package_as_high_as_what_it_imports():
    assert misplaced_commands(project_sources()) == []


def test_tests_and_benchmarks_import_project_modules_at_the_top():
    sources = project_sources()
    known, packages = set(sources), {name.split(".")[0] for name in sources}
    hidden = []
    for folder in ("tests", "bench"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for target, line, local in imports_of(f"{folder}.{path.stem}", path.read_text(encoding="utf-8"), known, packages):
                if local:
                    hidden.append(f"{path.relative_to(REPO)}:{line}: imports {target} inside a function")
    assert hidden == []


def test_only_faasprof_rundir_names_run_directory_files():
    assert run_dir_files_named(project_sources()) == []


def test_every_module_has_a_layer():
    for module in project_sources():
        layer_of(module)


# A module over this many lines is named, with its one job, in ARCHITECTURE.md's "Large modules".
LARGE_MODULE_LINES = 600


def large_modules(root: Path = REPO) -> set[str]:
    """The files of the layered packages over ``LARGE_MODULE_LINES`` lines, as paths from ``root``."""
    return {
        path.relative_to(root).as_posix()
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if len(path.read_text(encoding="utf-8").splitlines()) > LARGE_MODULE_LINES
    }


def listed_large_modules(architecture: str) -> set[str]:
    """The modules of the layered packages that ARCHITECTURE.md's "Large modules" section names."""
    section = architecture.split("### Large modules", 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.M)[0]
    return {path for path in re.findall(r"`([\w/]+\.py)`", section) if path.split("/")[0] in PACKAGES}


def test_every_large_module_is_listed_in_the_architecture_and_nothing_else():
    listed = listed_large_modules((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    large = large_modules()
    unlisted, stale = sorted(large - listed), sorted(listed - large)
    assert not unlisted, f"over {LARGE_MODULE_LINES} lines: {unlisted}; split each, or name it and its one job in ARCHITECTURE.md's Large modules"
    assert not stale, f"no longer over {LARGE_MODULE_LINES} lines: {stale}; drop them from ARCHITECTURE.md's Large modules"


def test_a_large_module_is_found(tmp_path):
    (tmp_path / "monitoring").mkdir()
    (tmp_path / "monitoring" / "big.py").write_text("x = 1\n" * (LARGE_MODULE_LINES + 1))
    (tmp_path / "monitoring" / "small.py").write_text("x = 1\n" * LARGE_MODULE_LINES)
    assert large_modules(tmp_path) == {"monitoring/big.py"}
    section = "### Large modules\n\n`tests/x.py` fails ...\n- `monitoring/big.py`: one job.\n\n## Next\n`invoker/run.py`\n"
    assert listed_large_modules(section) == {"monitoring/big.py"}


BLOCKED_IMPORT = textwrap.dedent("""
    import sys

    BLOCKED = {"invoker", "localwhisk", "aiohttp", "uvloop"}

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]

    import analyzer
    import analyzer.analysis
    import analyzer.compare
    import analyzer.frames
    import analyzer.report
    assert analyzer.load_run is analyzer.analysis.load_run
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    print("analyzer imported")
""")


def test_the_analyzer_imports_without_the_invoker_localwhisk_aiohttp_or_uvloop():
    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "analyzer imported"


def test_the_blocking_finder_does_block():
    script = BLOCKED_IMPORT.replace("import analyzer\n", "import invoker.run\nimport analyzer\n", 1)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "ImportError: invoker is blocked in this test" in done.stderr


# -- the run path: one job per room ---------------------------------------------------------------

# The modules a run goes through, from the command to the send loop.
RUN_PATH = ("experiments.cmd_run", "invoker.cmd_run", "experiments.capacity_store", "experiments.analyzed", "invoker.run",
            "invoker.platform_set", "invoker.scripts", "invoker.dispatch", "invoker.sender", "invoker.shards")
MAX_FUNCTION_LINES = 80
# A function that is a process's own entry point and says its own lines: a send process of
# ``--send-processes`` (``python -m invoker.shards``) prints its warnings to the stderr it shares.
ENTRY_POINTS = {"invoker.shards": "child_main"}


def run_path_problems(sources: dict[str, str], modules: tuple[str, ...] = RUN_PATH) -> list[str]:
    """One line per function longer than ``MAX_FUNCTION_LINES``; per print or ``sys.stderr`` below
    the command layer (lines go to the ``faasprof.progress.Progress`` a command hands down); per
    condition that asks whether anybody listens (``if say:``); per call of another module's
    private method (``dispatcher._fill_not_sent()``)."""
    problems = []
    for module in modules:
        tree = ast.parse(sources[module])
        defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        entry = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == ENTRY_POINTS.get(module)
                 for inner in ast.walk(node)}
        for node in ast.walk(tree):
            where = f"{module}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                problems.append(f"{where}: {node.name} has {node.end_lineno - node.lineno + 1} lines; split it into steps of at most {MAX_FUNCTION_LINES}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" and not is_command(module) and id(node) not in entry:
                problems.append(f"{where}: prints; say it on the Progress the command layer hands down")
            elif isinstance(node, ast.Attribute) and node.attr == "stderr" and ast.unparse(node) == "sys.stderr" and not is_command(module) and id(node) not in entry:
                problems.append(f"{where}: names sys.stderr; only the command layer decides where lines go")
            elif isinstance(node, (ast.If, ast.IfExp, ast.While)) and any(
                    isinstance(part, ast.Name) and part.id in ("say", "progress") or isinstance(part, ast.Attribute) and part.attr in ("say", "progress")
                    for part in ast.walk(node.test)):
                problems.append(f"{where}: asks whether anybody listens ({ast.unparse(node.test)}); a quiet Progress says nothing")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("_")
                  and not node.func.attr.startswith("__") and node.func.attr not in defined
                  and not (isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls"))):
                problems.append(f"{where}: calls {ast.unparse(node.func)}, another module's private method; give it a public one")
    return problems


def test_the_run_path_has_short_functions_one_reporter_and_no_private_calls():
    sources = project_sources()
    assert run_path_problems(sources) == []


def test_the_run_path_check_finds_each_problem():
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = (f"import sys\n\ndef long():\n{long_body}\n"
              "def speak(say, dispatcher):\n    if say:\n        print('hi', file=sys.stderr)\n    dispatcher._fill_not_sent()\n\n"
              "def child_main():\n    print('own line')\n")
    problems = run_path_problems({"invoker.shards": source}, modules=("invoker.shards",))
    found = sorted((int(line.split(":")[1]), line.split(": ", 1)[1].split(" ")[0]) for line in problems)
    assert found == [(3, "long"), (86, "asks"), (87, "names"), (87, "prints;"), (88, "calls")]
    assert any("long has 81 lines" in line for line in problems) and any("dispatcher._fill_not_sent" in line for line in problems)
    # A command prints; a module's own private helpers are its own business.
    assert run_path_problems({"experiments.cmd_run": "def main():\n    print('x')\n\ndef _f():\n    pass\n\nclass A:\n    def g(self, o):\n        o._f()\n"},
                             modules=("experiments.cmd_run",)) == []


# -- the check itself fails on bad graphs ----------------------------------------------------------


def test_an_upward_import_is_found():
    problems = check({"invoker.run": "from analyzer import analyze_run\n", "analyzer": ""})
    assert problems == ["invoker.run:1: imports analyzer, but invoker and analyzer stay apart"]
    problems = check({"analyzer.analysis": "from invoker.client import OpenWhiskClient\n", "invoker.client": ""})
    assert problems == ["analyzer.analysis:1: imports invoker.client, but analyzer and invoker stay apart"]
    problems = check({"workload.spec": "import analyzer.frames\n", "analyzer.frames": ""})
    assert problems == ["workload.spec:1: imports analyzer.frames upward (workload -> invoker and analyzer)"]
    problems = check({"invoker.run": "from experiments import cmd_run\n", "experiments.cmd_run": "", "experiments": ""})
    assert problems == ["invoker.run:1: imports experiments.cmd_run upward (invoker and analyzer -> commands)"]


def test_a_file_cycle_is_found_at_any_depth():
    problems = check({
        "analyzer.frames": "from analyzer.records import RECORD_COLUMNS\n",
        "analyzer.records": "from analyzer import stats\n",
        "analyzer.stats": "import analyzer.frames\n",
        "analyzer": "",
    })
    assert problems == ["import cycle: analyzer.frames -> analyzer.records -> analyzer.stats -> analyzer.frames"]


def test_a_package_importing_its_own_init_back_is_a_cycle():
    problems = check({"analyzer": "from analyzer.analysis import load_run\n", "analyzer.analysis": "import analyzer\n"})
    assert problems == ["import cycle: analyzer -> analyzer.analysis -> analyzer"]


def test_a_function_local_project_import_is_found_and_a_relative_one_resolved():
    source = "import json\n\ndef f():\n    from . import records\n    import pandas\n    return records\n"
    problems = check({"analyzer.frames": source, "analyzer.records": "", "analyzer": ""})
    assert problems == ["analyzer.frames:4: imports analyzer.records inside a function; import it at the top of the file"]


def test_commands_may_import_anything_and_nothing_imports_them():
    assert check({"analyzer.cmd_analyze": "import localwhisk.embedded\nimport experiments.sweep\n", "localwhisk.embedded": "", "experiments.sweep": ""}) == []
    problems = check({"experiments.sweep": "from analyzer import cmd_analyze\n", "analyzer.cmd_analyze": "", "analyzer": ""})
    assert problems == ["experiments.sweep:1: imports analyzer.cmd_analyze upward (experiments -> commands)"]


def test_a_command_importing_from_above_its_package_is_found():
    sources = {"monitoring.cmd_doctor": "from platforms.openwhisk import platform\nfrom monitoring import host\n",
               "platforms.openwhisk.platform": "", "platforms.openwhisk": "", "monitoring.host": "", "monitoring": "",
               "invoker.cmd_doctor": "from platforms.openwhisk import platform\nfrom monitoring import host\n"}
    assert misplaced_commands(sources) == [
        "monitoring.cmd_doctor:1: imports platforms.openwhisk.platform from platforms and localwhisk, above its package's layer "
        "(monitoring); move the command to a package of that layer"]
    assert check(sources) == []  # no rule of the layers is broken: a command may import anything


@pytest.mark.parametrize("module, layer", [
    ("faasprof.rundir", "core"), ("faasprof.cli", "commands"), ("monitoring.collectors", "monitoring"),
    ("invoker.cmd_doctor", "commands"), ("workload.spec", "workload"), ("functions.catalogue", "functions"),
    ("platforms.openwhisk", "platforms and localwhisk"), ("localwhisk.__main__", "commands"),
    ("analyzer.compare", "invoker and analyzer"), ("experiments.cmd_run", "commands"),
])
def test_layer_table(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def test_a_run_directory_file_named_outside_rundir_is_found():
    sources = {
        "analyzer.chains": '''"""Reads activations.jsonl (a docstring may say so)."""
from faasprof import rundir
from faasprof.rundir import INVOCATIONS as ROWS
def f(run_dir):
    """Opens manifest.json."""
    open(run_dir / "activations.jsonl")
    path = run_dir / rundir.PLAN
    Path(run_dir, ROWS).read_text()
    glob(f"*/{rundir.MANIFEST}")
    print(f"saved to {rundir.ACTIVATIONS}")
    return f"see {run_dir}/sends.csv"
''',
        "functions.catalogue": 'MANIFEST_PATH = FUNCTIONS_DIR / "manifest.json"\n',
        "faasprof.rundir.layout": 'MANIFEST = "manifest.json"\n',
    }
    assert run_dir_files_named(sources) == [
        f"analyzer.chains:{line}: names the run-directory file {name}; reach it through a function of faasprof.rundir"
        for line, name in ((6, "activations.jsonl"), (7, "rundir.PLAN"), (8, "ROWS"), (9, "rundir.MANIFEST"), (11, "sends.csv"))
    ]
