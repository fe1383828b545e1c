"""Fork-level measurement: what an update does at the states where the policy's rollouts forked.

Pass@1 over the held-out suite is a blunt instrument for an update that changes a few dozen decisions an
iteration. This module measures those decisions directly. For every *fork state* of an iteration (a failed
trajectory's state at a fork step: algos/forks/), replayed on SimDroid and snapshotted:
- the policy's greedy action there, compared with the teacher's action(s) (the fork's label) and with the task
  expert's action at the same state;
- a greedy rollout of the policy from there: does it now succeed?
Measured before an update and after it; GRSD measures the same states after several updates made from the
same checkpoint on the same groups (algos/grsd.py: `fork_eval`), so the arms are paired state by state.

A state's outcome triple is (greedy == teacher, greedy == expert, greedy rollout succeeded); the last is None
where the replay did not reach the state's screen.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from algos.branch import Branch, expert_actions, play, taken
from algos.forks.examples import ForkExample
from algos.policies.base import Policy
from algos.prompt import PolicyInput
from voyager_gym.actions import Action, try_parse_action
from voyager_gym.env import Snapshot


def action_json(action: Action | dict[str, Any] | None) -> str:
    """An action as canonical JSON text ("" for an invalid action): how actions are compared here."""
    if action is None:
        return ""
    return (action if isinstance(action, Action) else Action.from_dict(action)).to_json()


def text_action(text: str) -> str:
    """`action_json` of what a response or an expert's JSON text says ("" when it does not parse)."""
    return action_json(try_parse_action(text)[0])


@dataclasses.dataclass
class ForkState:
    """One failed state of an iteration's forks, with every teacher action proposed for it."""

    key: tuple[str, str, int]  # (group, failed trajectory, failed step)
    task: str
    input: PolicyInput  # the failed step's policy input
    screen_key: str
    failed: str  # the failed step's action (action_json)
    teachers: tuple[str, ...]  # the teacher steps' actions (action_json), distinct, in fork order
    replay: Branch  # the failed trajectory's instance and actions up to the state (stops there)
    history: tuple[str, ...]  # what a continuation from the state remembers
    screens: tuple[Any, ...]
    snapshot: Snapshot | None = None  # set by `reach` where the replay arrived at the state's screen
    expert: str = ""  # the expert's action there (action_json), set by `reach`


def fork_states(forks: list[ForkExample]) -> list[ForkState]:
    """The distinct failed states of `forks`, in fork order; a state taught by several teachers lists each
    distinct teacher action once."""
    out: dict[tuple[str, str, int], ForkState] = {}
    for f in forks:
        failed, teacher = f.steps
        key = (f.group.group_id, f.failed.traj_id, f.failed_step)
        t = action_json(teacher.action)
        if key in out:
            if t not in out[key].teachers:
                out[key].teachers += (t,)
            continue
        out[key] = ForkState(
            key, f.failed.task, failed.policy_input(), failed.screen_key, action_json(failed.action), (t,),
            Branch({"task": f.failed.task, "params": dict(f.failed.params)}, seed=f.failed.env_seed,
                   forced=tuple(taken(s) for s in f.failed.steps[: f.failed_step]), policy=False),
            tuple(failed.history), tuple(s.elements for s in f.failed.steps[: f.failed_step]))
    return list(out.values())


def reach(policy: Policy, envs: Any, states: list[ForkState]) -> int:
    """Replay each state's trajectory to it on `envs` (SimDroid), keep a snapshot where the replay shows the
    state's screen (`screen_key`), and ask the task expert for its action there. Returns the env steps
    taken."""
    todo = [s for s in states if s.snapshot is None]
    if not todo:
        return 0
    ran = play(policy, envs, [s.replay for s in todo])
    for s, r in zip(todo, ran, strict=True):
        if r.snapshot is not None and (not s.screen_key or r.snapshot.screen_key == s.screen_key):
            s.snapshot = r.snapshot
    reached = [s for s in todo if s.snapshot is not None]
    for s, text in zip(reached, expert_actions(envs, [s.snapshot for s in reached]), strict=True):
        s.expert = text_action(text)
    return sum(r.steps for r in ran)


def greedy_actions(policy: Policy, inputs: list[PolicyInput]) -> list[str]:
    """The policy's greedy action (action_json) at each input."""
    if not inputs:
        return []
    return [action_json(o.action) for o in policy.act(inputs, greedy=True)]


def measure(policy: Policy, envs: Any, states: list[ForkState], rollouts: bool = True,
            acts: list[str] | None = None) -> tuple[list[tuple[bool, bool, bool | None]], int]:
    """Each state's outcome triple under `policy` (see the module docstring) and the env steps the greedy
    rollouts took (`rollouts=False`: none, the success left None). `acts`: the policy's greedy actions at the
    states when the caller has them already."""
    if acts is None:
        acts = greedy_actions(policy, [s.input for s in states])
    success: list[bool | None] = [None] * len(states)
    steps = 0
    if rollouts:
        idx = [i for i, s in enumerate(states) if s.snapshot is not None]
        ran = play(policy, envs, [Branch(states[i].snapshot, history=states[i].history,
                                         screens=states[i].screens) for i in idx], greedy=True)
        for i, r in zip(idx, ran, strict=True):
            success[i] = None if r.errored else bool(r.success)
        steps = sum(r.steps for r in ran)
    out = [(a in s.teachers, bool(s.expert) and a == s.expert, ok)
           for a, s, ok in zip(acts, states, success, strict=True)]
    return out, steps


def _rate(xs: list[bool]) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def summary(before: list[tuple[bool, bool, bool | None]], after: list[tuple[bool, bool, bool | None]],
            prefix: str) -> dict[str, float]:
    """Rates of one arm's outcomes against the states' outcomes before its update: the share of states whose
    greedy action matches the teacher (`teacher`) or the expert (`expert`), the share of mismatched states it
    fixed (`fix`: teacher match after among those without it before) and of matched states it broke (`break`),
    and the greedy rollouts' success rate (`success`, over reached states)."""
    fixes = [a[0] for b, a in zip(before, after, strict=True) if not b[0]]
    breaks = [not a[0] for b, a in zip(before, after, strict=True) if b[0]]
    return {f"{prefix}/teacher": _rate([a[0] for a in after]),
            f"{prefix}/expert": _rate([a[1] for a in after]),
            f"{prefix}/fix": _rate(fixes),
            f"{prefix}/break": _rate(breaks),
            f"{prefix}/success": _rate([a[2] for a in after if a[2] is not None])}


def paired_bootstrap(a: np.ndarray, b: np.ndarray, reps: int = 10_000, seed: int = 0
                     ) -> tuple[float, float, float]:
    """mean(a - b) over paired units (NaN pairs dropped) and its 95% percentile bootstrap interval,
    resampling the units with replacement (a fixed numpy seed: the same data give the same interval)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    d = d[~np.isnan(d)]
    if not len(d):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(reps, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))
