"""`harness --help`, `--version` and usage errors take the short way (no stage, no
harness.values.types, no dataclasses; `--version` builds no parser) and print exactly what plain
argparse prints."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import commands

from harness import __version__
from harness.cli import parser as cli_parser

HARNESS = [sys.executable, "-m", "harness.cli.main"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A harness cache of the test's own: what a run another test killed left in the test
    process's cache would be recovered first, importing the stages these tests keep out."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "harness-cache"))


def _env() -> dict[str, str]:
    """The test process's environment when called (`_own_cache`'s), 100 columns wide."""
    return {**os.environ, "COLUMNS": "100"}


def _plain_argparse_help(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every command's help as argparse's own formatter (asking the terminal each time) lays
    it out."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(
        cli_parser._Parser, "_get_formatter", argparse.ArgumentParser._get_formatter
    )
    return {name: p.format_help() for name, p in commands()}


def test_every_command_help_is_what_plain_argparse_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _plain_argparse_help(monkeypatch)
    assert len(expected) > 10
    for name, text in expected.items():
        found = subprocess.run(
            [*HARNESS, *name.split(), "--help"], capture_output=True, text=True, env=_env()
        )
        assert (found.returncode, found.stderr) == (0, ""), name
        assert found.stdout == text, name


def test_version_is_what_the_argparse_action_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exited:
        cli_parser.build_parser().parse_args(["--version"])
    assert exited.value.code == 0
    expected = capsys.readouterr().out
    assert expected == f"harness {__version__}\n"
    found = subprocess.run([*HARNESS, "--version"], capture_output=True, text=True, env=_env())
    assert (found.returncode, found.stdout, found.stderr) == (0, expected, "")
    # Anything beside --version goes through argparse, as before.
    beside = subprocess.run(
        [*HARNESS, "--version", "compare"], capture_output=True, text=True, env=_env()
    )
    assert (beside.returncode, beside.stdout) == (0, expected)


def test_a_usage_error_still_names_the_option_and_exits_2() -> None:
    found = subprocess.run([*HARNESS, "compare"], capture_output=True, text=True, env=_env())
    assert found.returncode == 2 and found.stdout == ""
    assert found.stderr.endswith(
        "harness: error: compare needs --baseline and --candidate (or --demo, or the two --*-url)\n"
    )
    found = subprocess.run([*HARNESS, "nonsense"], capture_output=True, text=True, env=_env())
    assert found.returncode == 2 and "invalid choice: 'nonsense'" in found.stderr


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["compare", "--help"], ["compare"]])
def test_help_version_and_usage_errors_load_no_stage(argv: list[str], tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from harness.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('harness') or m in "
        "('dataclasses', 'typing', 'tempfile', 'inspect'))), file=sys.__stderr__)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=tmp_path
    )
    loaded = set(json.loads(found.stderr.splitlines()[-1]))
    cli = {"harness", "harness.cli", "harness.cli.exits", "harness.cli.main", "harness.cli.parser"}
    if argv[0] == "compare":  # the one command's module, and the options it shares: no stage
        cli |= {"harness.cli.compare", "harness.cli.options", "harness.cli.load_options"}
    if argv == ["compare"]:  # the message is clipped by harness.errors, as every message is
        assert loaded - {"dataclasses", "typing", "inspect"} == cli | {"harness.errors"}
    else:
        assert loaded == cli


def test_progress_off_a_terminal_loads_no_rich() -> None:
    code = (
        "import io, sys\n"
        "from harness.cli.progress import Progress\n"
        "p = Progress(io.StringIO())\n"
        "p.phase('boot', 'main')\n"
        "p.close()\n"
        "print('rich' in sys.modules)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert (found.returncode, found.stdout) == (0, "False\n"), found.stderr


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nonsense"],
        ["compare"],
        ["compare", "--bogus"],
        ["gold"],
        ["gold", "nonsense"],
        ["gold", "check", "--bogus"],
        ["metrics", "--k", "x"],
        ["-h", "compare"],
        ["--version", "compare"],
    ],
)
def test_building_only_the_command_given_parses_as_the_whole_tree(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")

    def outcome(parse: object) -> tuple[object, str, str]:
        try:
            result: object = vars(parse())  # type: ignore[operator]
        except SystemExit as exited:
            result = exited.code
        found = capsys.readouterr()
        return result, found.out, found.err

    def whole_tree() -> argparse.Namespace:
        parser = cli_parser.build_parser()
        args = parser.parse_args(argv)
        if args.command == "compare":
            from harness.cli.compare import check_sides

            check_sides(parser, args)
        return args

    whole = outcome(whole_tree)
    assert outcome(lambda: cli_parser.parse_args(argv)) == whole


_BLAS_PROBE = """
import os, sys
from harness.cli.main import _import_numpy
_import_numpy()
import numpy
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize(("chosen", "expected"), [(None, "1 None"), ("2", "2")])
def test_numpy_loads_with_blas_on_one_thread_and_the_variable_never_reaches_a_child(
    chosen: str | None, expected: str
) -> None:
    """OpenBLAS's threads spin when numpy loads; the harness loads it with one, removes the
    variable again (a build or service it starts never sees it), and leaves a user's own."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    import numpy as np

    if "openblas" not in json.dumps(np.show_config(mode="dicts")).lower():
        pytest.skip("this numpy is not built on OpenBLAS")
    done = subprocess.run(
        [sys.executable, "-c", _BLAS_PROBE], env=env, capture_output=True, text=True, check=True
    )
    threads, variable = done.stdout.split()
    # One thread, the variable gone again; or the user's variable as it was (threads: theirs).
    assert (variable if chosen else f"{threads} {variable}") == expected


# Per command: does importing its stages import numpy?  In one interpreter that forgets every
# harness module between commands, where an import of numpy raises at once (so the answer costs
# no numpy, scipy or pandas import); a BaseException, so no `except ImportError` swallows it.
_WANTS_NUMPY = """
import importlib, json, sys

class WantsNumpy(BaseException):
    pass

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise WantsNumpy(name)
        return None

sys.meta_path.insert(0, Block())
found = {}
for command, modules in json.loads(sys.argv[1]).items():
    for name in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[name]
    try:
        for module in modules:
            importlib.import_module(module)
        found[command] = "numpy" in sys.modules
    except WantsNumpy:
        found[command] = True
print(json.dumps(found))
"""


def test_numpy_is_imported_up_front_only_for_the_commands_that_import_it_anyway() -> None:
    """main() loads numpy itself (with OpenBLAS on one thread) unless the command is in
    WITHOUT_NUMPY: each command's own stage imports say which ones those are."""
    import ast
    import importlib

    from harness.cli import main as cli_main

    names = [name for name, parser in commands() if name and not _has_subcommands(parser)]
    assert "compare" in names and "gold convert" in names and "gold" not in names
    imports = {}
    for name in names:
        run = cli_main.command(name)
        module = importlib.import_module(run.__module__)
        functions = {
            node.name: node
            for node in ast.parse(Path(module.__file__ or "").read_text()).body
            if isinstance(node, ast.FunctionDef)
        }
        imports[name] = sorted(
            {
                node.module
                for node in ast.walk(functions[run.__name__])
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness")
            }
        )
    done = subprocess.run(
        [sys.executable, "-c", _WANTS_NUMPY, json.dumps(imports)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wants = json.loads(done.stdout)
    assert {name for name in imports if not wants[name]} == cli_main.WITHOUT_NUMPY
    # The check sees numpy: a command known to score (numpy arrays) wants it.
    assert wants["compare"]


def _has_subcommands(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


# Each command that runs a ref, on a config it refuses (a missing file): the error, exit 2,
# and none of the stages that measure, decide or report imported to say it.
REFUSED = {
    "compare": ["compare", "--baseline", "a", "--candidate", "b"],
    "run": ["run", "--ref", "a"],
    "gate": ["gate", "--ref", "a", "--baseline-file", "b.json", "--update-baseline"],
    "sweep": ["sweep", "--ref", "a", "--param", "K=1,2"],
    "matrix": ["matrix", "--ref", "a", "--matrix", "m.toml"],
}
MEASURING = (
    "harness.driver",
    "harness.boot",
    "harness.checkout",
    "harness.replay",
    "harness.report",
    "harness.verdict.decide",
    "harness.compare.analysis",
)


@pytest.mark.parametrize("command", list(REFUSED))
def test_a_refused_config_is_said_before_any_stage_that_measures_is_imported(
    command: str, tmp_path: Path
) -> None:
    (tmp_path / "m.toml").write_text('[config.a]\nenv = {K = "1"}\n[config.b]\nenv = {K = "2"}\n')
    argv = [*REFUSED[command], "--config", str(tmp_path / "missing.toml"), "-q"]
    code = (
        "import json, sys\n"
        "from harness.cli.main import main\n"
        f"status = main({argv!r})\n"
        "print(json.dumps([status, sorted(m for m in sys.modules if m.startswith('harness'))]),"
        " file=sys.__stderr__)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=tmp_path
    )
    *said, last = found.stderr.splitlines()
    status, loaded = json.loads(last)
    assert status == 2 and "Traceback" not in found.stderr, found.stderr
    assert said[0].startswith("harness: error: ") and "missing.toml: no such config" in said[0]
    assert not [m for m in loaded if m.startswith(MEASURING)], loaded
