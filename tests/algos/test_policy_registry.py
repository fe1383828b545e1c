"""The policy registry: kinds by name, the env's app vocabulary passed to the kinds that name apps, and one
`load_policy` for every saved folder (older small checkpoints included)."""

from __future__ import annotations

import json

import pytest
import torch

from algos.policies import registry
from algos.policies.base import Policy
from algos.policies.registry import load_policy, make_policy, register_policy, saved_kind
from algos.policies.simple import ExpertPolicy, RandomPolicy
from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import Action
from voyager_gym.env import app_names

AW_APPS = ["audio recorder", "google chrome", "markor", "simple calendar pro"]  # AndroidWorld-style names


def test_kinds_by_name_with_the_envs_vocabulary():
    assert registry.policy_names() == ["expert", "random", "small", "hf"]
    small = make_policy("small", app_names=AW_APPS, seed=0, d_model=32, heads=2)
    assert isinstance(small, SmallPolicy) and small.app_names == AW_APPS
    assert small.config["app_names"] == AW_APPS and small.device == torch.device("cpu")
    rnd = make_policy("random", app_names=AW_APPS, seed=1)
    assert isinstance(rnd, RandomPolicy) and rnd.apps == AW_APPS
    assert isinstance(make_policy("expert", app_names=AW_APPS), ExpertPolicy)  # names no app: ignores them
    with pytest.raises(ValueError, match="policy 'small' needs app_names"):
        make_policy("small")
    with pytest.raises(ValueError, match="unknown policy 'smal'; expected one of expert, random, small, hf"):
        make_policy("smal", app_names=AW_APPS)
    with pytest.raises(ValueError, match="already registered"):
        register_policy("small", lambda: SmallPolicy)
    with pytest.raises(ValueError, match="app_names='Markor': expected a non-empty list"):
        SmallPolicy("Markor")
    with pytest.raises(ValueError, match="app_names=\\[\\]: expected a non-empty list"):
        RandomPolicy([])


def test_random_policy_opens_only_the_envs_apps():
    pol = RandomPolicy(AW_APPS, seed=0, p_status=0.0)
    x = PolicyInput("Open an app.", (), [], step=0, max_steps=10)
    opened = {o.action.app_name for o in pol.act([x] * 400) if o.action.action_type == "open_app"}
    assert opened and opened <= set(AW_APPS)


def test_device_is_declared_on_every_policy():
    assert Policy.device == "cpu" and ExpertPolicy().device == "cpu"
    assert SmallPolicy(app_names(), seed=0, d_model=32, heads=2).device == torch.device("cpu")


def test_load_policy_reads_the_kind_from_the_folder(tmp_path):
    pol = SmallPolicy(AW_APPS, seed=3, d_model=32, heads=2)
    pol.save(tmp_path / "p")
    assert saved_kind(tmp_path / "p") == "small"
    back = load_policy(tmp_path / "p")
    assert isinstance(back, SmallPolicy) and back.app_names == AW_APPS
    x = PolicyInput("Open markor.", (), [], step=0, max_steps=10)
    responses = [render_response(Action("open_app", app_name=a)) for a in AW_APPS]
    with torch.no_grad():
        assert torch.equal(pol.log_probs([x] * 4, responses), back.log_probs([x] * 4, responses))
    assert load_policy(tmp_path / "p", kind="small", temperature=0.5).temperature == 0.5
    with pytest.raises(ValueError, match="holds a 'small' policy, expected 'hf'"):
        load_policy(tmp_path / "p", kind="hf")
    with pytest.raises(FileNotFoundError, match="not a saved policy folder"):
        load_policy(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no saved policy"):
        load_policy(tmp_path / "empty")


def test_a_checkpoint_keeps_the_vocabulary_it_was_saved_with(tmp_path):
    """A small policy saved with SimDroid's launcher names (every checkpoint before the env gave them) loads
    with those names, whatever backend the run is on now; a config without any names says how to load it."""
    old = SmallPolicy(app_names("simdroid"), seed=0, d_model=32, heads=2)
    old.save(tmp_path / "old")
    assert load_policy(tmp_path / "old").app_names == list(app_names("simdroid"))
    cfg = json.loads((tmp_path / "old" / "config.json").read_text())
    del cfg["app_names"]
    (tmp_path / "old" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="config.json has no app_names"):
        load_policy(tmp_path / "old")
    assert load_policy(tmp_path / "old", app_names=list(app_names("simdroid"))).app_names == list(
        app_names("simdroid"))


def test_load_policy_reads_hf_folders(tmp_path):
    from algos.policies.hf import SETTINGS_FILE, HFPolicy
    from algos.policies.tiny import save_tiny

    assert registry.policy_kind("hf").marker == SETTINGS_FILE
    bare = save_tiny(tmp_path / "bare")  # a plain Hugging Face checkpoint records no kind
    with pytest.raises(ValueError, match="holds no saved policy"):
        load_policy(bare)
    policy = load_policy(bare, kind="hf", max_new_tokens=9)
    assert isinstance(policy, HFPolicy) and policy.max_new_tokens == 9
    policy.save(tmp_path / "saved")
    assert saved_kind(tmp_path / "saved") == "hf" and load_policy(tmp_path / "saved").max_new_tokens == 9
