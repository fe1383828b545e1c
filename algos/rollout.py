"""Group rollouts: G trajectories for each of K task instances through one vector env, batched policy calls.

Sub-envs pull jobs (instance k, rollout g) from a queue and reset themselves as soon as they finish
(continuous batching, with gymnasium's autoreset DISABLED and masked resets), so the policy always sees a
full batch. Each finished trajectory lands in its instance's `Group`. Errored episodes are kept and flagged
(`Trajectory.errored`), never counted as failures.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from PIL import Image

from algos.buffer import Group, Step, Trajectory
from algos.policies.base import Policy
from algos.prompt import PolicyInput, render_prompt
from voyager_gym.suites import TaskInstance


@dataclasses.dataclass
class RolloutConfig:
    group_size: int = 4  # G: rollouts per task instance
    greedy: bool = False  # argmax actions (evaluation) instead of sampling
    thumb_width: int = 96  # thumbnail width kept per step when observations have pixels (0: none)
    keep_frames: bool = False  # also keep the full frames
    progress: bool = False  # a rich progress bar
    seed: int = 0  # base of the per-trajectory env seeds (screen noise)


def has_pixels(envs: Any) -> bool:
    """Whether the (vector) env's observations carry screenshots (then image policies train on the frames)."""
    space = getattr(envs, "single_observation_space", None) or envs.observation_space
    return "pixels" in getattr(space, "spaces", {})


def _thumb(pixels: np.ndarray | None, width: int) -> np.ndarray | None:
    if pixels is None or width <= 0:
        return None
    h, w = pixels.shape[:2]
    if w <= width:
        return np.array(pixels)
    img = Image.fromarray(pixels).resize((width, max(1, round(h * width / w))), Image.Resampling.BOX)
    return np.asarray(img)


def _info_params(info: dict[str, Any]) -> dict[str, Any]:
    """The params the env's backend drew (instances without params leave them to the env)."""
    p = info.get("params")
    return dict(p) if isinstance(p, dict) else {}


def _row(x: Any, i: int) -> Any:
    """Element i of a batched vector-env value (dict of arrays/tuples, array or tuple)."""
    if isinstance(x, dict):
        return {k: _row(v, i) for k, v in x.items()}
    return x[i]


def collect(
    policy: Policy,
    envs: Any,
    instances: list[TaskInstance],
    cfg: RolloutConfig | None = None,
) -> list[Group]:
    """Roll `policy` out G times on each instance. `envs` is a vector env made by
    `voyager_gym.vector.make_vec` (autoreset DISABLED). Returns one Group per instance, trajectories in
    rollout order."""
    cfg = cfg or RolloutConfig()
    n = envs.num_envs
    G = cfg.group_size
    jobs = [(k, g) for k in range(len(instances)) for g in range(G)]
    groups = [
        Group(
            group_id=f"s{cfg.seed}-g{k}",  # unique per rollout seed and instance
            task=inst.name,
            instance_seed=inst.seed,
            params=dict(inst.params or {}),
            trajectories=[],
        )
        for k, inst in enumerate(instances)
    ]
    slots: list[list[Trajectory | None]] = [[None] * G for _ in instances]
    policy.bind(envs)

    next_job = 0
    job_of: list[int | None] = [None] * n  # job index each sub-env is running (None: idle filler)
    trajs: list[Trajectory | None] = [None] * n
    hist: list[list[str]] = [[] for _ in range(n)]
    obs_i: list[dict] = [{} for _ in range(n)]
    info_i: list[dict] = [{} for _ in range(n)]

    def job_options(j: int) -> dict[str, Any]:
        return instances[jobs[j][0]].options()

    def start(mask: np.ndarray) -> None:
        nonlocal next_job
        seeds, table = [], {}
        for i in range(n):
            seed = cfg.seed * 1_000_003 + 7919 * (next_job + 1) + i
            if mask[i]:
                if next_job < len(jobs):
                    job_of[i] = next_job
                    table[seed] = job_options(next_job)
                    next_job += 1
                else:  # nothing left: keep the sub-env busy on a copy of the first job, results dropped
                    job_of[i] = None
                    table[seed] = job_options(0)
            seeds.append(seed)
        obs, infos = envs.reset(seed=seeds, options={"instances": table, "reset_mask": mask})
        for i in np.nonzero(mask)[0]:
            obs_i[i], info_i[i] = _row(obs, i), _row(infos, i)
            hist[i] = []
            j = job_of[i]
            if j is not None:
                k, g = jobs[j]
                trajs[i] = Trajectory(
                    traj_id=f"{groups[k].group_id}-r{g}",
                    group_id=groups[k].group_id,
                    task=instances[k].name,
                    instance_seed=instances[k].seed,
                    params=dict(instances[k].params or _info_params(info_i[i])),
                    goal=obs_i[i]["goal"],
                    steps=[],
                    score=0.0,
                    success=False,
                    errored=False,
                    env_seed=seeds[i],
                )
            else:
                trajs[i] = None

    progress = None
    if cfg.progress:
        from rich.progress import Progress

        progress = Progress(transient=True)
        progress.start()
        bar = progress.add_task("rollouts", total=len(jobs))
    done_jobs = 0
    start(np.ones(n, dtype=bool))
    try:
        while done_jobs < len(jobs):
            batch = [
                PolicyInput.from_obs(
                    obs_i[i],
                    hist[i],
                    step=int(info_i[i].get("step", 0)),
                    max_steps=int(info_i[i].get("max_steps", 10)),
                )
                for i in range(n)
            ]
            outs = policy.act(batch, greedy=cfg.greedy)
            actions = [o.text for o in outs]
            obs, rewards, terms, truncs, infos = envs.step(actions)
            finished = np.zeros(n, dtype=bool)
            for i in range(n):
                info = _row(infos, i)
                t = trajs[i]
                if t is not None:
                    x, o = batch[i], outs[i]
                    t.steps.append(
                        Step(
                            group_id=t.group_id,
                            traj_id=t.traj_id,
                            t=len(t.steps),
                            goal=x.goal,
                            history=list(x.history),
                            prompt=render_prompt(x),
                            response=o.text,
                            action=o.action.to_dict() if o.action is not None else None,
                            valid=o.action is not None and info.get("invalid_action") is None,
                            invalid_reason=info.get("invalid_action"),
                            ui_elements=[e.to_dict() for e in x.elements],
                            screen_key=str(info_i[i].get("screen_key", "")),
                            thumbnail=_thumb(x.pixels, cfg.thumb_width),
                            frame=np.array(x.pixels) if cfg.keep_frames and x.pixels is not None else None,
                            reward=float(rewards[i]),
                            done=bool(terms[i] or truncs[i]),
                            logprob=float(o.logprob),
                            value=o.value,
                            step_max=x.max_steps,
                        )
                    )
                    hist[i].append(o.action.to_json() if o.action is not None else "(invalid action)")
                obs_i[i], info_i[i] = _row(obs, i), info
                if terms[i] or truncs[i]:
                    finished[i] = True
                    if t is not None:
                        t.errored = bool(info.get("errored"))
                        t.score = float(info.get("score", 0.0)) if terms[i] else 0.0
                        if t.errored:
                            t.score = float("nan")
                        t.success = (not t.errored) and t.score >= 1.0
                        k, g = jobs[job_of[i]]
                        slots[k][g] = t
                        done_jobs += 1
                        if progress is not None:
                            progress.update(bar, completed=done_jobs)
                    trajs[i] = None
            if finished.any() and done_jobs < len(jobs):
                start(finished)
    finally:
        if progress is not None:
            progress.stop()
    for k, grp in enumerate(groups):
        grp.trajectories = [t for t in slots[k] if t is not None]
    return groups
