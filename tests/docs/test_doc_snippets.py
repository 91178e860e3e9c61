"""The docs' code is tested: every ```python block of README.md, docs/*.md, docs/envs/*.md and
docs/experiments/*.md runs, and every command line in their shell blocks (and README's Commands table)
parses with the real parser.

Python blocks
    Each block runs in a fresh namespace (test id `docs/interop.md#2`: the page's 2nd python block),
    in a temporary working folder, in this process. A page whose blocks are read in order (later ones
    use the names of earlier ones) says so anywhere in its Markdown with `<!-- snippets: in sequence -->`:
    its blocks then run in order in one namespace, as one test (`docs/api.md#1-3`).
    Every namespace starts with the docs' one convention (PRELUDE below, stated in docs/api.md):
    `import jax`, `import jax.numpy as jnp`, `import hivex_jax` and a key `key = jax.random.PRNGKey(0)`.
    A comment after a top-level `print(...)` is its output: the printed line must equal it.
    The HTML comment on the line right before a fence can say:
        <!-- snippet: skip (why) -->      not run; reported as skipped with that reason (keep these rare:
                                         a GPU, a server, a file the user must bring, a fragment)
        <!-- snippet: needs MODULE -->   skipped where MODULE is not installed (an optional extra)
        <!-- snippet: raises NAME -->    must raise an exception of class NAME (or a subclass of it)
    Tracebacks point at the Markdown file's own lines.

Command lines
    Every `hivex ...` / `python -m hivex_jax ...` line of a ```bash (or sh/shell/console/unlabelled) block,
    with `\\` continuations joined, environment-variable prefixes (`PJRT_NPROC=1 hivex ...`), `srun`,
    `&&` / `;` / `&` chains and quoted commands (`--command "cd x && hivex ..."`) taken apart, is given
    to `hivex_jax.cli.main` with argparse stopped right after it parsed: the real dispatch and the real
    parser of the sub-command, nothing trained or compiled. `python -m baselines.<module>` and
    `python scripts/<file>.py` lines are parsed the same way by the module's / script's own parser.
    Shell variables assigned in the same block (`C="..."`) are expanded; any other `$VAR` stands for `1`.
    A bare `...` token ("more options") is dropped; `<placeholders>` are ordinary words.
    After parsing: `train` / `sweep` / `bench --train` overrides and --grid values are checked against the
    config dataclass (`baselines.config.load_config`) and the env (`validate_env`: builds it, compiles
    nothing); `bench` / `render` / `world` env ids and `bench`'s env options with `hivex_jax.make`.
    `evaluate` / `transfer` --worlds specs are checked as `hivex evaluate` checks them; their key=value
    overrides only for syntax (their keys depend on the env of a run folder that is not here).
    README's Commands table: its first column; an `[optional]` group is kept unless it holds a
    placeholder (`[--config FILE]`, `[key=value ...]`).
    Every `configs/*.yaml` and `scripts/...` path named in a shell block must exist.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import re
import runpy
import shlex
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs" / "envs").glob("*.md"),
        *(ROOT / "docs" / "experiments").glob("*.md"),
    ]
)
PRELUDE = "import jax\nimport jax.numpy as jnp\nimport hivex_jax\nkey = jax.random.PRNGKey(0)\n"
SEQUENCE_MARK = "<!-- snippets: in sequence -->"
SHELL_LANGS = {"bash", "sh", "shell", "console", ""}
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*snippet:\s*(?P<what>skip|needs|raises)\b\s*(?P<arg>.*?)\s*-->\s*$")
OPERATORS = {"&&", "||", ";", "|", "&"}
USER_FILE_KEYS = ("world_files", "env_options.world_files")  # name the user's own files
#: a line of an unlabelled block that is read as a command line
COMMAND_START = re.compile(r"^\s*([A-Za-z_]\w*=\S*\s+)*(srun\s+)?(hivex|python3?)\s")


@dataclass
class Block:
    path: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    directive: tuple[str, str] | None = None  # ("skip", "(why)"), ("needs", "torch"), ("raises", "Name")


@dataclass
class PythonCase:
    path: str
    blocks: list[Block] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # 1-based index of each block among the page's

    @property
    def id(self) -> str:
        if len(self.numbers) == 1:
            return f"{self.path}#{self.numbers[0]}"
        return f"{self.path}#{self.numbers[0]}-{self.numbers[-1]}"


@dataclass
class Command:
    path: str
    line: int
    text: str  # the logical line, continuations joined
    argv: list[str]  # from the program on: ["hivex", ...], ["python", "-m", m, ...], ["python", "f.py", ...]
    error: str = ""  # the line could not be read as shell words


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the directive on the line right before its fence."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{rel(path)}:{i + 1}: unclosed code fence")
        body = [line[indent:] if line[:indent].strip() == "" else line for line in lines[i + 1 : j]]
        d = DIRECTIVE.match(lines[i - 1]) if i > 0 else None
        directive = (d["what"], d["arg"]) if d else None
        blocks.append(Block(rel(path), i + 1, m["lang"].lower(), "\n".join(body), directive))
        i = j + 1
    return blocks


def python_cases() -> list[PythonCase]:
    cases = []
    for path in DOC_FILES:
        blocks = [b for b in fenced_blocks(path) if b.lang in ("python", "py")]
        if not blocks:
            continue
        if SEQUENCE_MARK in path.read_text(encoding="utf-8"):
            cases.append(PythonCase(rel(path), blocks, list(range(1, len(blocks) + 1))))
        else:
            cases += [PythonCase(rel(path), [b], [n]) for n, b in enumerate(blocks, 1)]
    return cases


# ------------------------------------------------------------------------------------ python blocks
def printed_outputs(code: str, first_line: int) -> dict[int, str]:
    """{Markdown line: expected output} of the top-level `print(...)  # output` lines of a block."""
    expected = {}
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    lines = code.split("\n")
    for tok in tokens:
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1].startswith("print("):
            expected[first_line + tok.start[0]] = tok.string[1:].strip()
    return expected


def run_block(block: Block, namespace: dict, filename: str) -> None:
    """Execute `block` in `namespace`; line numbers (and tracebacks) are the Markdown file's."""
    code = compile("\n" * block.line + block.code, filename, "exec")
    expected = printed_outputs(block.code, block.line)

    def checked_print(*args, sep=" ", end="\n", file=None, flush=False):
        caller = sys._getframe(1)
        line = caller.f_lineno
        if caller.f_code.co_filename == filename and line in expected:
            got = sep.join(str(a) for a in args)
            assert got == expected[line], (
                f"{block.path}:{line}: printed {got!r}, the comment says {expected[line]!r}"
            )
        print(*args, sep=sep, end=end, file=file, flush=flush)

    namespace["print"] = checked_print
    exec(code, namespace)


@pytest.mark.parametrize("case", python_cases(), ids=lambda c: c.id)
def test_python_snippets(case: PythonCase, tmp_path, monkeypatch):
    runnable = []
    for block in case.blocks:
        if block.directive and block.directive[0] == "skip":
            if len(case.blocks) == 1:
                pytest.skip(f"{block.path}:{block.line}: {block.directive[1].strip('()') or 'skipped'}")
            continue  # a skipped block of a page read in sequence: the others still run
        if block.directive and block.directive[0] == "needs":
            module = block.directive[1]
            pytest.importorskip(module, reason=f"{block.path}:{block.line} needs {module}, not installed")
        runnable.append(block)
    monkeypatch.chdir(tmp_path)  # whatever a snippet writes goes to a fresh folder
    filename = str(ROOT / case.path)
    namespace: dict = {"__name__": "__doc_snippet__"}
    exec(PRELUDE, namespace)
    for block in runnable:
        if block.directive and block.directive[0] == "raises":
            name = block.directive[1]
            with pytest.raises(Exception) as info:
                run_block(block, namespace, filename)
            names = [cls.__name__ for cls in type(info.value).__mro__]
            assert name in names, (
                f"{block.path}:{block.line}: raised {names[0]}: {info.value}; the docs say {name}"
            )
        else:
            run_block(block, namespace, filename)


# ------------------------------------------------------------------------------------ command lines
def logical_lines(code: str, first_line: int) -> list[tuple[int, str]]:
    """(Markdown line, text) of each line of a shell block, `\\` continuations joined."""
    out, parts, start = [], [], None
    for n, line in enumerate(code.split("\n"), first_line + 1):
        start = n if start is None else start
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        out.append((start, " ".join(p.strip() for p in parts)))
        parts, start = [], None
    if parts:
        out.append((start, " ".join(p.strip() for p in parts)))
    return out


def expand(text: str, variables: dict[str, str]) -> str:
    """The shell's `$VAR` / `${VAR}`: the block's own assignments, `1` for any other variable."""
    return re.sub(
        r"\$\{?([A-Za-z_]\w*)\}?", lambda m: variables.get(m[1], "1"), text.replace("$PWD", str(ROOT))
    )


def commands_in_words(words: list[str]) -> list[list[str]]:
    """The argv (from the program on) of each project command in a shell word list."""
    found, segment = [], []
    for word in [*words, ";"]:
        if word in OPERATORS:
            found += commands_in_segment(segment)
            segment = []
        elif " " in word and ("hivex" in word or "scripts/" in word):  # a quoted command line
            found += commands_in_words(shlex.split(word, comments=True))
        else:
            segment.append(word)
    return found


def commands_in_segment(words: list[str]) -> list[list[str]]:
    words = [w for w in words if w != "..."]
    for i, word in enumerate(words):
        if word == "hivex":
            return [words[i:]]
        if word in ("python", "python3"):
            rest = words[i + 1 :]
            if rest[:1] == ["-m"] and rest[1:2] and rest[1].split(".")[0] in ("hivex_jax", "baselines"):
                return [words[i:]]
            if rest[:1] and rest[0].startswith("scripts/") and rest[0].endswith(".py"):
                return [words[i:]]
            return []
    return []


def shell_commands(path: Path) -> list[Command]:
    commands = []
    for block in fenced_blocks(path):
        if block.lang not in SHELL_LANGS:
            continue
        variables: dict[str, str] = {}
        for line, text in logical_lines(block.code, block.line):
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if block.lang == "" and not COMMAND_START.match(text):  # an unlabelled block's other text
                continue
            try:
                words = shlex.split(expand(text, variables), comments=True)
            except ValueError as exc:  # unbalanced quotes
                commands.append(Command(rel(path), line, text, [], f"not shell words: {exc}"))
                continue
            if len(words) == 1 and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):  # C="..."
                name, _, value = words[0].partition("=")
                variables[name] = value
                continue
            commands += [Command(rel(path), line, text, argv) for argv in commands_in_words(words)]
    return commands


def optional_group(m: re.Match) -> str:
    """`[--port 8000]` is kept as ` --port 8000`; a group with a placeholder (`[--config FILE]`,
    `[key=value ...]`: a word in capitals or `...`) is left out."""
    return "" if "..." in m[1] or re.search(r"\b[A-Z]{2,}\b", m[1]) else " " + m[1]


def table_commands(path: Path) -> list[Command]:
    """README's Commands table: `hivex ...` in the first column, `[optional ...]` groups as
    `optional_group` says."""
    commands = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        m = re.match(r"^\|\s*`(hivex [^`]*)`\s*\|", line)
        if m:
            text = re.sub(r"\s*\[([^\]]*)\]", optional_group, m[1])
            commands.append(Command(rel(path), n, text, shlex.split(text)))
    return commands


ALL_COMMANDS = [c for p in DOC_FILES for c in shell_commands(p)] + table_commands(ROOT / "README.md")


class Parsed(BaseException):
    """Raised by argparse right after a successful parse: nothing after it runs. A BaseException, so
    no `except Exception` of the code under test swallows it."""

    def __init__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace):
        super().__init__(parser.prog)
        self.prog, self.namespace = parser.prog, namespace


@contextlib.contextmanager
def stop_after_parsing(monkeypatch):
    for name in ("parse_args", "parse_intermixed_args"):
        original = getattr(argparse.ArgumentParser, name)

        def stopped(self, *args, _original=original, **kwargs):
            raise Parsed(self, _original(self, *args, **kwargs))

        monkeypatch.setattr(argparse.ArgumentParser, name, stopped)
    monkeypatch.setenv("HIVEX_TRACEBACK", "1")  # a user error raises (with its message), not exit 2
    yield


def parse(command: Command, monkeypatch) -> Parsed | None:
    """Run the command until its parser has parsed; the `Parsed` exception, or None for `--help`."""
    argv = command.argv
    out, err = io.StringIO(), io.StringIO()
    environ = dict(os.environ)  # what the modules set when imported (e.g. XLA_FLAGS) does not leak
    with stop_after_parsing(monkeypatch), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if argv[0] == "hivex" or argv[1:3] == ["-m", "hivex_jax"]:
                from hivex_jax.cli import main

                rest = argv[1:] if argv[0] == "hivex" else argv[3:]
                if rest[:1] == ["list"]:  # no parser: `hivex list` takes no arguments
                    assert rest[1:] in ([], ["-h"], ["--help"]), f"`hivex list` takes no arguments: {rest}"
                    return None
                status = main(rest)
            elif argv[1] == "-m":
                monkeypatch.setattr(sys, "argv", [argv[2], *argv[3:]])
                runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
                status = 0
            else:
                script = ROOT / argv[1]
                assert script.is_file(), f"no script {argv[1]}"
                monkeypatch.setattr(sys, "argv", [str(script), *argv[2:]])
                monkeypatch.syspath_prepend(str(script.parent))
                runpy.run_path(str(script), run_name="__main__")
                status = 0
        except Parsed as parsed:
            return parsed
        except SystemExit as exc:
            if exc.code in (0, None) and ("-h" in argv or "--help" in argv):
                return None
            raise AssertionError(f"exit status {exc.code}: {err.getvalue().strip()}") from None
        finally:
            os.environ.clear()
            os.environ.update(environ)
    assert status == 0 and not argv[2:], f"the parser was not reached (status {status}): {err.getvalue()}"
    return None


def check_parsed(parsed: Parsed) -> None:
    """What parsing alone leaves unchecked: config keys and values, env ids and options (no compiling)."""
    from baselines.config import load_config, validate_env
    from baselines.config.values import parse_overrides
    from hivex_jax.cli_support import make_checked
    from hivex_jax.core.errors import world_seeds

    ns = parsed.namespace
    overrides = getattr(ns, "overrides", None) or []
    parse_overrides(overrides)  # key=value syntax
    # `world_files=` names the user's own files, which are not here: only its syntax is checked
    overrides = [o for o in overrides if o.partition("=")[0] not in USER_FILE_KEYS]
    if parsed.prog == "hivex train":
        # on --resume the run folder's config is unknown here: its keys are the same dataclass's
        config = load_config(None if ns.resume else ns.config, overrides)
        if not ns.resume:
            validate_env(config)
    elif parsed.prog == "hivex sweep":
        grid = [[f"{k}={v}" for v in vs.split(",")] for k, _, vs in (g.partition("=") for g in ns.grid)]
        for combo in itertools.product(*grid):
            validate_env(load_config(ns.config, [*overrides, *combo]))
    elif parsed.prog == "hivex bench":
        make_checked(ns.env, **parse_overrides(overrides))
        if ns.train:
            validate_env(load_config(ns.train))
    elif parsed.prog in ("hivex render", "hivex world") and getattr(ns, "env", None):
        make_checked(ns.env)
    elif parsed.prog in ("hivex evaluate", "hivex transfer"):
        if ns.worlds not in (None, "stress"):
            world_seeds(ns.worlds, "--worlds")
    elif parsed.prog.endswith("bench.py") and "updates" in ns:  # python -m baselines.cli.bench
        validate_env(load_config(ns.config, overrides))


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: f"{c.path}:{c.line}")
def test_doc_command(command: Command, monkeypatch):
    assert not command.error, f"{command.path}:{command.line}: {command.text}\n{command.error}"
    try:
        parsed = parse(command, monkeypatch)
        if parsed is not None:
            check_parsed(parsed)
    except AssertionError as exc:
        raise AssertionError(f"{command.path}:{command.line}: {command.text}\n{exc}") from None
    except Exception as exc:
        raise AssertionError(
            f"{command.path}:{command.line}: {command.text}\n{type(exc).__name__}: {exc}"
        ) from None


def test_the_docs_are_found():
    """The parametrized tests above are not silently empty (a moved folder, a changed fence)."""
    assert len(DOC_FILES) >= 15
    assert len(ALL_COMMANDS) >= 60
    assert len(python_cases()) >= 15


# ------------------------------------------------------------------------------------ paths
PATH_IN_SHELL = re.compile(r"(?<![\w./$-])((?:configs/[\w./-]+\.ya?ml)|(?:scripts/[\w./-]*\w))")


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_paths_in_shell_blocks_exist(path: Path):
    missing = [
        f"{rel(path)}:{block.line + n}: {m[1]}"
        for block in fenced_blocks(path)
        if block.lang in SHELL_LANGS
        for n, line in enumerate(block.code.split("\n"), 1)
        for m in PATH_IN_SHELL.finditer(line)
        if not (ROOT / m[1]).exists()
    ]
    assert not missing, "missing files named in shell blocks:\n" + "\n".join(missing)


def test_snippet_directives_are_well_formed():
    """A misspelt `<!-- snippet: ... -->` or one not right above a fence would be ignored silently."""
    wrong = []
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").split("\n")
        for n, line in enumerate(lines, 1):
            if "<!-- snippet" in line and not line.strip() == SEQUENCE_MARK:
                if not DIRECTIVE.match(line) or n == len(lines) or not FENCE.match(lines[n]):
                    wrong.append(f"{rel(path)}:{n}: {line.strip()}")
    expected = "<!-- snippet: skip (why) | needs MODULE | raises NAME --> right above a fence"
    assert not wrong, f"expected {expected}:\n" + "\n".join(wrong)


def test_the_docs_state_the_prelude():
    """PRELUDE is the docs' stated convention, not a hidden one."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert "import jax, jax.numpy as jnp, hivex_jax" in text and "key = jax.random.PRNGKey(0)" in text
