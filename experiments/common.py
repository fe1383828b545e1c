"""Shared set-up for the entry points: tasks, envs, policies, and the cached base policy."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from algos.policies.base import Policy
from algos.policies.simple import ExpertPolicy
from algos.rft import success_samples
from algos.rollout import RolloutConfig, collect, has_pixels
from algos.run import seed_everything
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

BASE_VERSION = 1  # bump when the base-policy recipe changes, so caches are rebuilt


def resolve_tasks(spec: str) -> list[str]:
    from voyager_gym.backends.sim.backend import unknown_task_error
    from voyager_gym.backends.sim.tasks import TASKS

    if spec in ("all", ""):
        return sorted(TASKS)
    names = [t.strip() for t in spec.split(",") if t.strip()]
    for t in names:
        if t not in TASKS:
            raise unknown_task_error(t, list(TASKS))
    return names


def make_envs(cfg: Any) -> Any:
    mode = "full" if cfg.render_scale > 0 else "elements"
    kwargs: dict[str, Any] = {"observation_mode": mode, "noise": cfg.noise}
    if cfg.render_scale > 0:
        kwargs["render_scale"] = cfg.render_scale
    return make_vec(cfg.num_envs, cfg.vector, **kwargs)


def new_policy(cfg: Any) -> Policy:
    if cfg.policy == "small":
        from algos.policies.small import SmallPolicy

        return SmallPolicy(seed=cfg.seed)
    if cfg.policy == "hf":
        from algos.policies.hf import HFPolicy

        if cfg.hf_model in ("tiny-lm", "tiny-vlm"):
            from algos.policies import tiny

            tok = tiny.build_tiny_tokenizer()
            if cfg.hf_model == "tiny-lm":
                return HFPolicy(
                    model=tiny.build_tiny_causal_lm(tok, seed=cfg.seed), processor=tok, seed=cfg.seed
                )
            model, proc = tiny.build_tiny_vlm(tok, seed=cfg.seed)
            return HFPolicy(model=model, processor=proc, seed=cfg.seed)
        return HFPolicy.from_pretrained(cfg.hf_model)
    raise ValueError(f"unknown policy {cfg.policy!r}; expected small or hf")


def demonstrations(cfg: Any, tasks: list[str], envs: Any) -> list:
    """Expert demonstrations for the base policy: `demos_per_task` episodes on a seeded subset of tasks."""
    b = cfg.base
    gen = TrainGenerator(tasks, seed=10_000 + b.seed)
    k = max(1, round(len(tasks) * b.task_fraction))
    import numpy as np

    chosen = sorted(np.random.default_rng(b.seed).permutation(tasks)[:k].tolist())
    per_task: dict[str, int] = {}
    instances = []
    for inst in gen.instances():
        if inst.name in chosen and per_task.get(inst.name, 0) < b.demos_per_task:
            per_task[inst.name] = per_task.get(inst.name, 0) + 1
            instances.append(inst)
        if len(instances) == k * b.demos_per_task:
            break
    groups = collect(
        ExpertPolicy(),
        envs,
        instances,
        RolloutConfig(group_size=1, greedy=True, thumb_width=0, keep_frames=has_pixels(envs), seed=b.seed,
                      progress=cfg.progress),
    )
    return success_samples(groups)


def base_key(cfg: Any, tasks: list[str]) -> str:
    spec = {
        "v": BASE_VERSION,
        "policy": cfg.policy,
        "hf_model": cfg.hf_model,
        "base": vars(cfg.base),
        "tasks": tasks,
        "render_scale": cfg.render_scale,
        "noise": cfg.noise,
        "seed": cfg.seed,
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_or_train_base(cfg: Any, tasks: list[str], envs: Any) -> Policy:
    """The base policy, trained once per recipe and cached under cfg.cache_dir (deterministic for a seed)."""
    path = Path(cfg.cache_dir) / f"base-{cfg.policy}-{base_key(cfg, tasks)}"
    policy = new_policy(cfg)
    if (path / "done").exists():
        return type(policy).load(path / "policy")
    seed_everything(cfg.base.seed)
    samples = demonstrations(cfg, tasks, envs)
    policy.fit_sft(samples, epochs=cfg.base.epochs, lr=cfg.base.lr, seed=cfg.base.seed)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    policy.save(tmp / "policy")
    (tmp / "done").write_text(json.dumps({"samples": len(samples)}))
    if path.exists():
        shutil.rmtree(path)
    tmp.rename(path)
    return policy


# -- algorithms -------------------------------------------------------------------------------------------
ALGORITHMS = {  # name -> (module, class); the config section of the same name configures it
    "rft": ("algos.rft", "RFT"),
    "grsd": ("algos.grsd", "GRSD"),
    "grpo": ("algos.grpo", "GRPO"),
    "ppo": ("algos.ppo", "PPO"),
}


def make_algorithm(cfg: Any, name: str | None = None) -> Any:
    """The `Algorithm` for `name` (default cfg.algo), configured by the config section of the same name."""
    import importlib

    name = name or cfg.algo
    if name not in ALGORITHMS:
        raise SystemExit(f"unknown algo {name!r}; expected one of {', '.join(ALGORITHMS)}")
    module, cls = ALGORITHMS[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise SystemExit(f"algo {name!r} is not available in this checkout ({e})") from None
    return getattr(mod, cls)(getattr(cfg, name))


def rft_key(cfg: Any, tasks: list[str]) -> str:
    spec = {"base": base_key(cfg, tasks), "rft": vars(cfg.rft), "eval_n": cfg.eval_n_per_task}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_or_train_rft(cfg: Any, tasks: list[str], envs: Any) -> tuple[Policy, dict[str, Any]]:
    """The RFT checkpoint later algorithms start from (GRSD, GRPO, PPO in the paper all start there): trained
    once per recipe as a resumable run under cfg.cache_dir. Returns the policy and its last metrics row."""
    from algos.loop import train_loop
    from algos.run import Run

    path = Path(cfg.cache_dir) / f"rft-{cfg.policy}-{rft_key(cfg, tasks)}"
    run = Run(path, {"rft": vars(cfg.rft), "base": vars(cfg.base)}, wandb_mode="disabled")
    try:
        if not (path / "done").exists():
            base = load_or_train_base(cfg, tasks, envs)
            print(f"training the RFT start checkpoint in {path} (cached for later runs)")
            train_loop(make_algorithm(cfg, "rft"), base, envs, run, tasks, cfg.seed, cfg.eval_n_per_task,
                       progress=cfg.progress)
            (path / "done").write_text("1")
        last = run.latest()
        assert last is not None
        ckpt, _ = last
        policy = type(new_policy(cfg)).load(ckpt / "policy")
        return policy, run.metrics()[-1]
    finally:
        run.close()
