"""benchmarks/policy_divergence.py: the classes of a first divergence, and a run on a saved policy."""

import importlib.util
import json
import sys
from pathlib import Path

from voyager_gym.actions import Action
from voyager_gym.env import app_names

ROOT = Path(__file__).resolve().parents[1]


def _module():
    path = ROOT / "benchmarks" / "policy_divergence.py"
    spec = importlib.util.spec_from_file_location("policy_divergence", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_divergence_is_classed_by_type_then_by_field():
    first = _module().first_difference
    typed = Action("input_text", index=1, text="talk_edited.m4a")
    assert first(typed, Action("input_text", index=1, text="edited.m4a")) == "input_text:text"
    assert first(typed, Action("input_text", index=2, text="x")) == "input_text:index,text"
    assert first(Action("click", index=3), Action("scroll", direction="down")) == "type click->scroll"
    assert first(typed, None) == "unparsed"


def test_a_run_on_a_saved_policy_counts_every_failed_episode(tmp_path, monkeypatch, capsys):
    from algos.policies.small import SmallPolicy

    SmallPolicy(app_names(), seed=0).save(tmp_path / "p")  # untrained: fails, and every failure is classed
    monkeypatch.setattr(sys, "argv", ["policy_divergence.py", str(tmp_path / "p"), "--n", "2",
                                      "--tasks", "SystemWifiTurnOn,ContactsAddContact", "--threads", "1"])
    _module().main()
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0.0 <= out["pass_at_1"] <= 1.0
    assert sum(out["classes"].values()) == out["failed"] == round(4 * (1 - out["pass_at_1"]))
