"""Maskable PPO from sb3-contrib on SimDroid's simple tasks, through `FixedObsWrapper`.

This is the "off-the-shelf RL" baseline: no language model, no demonstrations. An MLP reads the wrapper's
fixed-size observation (element features, hashed goal words, the last action type) and picks a
MultiDiscrete action [type, element, direction, point, app, text] under the wrapper's action mask, trained
by sb3-contrib's MaskablePPO on training instances (never eval seeds) in a DummyVecEnv (or SubprocVecEnv).

Training runs in chunks of `eval_every` env steps. Before the first chunk and after each one, Pass@1 is
measured greedily on the held-out eval suite (AndroidWorld seeding), a row is logged, and the model is
checkpointed as data only (`SB3Checkpoint`: policy and optimizer tensors in safetensors, the rest in JSON):
never SB3's `model.save` zip, whose entries are cloudpickle and would run code from the run folder on load.
Each chunk starts from freshly reset envs and RNGs seeded by (seed, chunk), so a run killed after chunk K
and resumed from its checkpoint repeats chunk K+1 exactly as an unbroken run.

    from algos.sb3_ppo import train
    rows = train(env_steps=65_536, seed=0, tasks=None, eval_n_per_task=4, out_dir="runs/sb3-ppo-s0")

Measured with the defaults (1 torch thread, ~150 CPU-s for 65k env steps and 9 evaluations): Pass@1 on
DEFAULT_TASKS goes 0 -> 0.125, all of it OpenAppTaskEval (4/4 from 57k steps). The toggles and the slider
need 4-5 exact clicks among ~25 elements before `status`; undirected exploration never finds them in this
budget, which is why UI-Voyager starts RL from a fine-tuned policy.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from algos.buffer import Trajectory
from algos.evaluation import pass_at_1
from algos.fields import check_fields, setting
from algos.loop import NonFiniteError
from algos.run import Run, checkpoint_dir, pin_cpu_numerics
from voyager_gym import actions as A
from voyager_gym.env import VoyagerEnv
from voyager_gym.suites import TaskInstance, eval_suite
from voyager_gym.wrappers import FixedObsWrapper, TrainInstances

# Single-screen-app tasks of 2-6 expert steps: toggles, a slider, opening an app, a shutter button.
DEFAULT_TASKS = [
    "SystemWifiTurnOn",
    "SystemWifiTurnOff",
    "SystemBluetoothTurnOn",
    "SystemBluetoothTurnOff",
    "SystemBrightnessMax",
    "SystemBrightnessMin",
    "OpenAppTaskEval",
    "CameraTakePhoto",
]
# What the default tasks need. Each extra type dilutes random exploration: with all ten types, 41k steps
# found almost no reward (train success 0.3-0.6%, Pass@1 0); with these four, train success grew to 4.8%.
SIMPLE_ACTION_TYPES = (A.CLICK, A.NAVIGATE_BACK, A.OPEN_APP, A.STATUS)
LOSS_KEYS = {
    "train/policy_gradient_loss": "losses/policy",
    "train/value_loss": "losses/value",
    "train/entropy_loss": "losses/entropy",
    "train/approx_kl": "losses/approx_kl",
    "train/clip_fraction": "losses/clip_fraction",
    "train/explained_variance": "losses/explained_variance",
}


@dataclasses.dataclass
class SB3PPOConfig:
    SECTION: ClassVar[str] = "sb3_ppo"  # the key prefix its errors name
    n_envs: int = setting(8, ge=1)  # training envs stepped together
    vec_env: str = setting("dummy", choices=("dummy", "subproc"))  # "dummy" (one process) or "subproc" (one
    # process per env)
    n_steps: int = setting(128, ge=1)  # steps per env per rollout; a rollout is n_envs * n_steps env steps
    batch_size: int = setting(256, ge=1)  # PPO minibatch size
    n_epochs: int = setting(4, ge=1)  # passes over each rollout
    lr: float = setting(3e-4, gt=0)  # Adam learning rate
    gamma: float = setting(0.95, ge=0, le=1)  # discount: episodes are at most 10-20 steps and pay only at the
    # end
    gae_lambda: float = setting(0.95, ge=0, le=1)  # GAE lambda
    clip_range: float = setting(0.2, gt=0)  # PPO ratio clip
    ent_coef: float = setting(0.01, ge=0)  # entropy bonus: keeps exploring the sparse rewards
    vf_coef: float = setting(0.5, ge=0)  # value loss weight
    net_arch: tuple[int, ...] = (256, 256)  # hidden layers of the policy and of the value MLP
    eval_every: int = setting(8192, ge=1)  # env steps between evaluations (rounded up to whole rollouts)
    noise: str = setting("default", choices=("default", "none", "heavy"))  # SimDroid screen noise: default |
    # none | heavy
    max_elements: int = setting(64, ge=1)  # wrapper element slots
    screen: tuple[int, int] | None = None  # (height, width) screenshot for a CNN; None: elements only
    render_scale: float = setting(0.1, gt=0, le=1)  # SimDroid render scale when a screenshot is observed
    eval_batch: int = setting(32, ge=1)  # eval episodes stepped together
    torch_threads: int = setting(1, ge=1)  # torch CPU threads
    action_types: tuple[str, ...] = SIMPLE_ACTION_TYPES  # the wrapper's action types; pass
    # wrappers.DEFAULT_ACTION_TYPES for tasks that type, scroll or answer

    def __post_init__(self) -> None:
        check_fields(self)


def make_env(cfg: SB3PPOConfig, tasks: list[str] | None = None, exclude_n: int = 16) -> gym.Env:
    """VoyagerEnv -> [TrainInstances, when `tasks` is given: training seeds only] -> FixedObsWrapper.
    A module-level function of picklable arguments, so that SubprocVecEnv can ship it."""
    kw: dict[str, Any] = (
        {"observation_mode": "elements"} if cfg.screen is None else {"render_scale": cfg.render_scale}
    )
    env: gym.Env = VoyagerEnv(noise=cfg.noise, **kw)
    if tasks is not None:
        env = TrainInstances(env, tasks, exclude_n)
    return FixedObsWrapper(
        env, max_elements=cfg.max_elements, screen=cfg.screen, action_types=cfg.action_types
    )


def make_vec_env(cfg: SB3PPOConfig, tasks: list[str], exclude_n: int) -> VecEnv:
    """`n_envs` training envs (each under SB3's Monitor, which records episode returns)."""
    fn = functools.partial(_monitored, cfg, tasks, exclude_n)
    if cfg.vec_env == "dummy":
        return DummyVecEnv([fn] * cfg.n_envs)
    if cfg.vec_env == "subproc":
        return SubprocVecEnv([fn] * cfg.n_envs)
    raise ValueError(f"vec_env must be 'dummy' or 'subproc', got {cfg.vec_env!r}")


def _monitored(cfg: SB3PPOConfig, tasks: list[str], exclude_n: int) -> Monitor:
    return Monitor(make_env(cfg, tasks, exclude_n))


def evaluate(
    model: MaskablePPO, instances: list[TaskInstance], cfg: SB3PPOConfig, seed: int
) -> dict[str, Any]:
    """Pass@1 of the greedy masked policy: one episode per eval instance, `eval_batch` envs stepped together.
    `seed` only changes screen noise."""
    trajs: list[Trajectory] = []
    steps = 0
    n = min(cfg.eval_batch, len(instances))
    envs = [make_env(cfg) for _ in range(n)]
    for start in range(0, len(instances), n):
        wave = instances[start : start + n]
        obs = [
            envs[j].reset(seed=10_000 + seed + start + j, options=inst.options())[0]
            for j, inst in enumerate(wave)
        ]
        live = list(range(len(wave)))
        while live:
            batch = {k: np.stack([obs[j][k] for j in live]) for k in obs[0]}
            masks = np.stack([envs[j].action_masks() for j in live])
            actions, _ = model.predict(batch, action_masks=masks, deterministic=True)
            still = []
            for j, a in zip(live, actions, strict=True):
                obs[j], _, term, trunc, info = envs[j].step(a)
                steps += 1
                if term or trunc:
                    inst = wave[j]
                    trajs.append(
                        Trajectory(
                            traj_id=f"eval-{inst.name}-{inst.index}",
                            group_id=f"eval-{inst.name}-{inst.index}",
                            task=inst.name,
                            instance_seed=inst.seed,
                            params=inst.params,
                            goal=info["goal"],
                            score=float(info["score"]),  # NaN when errored (excluded), 0 when out of steps
                            success=bool(info["success"]),
                            errored=bool(info["errored"]),
                        )
                    )
                else:
                    still.append(j)
            live = still
    for e in envs:
        e.close()
    out = pass_at_1(trajs)
    out["env_steps"] = steps
    return out


class SB3Checkpoint:
    """A MaskablePPO's resumable state as data only: policy.safetensors (the policy's state dict),
    optimizer.safetensors + optimizer.json (Adam's tensors; its param groups and per-parameter keys) and
    model.json (step and update counters). Loading builds a fresh model from the config and fills these in:
    nothing in the folder is ever unpickled or executed."""

    FILES = ("policy.safetensors", "optimizer.safetensors", "optimizer.json", "model.json")

    def __init__(self, model: MaskablePPO):
        self.model = model

    def save(self, path: Path) -> None:
        from safetensors.torch import save_file

        path.mkdir(parents=True, exist_ok=True)
        m = self.model
        save_file({k: v.detach().contiguous() for k, v in m.policy.state_dict().items()},
                  path / "policy.safetensors")
        opt = m.policy.optimizer.state_dict()
        tensors, scalars = {}, {}
        for idx, st in opt["state"].items():
            for name, v in st.items():
                if torch.is_tensor(v):
                    tensors[f"{idx}.{name}"] = v.detach().contiguous()
                else:
                    scalars[f"{idx}.{name}"] = v
        save_file(tensors, path / "optimizer.safetensors")
        meta = {"param_groups": opt["param_groups"], "scalars": scalars}
        (path / "optimizer.json").write_text(json.dumps(meta))
        (path / "model.json").write_text(json.dumps({"num_timesteps": int(m.num_timesteps),
                                                     "n_updates": int(m._n_updates),
                                                     "episode_num": int(m._episode_num)}))

    @staticmethod
    def load(path: Path, vec: VecEnv, cfg: SB3PPOConfig, seed: int) -> MaskablePPO:
        """A model built from `cfg` with the saved tensors and counters. A checkpoint that holds SB3's
        pickled zip instead (written before this format) is refused, not unpickled."""
        from safetensors.torch import load_file

        missing = [f for f in SB3Checkpoint.FILES if not (path / f).is_file()]
        if missing:
            raise ValueError(f"{path}: not an sb3-ppo checkpoint of this version (missing "
                             f"{', '.join(missing)}); older checkpoints hold pickled policy.zip files, "
                             "which are never loaded: start the run in a new out_dir")
        model = _new_model(vec, cfg, seed)
        model.policy.load_state_dict(load_file(path / "policy.safetensors"), strict=True)
        meta = json.loads((path / "optimizer.json").read_text())
        state: dict[int, dict[str, Any]] = {}
        for key, v in [*load_file(path / "optimizer.safetensors").items(), *meta["scalars"].items()]:
            idx, name = key.split(".", 1)
            state.setdefault(int(idx), {})[name] = v
        model.policy.optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
        counters = json.loads((path / "model.json").read_text())
        model.num_timesteps = counters["num_timesteps"]
        model._n_updates = counters["n_updates"]
        model._episode_num = counters["episode_num"]
        return model


def _new_model(vec: VecEnv, cfg: SB3PPOConfig, seed: int) -> MaskablePPO:
    return MaskablePPO(
        "MultiInputPolicy",
        vec,
        learning_rate=cfg.lr,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        seed=seed,
        device="cpu",
        verbose=0,
        policy_kwargs={"net_arch": {"pi": list(cfg.net_arch), "vf": list(cfg.net_arch)}},
    )


def check_finite_model(model: MaskablePPO, iteration: int, run: Run) -> None:
    """Stop the run (NonFiniteError) when chunk `iteration` left NaN or infinite policy weights; the chunk is
    neither logged nor checkpointed, so the last good checkpoint stays the run's latest."""
    with torch.no_grad():
        bad = [n for n, p in model.policy.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        last = checkpoint_dir(run.dir)
        kept = (f"keeps its last good checkpoint, {last.name}, in {run.dir}" if last
                else "has no checkpoint to keep")
        raise NonFiniteError(f"sb3-ppo: iteration {iteration}'s training left non-finite weights (NaN or "
                             f"infinity in {len(bad)} tensors, first {bad[0]}); the run stops and {kept} "
                             f"(see the {SB3PPOConfig.SECTION}.* settings: learning rate, clip range)")


def train(
    env_steps: int,
    seed: int = 0,
    tasks: list[str] | None = None,
    eval_n_per_task: int = 4,
    log: Callable[[dict[str, Any]], None] | None = None,
    out_dir: str | Path = "runs/sb3-ppo",
    cfg: SB3PPOConfig | None = None,
    wandb_mode: str = "disabled",
    suite_backend: Any = None,
    made_by: str | None = None,
) -> list[dict[str, Any]]:
    """Train (or resume, when `out_dir` holds a checkpoint) MaskablePPO for a budget of `env_steps` training
    env steps; returns the rows logged by this call (each also goes to `log` and out_dir/metrics.jsonl).
    `suite_backend` draws the evaluation suite's params as `eval_suite` takes it (default SimDroid's).
    `made_by`: the command whose folder it is (algos/folders.py: `train`, `compare`), refusing another's.
    A row: algo, seed, iteration, env_steps, pass_at_1, per_task, wall_s, losses/*, charts/*."""
    cfg = cfg or SB3PPOConfig()
    tasks = list(tasks or DEFAULT_TASKS)
    if env_steps < 0:
        raise ValueError(f"env_steps must be >= 0, got {env_steps}")
    pin_cpu_numerics(cfg.torch_threads)
    config = {
        "algo": "sb3-ppo",
        "env_steps": env_steps,
        "seed": seed,
        "tasks": tasks,
        "eval_n_per_task": eval_n_per_task,
        **dataclasses.asdict(cfg),
    }
    run = Run(out_dir, config, wandb_mode=wandb_mode, group="sb3-ppo", name=f"sb3-ppo-s{seed}",
              made_by=made_by)
    instances = eval_suite(tasks, n_per_task=eval_n_per_task, backend=suite_backend)
    vec = make_vec_env(cfg, tasks, exclude_n=max(16, eval_n_per_task))
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        run.log(row)
        if log is not None:
            log(row)

    last = run.latest()
    if last is None:
        model, it, wall0 = _new_model(vec, cfg, seed), 0, 0.0
    else:
        path, state = last
        model = SB3Checkpoint.load(path / "policy", vec, cfg, seed)
        it, wall0 = state["iteration"], state["wall_s"]
        run.truncate_metrics(lambda r: r.get("iteration", -1) <= state["iteration"])
        print(f"resuming sb3-ppo from {path.name}: {model.num_timesteps} env steps done")
    model.set_logger(Logger(folder=None, output_formats=[]))  # keeps values in memory, prints nothing
    t0 = time.perf_counter() - wall0
    try:
        if last is None:
            ev = evaluate(model, instances, cfg, seed)
            emit(_row(seed, 0, 0, ev, {}, time.perf_counter() - t0, 0.0))
            run.checkpoint(0, SB3Checkpoint(model), {"env_steps": 0, "wall_s": time.perf_counter() - t0})
        rollout = cfg.n_envs * cfg.n_steps
        while model.num_timesteps < env_steps:
            it += 1
            chunk = min(cfg.eval_every, env_steps - model.num_timesteps)
            chunk = -(-chunk // rollout) * rollout
            # Fresh envs and RNGs per chunk, seeded by (seed, chunk): a resumed run repeats the chunk exactly.
            model.set_env(vec, force_reset=True)
            model.set_random_seed(seed * 1000 + it)
            model.ep_info_buffer = deque(maxlen=1_000_000)  # this chunk's training episodes only
            model.ep_success_buffer = deque(maxlen=1_000_000)
            t_learn = time.perf_counter()
            model.learn(chunk, reset_num_timesteps=False, use_masking=True)
            sps = chunk / max(1e-9, time.perf_counter() - t_learn)
            check_finite_model(model, it, run)
            losses = {
                v: float(model.logger.name_to_value[k])
                for k, v in LOSS_KEYS.items()
                if k in model.logger.name_to_value
            }
            eps = list(model.ep_info_buffer)
            losses["charts/train_episode_reward"] = float(np.mean([e["r"] for e in eps])) if eps else math.nan
            wins = list(model.ep_success_buffer)
            losses["charts/train_success_rate"] = float(np.mean(wins)) if wins else math.nan
            losses["charts/train_episode_length"] = float(np.mean([e["l"] for e in eps])) if eps else math.nan
            ev = evaluate(model, instances, cfg, seed)
            emit(_row(seed, it, model.num_timesteps, ev, losses, time.perf_counter() - t0, sps))
            run.checkpoint(it, SB3Checkpoint(model),
                           {"env_steps": model.num_timesteps, "wall_s": time.perf_counter() - t0})
    finally:
        vec.close()
        run.close()
    return rows


def _row(
    seed: int, it: int, steps: int, ev: dict[str, Any], losses: dict[str, float], wall: float, sps: float
) -> dict[str, Any]:
    return {
        "algo": "sb3-ppo",
        "seed": seed,
        "iteration": it,
        "env_steps": steps,
        "pass_at_1": ev["pass_at_1"],
        "per_task": ev["per_task"],
        "eval_episodes": ev["episodes"],
        "eval_env_steps": ev["env_steps"],
        "wall_s": wall,
        "charts/env_steps_per_s": sps,
        **losses,
    }
