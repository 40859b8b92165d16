"""Every snippet of the user's documentation works as written: README.md and each page of docs/.

- every ```toml block is read by the real configuration loader (`load_config`; a fragment is
  completed with the required keys it leaves out, a matrix file by `read_matrix`): an unknown
  key, a bad value or a bad placeholder fails here as it would for a user;
- every `harness ...` and `compare ...` command of a ```sh block is parsed by the real command
  line parser (`build_parser`): an option that does not exist, or a bad value, fails here;
  `pip install` names only extras pyproject.toml has, `python scripts/X.py` only scripts (and
  options) that exist, `python -m M` only importable modules, `pytest -m` only known markers;
- README.md stays a front door (at most 25,000 characters) and links only pages that exist;
  every page of docs/ is in mkdocs.yml's nav, and `mkdocs build --strict` passes when MkDocs
  (the docs extra) is installed.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_pages import PAGES, README, ROOT, Block, blocks

from harness.cli.parser import build_parser
from harness.config import load_config
from harness.matrix.spec import read_matrix

# The keys every harness.toml must set, as a fragment would leave them out (TOML text: a value
# is written as the file would write it).
REQUIRED = {
    "service": {"start": '"python3 svc.py --port {port}"', "ready": '"/health"'},
    "query": {"path": '"/search"', "ids": '"results[].id"'},
    "gold": {"path": '"gold/gold.jsonl"'},
}
# A block that is a fixture's harness.toml is read beside the files it names.
FIXTURES = [
    ROOT / "tests" / "fixtures" / "moving_api" / "user_tree",
    *sorted(p for p in (ROOT / "tests" / "fixtures" / "recipes").iterdir() if p.is_dir()),
]
# Commands a shell block may run besides harness's own, checked below or harmless as written.
SHELL = {"python3", "python", ".", "cd", "pip", "pytest", "scripts/check", "mkdocs", "twine"}


def completed(text: str) -> str:
    """`text` with each required key it lacks added (in its table, or in a new table)."""
    doc = tomllib.loads(text)
    for table, keys in REQUIRED.items():
        have = doc.get(table)
        missing = {k: v for k, v in keys.items() if not isinstance(have, dict) or k not in have}
        if not missing:
            continue
        lines = "".join(f"{key} = {value}\n" for key, value in missing.items())
        if isinstance(have, dict):
            header = re.compile(rf"^\[{table}\][^\n]*\n", re.M)
            text = header.sub(lambda m, add=lines: m.group(0) + add, text, count=1)
        else:
            text += f"\n[{table}]\n{lines}"
    return text


def toml_blocks() -> list[Block]:
    found = blocks("toml")
    assert len(found) >= 20, "the documentation shows its configurations as ```toml blocks"
    return found


@pytest.mark.parametrize("block", toml_blocks(), ids=lambda b: b.where)
def test_every_toml_snippet_is_read_by_the_real_loader(block: Block, tmp_path: Path) -> None:
    doc = tomllib.loads(block.text)  # a TOML error fails here first, naming the block
    if "config" in doc or "constraint" in doc:  # an ablation matrix file, not a harness.toml
        path = tmp_path / "ablation.toml"
        path.write_text(block.text, encoding="utf-8")
        assert read_matrix(path).entries, block.where
        return
    home = next(
        (f for f in FIXTURES if (f / "harness.toml").read_text(encoding="utf-8") == block.text),
        None,
    )
    if home is not None:  # its hooks and tools must be beside it
        shutil.copytree(home, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__py*"))
    path = tmp_path / "harness.toml"
    path.write_text(completed(block.text), encoding="utf-8")
    load_config(path, repo=tmp_path)  # raises ConfigError naming file:line: field


def commands(text: str) -> Iterator[list[str]]:
    """The simple commands of a shell snippet: continuations joined, comments dropped, split at
    `&&`, `||`, `|` and `;`, and each cut at its first redirection."""
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        redirected = False
        for word in [*lexer, ";"]:
            if word in ("&&", "||", "|", ";"):
                if command:
                    yield command
                command, redirected = [], False
            elif word in (">", ">>", "<", "2>", "&>"):
                redirected = True
            elif not redirected:
                command.append(word)


def shell_commands() -> list[tuple[str, list[str]]]:
    found = [(block.where, command) for block in blocks("sh") for command in commands(block.text)]
    assert len(found) >= 40, "the documentation shows its commands as ```sh blocks"
    return found


def _extras() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(pyproject["project"]["optional-dependencies"])


def _extra_packages() -> set[str]:
    """The distributions the extras install (a module run by name from one of them is known)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    specs = [s for extra in pyproject["project"]["optional-dependencies"].values() for s in extra]
    return {re.split(r"[<>=\[ ;]", spec, maxsplit=1)[0].lower() for spec in specs}


def _markers() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}


def check_command(command: list[str]) -> str | None:
    """Why `command` would not work as written, or None."""
    head, args = command[0], command[1:]
    if head in ("harness", "compare"):
        argv = args if head == "harness" else ["compare", *args]
        try:
            build_parser().parse_args(argv)
        except SystemExit as stop:  # argparse's usage error (it printed why on stderr)
            return f"the parser refuses it (exit {stop.code})"
        return None
    if head not in SHELL:
        return f"{head!r} is not a command this test knows how to check"
    if head == "pip" and args[:1] == ["install"]:
        for spec in args[1:]:
            extras = re.fullmatch(r"\.\[([\w,-]+)\]", spec)
            unknown = set(extras.group(1).split(",")) - _extras() if extras else set()
            if unknown:
                return f"pyproject.toml has no extra {', '.join(sorted(unknown))}"
    if head == "twine" and "twine" not in _extra_packages():
        return "no extra of pyproject.toml installs twine"
    if head in ("python", "python3") and args[:1] == ["-m"]:
        known = importlib.util.find_spec(args[1]) is not None or args[1] == "venv"
        if not known and args[1] not in _extra_packages():  # e.g. build, from the dev extra
            return f"no module {args[1]}"
    elif head in ("python", "python3") and args:
        script = ROOT / args[0]
        if not script.is_file():
            return f"no script {args[0]}"
        source = script.read_text(encoding="utf-8")
        missing = [a for a in args[1:] if a.startswith("--") and a.split("=")[0] not in source]
        if missing:
            return f"{args[0]} has no option {', '.join(missing)}"
    if head == "scripts/check" and not (ROOT / head).is_file():
        return "no scripts/check"
    if head == "pytest":
        paths = [a.split("::")[0] for a in args if a.startswith("tests")]
        missing = [p for p in paths if not (ROOT / p).exists()]
        if missing:
            return f"no {', '.join(missing)}"
    if head == "pytest" and "-m" in args:
        expression = args[args.index("-m") + 1]
        words = set(re.findall(r"\w+", expression)) - {"not", "and", "or"}
        if words - _markers():
            return f"unknown marker in -m {expression!r}"
    return None


@pytest.mark.parametrize(
    ("where", "command"), shell_commands(), ids=[f"{w} {c[0]}" for w, c in shell_commands()]
)
def test_every_shell_command_works_as_written(where: str, command: list[str]) -> None:
    problem = check_command(command)
    assert problem is None, f"{where}: `{shlex.join(command)}`: {problem}"


def test_the_checks_refuse_what_would_not_work() -> None:
    # The checks above, held against commands that are wrong in each way they look for.
    assert check_command(["compare", "--baseline", "main", "--no-such-option"])
    assert check_command(["harness", "gold", "convert", "x", "--to", "nowhere"])
    assert check_command(["harness", "run", "--repeats", "many"])
    assert check_command(["pip", "install", "-e", ".[nosuchextra]"])
    assert check_command(["pytest", "tests/test_no_such_file.py"])
    assert check_command(["python", "scripts/no_such_script.py"])
    assert check_command(["python", "scripts/calibrate.py", "--no-such-flag"])
    assert check_command(["python", "-m", "harness.no_such_module"])
    assert check_command(["pytest", "-m", "not sluggish"])
    assert check_command(["curl", "http://example.com"])
    assert check_command(["harness", "compare", "--demo"]) is None


def test_a_bad_key_in_a_snippet_is_refused_by_the_loader(tmp_path: Path) -> None:
    from harness.errors import ConfigError

    path = tmp_path / "harness.toml"
    path.write_text(completed('[service]\nstart = "svc --port {port}"\nreadyy = "/h"\n'))
    with pytest.raises(ConfigError, match="readyy"):
        load_config(path, repo=tmp_path)


def test_the_readme_is_a_front_door_linking_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text) <= 25_000, f"README.md is {len(text)} characters (at most 25,000)"
    for heading in ("## Set up and see it work", "## Use it on your service", "## Gate CI"):
        assert f"\n{heading}\n" in text
    links = re.findall(r"\]\(((?:docs|gold|examples)/[^)#]+)(?:#[^)]*)?\)", text)
    assert links, "the README links into the manual"
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_every_page_of_the_manual_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [page.name for page in PAGES if page.parent.name == "docs"]
    assert "index.md" in pages
    assert [name for name in pages if f": {name}" not in nav] == []


def test_mkdocs_builds_the_manual_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("MkDocs and its Material theme are the docs extra: pip install -e '.[docs]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "gold-format" / "index.html").read_text().count("native format") >= 1
