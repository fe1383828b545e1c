"""Branch rollouts: episodes that start mid-way, from a task instance replayed up to a step or from a
`voyager_gym.env.Snapshot`, play some forced actions, then let the policy finish (or stop and snapshot).

All sub-envs of a vector env step together, as in `algos.rollout`: a sub-env takes the next branch as soon as
its last one ends (a masked reset whose options carry the instance or the snapshot; `voyager_gym.vector`), and
once none is left it runs a copy of the first, whose results are dropped, so the batch stays full. Used by
GRSD to check its forks (`algos.grsd.verify_forks`); the same machinery gives Monte Carlo returns from any
saved state (`algos.vine`'s step values).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from algos.buffer import Step
from algos.policies.base import Policy
from algos.prompt import PolicyInput, SeenElements
from algos.rollout import _row
from algos.timing import PHASES
from voyager_gym import vector
from voyager_gym.actions import Action
from voyager_gym.env import Snapshot
from voyager_gym.observation import UIElement

WAIT = '{"action_type": "wait"}'  # what a filler plays once its forced actions are spent


def taken(step: Step) -> tuple[str, str]:
    """(response text, history entry) of a step's action, as a rollout plays and remembers it: what a branch
    forces to replay that step."""
    entry = Action.from_dict(step.action).to_json() if step.action is not None else "(invalid action)"
    return step.response, entry


@dataclasses.dataclass(frozen=True)
class Branch:
    """Where an episode starts and what it plays first. `start` is a Snapshot, or reset options of a task
    instance ({"task", "params"}) reset with `seed`. `forced` are (response text, history entry) pairs played
    before the policy acts; `history` and `screens` are the episode's actions and acted-on screens before
    the start (what the policy's input remembers). With `policy=False` the branch stops once its forced
    actions are played and its result carries a snapshot of that state. `snap_at`: step counts (0: the start)
    after which the state is also snapshotted on the way (one replay gives every state of a trajectory);
    the result's `snapshots` holds those reached, in order."""

    start: Snapshot | dict[str, Any]
    seed: int = 0
    forced: tuple[tuple[str, str], ...] = ()
    history: tuple[str, ...] = ()
    screens: tuple[tuple[UIElement, ...], ...] = ()
    policy: bool = True
    snap_at: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        at = list(self.snap_at)
        if at != sorted(set(at)) or (at and at[0] < 0):
            raise ValueError(f"snap_at={self.snap_at!r}: expected increasing step counts >= 0")
        if at and not self.policy and at[-1] > len(self.forced):
            raise ValueError(f"snap_at={self.snap_at!r} goes past the {len(self.forced)} forced actions of a "
                             "branch without the policy (it stops there)")


@dataclasses.dataclass
class BranchResult:
    """How a branch ended: its score (NaN if errored), success, env steps taken, (policy=False) the
    snapshot of the state it reached, and the snapshots taken on the way (`Branch.snap_at`)."""

    score: float = 0.0
    success: bool = False
    errored: bool = False
    steps: int = 0
    snapshot: Snapshot | None = None
    snapshots: tuple[Snapshot, ...] = ()


class _Lane:
    """One sub-env's branch in progress: the actions left to force and what the policy's input needs."""

    def __init__(self, job: int | None, branch: Branch):
        self.job, self.branch = job, branch  # job None: a filler (a copy of branch 0, results dropped)
        self.forced = list(branch.forced)
        self.history = list(branch.history)
        self.seen = SeenElements()
        for els, entry in zip(branch.screens, branch.history, strict=True):
            self.seen.add(els, entry)
        self.input: PolicyInput | None = None
        self.steps = 0
        self.snaps: list[Snapshot] = []  # taken on the way (Branch.snap_at)

    def observe(self, obs: dict[str, Any], info: dict[str, Any]) -> None:
        els = tuple(obs["ui_elements"])
        self.input = PolicyInput(goal=obs["goal"], elements=els, history=self.history,
                                 pixels=obs.get("pixels"), step=int(info.get("step", 0)),
                                 max_steps=int(info.get("max_steps", 10)), seen=self.seen.view(els),
                                 acted=self.seen.acted)

    @property
    def settled(self) -> bool:
        """A real branch without the policy that has played its forced actions: snapshot it, it is done."""
        return self.job is not None and not self.branch.policy and not self.forced


def play(policy: Policy, envs: Any, branches: list[Branch], greedy: bool = False) -> list[BranchResult]:
    """Play every branch on `envs` (any vector env of SimDroid sub-envs, autoreset DISABLED); one result per
    branch, in order. The policy acts for every sub-env at once (the expert reads each sub-env's screen)."""
    if not branches:
        return []
    n = envs.num_envs
    results: list[BranchResult | None] = [None] * len(branches)
    lanes: list[_Lane | None] = [None] * n
    todo = list(range(len(branches)))[::-1]  # a stack: pop() gives the next branch in order
    by_seed: dict[int, Any] = {}
    for b in branches:
        if not isinstance(b.start, Snapshot) and by_seed.setdefault(b.seed, b.start) != b.start:
            raise ValueError(f"branches reset with seed {b.seed} start different instances "
                             f"({by_seed[b.seed]} and {b.start}); expected one instance per reset seed")
    spare = max(by_seed, default=0) + 1  # reset seeds for snapshot starts (a restore ignores them)
    policy.bind(envs)

    def start(ids: list[int]) -> None:
        seeds, table = list(range(spare, spare + n)), {}
        for i in ids:
            job = todo.pop() if todo else None
            b = branches[0 if job is None else job]
            lanes[i] = _Lane(job, b)
            if isinstance(b.start, Snapshot):
                table[seeds[i]] = {"snapshot": b.start}
            else:
                seeds[i] = b.seed
                table[b.seed] = dict(b.start)
        mask = np.zeros(n, dtype=bool)
        mask[ids] = True
        with PHASES("env"):
            obs, infos = envs.reset(seed=seeds, options={"instances": table, "reset_mask": mask})
        for i in ids:
            lanes[i].observe(_row(obs, i), _row(infos, i))
        settle(ids)

    def settle(ids: list[int]) -> None:
        """Snapshot the real branches among `ids` at a step count of their `snap_at`, and end the no-policy
        ones that have played their forced actions (with a snapshot of where they are)."""
        due = [i for i in ids if lanes[i].job is not None and lanes[i].steps in lanes[i].branch.snap_at]
        if due:
            with PHASES("env"):
                snaps = vector.snapshot(envs, due)
            for i, s in zip(due, snaps, strict=True):
                lanes[i].snaps.append(s)
        done = [i for i in ids if lanes[i].settled]
        fresh = [i for i in done if lanes[i].steps not in lanes[i].branch.snap_at]  # the others just took one
        with PHASES("env"):
            snaps = dict(zip(fresh, vector.snapshot(envs, fresh) if fresh else [], strict=True))
        for i in done:
            lane = lanes[i]
            results[lane.job] = BranchResult(steps=lane.steps, snapshot=snaps.get(i) or lane.snaps[-1],
                                             snapshots=tuple(lane.snaps))
        start_later.extend(done)

    start_later: list[int] = []
    start(list(range(n)))
    while any(r is None for r in results):
        if start_later:
            ids, start_later[:] = list(start_later), []
            start(ids)
            continue
        outs = None
        if any(lane.job is not None and lane.branch.policy and not lane.forced for lane in lanes):
            with PHASES("policy"):
                outs = policy.act([lane.input for lane in lanes], greedy=greedy)
        texts, entries = [], []
        for i, lane in enumerate(lanes):
            if lane.forced:
                text, entry = lane.forced.pop(0)
            elif lane.job is None or outs is None:
                text, entry = WAIT, WAIT
            else:
                o = outs[i]
                text, entry = o.text, o.action.to_json() if o.action is not None else "(invalid action)"
            texts.append(text)
            entries.append(entry)
        with PHASES("env"):
            obs, _, terms, truncs, infos = envs.step(texts)
        for i, lane in enumerate(lanes):
            lane.steps += 1
            lane.seen.add(lane.input.elements, entries[i])
            lane.history = [*lane.history, entries[i]]
            info = _row(infos, i)
            if terms[i] or truncs[i]:
                if lane.job is not None:
                    errored = bool(info.get("errored"))
                    score = float("nan") if errored else float(info.get("score", 0.0)) if terms[i] else 0.0
                    results[lane.job] = BranchResult(score, not errored and score >= 1.0, errored, lane.steps,
                                                     snapshots=tuple(lane.snaps))
                start_later.append(i)
            else:
                lane.observe(_row(obs, i), info)
        settle([i for i in range(n) if i not in start_later])
    return results


def expert_actions(envs: Any, snapshots: list[Snapshot]) -> list[str]:
    """The task expert's next action (JSON text) at each of `snapshots` (SimDroid), in order: every sub-env
    restores one snapshot (the last chunk's spare sub-envs restore its first), then each sub-env's expert
    reads its screen. A state off the expert's own path (ExpertOffPath) gets "" (no label). Takes no env
    step."""
    n, out = envs.num_envs, []
    for k in range(0, len(snapshots), n):
        chunk = list(snapshots[k : k + n])
        lanes = chunk + [chunk[0]] * (n - len(chunk))
        with PHASES("env"):
            table = {i: {"snapshot": s} for i, s in enumerate(lanes)}
            mask = np.ones(n, dtype=bool)
            envs.reset(seed=list(range(n)), options={"instances": table, "reset_mask": mask})
            out += list(envs.call("expert_action", off_path=""))[: len(chunk)]
    return out
