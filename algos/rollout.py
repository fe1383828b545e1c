"""Group rollouts: G trajectories for each of K task instances through one vector env, batched policy calls.

Sub-envs pull jobs (instance k, rollout g) from a queue and reset themselves as soon as they finish
(continuous batching, with gymnasium's autoreset DISABLED and masked resets), so the policy always sees a
full batch. Each finished trajectory lands in its instance's `Group`. Errored episodes are kept and flagged
(`Trajectory.errored`), never counted as failures.

With a `PipelinedVectorEnv` (make_vec(..., "pipelined")) the policy acts on one lane of sub-envs while worker
processes step the others, so env stepping and policy forward passes overlap on two cores; what happens
depends on the lanes only, so any worker count gives the same trajectories. Steps keep the observation's
element objects and no prompt text (`Step.prompt` is rendered when read).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from PIL import Image

from algos.buffer import Group, Step, Trajectory
from algos.policies.base import Policy, PolicyOutput
from algos.prompt import PolicyInput, SeenElements
from algos.timing import PHASES
from voyager_gym.suites import TaskInstance
from voyager_gym.vector import PipelinedVectorEnv


@dataclasses.dataclass
class RolloutConfig:
    group_size: int = 4  # G: rollouts per task instance
    greedy: bool = False  # argmax actions (evaluation) instead of sampling
    thumb_width: int = 96  # thumbnail width kept per step when observations have pixels (0: none)
    keep_frames: bool = False  # also keep the full frames
    frames_of: str = "all"  # with keep_frames: "all" groups, only "mixed" ones (successes and failures: what
    # fork detection compares) or only "scored" ones (some rollout scored > 0: where GiGPO's step returns can
    # differ); the others' frames are dropped as soon as their last rollout ends
    progress: bool = False  # a rich progress bar
    seed: int = 0  # base of the per-trajectory env seeds (screen noise)
    replay_frames: dict[str, Any] | None = None  # with keep_frames: kwargs of a SimDroid VoyagerEnv
    # (observation_mode "full") that renders the kept frames afterwards, by replaying each kept group's
    # episodes (same instance, env seed and actions: SimDroid is deterministic, and draws its screen noise
    # whether or not it renders); the rollout envs then render no screenshots at all


FRAMES_OF = ("all", "mixed", "scored")


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


def _frame(pixels: np.ndarray | None, keep: bool, copy: bool) -> np.ndarray | None:
    if pixels is None or not keep:
        return None
    return np.array(pixels) if copy else pixels


def _info_params(info: dict[str, Any]) -> dict[str, Any]:
    """The params the env's backend drew (instances without params leave them to the env)."""
    p = info.get("params")
    return dict(p) if isinstance(p, dict) else {}


def _row(x: Any, i: int) -> Any:
    """Element i of a batched vector-env value (dict of arrays/tuples, array or tuple)."""
    if isinstance(x, dict):
        return {k: _row(v, i) for k, v in x.items()}
    return x[i]


class _Rollouts:
    """The bookkeeping of one `collect` call: which job each sub-env runs, its trajectory so far, its last
    observation, and the groups that finished trajectories land in."""

    def __init__(self, policy: Policy, envs: Any, instances: list[TaskInstance], cfg: RolloutConfig):
        self.policy, self.envs, self.instances, self.cfg = policy, envs, instances, cfg
        n = envs.num_envs
        G = cfg.group_size
        self.jobs = [(k, g) for k in range(len(instances)) for g in range(G)]
        self.groups = [
            Group(
                group_id=f"s{cfg.seed}-g{k}",  # unique per rollout seed and instance
                task=inst.name,
                instance_seed=inst.seed,
                params=dict(inst.params or {}),
                trajectories=[],
            )
            for k, inst in enumerate(instances)
        ]
        if cfg.frames_of not in FRAMES_OF:
            raise ValueError(f"frames_of must be one of {', '.join(FRAMES_OF)}, got {cfg.frames_of!r}")
        self.slots: list[list[Trajectory | None]] = [[None] * G for _ in instances]
        self.left = [G] * len(instances)  # rollouts of each group still running or to come
        # gymnasium's vector envs reuse their pixel buffers; a pipelined env's frames arrive as new arrays
        self.copy_frames = not isinstance(envs, PipelinedVectorEnv)
        self.next_job = 0
        self.done_jobs = 0
        self.job_of: list[int | None] = [None] * n  # job each sub-env runs (None: idle or a dropped filler)
        self.trajs: list[Trajectory | None] = [None] * n
        self.hist: list[list[str]] = [[] for _ in range(n)]
        self.seen = [SeenElements() for _ in range(n)]  # what each episode read on its earlier screens
        self.inputs: list[PolicyInput | None] = [None] * n  # what the policy sees next (None: not running)
        self.info: list[dict] = [{} for _ in range(n)]
        self.replay_env: Any = None  # built on first use (replay_frames)
        self.progress = None
        if cfg.progress:
            from rich.progress import Progress

            self.progress = Progress(transient=True)
            self.progress.start()
            self.bar = self.progress.add_task("rollouts", total=len(self.jobs))

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self.replay_env is not None:
            self.replay_env.close()

    def _replay(self, k: int) -> None:
        """Render group k's frames by replaying its episodes on one pixel env: each step's frame is the
        screenshot of the observation it acted on, exactly as a rendering env would have shown it."""
        if self.replay_env is None:
            from voyager_gym.env import VoyagerEnv

            self.replay_env = VoyagerEnv(**self.cfg.replay_frames)
        env = self.replay_env
        with PHASES("render"):
            for t in self.slots[k]:
                if t is None or t.errored or not t.steps:
                    continue
                obs, _ = env.reset(seed=t.env_seed, options={"task": t.task, "params": dict(t.params)})
                for n, s in enumerate(t.steps):
                    s.frame = np.array(obs["pixels"])
                    if self.cfg.thumb_width > 0:
                        s.thumbnail = _thumb(s.frame, self.cfg.thumb_width)
                    if n + 1 < len(t.steps):
                        obs, *_ = env.step(s.response)

    def _keeps_frames(self, k: int) -> bool:
        """Whether finished group k keeps its frames (`frames_of`)."""
        trajs = [t for t in self.slots[k] if t is not None and not t.errored]
        if self.cfg.frames_of == "mixed":
            return any(t.success for t in trajs) and not all(t.success for t in trajs)
        if self.cfg.frames_of == "scored":
            return any(t.score > 0 for t in trajs)
        return True

    def result(self) -> list[Group]:
        for k, grp in enumerate(self.groups):
            grp.trajectories = [t for t in self.slots[k] if t is not None]
            if not grp.params and grp.trajectories:  # the instance left its params to the envs: theirs
                grp.params = dict(grp.trajectories[0].params)
        return self.groups

    def env_seed(self, i: int) -> int:
        return self.cfg.seed * 1_000_003 + 7919 * (self.next_job + 1) + i

    def take_job(self, i: int) -> tuple[int, dict[str, Any]] | None:
        """Give sub-env i the next job: (its reset seed, reset options), or None when none is left."""
        if self.next_job >= len(self.jobs):
            self.job_of[i] = None
            return None
        seed = self.env_seed(i)
        self.job_of[i] = self.next_job
        self.next_job += 1
        return seed, self.instances[self.jobs[self.job_of[i]][0]].options()

    def begin(self, i: int, seed: int, obs: dict[str, Any], info: dict[str, Any]) -> None:
        """Sub-env i was reset for its job: start its trajectory (none for a filler)."""
        self.info[i] = info
        self.hist[i] = []
        self.seen[i] = SeenElements()
        self.inputs[i] = self._input(i, obs)
        j = self.job_of[i]
        if j is None:
            self.trajs[i] = None
            return
        k, g = self.jobs[j]
        inst, grp = self.instances[k], self.groups[k]
        self.trajs[i] = Trajectory(
            traj_id=f"{grp.group_id}-r{g}",
            group_id=grp.group_id,
            task=inst.name,
            instance_seed=inst.seed,
            params=dict(inst.params or _info_params(info)),
            goal=obs["goal"],
            steps=[],
            score=0.0,
            success=False,
            errored=False,
            env_seed=seed,
        )

    def _input(self, i: int, obs: dict[str, Any]) -> PolicyInput:
        info = self.info[i]
        els = obs["ui_elements"]
        els = els if isinstance(els, tuple) else tuple(els)
        return PolicyInput(goal=obs["goal"], elements=els, history=self.hist[i],
                           pixels=obs.get("pixels"), step=int(info.get("step", 0)),
                           max_steps=int(info.get("max_steps", 10)), seen=self.seen[i].view(els),
                           acted=self.seen[i].acted)

    def _drop_frames_unless_kept(self, k: int) -> None:
        if self._keeps_frames(k):
            return
        for t in self.slots[k]:
            for s in t.steps if t is not None else ():
                s.frame = None

    def act(self, ids: list[int]) -> list[PolicyOutput]:
        with PHASES("policy"):
            return self.policy.act([self.inputs[i] for i in ids], greedy=self.cfg.greedy)

    def record(self, i: int, o: PolicyOutput, obs: dict[str, Any], reward: float, term: bool, trunc: bool,
               info: dict[str, Any]) -> bool:
        """Sub-env i took `o` and saw (obs, reward, term, trunc, info): add the step to its trajectory.
        Returns whether its episode ended (its trajectory, if it had a job, then lands in its group)."""
        cfg, x, t = self.cfg, self.inputs[i], self.trajs[i]
        if t is not None:
            t.steps.append(
                Step(
                    group_id=t.group_id,
                    traj_id=t.traj_id,
                    t=len(t.steps),
                    goal=x.goal,
                    history=x.history,  # never mutated: each step's history is a new list
                    prompt=None,  # rendered from the step when first read
                    response=o.text,
                    action=o.action.to_dict() if o.action is not None else None,
                    valid=o.action is not None and info.get("invalid_action") is None,
                    invalid_reason=info.get("invalid_action"),
                    ui_elements=x.elements,
                    seen=x.seen,
                    acted=x.acted,
                    screen_key=str(self.info[i].get("screen_key", "")),
                    thumbnail=_thumb(x.pixels, cfg.thumb_width),
                    frame=_frame(x.pixels, cfg.keep_frames, self.copy_frames),
                    reward=float(reward),
                    done=bool(term or trunc),
                    logprob=float(o.logprob),
                    value=o.value,
                    step_max=x.max_steps,
                )
            )
        # a new list: the step just recorded keeps its own copy, the next input the grown one
        self.hist[i] = [*self.hist[i], o.action.to_json() if o.action is not None else "(invalid action)"]
        self.seen[i].add(x.elements, self.hist[i][-1])
        self.info[i] = info
        if not (term or trunc):
            self.inputs[i] = self._input(i, obs)
            return False
        self.inputs[i] = None
        if t is not None:
            t.errored = bool(info.get("errored"))
            t.score = float(info.get("score", 0.0)) if term else 0.0
            if t.errored:
                t.score = float("nan")
            t.success = (not t.errored) and t.score >= 1.0
            k, g = self.jobs[self.job_of[i]]
            self.slots[k][g] = t
            self.left[k] -= 1
            if self.left[k] == 0 and cfg.keep_frames:
                if cfg.replay_frames is not None:
                    if self._keeps_frames(k):
                        self._replay(k)
                elif cfg.frames_of != "all":
                    self._drop_frames_unless_kept(k)
            self.done_jobs += 1
            if self.progress is not None:
                self.progress.update(self.bar, completed=self.done_jobs)
        self.trajs[i] = None
        return True


class _LaneView:
    """The live sub-envs of one lane, as the expert policy's `bind` sees a vector env (`call` per sub-env)."""

    def __init__(self, envs: Any, ids: list[int]):
        self.envs, self.ids, self.num_envs = envs, ids, len(ids)

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        return self.envs.call_subset(self.ids, name, *args, **kwargs)


def collect(
    policy: Policy,
    envs: Any,
    instances: list[TaskInstance],
    cfg: RolloutConfig | None = None,
) -> list[Group]:
    """Roll `policy` out G times on each instance. `envs` is a vector env made by
    `voyager_gym.vector.make_vec` (autoreset DISABLED). Returns one Group per instance, trajectories in
    rollout order. A `PipelinedVectorEnv` is driven a lane at a time (the policy acts on one lane while the
    others step); its results depend on its lanes, never on its worker count."""
    ro = _Rollouts(policy, envs, instances, cfg or RolloutConfig())
    try:
        if isinstance(envs, PipelinedVectorEnv):
            _run_lanes(ro, envs)
        else:
            _run_batched(ro, envs)
    finally:
        ro.close()
    return ro.result()


def _run_batched(ro: _Rollouts, envs: Any) -> None:
    """Any gymnasium vector env: every sub-env steps together; finished ones are reset (masked) to the next
    job, or to a copy of the first one whose results are dropped when none is left (a full batch)."""
    n = envs.num_envs
    ro.policy.bind(envs)

    def start(mask: np.ndarray) -> None:
        seeds, table = [], {}
        for i in range(n):
            seed = ro.env_seed(i)
            if mask[i]:
                job = ro.take_job(i)
                table[seed] = job[1] if job is not None else ro.instances[ro.jobs[0][0]].options()
            seeds.append(seed)
        with PHASES("env"):
            obs, infos = envs.reset(seed=seeds, options={"instances": table, "reset_mask": mask})
        with PHASES("buffer"):
            for i in np.nonzero(mask)[0]:
                ro.begin(i, seeds[i], _row(obs, i), _row(infos, i))

    start(np.ones(n, dtype=bool))
    while ro.done_jobs < len(ro.jobs):
        outs = ro.act(list(range(n)))
        with PHASES("env"):
            obs, rewards, terms, truncs, infos = envs.step([o.text for o in outs])
        with PHASES("buffer"):
            finished = np.array([ro.record(i, outs[i], _row(obs, i), rewards[i], terms[i], truncs[i],
                                           _row(infos, i)) for i in range(n)])
        if finished.any() and ro.done_jobs < len(ro.jobs):
            start(finished)


def _run_lanes(ro: _Rollouts, envs: PipelinedVectorEnv) -> None:
    """Lane by lane in a fixed order: collect the lane's results, act on its running sub-envs, send their
    actions together with resets of its idle sub-envs to the next jobs. A sub-env whose episode ended sits
    out one turn of its lane (its reset travels with the lane's next steps), so nothing ever waits on a
    reset alone; once the jobs run out, idle sub-envs stay idle."""
    in_flight: set[int] = set()
    seeds: dict[int, int] = {}
    outs: dict[int, PolicyOutput] = {}
    try:
        for k, lane in enumerate(envs.lanes):
            resets = {}
            for i in lane:
                job = ro.take_job(i)
                if job is not None:
                    seeds[i] = job[0]
                    resets[i] = job
            if resets:
                with PHASES("env"):  # in-process lanes run here, worker-hosted ones only get the message
                    envs.send(k, resets, {})
                in_flight.add(k)
        while in_flight:
            for k, lane in enumerate(envs.lanes):
                if k not in in_flight:
                    continue
                with PHASES("env"):
                    reset_out, step_out = envs.recv(k)
                in_flight.discard(k)
                with PHASES("buffer"):
                    for i in sorted(step_out):
                        obs, r, term, trunc, info = step_out[i]
                        ro.record(i, outs.pop(i), obs, r, term, trunc, info)
                    for i in sorted(reset_out):
                        obs, info = reset_out[i]
                        ro.begin(i, seeds.pop(i), obs, info)
                live = [i for i in lane if ro.inputs[i] is not None]
                if live:
                    ro.policy.bind(_LaneView(envs, live))
                    outs.update(zip(live, ro.act(live), strict=True))
                resets = {}
                for i in lane:
                    if ro.inputs[i] is None and (job := ro.take_job(i)) is not None:
                        seeds[i] = job[0]
                        resets[i] = job
                if live or resets:
                    with PHASES("env"):
                        envs.send(k, resets, {i: outs[i].text for i in live})
                    in_flight.add(k)
    finally:
        for k in in_flight:  # an error left requests in flight: collect their answers (or errors) first
            try:
                envs.recv(k)
            except Exception:  # noqa: BLE001,S110 - the error being raised already says what went wrong
                pass
