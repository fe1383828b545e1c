"""Shared set-up for the entry points: tasks, envs, policies, and the cached base policy."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from algos import registry
from algos.policies.base import Policy
from algos.policies.registry import load_policy, make_policy
from algos.policies.simple import ExpertPolicy
from algos.rft import success_samples
from algos.rollout import RolloutConfig, collect, has_pixels
from algos.run import ADDED_KEYS, RunFolderError, seed_everything
from algos.timing import collector_paused
from voyager_gym.backends.base import unknown_task_error
from voyager_gym.env import app_names, task_names
from voyager_gym.suites import TrainGenerator, split_tasks
from voyager_gym.vector import make_vec

BASE_VERSION = 16  # bump when the base-policy recipe or the policy changes, so caches are rebuilt


def resolve_tasks(spec: list[str], backend: str = "simdroid") -> list[str]:
    """Task names: `[all]` (every task, `voyager_gym.env.task_names`) or a list of names, checked against them
    (on the real AndroidWorld the env checks them against its own registry at reset). An unknown name is a
    SystemExit that suggests the closest task."""
    known = task_names()
    names = [t.strip() for t in spec if t.strip()]
    if names in ([], ["all"]):
        return known
    if backend == "androidworld":
        return names
    for t in names:
        if t not in known:
            raise SystemExit(f"tasks: {unknown_task_error(t, known).args[0]}")
    return names


def task_split(cfg: Any, tasks: list[str]) -> tuple[list[str], list[str]]:
    """(tasks to train on, held-out tasks to evaluate on as well): `tasks` and none with split=instances; the
    seeded split of voyager_gym.suites.split_tasks with split=tasks."""
    if cfg.split == "instances":
        return tasks, []
    try:
        return split_tasks(tasks, cfg.heldout_fraction, cfg.split_seed)
    except ValueError as e:
        raise SystemExit(f"split=tasks: {e}") from None


def policy_reads_pixels(cfg: Any) -> bool:
    """Whether the configured policy reads screenshots (a vision-language model does), without building it."""
    p = cfg.policy
    if p.name != "hf":
        return False
    from algos.policies.tiny import TINY_MODELS

    if p.hf_model in TINY_MODELS and not p.path:
        return p.hf_model != "tiny-lm"
    from transformers import AutoConfig

    return getattr(AutoConfig.from_pretrained(p.path or p.hf_model), "vision_config", None) is not None


def frame_replay(cfg: Any, pixels: bool) -> dict[str, Any] | None:
    """When the algorithm compares screenshots (`pixels`, as GRSD does) but the policy reads none: kwargs of
    the SimDroid env that renders the frames it keeps by replaying those episodes, so that rollouts render no
    screenshots (see RolloutConfig.replay_frames). None where replay cannot stand in for live screenshots:
    AndroidWorld, envs on Ray actors, `env.screenshots` other than auto, or a policy that reads pixels."""
    e = cfg.env
    if (not pixels or e.backend != "simdroid" or e.workers > 0 or e.screenshots != "auto"
            or policy_reads_pixels(cfg)):
        return None
    return {"observation_mode": "full", "noise": e.noise, "render_scale": e.scale(True)}


def make_envs(cfg: Any, pixels: bool = False) -> Any:
    """The vector env of a run. Screenshots are rendered as `env.screenshots` says: with `auto`, when `pixels`
    (the algorithm compares screens, as GRSD does) or the policy reads them. `env.backend` / `env.workers`
    choose SimDroid or AndroidWorld, local or on Ray actors."""
    e = cfg.env
    scale = e.scale(pixels or policy_reads_pixels(cfg))
    if pixels and scale == 0:
        raise SystemExit("env.screenshots=never, but this algorithm compares screenshots: use auto or always")
    if e.backend == "androidworld":  # real screens always carry pixels; the scale only shrinks them
        kwargs: dict[str, Any] = {"render_scale": scale or 1.0, "transition_pause": e.transition_pause}
        env_id = "voyager_gym/AndroidWorld-v0"
    else:
        kwargs = {"observation_mode": "full" if scale > 0 else "elements", "noise": e.noise}
        if scale > 0:
            kwargs["render_scale"] = scale
        env_id = "voyager_gym/SimDroid-v0"
    if e.workers > 0:
        ray_kwargs: dict[str, Any] = {"env_id": env_id}
        if e.ray_address:
            ray_kwargs["address"] = e.ray_address
        if e.actor_resources:
            ray_kwargs["resources"] = dict(e.actor_resources)
        return make_vec(e.workers, "ray", **ray_kwargs, **kwargs)
    if e.backend == "androidworld":
        from voyager_gym.backends.androidworld import make_androidworld_vec

        return make_androidworld_vec(list(e.console_ports), list(e.grpc_ports) or None, e.vector, **kwargs)
    if e.vector == "pipelined":
        kwargs.update(lanes=e.lanes, workers=e.lane_workers)
    return make_vec(e.num_envs, e.vector, **kwargs)


def suite_backend(cfg: Any) -> Any:
    """Who draws instance params (`env.params`): SimDroid's generators (None), each env's own backend (the
    real AndroidWorld draws them on the device), or android_world's generators in this process."""
    from voyager_gym.suites import ANDROIDWORLD, FROM_ENV

    source = cfg.env.params
    if source == "auto":
        return FROM_ENV if cfg.env.backend == "androidworld" else None
    return ANDROIDWORLD if source == "androidworld" else None


# policy.* settings a cached HF base is trained and saved with (policy.device says where it runs, not what)
HF_KEYS = ("dtype", "min_pixels", "max_pixels", "crop_status_bar", "gradient_checkpointing", "max_new_tokens",
           "sft_batch_size", "lora_r", "lora_alpha", "lora_dropout", "lora_targets")


def hf_settings(p: Any) -> dict[str, Any]:
    """HFPolicy's keyword arguments from `policy.*`: device (auto: cuda when torch sees a GPU), dtype (auto:
    None, HFPolicy's default), pixel budget (0: None, the processor's own), status-bar crop, gradient
    checkpointing (auto: None), response length, fit_sft's batch and LoRA."""
    import torch

    device = p.device if p.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    return {"device": device, "dtype": None if p.dtype == "auto" else p.dtype,
            "min_pixels": p.min_pixels or None, "max_pixels": p.max_pixels or None,
            "crop_status_bar": p.crop_status_bar,
            "gradient_checkpointing": {"auto": None, "on": True, "off": False}[p.gradient_checkpointing],
            "max_new_tokens": p.max_new_tokens, "sft_batch_size": p.sft_batch_size, "lora_r": p.lora_r,
            "lora_alpha": p.lora_alpha, "lora_dropout": p.lora_dropout, "lora_targets": list(p.lora_targets)}


def hf_key(p: Any) -> dict[str, Any]:
    """The HF_KEYS settings of policy=hf that differ from their defaults (cache keys made without them stay
    as they were)."""
    if p.name != "hf":
        return {}
    default = type(p)()
    return {k: getattr(p, k) for k in HF_KEYS if getattr(p, k) != getattr(default, k)}


def load_overrides(cfg: Any) -> dict[str, Any]:
    """What `load_policy` overrides in a saved policy: policy=hf's device when policy.device is set (auto:
    the saved policy's own)."""
    if cfg.policy.name == "hf" and cfg.policy.device != "auto":
        return {"device": cfg.policy.device}
    return {}


def new_policy(cfg: Any, envs: Any) -> Policy:
    """A fresh trainable policy as `policy.*` configures it (small, or hf from `policy.hf_model`), for the
    action vocabulary of `envs` (their `metadata["app_names"]`)."""
    p = cfg.policy
    if p.name == "small":
        return make_policy("small", app_names=app_names(envs), seed=cfg.seed, memory=p.memory,
                           memory_mode=p.memory_mode, layers=p.layers, d_model=p.d_model)
    if p.name == "hf":
        from algos.policies import tiny
        from algos.policies.hf import HFPolicy, torch_dtype

        kwargs = hf_settings(p)
        try:
            if p.hf_model in tiny.TINY_MODELS:
                model, proc = tiny.build_named(p.hf_model, seed=cfg.seed)
                if kwargs["dtype"] is not None:  # built in memory: cast here (from_pretrained loads in it)
                    model = model.to(torch_dtype(kwargs["dtype"]))
                return HFPolicy(model=model, processor=proc, seed=cfg.seed, **kwargs)
            return HFPolicy.from_pretrained(p.hf_model, seed=cfg.seed, **kwargs)
        except (ValueError, ImportError) as e:
            raise SystemExit(f"policy.hf_model={p.hf_model!r}: {e}") from None
    raise SystemExit(f"policy={p.name!r} cannot be trained; expected small or hf")


def saved_policy_dir(path: str | Path) -> Path:
    """A saved policy's folder: `path` itself, or a run folder's latest checkpoint's policy."""
    from algos.run import RunFolderError, checkpoint_dir, verify_manifest

    path = Path(path)
    if (path / "checkpoint.json").exists():
        try:
            ckpt = checkpoint_dir(path)
            verify_manifest(ckpt)
        except RunFolderError as e:
            raise SystemExit(f"policy.path={str(path)!r}: {e}") from None
        return ckpt / "policy"
    if not path.is_dir():
        raise SystemExit(f"policy.path={str(path)!r}: expected a saved policy folder or a run folder")
    return path


def load_saved_policy(cfg: Any) -> Policy:
    """The policy saved at `policy.path` (a policy or run folder), of kind `policy.name`."""
    try:
        return load_policy(saved_policy_dir(cfg.policy.path), kind=cfg.policy.name, **load_overrides(cfg))
    except ValueError as e:
        raise SystemExit(f"policy.path={cfg.policy.path!r}: {e}") from None


def demonstrations(cfg: Any, tasks: list[str], envs: Any) -> list:
    """Expert demonstrations for the base policy: `demos_per_task` episodes on a seeded subset of tasks."""
    b = cfg.base
    gen = TrainGenerator(tasks, seed=10_000 + b.seed, backend=suite_backend(cfg))
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
        "policy": cfg.policy.name,
        **({"memory": cfg.policy.memory} if cfg.policy.memory else {}),  # (keys without it stay as they were)
        **({"memory_mode": cfg.policy.memory_mode} if cfg.policy.memory_mode != "encoder" else {}),
        # (keys made before policy.layers existed, for the depth those caches have, stay as they were)
        **({"layers": cfg.policy.layers} if cfg.policy.layers != ADDED_KEYS["policy.layers"] else {}),
        **({"d_model": cfg.policy.d_model} if cfg.policy.d_model != ADDED_KEYS["policy.d_model"] else {}),
        "hf_model": cfg.policy.hf_model,
        **({"hf": hf_key(cfg.policy)} if hf_key(cfg.policy) else {}),  # (keys without them stay as they were)
        "base": vars(cfg.base),
        "tasks": tasks,
        "render_scale": cfg.env.scale(policy_reads_pixels(cfg)),  # the demonstrations' observations
        "noise": cfg.env.noise,
        "seed": cfg.seed,
        **({"params": cfg.env.params} if cfg.env.params != "auto" else {}),  # (auto keys stay as they were)
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def base_path(cfg: Any, tasks: list[str]) -> Path:
    """Where the base policy of this recipe is cached."""
    return Path(cfg.cache_dir) / f"base-{cfg.policy.name}-{base_key(cfg, tasks)}"


def cache_entry(cfg: Any, path: Path) -> Path:
    """`path` (a base-* or rft-* folder of cfg.cache_dir) after checking that cache_dir is a cache (not a run
    folder another command made) and that the entry is no link out of it; a SystemExit naming them if not."""
    from algos.folders import claim, inside

    root = Path(cfg.cache_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        claim(root, "cache", "the cache of base policies and RFT start checkpoints", key="cache_dir")
        return inside(root, path.name)
    except RunFolderError as e:
        raise SystemExit(f"cache_dir: {e}") from None


def rebuild_hint(path: Path) -> str:
    return f"delete {path} to rebuild it"


def load_base(cfg: Any, path: Path) -> Policy:
    """The cached base policy at `path`, its files checked against its manifest. A base cached before caches
    carried checksums (a `done` file without "checksums") is adopted once: its policy must load, then its
    checksums are recorded (printed) and checked from then on; a manifest missing from a newer one is an
    error, as is any file that differs from it."""
    from algos.folders import inside, read_bytes
    from algos.run import MANIFEST, verify_manifest, write_manifest

    try:
        done = json.loads(read_bytes(inside(path, "done")))
    except (OSError, ValueError, RunFolderError) as e:
        raise SystemExit(f"cache: {path}/done is unreadable ({e}); {rebuild_hint(path)}") from None
    adopt = isinstance(done, dict) and "checksums" not in done and not os.path.lexists(path / MANIFEST)
    try:
        if not adopt:
            verify_manifest(path, "the cached base policy")
        policy = load_policy(inside(path, "policy"), kind=cfg.policy.name, **load_overrides(cfg))
    except (RunFolderError, ValueError, OSError) as e:
        raise SystemExit(f"cache: the base policy in {path} cannot be used: {e}; {rebuild_hint(path)}") \
            from None
    except Exception as e:  # noqa: BLE001 - a damaged weight file fails inside safetensors or torch
        raise SystemExit(f"cache: the base policy in {path} does not load ({type(e).__name__}: {e}); "
                         f"{rebuild_hint(path)}") from None
    if adopt:
        try:
            write_manifest(path)
        except RunFolderError as e:
            raise SystemExit(f"cache: {e}; {rebuild_hint(path)}") from None
        print(f"cache: {path} was cached before caches carried checksums; its policy loads, so its checksums "
              f"are recorded now in {path / MANIFEST} and checked from here on (or {rebuild_hint(path)})")
    return policy


def load_or_train_base(cfg: Any, tasks: list[str], envs: Any) -> Policy:
    """The base policy, trained once per recipe and cached under cfg.cache_dir (deterministic for a seed),
    with a manifest of checksums checked on every load. Processes sharing a cache_dir build it once: the
    others wait for it."""
    from algos.folders import inside, locked, rmtree
    from algos.run import write_manifest

    if cfg.env.backend == "androidworld":  # no experts on real phones: the loaded model is the base
        print("env.backend=androidworld: no expert demonstrations; the policy as loaded is the base")
        return new_policy(cfg, envs)
    path = cache_entry(cfg, base_path(cfg, tasks))
    if (path / "done").exists():
        return load_base(cfg, path)
    root = path.parent
    with locked(inside(root, f".{path.name}.lock"), f"the base policy {path} is being trained by another "
                "process (sharing cache_dir)"):
        if (path / "done").exists():  # the other process finished it
            return load_base(cfg, path)
        policy = new_policy(cfg, envs)
        seed_everything(cfg.base.seed)
        with collector_paused():
            samples = demonstrations(cfg, tasks, envs)
            policy.fit_sft(samples, epochs=cfg.base.epochs, lr=cfg.base.lr, seed=cfg.base.seed,
                           lr_schedule=cfg.base.lr_schedule)
        tmp = inside(root, path.name + ".tmp")
        if os.path.lexists(tmp):
            rmtree(tmp, root)
        tmp.mkdir(parents=True)
        policy.save(tmp / "policy")
        (tmp / "done").write_text(json.dumps({"samples": len(samples), "checksums": "manifest.json"}))
        write_manifest(tmp)
        if os.path.lexists(path):
            rmtree(path, root)
        tmp.rename(path)
    return policy


# -- algorithms -------------------------------------------------------------------------------------------
def make_algorithm(cfg: Any, name: str | None = None) -> Any:
    """The `Algorithm` for `name` (default cfg.algo), configured by its config section (`grsd-grpo` by
    `grsd_grpo`: registry.config_section)."""
    name = name or cfg.algo
    section = getattr(cfg, registry.config_section(name), None)
    if getattr(section, "fork_eval", False) and cfg.env.backend != "simdroid":
        # the fork-level measurement replays states from SimDroid snapshots; other backends train without it
        print(f"{name}.fork_eval: off on env.backend={cfg.env.backend} (it replays fork states from SimDroid "
              "snapshots)")
        section = dataclasses.replace(section, fork_eval=False)
    try:
        return registry.make_algorithm(name, section)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def rft_key(cfg: Any, tasks: list[str]) -> str:
    spec = {"base": base_key(cfg, tasks), "rft": vars(cfg.rft), "eval_n": cfg.eval_n_per_task}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def rft_path(cfg: Any, tasks: list[str]) -> Path:
    """Where the RFT start checkpoint of this recipe is cached (a `done` file in it once trained)."""
    return Path(cfg.cache_dir) / f"rft-{cfg.policy.name}-{rft_key(cfg, tasks)}"
