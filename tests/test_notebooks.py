"""Every notebook in notebooks/ runs top to bottom (nbclient) on a small run folder this test makes itself."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from voyager_gym.env import app_names

pytestmark = pytest.mark.slow  # notebooks executed in a kernel

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A GRSD run folder: iteration 0 and one GRSD update of an untrained small policy on hand-made groups
    (expert rollouts and rollouts that leave the expert's path), with its metrics row and checkpoint."""
    import torch

    from algos.grsd import GRSD
    from algos.policies.small import SmallPolicy
    from algos.run import Run
    from tests.algos.standalone import grsd_alone
    from tests.algos.test_grsd import detour_groups

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("nb") / "grsd-run"
    run = Run(out, {"algo": "grsd"}, wandb_mode="disabled")
    algo, policy = GRSD(grsd_alone(epochs=1)), SmallPolicy(app_names(), seed=0)
    run.log({"algo": "grsd", "iteration": 0, "env_steps": 0, "pass_at_1": 0.0})
    run.checkpoint(0, policy, {"env_steps": 0, "wall_s": 0.0}, algo.state())
    groups = detour_groups(["SystemWifiTurnOn", "ContactsAddContact"], detours={1: 2, 2: 1})
    metrics = algo.update(policy, groups, iteration=1, seed=0)
    steps = sum(len(t.steps) for g in groups for t in g.trajectories)
    run.log({"algo": "grsd", "iteration": 1, "env_steps": steps, "pass_at_1": 0.0, **metrics})
    run.checkpoint(1, policy, {"env_steps": steps, "wall_s": 0.0}, algo.state())
    run.close()
    assert metrics["grsd/forks"] == 4
    return out


def execute(path: Path, env: dict[str, str], monkeypatch) -> Any:
    """Run a notebook top to bottom with `env` set; returns the executed notebook."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    root = str(path.parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) if a cell fails
    return nb


def outputs_text(nb: Any) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


COMPARE_NOTEBOOKS = {"learning_curves.ipynb"}  # run by tests/test_compare.py on the smoke comparison it makes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, run_dir: Path, monkeypatch):
    if path.name in COMPARE_NOTEBOOKS:
        pytest.skip("executed by tests/test_compare.py on its smoke comparison folder")
    nb = execute(path, {"VOYAGER_RUN_DIR": str(run_dir), "VOYAGER_N_FORKS": "2"}, monkeypatch)
    text = outputs_text(nb)
    if path.name == "fork_gallery.ipynb":
        assert "4 forks kept" in text and "iteration 1: 2 mixed groups, 4 forks" in text
        images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
        assert len(images) == 2  # N_FORKS pictures
