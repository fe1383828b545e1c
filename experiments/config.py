"""Typed run configuration with `key=value` overrides (`rft.iterations=3`, `policy=hf`), checked by OmegaConf:
an unknown key or a value of the wrong type is an error that names it."""

from __future__ import annotations

import dataclasses
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from algos.rft import RFTConfig


@dataclasses.dataclass
class BaseConfig:
    """The base policy: behaviour cloning on a limited set of expert demonstrations (cached)."""

    demos_per_task: int = 4  # expert episodes per task in the BC set (base Pass@1 ~25% on SimDroid)
    task_fraction: float = 1.0  # share of tasks that get demonstrations (the rest are never shown)
    epochs: int = 8  # BC epochs
    lr: float = 1e-3
    seed: int = 0


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
    eval_n_per_task: int = 2  # held-out instances per task (AndroidWorld suite seed 30)
    render_scale: float = 0.0  # 0: elements-only observations; > 0: screenshots at this scale
    noise: str = "default"  # SimDroid screen noise: default | none | heavy
    wandb: str = "offline"  # offline | online | disabled
    resume: bool = True  # continue from out_dir's last checkpoint if there is one
    progress: bool = True  # progress bars
    cache_dir: str = ".cache/voyager-gym"  # where base policies are cached
    torch_threads: int = 1  # small models gain little from more, and stall badly when cores are shared
    base: BaseConfig = dataclasses.field(default_factory=BaseConfig)
    rft: RFTConfig = dataclasses.field(default_factory=RFTConfig)


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
