"""Every command in the README's and docs/'s code blocks runs.

Each ```bash block is run top to bottom in a fresh folder (so a block's later commands see what its earlier
ones wrote: `train.py algo=rft` then `evaluate.py policy.path=runs/rft-s0`), each command with the smallest
overrides that keep its meaning: the smoke preset's tasks and budgets appended last, so they win over the
command's own. Placeholders (`/path/to/vlm`) become the tiny VLM built offline; AndroidWorld commands run
against the SimDroid-driven stand-in of `android_world`; Ray commands against a local Ray cluster started
with the resources they ask for. Install commands are not rerun here: CI runs the README's test line itself
(checked below to be .ci/run's command), and the main line installs the same way with an extra that must
exist.
Every python block runs as it is. A block in docs/ that cannot run here (an emulator's install, a GPU, a
cluster of machines) says so on the line above it: `<!-- not run: why -->`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from experiments.config import PRESETS, SECTIONS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")
BIN = Path(sys.executable).parent
ENTRY = ("train", "pretrain", "evaluate", "compare", "report")
QUICK = ["progress=false", "wandb=disabled"]
SMOKE = {  # per entry point: appended after the command's own overrides
    "compare": [*PRESETS["compare"]["smoke"], *QUICK],
    "train": [*PRESETS["train"]["smoke"], *QUICK],
    "pretrain": [*PRESETS["pretrain"]["smoke"], "progress=false"],
    "evaluate": [*PRESETS["evaluate"]["smoke"], "progress=false"],
    "report": [],
}
ANDROIDWORLD_SMOKE = ["tasks=[SystemWifiTurnOn,OpenAppTaskEval]", "env.transition_pause=0",
                      "env.screen_scale=0.05", "eval_n_per_task=1", "budget=8", "seeds=1", "workers=1",
                      # a VLM generates every action: 2 groups of 2 an iteration rather than 4 of 4
                      *(f"{a}.{k}" for a in SECTIONS for k in ("instances_per_iter=2", "group_size=2"))]
EXAMPLE_SMOKE = {"trl_grpo": ["--steps", "1", "--sft-steps", "4", "--demos", "2"]}  # tests/test_examples.py
# runs the example at its own size
PLACEHOLDER = re.compile(r"/path/to/vlm")  # the README's stand-in for your own model


def blocks(lang: str, path: Path = README, skipped: bool = False) -> list[tuple[int, str]]:
    """(line number, text) of every fenced code block of `lang` in `path` (the README by default); a block
    under a `<!-- not run: why -->` line is left out, or, with `skipped`, is all that is returned."""
    out, cur, start, prev, skip = [], None, 0, "", False
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if cur is None and line.startswith("```"):
            cur, start, skip = ([] if line.strip() == f"```{lang}" else None), i, bool(NOT_RUN.search(prev))
            if cur is None:  # another language: skip to its end
                cur = False
        elif cur is not None and line.startswith("```"):
            if cur is not False and skip == skipped:
                out.append((start, "\n".join(cur)))
            cur = None
        elif cur not in (None, False):
            cur.append(line)
        if line.strip():
            prev = line
    return out


def all_blocks(lang: str) -> list[tuple[str, str]]:
    """(where, text) of every `lang` block to run, in the README then in docs/*.md."""
    return [(f"{path.relative_to(ROOT)}:{n}", text)
            for path in (README, *DOCS) for n, text in blocks(lang, path)]


def commands(block: str) -> list[list[str]]:
    """The block's commands as argv lists: continuation lines joined, comments dropped, `&&` chains split."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        cmd: list[str] = []
        for w in [*words, "&&"]:
            if w == "&&":
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(w)
    return out


def extras() -> set[str]:
    import tomllib

    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def scripts() -> dict[str, str]:
    """The console scripts pyproject.toml installs: name -> `module:function`."""
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def script(name: str, args: list[str]) -> list[str]:
    """The argv of console script `name`: its installed executable, or, in an install older than the script,
    its entry point run from this checkout by this interpreter."""
    if (BIN / name).exists():
        return [str(BIN / name), *args]
    module, func = scripts()[name].split(":")
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from {module} import {func}; sys.exit({func}())"
    return [sys.executable, "-c", code, *args]


def plan(cmd: list[str]) -> list[str] | None:
    """The argv to run for a README command (None: not rerun here, checked otherwise)."""
    head = cmd[0]
    if head in ("python3", "python") and cmd[1:3] == ["-m", "venv"] or head in (".", "source"):
        return None
    if head in ("pip", "pip3"):  # install lines: the extras they name must exist
        for spec in cmd[1:]:
            m = re.fullmatch(r'\.\[([\w,-]+)\]', spec)
            if m:
                assert set(m.group(1).split(",")) <= extras(), f"README installs unknown extra {spec}"
        return None
    if head in ("python", "python3") and cmd[1:3] == ["-m", "pytest"]:  # this very run; CI runs it verbatim
        return None
    if head in ("python", "python3") and cmd[1].startswith("experiments/"):
        entry = Path(cmd[1]).stem
        assert entry in ENTRY, cmd
        argv = [PLACEHOLDER.sub("tiny-vlm", a) for a in cmd[2:]]
        extra = SMOKE[entry]
        if any(a == "env.backend=androidworld" for a in argv):
            extra = [*extra, *ANDROIDWORLD_SMOKE]
            if entry != "compare":
                extra = [a for a in extra if a.split("=")[0] not in ("seeds", "workers")]
        return [sys.executable, str(ROOT / cmd[1]), *argv, *extra]
    if head == "voyager-gym":
        return [str(BIN / "voyager-gym"), *cmd[1:]]
    if head == "voyager-train":  # the experiment entry points (smoke-sized, as above) and `forks`
        entry = cmd[1] if len(cmd) > 1 else ""
        help_only = any(a in ("-h", "--help") for a in cmd[1:])
        return script(head, [*cmd[1:], *(SMOKE[entry] if entry in ENTRY and not help_only else [])])
    if head in ("python", "python3") and cmd[1] == "tools/contact_sheet.py":  # offline, seconds: as it is
        return [sys.executable, str(ROOT / cmd[1]), *cmd[2:]]
    if head in ("python", "python3") and cmd[1].startswith("examples/"):  # offline; a smoke-sized run
        return [sys.executable, str(ROOT / cmd[1]), *cmd[2:], *EXAMPLE_SMOKE.get(Path(cmd[1]).stem, [])]
    raise AssertionError(f"README command the test does not know how to run: {shlex.join(cmd)}")


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "WANDB_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> None:
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, f"{shlex.join(argv)} failed ({r.returncode}):\n{out}"


BASH = blocks("bash")
ALL_BASH = all_blocks("bash")


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    line, block = BASH[0]
    assert line <= 5, "the README must start with its two commands"
    main, tests = [x for x in block.splitlines() if x.strip() and not x.lstrip().startswith("#")]
    assert "python experiments/compare.py algo=grsd,grpo,ppo" in main and "pip install" in main
    assert "python -m pytest" in tests
    after_activate = tests.split("&&", 2)[2].strip()  # venv, activate, then the installs and the test run
    ci = (ROOT / ".ci" / "run").read_text()
    assert after_activate in ci, f".ci/run does not run the README's test command {after_activate!r}"


@pytest.mark.slow
@pytest.mark.parametrize("where,block", ALL_BASH, ids=[w for w, _ in ALL_BASH])
def test_bash_block_runs(where, block, tmp_path):
    env = _env(tmp_path)
    todo = [argv for argv in (plan(c) for c in commands(block)) if argv is not None]
    ray_needed = any("env.workers=" in a for argv in todo for a in argv)
    if any("env.backend=androidworld" in a for argv in todo for a in argv):
        from tests.aw_standin import SITE_DIR  # its android_world imports the `tests` package: ROOT too

        env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), str(ROOT), env.get("PYTHONPATH", "")])
    if ray_needed:  # a cluster of its own: a short private temp root (socket paths), unseen by other tests
        env["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="r", dir="/tmp")
        todo = [_ray_local(argv) for argv in todo]
        _run([str(BIN / "ray"), "start", "--head", "--num-cpus=2", "--include-dashboard=false",
              '--resources={"emulator": 2}', "--disable-usage-stats"], tmp_path, env, timeout=120)
    try:
        for argv in todo:
            _run(argv, tmp_path, env)
    finally:
        if ray_needed:
            _stop_cluster(env["RAY_TMPDIR"])


def _stop_cluster(root: str) -> None:
    """Stop the processes of the cluster under temp root `root` only (`ray stop` would stop every cluster
    on the machine, other tests' included)."""
    import time

    for sig in ("-TERM", "-KILL"):
        subprocess.run(["pkill", sig, "-f", root], capture_output=True)
        time.sleep(2)
    shutil.rmtree(root, ignore_errors=True)


def _ray_local(argv: list[str]) -> list[str]:
    """A Ray command at the scale of the local test cluster (2 CPUs, 2 emulator slots)."""
    return [("env.workers=2" if a.startswith("env.workers=") else a) for a in argv]


@pytest.mark.slow
@pytest.mark.parametrize("where,code", all_blocks("python"), ids=[w for w, _ in all_blocks("python")])
def test_python_block_runs(where, code, tmp_path):
    _run([sys.executable, "-c", code], tmp_path, _env(tmp_path), timeout=300)


def test_every_readme_command_is_planned():
    """No bash command in the README or docs/ falls outside what the runner above knows (checked without
    running)."""
    n = 0
    for _, block in ALL_BASH:
        for cmd in commands(block):
            plan(cmd)
            n += 1
    assert n >= 10
    assert shutil.which("voyager-gym") or (BIN / "voyager-gym").exists()
    used = {c[0] for _, block in ALL_BASH for c in commands(block) if c[0].startswith("voyager-")}
    assert used == {"voyager-gym", "voyager-train"} and used <= set(scripts()), used


def test_the_training_command_runs_from_its_entry_point():
    """`voyager-train` as the README's runner starts it (installed, or from its entry point), on --help."""
    r = subprocess.run(script("voyager-train", ["train", "--help"]), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "usage: voyager-train train" in r.stdout, r.stderr[-2000:]


def test_blocks_not_run_say_why():
    """Every code block left out of the runs above names its reason, and the README has none."""
    assert not blocks("bash", README, skipped=True) and not blocks("python", README, skipped=True)
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"<!-- not run:(.*?)-->", text):
            assert len(m.group(1).strip()) >= 10, f"{path.name}: no reason given: {m.group(0)}"


def test_readme_is_short():
    """The README is read in five minutes: at most 250 lines, none over 120 characters outside code blocks."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    fenced, long = False, []
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and len(line) > 120:
            long.append(n)
    assert not long, f"README lines over 120 characters: {long}"
