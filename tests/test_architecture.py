"""The layers of ARCHITECTURE.md, checked statically: imports go one way, files form no cycle, and
no project module is imported inside a function (where it would dodge both checks).

Every tracked ``.py`` file under ``faasprof/`` (laid out as it is imported: ``faasprof/<part>/`` is
``faasprof.<part>``) is parsed with ``ast`` (nothing is imported). A module may import modules of its
own layer or lower ones; the commands (``faasprof/commands/``, the CLI entry points) are the top
layer, so nothing below imports one. Tests and benchmarks are outside the layers: they may import
anything.

A second check imports the analyzer in a fresh interpreter where ``faasprof.invoker``, ``faasprof.localwhisk``,
``aiohttp`` and ``uvloop`` cannot be imported: the analyzer must work on a laptop that holds only
a finished run directory.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest

from tests.helpers import tracked_files

REPO = Path(__file__).resolve().parent.parent


# The one package and its folder: faasprof/<part>/x.py is faasprof.<part>.x (no package-dir mapping).
FOLDERS = {"faasprof": "faasprof"}
PACKAGES = tuple(FOLDERS)

# Bottom to top. The longest prefix that matches a module names its layer; the commands
# (faasprof/commands/, the entry points) are the top layer.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("faasprof",)),
    ("monitoring", ("faasprof.monitoring",)),
    ("functions", ("faasprof.functions",)),
    ("platforms and localwhisk", ("faasprof.platforms", "faasprof.localwhisk")),
    # The workload model asks each platform the shape of its instances (platforms.registry) and
    # reads the function catalogue, so it sits above both.
    ("workload", ("faasprof.workload",)),
    ("invoker and analyzer", ("faasprof.invoker", "faasprof.analyzer")),
    ("experiments", ("faasprof.experiments",)),
    (
        "commands",
        ("faasprof.commands", "faasprof.cli", "faasprof.entry", "faasprof.__main__", "faasprof.localwhisk.__main__"),
    ),
)
# Packages that share a layer but stay independent of each other, both ways: the analyzer runs
# without the invoker (and the invoker's --analyze is orchestrated above both), and localwhisk is
# reached only as an OpenWhisk, through platforms.openwhisk.
APART = (("faasprof.invoker", "faasprof.analyzer"), ("faasprof.platforms", "faasprof.localwhisk"))


def _prefix(module: str) -> tuple[int, str]:
    """(layer, prefix) of the longest prefix of LAYERS that matches ``module``."""
    matches = [
        (len(prefix), index, prefix)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    if not matches:
        raise KeyError(f"{module}: in no layer; add its package to LAYERS")
    _, index, prefix = max(matches)
    return index, prefix


def layer_of(module: str) -> int:
    return _prefix(module)[0]


def is_command(module: str) -> bool:
    return layer_of(module) == len(LAYERS) - 1


def _apart(module: str, target: str) -> bool:
    pair = {_prefix(module)[1], _prefix(target)[1]}
    return any(pair == set(apart) for apart in APART)


def project_files(root: Path = REPO, suffix: str = ".py") -> dict[str, Path]:
    """Module name -> path of every tracked ``suffix`` file of the namespace's folders."""
    folders = FOLDERS
    found = {}
    for path in tracked_files(root):
        if path.suffix != suffix:
            continue
        relative = path.relative_to(root)
        for package, folder in sorted(folders.items(), key=lambda item: -len(item[1])):
            if relative.parts[: len(Path(folder).parts)] == Path(folder).parts:
                parts = relative.with_suffix("").parts[len(Path(folder).parts) :]
                if parts and parts[-1] == "__init__":
                    parts = parts[:-1]
                found.setdefault(".".join((package, *parts)), path)
                break
    return found


def project_sources(root: Path = REPO) -> dict[str, str]:
    """Module name -> source text of every file of the layered packages."""
    return {name: path.read_text(encoding="utf-8") for name, path in project_files(root).items()}


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
                problems.append(
                    f"{module}:{line}: imports {target} inside a function; import it at the top of the file"
                )
            if target != module:
                graph[module].add(target)
            if layer_of(target) > layer_of(module):
                problems.append(
                    f"{module}:{line}: imports {target} upward ({LAYERS[layer_of(module)][0]} -> {LAYERS[layer_of(target)][0]})"
                )
            elif not is_command(module) and _apart(module, target):
                problems.append(
                    f"{module}:{line}: imports {target}, but {_prefix(module)[1]} and {_prefix(target)[1]} stay apart"
                )
    for cycle in cycles(graph):
        problems.append("import cycle: " + " -> ".join(cycle + [cycle[0]]))
    return problems


def misplaced_commands(sources: dict[str, str]) -> list[str]:
    """Every command module outside the one room, one line each: a subcommand is
    ``faasprof/commands/<name>.py`` (``faasprof/cli.py`` reads their table); no ``cmd_*.py`` elsewhere."""
    return [
        f"{module}: a command module outside faasprof/commands; move it there and name it in faasprof/cli.py's COMMANDS"
        for module in sorted(sources)
        if module.rsplit(".", 1)[-1].startswith("cmd_")
    ]


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
RUN_DIR_FILES = (
    "manifest.json",
    "invocations.csv",
    "sends.csv",
    "plan.bin",
    "activations.jsonl",
    "activations.columns.npz",
    "host.json",
)
RUN_DIR_CONSTANTS = (
    "MANIFEST",
    "INVOCATIONS",
    "SENDS",
    "PLAN",
    "ACTIVATIONS",
    "MONITORS",
    "HOST_JSON",
)  # faasprof.rundir's names for them
_FILE_NAME = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(name) for name in RUN_DIR_FILES) + r")(?![\w.-])")
# (module, file name) pairs that name a file of the same name that is no run directory's, and why.
NOT_RUN_DIR_FILES = {
    (
        "faasprof.functions.catalogue",
        "manifest.json",
    ): "functions/manifest.json, the function catalogue, not a run directory's manifest",
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
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        modules, constants = _rundir_bindings(tree)
        named: list[tuple[int, str]] = []

        def is_constant(node: ast.AST, modules: set[str] = modules, constants: set[str] = constants) -> bool:
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
                found = [
                    ast.unparse(arg) for arg in (*node.args, *(k.value for k in node.keywords)) if is_constant(arg)
                ]
            elif isinstance(node, ast.JoinedStr):
                parts = node.values
                for k, part in enumerate(parts):
                    if isinstance(part, ast.FormattedValue) and is_constant(part.value):
                        before = parts[k - 1] if k else None
                        after = parts[k + 1] if k + 1 < len(parts) else None
                        if (isinstance(before, ast.Constant) and before.value.endswith("/")) or (
                            isinstance(after, ast.Constant) and after.value.startswith("/")
                        ):
                            found.append(ast.unparse(part.value))
            named.extend((node.lineno, name) for name in found)
        problems.extend(
            f"{module}:{line}: names the run-directory file {name}; reach it through a function of faasprof.rundir"
            for line, name in sorted(named)
        )
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
            modules.update(
                alias.asname for alias in node.names if alias.asname and alias.name.startswith(RUN_DIR_PACKAGE)
            )
    return modules, constants


# -- the project -----------------------------------------------------------------------------------


def test_the_project_keeps_its_layers_without_cycles_or_hidden_imports():
    sources = project_sources()
    assert {
        "faasprof.analyzer.analysis",
        "faasprof.platforms.openwhisk",
        "faasprof.workload.spec",
        "faasprof.rundir",
    } <= set(sources)
    assert check(sources) == []


def test_every_command_lives_in_the_commands_room_and_the_cli_table_names_each():
    assert misplaced_commands(project_sources()) == []
    rooms = {
        path.stem
        for path in tracked_files(REPO / "faasprof" / "commands")
        if path.suffix == ".py" and path.stem != "__init__"
    }
    table = re.findall(r'^    "([a-z]+)": "', (REPO / "faasprof" / "cli.py").read_text(encoding="utf-8"), flags=re.M)
    assert sorted(table) == sorted(rooms)


def test_every_folder_of_code_is_a_package():
    """The wheel takes the packages setuptools finds (folders with an ``__init__.py``): a folder of
    modules without one would be missing from it while a checkout still imports it. The catalogue's
    function sources are package data, not packages (``faasprof.functions``' ``*/*``)."""
    functions = REPO / "faasprof" / "functions"
    folders = {path.parent for path in project_files().values()}
    missing = sorted(
        folder.relative_to(REPO).as_posix()
        for folder in folders
        if not (folder / "__init__.py").exists() and folder.parent != functions
    )
    assert missing == []
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    mappings = re.findall(r"^package-dir = (.*)$", text, flags=re.M)
    assert mappings == ['{"" = "."}'], "no folder is mapped: the root is the only entry"


def test_tests_and_benchmarks_import_project_modules_at_the_top():
    sources = project_sources()
    known, packages = set(sources), {name.split(".")[0] for name in sources}
    hidden = []
    for folder in ("tests", "bench"):
        for path in (
            path for path in tracked_files() if path.suffix == ".py" and path.relative_to(REPO).parts[0] == folder
        ):
            for target, line, local in imports_of(
                f"{folder}.{path.stem}", path.read_text(encoding="utf-8"), known, packages
            ):
                if local:
                    hidden.append(f"{path.relative_to(REPO)}:{line}: imports {target} inside a function")
    assert hidden == []


@pytest.mark.slow
def test_only_faasprof_rundir_names_run_directory_files():
    assert run_dir_files_named(project_sources()) == []


def test_every_module_has_a_layer():
    for module in project_sources():
        layer_of(module)


# A module over this many lines is named, with its one job, in ARCHITECTURE.md's "Large modules".
# In code lines (``code_lines``), which a formatter or a line length does not change: 480 of them
# are about 600 lines of this code as written before ``ruff format`` (which adds a sixth).
LARGE_MODULE_LINES = 480


def code_lines(source: str) -> int:
    """The lines that start a statement, hold a comment of their own, or continue a string
    (docstrings): blank lines and the continuation lines of a wrapped statement do not count."""
    counted: set[int] = set()
    at_statement_start = True
    for token in tokenize.generate_tokens(iter(source.splitlines(keepends=True)).__next__):
        if token.type == tokenize.NEWLINE:
            at_statement_start = True
        elif token.type == tokenize.COMMENT:
            if token.line.lstrip().startswith("#"):
                counted.add(token.start[0])
        elif token.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            if at_statement_start:
                counted.add(token.start[0])
                at_statement_start = False
            if token.type == tokenize.STRING:
                counted.update(range(token.start[0] + 1, token.end[0] + 1))
    return len(counted)


def large_modules(root: Path = REPO) -> set[str]:
    """The files of the layered packages over ``LARGE_MODULE_LINES`` code lines, as paths from ``root``."""
    return {
        path.relative_to(root).as_posix()
        for path in project_files(root).values()
        if code_lines(path.read_text(encoding="utf-8")) > LARGE_MODULE_LINES
    }


def listed_large_modules(architecture: str) -> set[str]:
    """The modules of the layered packages that ARCHITECTURE.md's "Large modules" section names."""
    section = architecture.split("### Large modules", 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.M)[0]
    return {path for path in re.findall(r"`([\w/]+\.py)`", section) if path.split("/")[0] in set(FOLDERS.values())}


def test_every_large_module_is_listed_in_the_architecture_and_nothing_else():
    listed = listed_large_modules((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    large = large_modules()
    unlisted, stale = sorted(large - listed), sorted(listed - large)
    assert not unlisted, (
        f"over {LARGE_MODULE_LINES} code lines: {unlisted}; split each, or name it and its one job in ARCHITECTURE.md's Large modules"
    )
    assert not stale, (
        f"no longer over {LARGE_MODULE_LINES} code lines: {stale}; drop them from ARCHITECTURE.md's Large modules"
    )


def test_a_large_module_is_found(tmp_path):
    (tmp_path / "faasprof" / "monitoring").mkdir(parents=True)
    (tmp_path / "faasprof" / "monitoring" / "big.py").write_text("x = 1\n" * (LARGE_MODULE_LINES + 1))
    (tmp_path / "faasprof" / "monitoring" / "small.py").write_text("x = 1\n" * LARGE_MODULE_LINES)
    assert large_modules(tmp_path) == {"faasprof/monitoring/big.py"}
    section = "### Large modules\n\n`tests/x.py` fails ...\n- `faasprof/monitoring/big.py`: one job.\n\n## Next\n`faasprof/invoker/run.py`\n"
    assert listed_large_modules(section) == {"faasprof/monitoring/big.py"}


def test_code_lines_do_not_change_when_a_formatter_wraps_a_statement():
    dense = 'def f(a, b):\n    """Two\n    lines."""\n\n    # why\n    return g(a, b, key="v")  # what\n'
    wrapped = 'def f(\n    a,\n    b,\n):\n    """Two\n    lines."""\n\n\n    # why\n    return g(\n        a,\n        b,\n        key="v",\n    )  # what\n'
    assert code_lines(dense) == code_lines(wrapped) == 5


BLOCKED_IMPORT = textwrap.dedent("""
    import sys

    BLOCKED = {"faasprof.invoker", "faasprof.localwhisk", "aiohttp", "uvloop"}

    def blocked(name):
        return any(name == b or name.startswith(b + ".") for b in BLOCKED)

    class Block:
        def find_spec(self, name, path=None, target=None):
            if blocked(name):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    for name in list(sys.modules):
        if blocked(name):
            del sys.modules[name]

    import faasprof
    import faasprof.analyzer
    import faasprof.analyzer.analysis
    import faasprof.analyzer.compare
    import faasprof.analyzer.frames
    import faasprof.analyzer.report
    assert faasprof.analyzer.load_run is faasprof.analyzer.analysis.load_run
    assert faasprof.load_run is faasprof.analyzer.analysis.load_run
    loaded = sorted(name for name in sys.modules if blocked(name))
    assert not loaded, loaded
    print("analyzer imported")
""")


@pytest.mark.slow
def test_the_analyzer_imports_without_the_invoker_localwhisk_aiohttp_or_uvloop():
    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "analyzer imported"


def test_the_blocking_finder_does_block():
    script = BLOCKED_IMPORT.replace(
        "import faasprof.analyzer\n", "import faasprof.invoker.run\nimport faasprof.analyzer\n", 1
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "ImportError: faasprof.invoker is blocked in this test" in done.stderr


# -- the run path: one job per room ---------------------------------------------------------------

# The modules a run goes through, from the command to the send loop.
RUN_PATH = (
    "faasprof.commands.run",
    "faasprof.experiments.capacity_store",
    "faasprof.experiments.analyzed",
    "faasprof.invoker.run",
    "faasprof.invoker.run_collectors",
    "faasprof.invoker.send_loop",
    "faasprof.invoker.platform_set",
    "faasprof.invoker.scripts",
    "faasprof.invoker.dispatch",
    "faasprof.invoker.sender",
    "faasprof.invoker.shards",
)
MAX_FUNCTION_LINES = 80
# A function that is a process's own entry point and says its own lines: a send process of
# ``--send-processes`` (``python -m faasprof.invoker.shards``) prints its warnings to the stderr it shares.
ENTRY_POINTS = {"faasprof.invoker.shards": "child_main"}


def run_path_problems(sources: dict[str, str], modules: tuple[str, ...] = RUN_PATH) -> list[str]:
    """One line per function longer than ``MAX_FUNCTION_LINES``; per print or ``sys.stderr`` below
    the command layer (lines go to the ``faasprof.progress.Progress`` a command hands down); per
    condition that asks whether anybody listens (``if say:``); per call of another module's
    private method (``dispatcher._fill_not_sent()``)."""
    problems = []
    for module in modules:
        tree = ast.parse(sources[module])
        defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        entry = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == ENTRY_POINTS.get(module)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            where = f"{module}:{getattr(node, 'lineno', 0)}"
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
            ):
                problems.append(
                    f"{where}: {node.name} has {node.end_lineno - node.lineno + 1} lines; split it into steps of at most {MAX_FUNCTION_LINES}"
                )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
                and not is_command(module)
                and id(node) not in entry
            ):
                problems.append(f"{where}: prints; say it on the Progress the command layer hands down")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "stderr"
                and ast.unparse(node) == "sys.stderr"
                and not is_command(module)
                and id(node) not in entry
            ):
                problems.append(f"{where}: names sys.stderr; only the command layer decides where lines go")
            elif isinstance(node, (ast.If, ast.IfExp, ast.While)) and any(
                isinstance(part, ast.Name)
                and part.id in ("say", "progress")
                or isinstance(part, ast.Attribute)
                and part.attr in ("say", "progress")
                for part in ast.walk(node.test)
            ):
                problems.append(
                    f"{where}: asks whether anybody listens ({ast.unparse(node.test)}); a quiet Progress says nothing"
                )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith("_")
                and not node.func.attr.startswith("__")
                and node.func.attr not in defined
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls"))
            ):
                problems.append(
                    f"{where}: calls {ast.unparse(node.func)}, another module's private method; give it a public one"
                )
    return problems


def test_the_run_path_has_short_functions_one_reporter_and_no_private_calls():
    sources = project_sources()
    assert run_path_problems(sources) == []


def test_the_run_path_check_finds_each_problem():
    long_body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = (
        f"import sys\n\ndef long():\n{long_body}\n"
        "def speak(say, dispatcher):\n    if say:\n        print('hi', file=sys.stderr)\n    dispatcher._fill_not_sent()\n\n"
        "def child_main():\n    print('own line')\n"
    )
    problems = run_path_problems({"faasprof.invoker.shards": source}, modules=("faasprof.invoker.shards",))
    found = sorted((int(line.split(":")[1]), line.split(": ", 1)[1].split(" ")[0]) for line in problems)
    assert found == [(3, "long"), (86, "asks"), (87, "names"), (87, "prints;"), (88, "calls")]
    assert any("long has 81 lines" in line for line in problems) and any(
        "dispatcher._fill_not_sent" in line for line in problems
    )
    # A command prints; a module's own private helpers are its own business.
    assert (
        run_path_problems(
            {
                "faasprof.commands.run": "def main():\n    print('x')\n\ndef _f():\n    pass\n\nclass A:\n    def g(self, o):\n        o._f()\n"
            },
            modules=("faasprof.commands.run",),
        )
        == []
    )


# -- the check itself fails on bad graphs ----------------------------------------------------------


def test_an_upward_import_is_found():
    problems = check({"faasprof.invoker.run": "from faasprof.analyzer import analyze_run\n", "faasprof.analyzer": ""})
    assert problems == [
        "faasprof.invoker.run:1: imports faasprof.analyzer, but faasprof.invoker and faasprof.analyzer stay apart"
    ]
    problems = check(
        {
            "faasprof.analyzer.analysis": "from faasprof.invoker.client import OpenWhiskClient\n",
            "faasprof.invoker.client": "",
        }
    )
    assert problems == [
        "faasprof.analyzer.analysis:1: imports faasprof.invoker.client, but faasprof.analyzer and faasprof.invoker stay apart"
    ]
    problems = check({"faasprof.workload.spec": "import faasprof.analyzer.frames\n", "faasprof.analyzer.frames": ""})
    assert problems == [
        "faasprof.workload.spec:1: imports faasprof.analyzer.frames upward (workload -> invoker and analyzer)"
    ]
    problems = check(
        {
            "faasprof.invoker.run": "from faasprof.commands import run\n",
            "faasprof.commands.run": "",
            "faasprof.commands": "",
        }
    )
    assert problems == [
        "faasprof.invoker.run:1: imports faasprof.commands.run upward (invoker and analyzer -> commands)"
    ]


def test_a_file_cycle_is_found_at_any_depth():
    problems = check(
        {
            "faasprof.analyzer.frames": "from faasprof.analyzer.records import RECORD_COLUMNS\n",
            "faasprof.analyzer.records": "from faasprof.analyzer import stats\n",
            "faasprof.analyzer.stats": "import faasprof.analyzer.frames\n",
            "faasprof.analyzer": "",
        }
    )
    assert problems == [
        "import cycle: faasprof.analyzer.frames -> faasprof.analyzer.records -> faasprof.analyzer.stats -> faasprof.analyzer.frames"
    ]


def test_a_package_importing_its_own_init_back_is_a_cycle():
    problems = check(
        {
            "faasprof.analyzer": "from faasprof.analyzer.analysis import load_run\n",
            "faasprof.analyzer.analysis": "import faasprof.analyzer\n",
        }
    )
    assert problems == ["import cycle: faasprof.analyzer -> faasprof.analyzer.analysis -> faasprof.analyzer"]


def test_a_function_local_project_import_is_found_and_a_relative_one_resolved():
    source = "import json\n\ndef f():\n    from . import records\n    import pandas\n    return records\n"
    problems = check({"faasprof.analyzer.frames": source, "faasprof.analyzer.records": "", "faasprof.analyzer": ""})
    assert problems == [
        "faasprof.analyzer.frames:4: imports faasprof.analyzer.records inside a function; import it at the top of the file"
    ]


def test_commands_may_import_anything_and_nothing_imports_them():
    assert (
        check(
            {
                "faasprof.commands.analyze": "import faasprof.localwhisk.embedded\nimport faasprof.experiments.sweep\n",
                "faasprof.localwhisk.embedded": "",
                "faasprof.experiments.sweep": "",
            }
        )
        == []
    )
    problems = check(
        {
            "faasprof.experiments.sweep": "from faasprof.commands import analyze\n",
            "faasprof.commands.analyze": "",
            "faasprof.commands": "",
        }
    )
    assert problems == [
        "faasprof.experiments.sweep:1: imports faasprof.commands.analyze upward (experiments -> commands)"
    ]


def test_a_command_outside_the_commands_room_is_found():
    sources = {
        "faasprof.monitoring.cmd_doctor": "from faasprof.monitoring import host\n",
        "faasprof.monitoring.host": "",
        "faasprof.commands.doctor": "from faasprof.platforms.openwhisk import platform\n",
    }
    assert misplaced_commands(sources) == [
        "faasprof.monitoring.cmd_doctor: a command module outside faasprof/commands; move it there and name it in faasprof/cli.py's COMMANDS"
    ]


@pytest.mark.parametrize(
    "module, layer",
    [
        ("faasprof.rundir", "core"),
        ("faasprof.cli", "commands"),
        ("faasprof.monitoring.collectors", "monitoring"),
        ("faasprof.commands.doctor", "commands"),
        ("faasprof.workload.spec", "workload"),
        ("faasprof.functions.catalogue", "functions"),
        ("faasprof.platforms.openwhisk", "platforms and localwhisk"),
        ("faasprof.localwhisk.__main__", "commands"),
        ("faasprof.analyzer.compare", "invoker and analyzer"),
        ("faasprof.commands.run", "commands"),
        ("faasprof", "core"),
    ],
)
def test_layer_table(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def test_a_run_directory_file_named_outside_rundir_is_found():
    sources = {
        "faasprof.analyzer.chains": '''"""Reads activations.jsonl (a docstring may say so)."""
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
        "faasprof.functions.catalogue": 'MANIFEST_PATH = FUNCTIONS_DIR / "manifest.json"\n',
        "faasprof.rundir.layout": 'MANIFEST = "manifest.json"\n',
    }
    assert run_dir_files_named(sources) == [
        f"faasprof.analyzer.chains:{line}: names the run-directory file {name}; reach it through a function of faasprof.rundir"
        for line, name in (
            (6, "activations.jsonl"),
            (7, "rundir.PLAN"),
            (8, "ROWS"),
            (9, "rundir.MANIFEST"),
            (11, "sends.csv"),
        )
    ]


def test_test_helpers_come_from_their_own_module_not_conftest():
    """conftest.py holds fixtures and hooks; what tests import lives in tests/helpers.py (issue 42)."""
    importing = [
        f"{path.relative_to(REPO)}:{number}"
        for path in tracked_files(REPO / "tests")
        if path.suffix == ".py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s*from (tests\.)?conftest import ", line)
    ]
    assert importing == [], "import test helpers from tests.helpers"


def test_the_run_command_loads_no_scipy_stats():
    """scipy.stats costs a second or more to import: `faasprof run` (which imports the analyzer for
    --analyze) must not pay it; only the analyses that test with it import it."""
    code = "import sys, faasprof.commands.run; print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
