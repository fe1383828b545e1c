"""Typed run configuration with `key=value` overrides (`rft.iterations=3`, `policy=hf`), checked by OmegaConf:
an unknown key or a value of the wrong type is an error that names it."""

from __future__ import annotations

import dataclasses
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from algos.grpo import GRPOConfig
from algos.grsd import GRSDConfig
from algos.ppo import PPOConfig
from algos.rft import RFTConfig


@dataclasses.dataclass
class BaseConfig:
    """The base policy: behaviour cloning on a limited set of expert demonstrations (cached)."""

    demos_per_task: int = 3  # expert episodes per task in the BC set (base Pass@1 ~25% on SimDroid)
    task_fraction: float = 1.0  # share of tasks that get demonstrations (the rest are never shown)
    epochs: int = 8  # BC epochs
    lr: float = 1e-3
    seed: int = 0


@dataclasses.dataclass
class EnvConfig:
    """Where episodes run. SimDroid in-process by default; the real AndroidWorld on emulators; Ray actors
    across machines (one backend, one emulator, per actor)."""

    backend: str = "simdroid"  # simdroid | androidworld (needs the android_world package and emulators)
    workers: int = 0  # > 0: a RayVectorEnv of this many actors (replaces num_envs / vector)
    ray_address: str = ""  # "" starts a local Ray; "auto" joins the cluster this machine belongs to
    actor_resources: str = ""  # per-actor custom Ray resources, e.g. "emulator=1" (one emulator per actor)
    console_ports: str = "5554"  # androidworld without Ray: one local emulator per console port (comma list)
    grpc_ports: str = ""  # androidworld: matching gRPC ports (default 8554, 8555, ...)
    transition_pause: float = 1.0  # androidworld: seconds to let the screen settle before observing


@dataclasses.dataclass
class TrainConfig:
    algo: str = "rft"  # rft (grsd, grpo, ppo: later issues)
    out_dir: str = ""  # run folder (default runs/<algo>-s<seed>)
    seed: int = 0  # seeds torch, numpy, the training-instance generator and env noise
    policy: str = "small"  # small | hf
    hf_model: str = "tiny-vlm"  # policy=hf: a path or hub id, or tiny-lm / tiny-vlm (built offline)
    tasks: str = "all"  # all, or comma-separated task names
    num_envs: int = 16  # sub-envs of the vector env
    vector: str = "sync"  # sync | async
    eval_n_per_task: int = 4  # held-out instances per task (AndroidWorld suite seed 30): 308 greedy episodes
    render_scale: float = 0.0  # 0: elements-only observations; > 0: screenshots at this scale
    pixel_scale: float = 0.25  # screenshot scale when render_scale=0 and the algorithm compares screens
    noise: str = "default"  # SimDroid screen noise: default | none | heavy
    wandb: str = "offline"  # offline | online | disabled
    resume: bool = True  # continue from out_dir's last checkpoint if there is one
    progress: bool = True  # progress bars
    cache_dir: str = ".cache/voyager-gym"  # where base policies are cached
    torch_threads: int = 1  # small models gain little from more, and stall badly when cores are shared
    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    base: BaseConfig = dataclasses.field(default_factory=BaseConfig)
    rft: RFTConfig = dataclasses.field(default_factory=RFTConfig)
    grpo: GRPOConfig = dataclasses.field(default_factory=GRPOConfig)
    ppo: PPOConfig = dataclasses.field(default_factory=PPOConfig)
    grsd: GRSDConfig = dataclasses.field(default_factory=GRSDConfig)


def parse(argv: list[str], schema: type = TrainConfig) -> Any:
    """Merge `key=value` overrides into the schema's defaults; raise SystemExit with a clear message."""
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise SystemExit(f"arguments must be key=value overrides, got {bad}")
    base = OmegaConf.structured(schema)
    try:
        cfg = OmegaConf.merge(base, OmegaConf.from_dotlist(argv))
    except OmegaConfBaseException as e:
        raise SystemExit(f"bad override: {e.msg if hasattr(e, 'msg') else e}") from None
    return OmegaConf.to_object(cfg)


def as_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
