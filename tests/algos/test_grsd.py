"""GRSD: fork samples on hand-made groups, mixing with RFT data, end-to-end iterations (small and tiny-VLM
policies) through train_loop, kept fork examples, and the `voyager-train forks` picture."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from algos.branch import Branch, play
from algos.buffer import Group
from algos.forks.examples import ForkCheck, ForkExamples, find_forks, load_run_forks
from algos.grsd import GRSD, mix_samples, verify_forks
from algos.loop import RunContext, train_loop
from algos.policies.base import Policy, PolicyOutput
from algos.policies.simple import ExpertPolicy
from algos.prompt import render_prompt, render_response
from algos.rft import success_samples
from algos.rollout import RolloutConfig, collect
from algos.run import Run
from tests.algos.standalone import grsd_alone
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

DETOUR_TASKS = ["SystemWifiTurnOn", "SystemCopyToClipboard", "ContactsAddContact"]
E2E_TASKS = ["SystemWifiTurnOn", "SystemCopyToClipboard", "SystemBluetoothTurnOff"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch.set_num_threads(1)


class DetourExpert(ExpertPolicy):
    """The task expert, except that sub-env i (a key of `detours`) goes home at step detours[i] and then
    declares the task complete: a failed rollout whose fork with the expert's rollout is exactly that step."""

    def __init__(self, detours: dict[int, int]):
        super().__init__()
        self.detours = detours

    def act(self, batch, greedy=False):
        out = super().act(batch, greedy)
        for i, x in enumerate(batch):
            k = self.detours.get(i)
            if k is not None and x.step >= k:
                a = Action("navigate_home") if x.step == k else Action("status", goal_status="complete")
                out[i] = PolicyOutput(render_response(a), a, 0.0)
        return out


def detour_groups(tasks=DETOUR_TASKS, detours: dict[int, int] | None = None, noise: str = "none",
                  scale: float = 0.25, seed: int = 0) -> list[Group]:
    """One group per task: rollout 0 is the expert (success), rollout i leaves at step detours[i] (failure);
    by default one failure that leaves at step 2."""
    detours = detours or {1: 2}
    n = max(detours) + 1
    envs = make_vec(n, "sync", observation_mode="full", render_scale=scale, noise=noise)
    try:
        groups = []
        for i, inst in enumerate(TrainGenerator(tasks, seed=seed).take(len(tasks))):
            cfg = RolloutConfig(group_size=n, thumb_width=0, keep_frames=True, seed=seed * 100 + i)
            groups += collect(DetourExpert(detours), envs, [inst], cfg)
    finally:
        envs.close()
    return groups


@pytest.fixture(scope="module")
def groups() -> list[Group]:
    return detour_groups()


# -- fork samples ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["faithful", "robust"])
def test_a_known_fork_gives_exactly_the_failed_prompt_with_the_teacher_response(groups, mode):
    for g in groups:
        ok, bad = g.trajectories
        assert ok.success and not bad.success and g.has_both_outcomes
        forks = find_forks([g], mode)
        assert [(f.failed_step, f.teacher_step) for f in forks] == [(2, 2)], g.task
        f = forks[0]
        assert f.failed is bad and f.teacher is ok and f.sim_current == pytest.approx(1.0)
        x, response = f.sample
        assert render_prompt(x) == bad.steps[2].prompt  # the failed step's own prompt and history
        assert x.history == bad.steps[2].history and len(x.history) == 2
        assert np.array_equal(x.pixels, bad.steps[2].frame)
        assert response == ok.steps[2].response != bad.steps[2].response
        assert "navigate_home" in bad.steps[2].response


def test_groups_without_both_outcomes_give_no_forks(groups):
    only_success = [Group(g.group_id, g.task, g.instance_seed, g.params, g.successes) for g in groups]
    only_failure = [Group(g.group_id, g.task, g.instance_seed, g.params, g.failures) for g in groups]
    assert find_forks(only_success) == [] and find_forks(only_failure) == []


def test_screen_noise_does_not_hide_a_fork_in_robust_mode():
    groups = detour_groups(["SystemWifiTurnOn", "SystemCopyToClipboard"], noise="default", seed=3)
    forks = find_forks(groups, "robust")
    assert [(f.failed_step, f.teacher_step) for f in forks] == [(2, 2), (2, 2)]


def test_max_forks_per_group_keeps_the_most_similar():
    (g,) = detour_groups(["SystemWifiTurnOn"], detours={1: 2, 2: 3})
    assert [t.success for t in g.trajectories] == [True, False, False]
    forks = find_forks([g])
    assert [(f.failed.traj_id, f.failed_step, f.teacher_step) for f in forks] == [
        (g.trajectories[1].traj_id, 2, 2), (g.trajectories[2].traj_id, 3, 3)]
    assert len(find_forks([g], max_per_group=1)) == 1


# -- mixing ---------------------------------------------------------------------------------------------
def test_mix_samples_counts_and_ratio():
    fork = [(f"x{i}", "fork") for i in range(3)]
    rft = [(f"r{i}", "rft") for i in range(10)]
    everything, weights = mix_samples(fork, rft, seed=0)
    assert len(everything) == 13 and sorted(everything) == sorted(fork + rft) and weights is None
    capped, _ = mix_samples(fork, rft, rft_ratio=2.0, seed=0)
    assert sum(r == "fork" for _, r in capped) == 3 and sum(r == "rft" for _, r in capped) == 6
    assert mix_samples(fork, rft, rft_ratio=2.0, seed=0)[0] == capped  # seeded
    repeated, _ = mix_samples(fork, rft, fork_repeat=3, seed=1)
    assert sum(r == "fork" for _, r in repeated) == 9 and sum(r == "rft" for _, r in repeated) == 10
    with pytest.raises(ValueError, match="fork_repeat"):
        mix_samples(fork, rft, fork_repeat=0)
    weighted, w = mix_samples(fork, rft, seed=0, fork_weights=[2.0, 1.0, 1.0])
    assert weighted == everything  # weights do not change the draw
    assert [wi for (x, _), wi in zip(weighted, w, strict=True) if x == "x0"] == [2.0] and sum(w) == 14.0
    with pytest.raises(ValueError, match="2 fork weights for 3"):
        mix_samples(fork, rft, fork_weights=[1.0, 1.0])


class RecordingPolicy(Policy):
    """Records what fit_sft is given (the mixing counts are checked on exactly those samples)."""

    trainable = True

    def __init__(self):
        self.samples = []

    def act(self, batch, greedy=False):
        raise AssertionError("not used")

    def fit_sft(self, samples, epochs=1, lr=None, seed=0, weights=None):
        self.samples = list(samples)
        return {"loss": 0.5}


def test_update_mixes_fork_samples_with_the_pooled_successes(groups):
    algo = GRSD(grsd_alone(fork_repeat=2))
    pol = RecordingPolicy()
    m = algo.update(pol, groups[:2], iteration=1, seed=0)
    success_steps = sum(len(t.steps) for g in groups[:2] for t in g.successes)
    assert m["grsd/mixed_groups"] == 2 and m["grsd/forks"] == 2
    assert m["grsd/fork_samples"] == 4 and m["grsd/rft_samples"] == success_steps
    assert m["train/sft_samples"] == len(pol.samples) == 4 + success_steps
    assert m["grsd/same_screen_rate"] == 1.0 and m["grsd/sim_current_mean"] == pytest.approx(1.0)
    assert m["grsd/next_differs_rate"] == 1.0  # the failed rollout went home, the teacher stayed in the app
    assert m["grsd/same_history_rate"] == 1.0  # it left at step 2 after the expert's own two actions
    assert m["grsd/later_fork_rate"] == 0.0  # one fork per failed rollout
    assert m["grsd/fork_share"] == pytest.approx(4 / (4 + success_steps))
    for g in groups[:2]:  # the failed step's input (its own frame object), twice, with the teacher's response
        ok, bad = g.trajectories
        got = [r for x, r in pol.samples if x.pixels is bad.steps[2].frame]
        assert got == [ok.steps[2].response] * 2
    # the control arm finds and logs the same forks but fine-tunes on the pooled successes only
    control = GRSD(grsd_alone(fork_repeat=2, train_on_forks=False))
    mc = control.update(pol, groups[:2], iteration=1, seed=0)
    assert mc["grsd/forks"] == 2 and mc["grsd/fork_samples"] == 0 and mc["grsd/fork_share"] == 0.0
    assert mc["train/sft_samples"] == len(pol.samples) == success_steps
    assert not any(x.pixels is g.trajectories[1].steps[2].frame for g in groups[:2] for x, _ in pol.samples)
    # the next iteration pools the successes of both (RFT's pool), forks come from the new groups only
    m2 = algo.update(pol, groups[2:], iteration=2, seed=1)
    assert m2["grsd/forks"] == 1
    assert m2["grsd/rft_samples"] == len(success_samples(groups)) == sum(
        len(t.steps) for g in groups for t in g.successes)
    assert [r["iteration"] for r in algo.examples.records] == [2, 1, 1]


def test_demos_join_the_success_part_and_are_required_once_asked_for(groups):
    """grsd.demos: the base's demonstrations are fine-tuned on beside the pooled successes every update;
    asking for them without handing any over is an error naming the setting."""
    algo = GRSD(grsd_alone(demos=True))
    with pytest.raises(ValueError, match="grsd.demos=true: no demonstrations"):
        algo.update(RecordingPolicy(), groups[:2], iteration=1, seed=0)
    demo = [(g.trajectories[0].steps[0].policy_input(), "demo-response") for g in groups[:3]]
    algo = GRSD(grsd_alone(demos=True), RunContext(demo_samples=demo))
    pol = RecordingPolicy()
    m = algo.update(pol, groups[:2], iteration=1, seed=0)
    success_steps = sum(len(t.steps) for g in groups[:2] for t in g.successes)
    assert m["train/demo_samples"] == 3 and m["grsd/rft_samples"] == success_steps + 3
    assert [r for _, r in pol.samples].count("demo-response") == 3
    assert m["train/sft_samples"] == len(pol.samples) == m["grsd/fork_samples"] + success_steps + 3
    assert GRSD(grsd_alone()).update(RecordingPolicy(), groups[:2], 1, seed=0)["train/demo_samples"] == 0


def test_max_rft_samples_caps_the_rft_part_with_a_fresh_draw_each_update(groups):
    """grsd.max_rft_samples: the RFT part (pool and demonstrations) is cut to that many samples, drawn by the
    update's seed; the fork samples are all kept."""
    demo = [(g.trajectories[0].steps[0].policy_input(), f"demo-{i}") for i, g in enumerate(groups)]
    algo = GRSD(grsd_alone(demos=True, max_rft_samples=5), RunContext(demo_samples=demo))
    pol = RecordingPolicy()
    m = algo.update(pol, groups[:2], iteration=1, seed=0)
    assert m["grsd/rft_samples"] == 5 and m["grsd/fork_samples"] == 2
    assert m["train/sft_samples"] == len(pol.samples) == 7
    picks = []
    for seed in (0, 1, 2, 3):
        again = GRSD(grsd_alone(demos=True, max_rft_samples=5), RunContext(demo_samples=demo))  # empty pool
        again.update(pol, groups[:2], iteration=1, seed=seed)
        picks.append(sorted(r for _, r in pol.samples))
    assert len({tuple(p) for p in picks}) > 1  # another seed, another draw
    uncapped = GRSD(grsd_alone(demos=True), RunContext(demo_samples=demo))
    assert uncapped.update(pol, groups[:2], iteration=1, seed=0)["grsd/rft_samples"] > 5


def test_fork_examples_save_load_and_keep_the_newest(groups, tmp_path):
    ex = ForkExamples(keep=2, thumb_width=40)
    ex.add(1, find_forks(groups[:2]))
    ex.add(2, find_forks(groups[2:]))
    assert [(r["iteration"], r["task"]) for r in ex.records] == [(2, groups[2].task), (1, groups[0].task)]
    ex.save(tmp_path / "forks")
    back = ForkExamples.load(tmp_path / "forks")
    assert back.records == ex.records
    for (r, failed, teacher), (_, f0, t0) in zip(back.pairs(), ex.pairs(), strict=True):
        assert failed == f0 and teacher == t0 and failed.traj_id == r["failed_traj"]
        assert all(s.frame is None and s.thumbnail.shape[1] == 40 for s in failed.steps + teacher.steps)
    assert {g.group_id for g in back.buffer()} == {groups[2].group_id, groups[0].group_id}


def test_grsd_refuses_elements_only_envs():
    envs = make_vec(1, "sync", observation_mode="elements")
    with pytest.raises(ValueError, match="render_scale"):
        GRSD(grsd_alone()).rollout_config(envs, 0, False)
    envs.close()
    with pytest.raises(ValueError, match="fork_mode"):
        GRSD(grsd_alone(fork_mode="exact"))


# -- verified forks (branching from snapshots) -------------------------------------------------------------
class RecordingExpert(ExpertPolicy):
    """The task expert, with a fit_sft that records its samples."""

    trainable = True

    def __init__(self):
        super().__init__()
        self.samples = []

    def fit_sft(self, samples, epochs=1, lr=None, seed=0, weights=None):
        self.samples = list(samples)
        return {"loss": 0.5}

    def save(self, path):
        path.mkdir(parents=True, exist_ok=True)


class GivesUpExpert(RecordingExpert):
    """The task expert, except that where it would reopen an app it left (past step 0) it declares the task
    complete: after a detour home it fails, on the expert's own path it succeeds."""

    def act(self, batch, greedy=False):
        out = super().act(batch, greedy)
        for i, x in enumerate(batch):
            if x.step > 0 and out[i].action.action_type == "open_app":
                a = Action("status", goal_status="complete")
                out[i] = PolicyOutput(render_response(a), a, 0.0)
        return out


@pytest.fixture(scope="module")
def branch_envs():
    envs = make_vec(3, "sync", observation_mode="full", render_scale=0.25, noise="none")
    yield envs
    envs.close()


def test_branching_verifies_a_fork_only_when_the_correction_raises_success(groups, branch_envs):
    forks = find_forks(groups)
    assert [(f.failed_step, f.teacher_step) for f in forks] == [(2, 2)] * 3
    # the expert recovers from the detour home as surely as it finishes from the teacher's step: a tie
    checks, steps = verify_forks(ExpertPolicy(), branch_envs, forks, k=2)
    assert checks == [ForkCheck(2, 2, 2)] * 3 and not any(c.verified for c in checks)
    # an agent that gives up once it has left the app fails after the detour only: every fork verified
    checks, steps_quit = verify_forks(GivesUpExpert(), branch_envs, forks, k=2)
    assert checks == [ForkCheck(2, 0, 2)] * 3 and all(c.verified for c in checks)
    # env steps: 2 replayed steps per fork, then per side 2 branches of the forced action and the agent's
    # steps; giving up at home takes exactly 2 steps (go home, declare complete)
    teacher_steps = steps_quit - 3 * 2 - 3 * 2 * 2
    assert teacher_steps >= 3 * 2 * 2 and steps > steps_quit


def test_branches_play_the_same_on_sync_and_pipelined_envs(groups, branch_envs):
    f = find_forks(groups[:1])[0]
    start = {"task": f.failed.task, "params": dict(f.failed.params)}
    forced = tuple((s.response, "x") for s in f.failed.steps[:2])
    replay = [Branch(start, seed=f.failed.env_seed, forced=forced, policy=False)]
    snap = play(ExpertPolicy(), branch_envs, replay)[0].snapshot
    assert snap.steps == 2 and snap.screen_key == f.failed.steps[2].screen_key
    branches = [Branch(snap, forced=((f.failed.steps[2].response, "home"),))] * 4
    sync = play(GivesUpExpert(), branch_envs, branches)
    piped = make_vec(2, "pipelined", lanes=2, workers=1, render_scale=0.25, noise="none")
    try:
        assert play(GivesUpExpert(), piped, branches) == sync  # snapshots cross to the workers pickled
    finally:
        piped.close()
    assert [(r.success, r.steps) for r in sync] == [(False, 2)] * 4


def test_verify_trains_on_verified_forks_only_and_counts_branch_steps(groups, branch_envs):
    algo = GRSD(grsd_alone(verify=True, branch_k=2))
    with pytest.raises(ValueError, match="train_loop binds them"):
        algo.update(GivesUpExpert(), groups, iteration=1, seed=0)
    algo.bind(branch_envs)
    pol = GivesUpExpert()
    m = algo.update(pol, groups, iteration=1, seed=0)
    assert m["grsd/forks"] == 3 and m["grsd/fork_samples"] == 3 and m["grsd/fork_precision_branching"] == 1.0
    assert m["grsd/branch_success_teacher"] == 1.0 and m["grsd/branch_success_failed"] == 0.0
    assert m["train/update_env_steps"] > 3 * 2 * 2 * 2 and m["grsd/unchecked_forks"] == 0
    rec = algo.examples.records[0]
    assert (rec["branch_k"], rec["teacher_wins"], rec["failed_wins"]) == (2, 2, 0)
    # the plain expert ties every fork: verify keeps none of them, `branch` alone only measures
    m = GRSD(grsd_alone(verify=True, branch_k=2))
    m.bind(branch_envs)
    pol = RecordingExpert()
    got = m.update(pol, groups, iteration=1, seed=0)
    assert got["grsd/fork_precision_branching"] == 0.0 and got["grsd/fork_samples"] == 0
    measure = GRSD(grsd_alone(branch=True, branch_k=2))
    measure.bind(branch_envs)
    got = measure.update(pol, groups, iteration=1, seed=0)
    assert got["grsd/fork_precision_branching"] == 0.0 and got["grsd/fork_samples"] == 3
    off = GRSD(grsd_alone()).update(pol, groups, iteration=1, seed=0)
    assert math.isnan(off["grsd/fork_precision_branching"]) and off["train/update_env_steps"] == 0
    with pytest.raises(ValueError, match="branch_k=0"):
        GRSD(grsd_alone(branch_k=0))


def test_the_fork_picture_shows_the_branching_result(groups):
    from algos.forks.figure import forks_figure

    ex = ForkExamples()
    ex.add(1, find_forks(groups[:2]), [ForkCheck(3, 1, 4), None])
    fig = forks_figure(ex.pairs())
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("branching: teacher 3/4 vs failed 1/4 (verified)" in t for t in texts)
    assert sum("branching" in t for t in texts) == 1  # the unchecked fork says nothing about it


# -- end to end -----------------------------------------------------------------------------------------
def bc_small_policy(tasks: list[str], envs) -> Policy:
    """A SmallPolicy cloned from 4 expert demos per task: it succeeds now and then (on the E2E tasks 2-4 of
    6 groups of 4 have both outcomes, whatever the rollout seed), so groups hold forks."""
    from algos.policies.small import SmallPolicy

    demos = collect(ExpertPolicy(), envs, TrainGenerator(tasks, seed=10_000).take(4 * len(tasks)),
                    RolloutConfig(group_size=1, greedy=True, thumb_width=0, seed=0))
    pol = SmallPolicy(app_names(), seed=0)
    pol.fit_sft(success_samples(demos), epochs=14, lr=1e-3, seed=0)
    return pol


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One GRSD iteration of a small policy on three tasks with screenshots (render_scale 0.25), 6 groups."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("grsd") / "run"
    envs = make_vec(4, "sync", observation_mode="full", render_scale=0.25, noise="default")
    try:
        policy = bc_small_policy(E2E_TASKS, envs)
        run = Run(out, {"algo": "grsd"}, wandb_mode="disabled")
        cfg = grsd_alone(iterations=1, instances_per_iter=6, group_size=4, epochs=1, branch=True, branch_k=2)
        train_loop(GRSD(cfg), policy, envs, run, E2E_TASKS, seed=0, eval_n_per_task=1)
        run.close()
    finally:
        envs.close()
    return out


def test_one_grsd_iteration_with_the_small_policy(small_run):
    rows = [json.loads(line) for line in (small_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1]
    last = rows[1]
    assert last["grsd/mixed_groups"] >= 1, "no group had both outcomes: retune bc_small_policy"
    assert last["grsd/forks"] >= last["grsd/mixed_groups"]
    assert last["train/sft_samples"] == last["grsd/fork_samples"] + last["grsd/rft_samples"]
    assert 0.9 <= last["grsd/sim_current_mean"] <= 1.0 and math.isfinite(last["losses/sft"])
    # every fork was checked by branching (K=2 a side, the small policy finishing), its steps counted
    assert last["grsd/unchecked_forks"] == 0 and 0.0 <= last["grsd/fork_precision_branching"] <= 1.0
    assert last["train/update_env_steps"] >= 2 * 2 * last["grsd/forks"]
    ckpt, ex = load_run_forks(small_run)
    assert ckpt.name == "it_1" and len(ex) == last["grsd/forks"]
    assert (ckpt / "successes.parquet").exists()
    # resuming restores the pooled successes and the kept forks
    algo = GRSD(grsd_alone())
    algo.load_state(ckpt)
    assert len(algo.examples) == len(ex) and len(algo.pool) >= 1


class StepsOfItsOwn(GRSD):
    """GRSD whose update only records the rollouts' steps and reports 123 env steps taken by itself."""

    def update(self, policy, groups, iteration, seed):
        self.rollout_steps = sum(len(t.steps) for g in groups for t in g.trajectories)
        return {"train/update_env_steps": 123}


def test_the_loop_counts_an_updates_own_env_steps(tmp_path):
    envs = make_vec(2, "sync", render_scale=0.1, noise="none")
    try:
        run = Run(tmp_path / "run", {"algo": "grsd"}, wandb_mode="disabled")
        algo = StepsOfItsOwn(grsd_alone(iterations=1, instances_per_iter=2, group_size=2))
        train_loop(algo, RecordingExpert(), envs, run, ["SystemWifiTurnOn"], seed=0, eval_n_per_task=1)
        run.close()
    finally:
        envs.close()
    assert algo.envs is envs
    last = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()][-1]
    assert last["env_steps"] == algo.rollout_steps + 123 and algo.rollout_steps > 0


def test_forks_cli_draws_a_png_from_the_run(small_run, tmp_path):
    from PIL import Image

    from experiments.cli import main

    out = tmp_path / "forks.png"
    assert main(["forks", str(small_run), "--out", str(out), "--n", "1"]) == 0
    with Image.open(out) as im:
        w, h = im.size
        px = np.asarray(im.convert("RGB"))
    assert w > 600 and h > 300
    assert (np.abs(px.astype(int) - [215, 48, 39]).sum(-1) < 40).sum() > 100  # the red box of the failed step
    assert (np.abs(px.astype(int) - [26, 152, 80]).sum(-1) < 40).sum() > 100  # the green box of the teacher


def test_forks_cli_names_what_is_missing(small_run, tmp_path, capsys):
    from experiments.cli import main

    assert main(["forks", str(tmp_path / "nothing"), "--out", str(tmp_path / "a.png")]) == 2
    assert "no checkpoint.json" in capsys.readouterr().err
    run = Run(tmp_path / "rft", {}, wandb_mode="disabled")  # a run whose checkpoint has no forks/
    run.checkpoint(0, RecordingPolicyWithSave(), {"env_steps": 0})
    assert main(["forks", str(tmp_path / "rft"), "--out", str(tmp_path / "b.png")]) == 2
    assert "no forks/ folder" in capsys.readouterr().err
    assert not (tmp_path / "a.png").exists() and not (tmp_path / "b.png").exists()


class RecordingPolicyWithSave(RecordingPolicy):
    def save(self, path):
        path.mkdir(parents=True, exist_ok=True)


@pytest.mark.slow
def test_one_grsd_update_and_iteration_with_the_tiny_vlm(tmp_path):
    from algos.policies.hf import HFPolicy
    from algos.policies.tiny import build_tiny_tokenizer, build_tiny_vlm

    model, processor = build_tiny_vlm(build_tiny_tokenizer(), seed=0)
    policy = HFPolicy(model=model, processor=processor, seed=0, max_new_tokens=24, sft_batch_size=4)
    # the update on hand-made groups: fork samples carry the failed step's screenshot into TRL's SFT
    groups = detour_groups(["SystemWifiTurnOn"], scale=0.05)
    before = [p.detach().clone() for p in policy.model.parameters()]
    m = GRSD(grsd_alone(epochs=1, lr=1e-3)).update(policy, groups, iteration=1, seed=0)
    assert m["grsd/forks"] == 1 and m["train/sft_samples"] == 1 + len(groups[0].trajectories[0].steps)
    assert math.isfinite(m["losses/sft"])
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.model.parameters(), strict=True))
    # and one iteration through train_loop (a random tiny VLM rarely succeeds: the plumbing, not forks)
    envs = make_vec(2, "sync", observation_mode="full", render_scale=0.05, noise="default")
    try:
        run = Run(tmp_path / "hf", {"algo": "grsd"}, wandb_mode="disabled")
        cfg = grsd_alone(iterations=1, instances_per_iter=1, group_size=2, epochs=1)
        train_loop(GRSD(cfg), policy, envs, run, ["SystemWifiTurnOn"], seed=0, eval_n_per_task=1)
        run.close()
    finally:
        envs.close()
    rows = [json.loads(line) for line in (tmp_path / "hf" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1] and "grsd/forks" in rows[1]
    assert (tmp_path / "hf" / "checkpoints" / "it_1" / "forks" / "forks.json").exists()


def test_later_fork_rate_counts_forks_after_a_rollouts_first_one():
    from types import SimpleNamespace as NS

    from algos.grsd import later_fork_rate

    def fork(group, traj, step):
        return NS(group=NS(group_id=group), failed=NS(traj_id=traj), failed_step=step)

    forks = [fork("g0", "r1", 2), fork("g0", "r1", 5), fork("g0", "r2", 1), fork("g1", "r1", 4),
             fork("g0", "r1", 7)]
    assert later_fork_rate(forks) == pytest.approx(2 / 5)  # r1 of g0 forks at 2, then again at 5 and 7
    assert math.isnan(later_fork_rate([]))


def test_per_group_pools_only_the_shortest_successes(groups):
    """`per_group=k` builds GRSD's RFT part as RFT builds its own: the k shortest successes of each group."""
    import dataclasses

    g = groups[0]
    ok, bad = g.trajectories
    tid = ok.traj_id + "-long"
    steps = [dataclasses.replace(s, traj_id=tid, t=i) for i, s in enumerate([*ok.steps[:-1], *ok.steps[-2:]])]
    longer = dataclasses.replace(ok, traj_id=tid, steps=steps)
    g2 = dataclasses.replace(g, trajectories=[longer, ok, bad])
    for k, expected in ((1, len(ok.steps)), (0, 2 * len(ok.steps) + 1)):
        m = GRSD(grsd_alone(per_group=k)).update(RecordingPolicy(), [g2], iteration=1, seed=0)
        assert m["grsd/rft_samples"] == expected, k


def test_same_history_rate_compares_each_forks_two_histories():
    from types import SimpleNamespace as NS

    from algos.grsd import same_history_rate

    def fork(failed_hist, teacher_hist):
        return NS(steps=(NS(history=failed_hist), NS(history=teacher_hist)))

    forks = [fork([], []), fork(["a"], ["a"]), fork(["a", "b"], ["a", "c"]), fork(["x"], [])]
    assert same_history_rate(forks) == pytest.approx(2 / 4)
    assert math.isnan(same_history_rate([]))


GRSD_TRAIN = [
    "algo=grsd",
    "tasks=SystemWifiTurnOn,OpenAppTaskEval,SystemCopyToClipboard",
    "rft.iterations=1", "rft.instances_per_iter=6", "rft.group_size=4",
    "grsd.iterations=1", "grsd.instances_per_iter=6", "grsd.group_size=4",
    "eval_n_per_task=2", "env.num_envs=4", "base.demos_per_task=2", "base.epochs=6",
    "wandb=disabled", "progress=false",
]


@pytest.mark.slow
def test_grsd_can_continue_rfts_pool_and_demonstrations_through_train(tmp_path, capsys):
    """grsd.rft_pool (the experiments' default): GRSD's success pool starts as the RFT start checkpoint's (the
    same groups, then its own); grsd.demos (default too): the base's demonstrations join every update.
    Neither: the pool starts empty."""
    from algos.buffer import TrajectoryBuffer
    from algos.run import checkpoint_dir
    from experiments.train import main

    cache = tmp_path / "cache"
    plain, cont = tmp_path / "plain", tmp_path / "cont"
    main([*GRSD_TRAIN, f"out_dir={plain}", f"cache_dir={cache}", "grsd.rft_pool=false", "grsd.demos=false"])
    main([*GRSD_TRAIN, f"out_dir={cont}", f"cache_dir={cache}"])
    rft_dirs = list(cache.glob("rft-*"))
    assert len(rft_dirs) == 1  # both started from the same cached RFT checkpoint
    rft_pool = TrajectoryBuffer.load(checkpoint_dir(rft_dirs[0]) / "successes.parquet")
    assert rft_pool.groups  # the start solved something: otherwise this test shows nothing

    def pool(run):
        return TrajectoryBuffer.load(checkpoint_dir(run) / "successes.parquet")

    def row(run):
        return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()][1]

    ids = {"rft-" + g.group_id for g in rft_pool.groups}  # marked as RFT's: GRSD's seeds repeat RFT's ids
    assert ids <= {g.group_id for g in pool(cont).groups}
    assert not any(g.group_id.startswith("rft-") for g in pool(plain).groups)
    rft_steps = sum(len(t.steps) for g in rft_pool.groups for t in g.trajectories)
    p, c = row(plain), row(cont)
    assert p["train/demo_samples"] == 0 and c["train/demo_samples"] >= 2 * 3 * 2  # 2 episodes x 3 tasks
    assert c["grsd/rft_samples"] >= rft_steps + c["train/demo_samples"]
    other = tmp_path / "other"  # from a saved policy: not the RFT start, so no pool to continue (said so)
    main([*GRSD_TRAIN, f"out_dir={other}", f"cache_dir={cache}",
          f"policy.path={checkpoint_dir(rft_dirs[0]) / 'policy'}"])
    assert "policy.path=" in capsys.readouterr().out
    assert not any(g.group_id.startswith("rft-") for g in pool(other).groups)
