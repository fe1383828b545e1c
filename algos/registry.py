"""Every algorithm of the shared loop (`algos/loop.py`) in one table: its name, class and config class.

The entry points build algorithms from here (`make_algorithm`) and the configuration has one section per
registered name (`config_section`: the name with "-" as "_", so `grsd-grpo` is configured by `grsd_grpo.*`).
sb3-ppo is not in it: it trains with Stable-Baselines3's own loop on a fixed-size wrapper of the env
(`algos/sb3_ppo.py`), not with this loop, and the comparison runs it as a separate baseline.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from algos.gigpo import GiGPO, GiGPOConfig
from algos.grpo import GRPO, GRPOConfig
from algos.grsd import GRSD, GRSDConfig
from algos.grsd_grpo import GRSDGRPO, GRSDGRPOConfig
from algos.grsd_reflect import GRSDReflect, GRSDReflectConfig
from algos.loop import Algorithm, LoopConfig, RunContext
from algos.ppo import PPO, PPOConfig
from algos.rft import RFT, RFTConfig
from algos.vine import Vine, VineConfig


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: built as `cls(config)`, configured by the config section `section`."""

    name: str
    cls: type[Algorithm]
    config: type[LoopConfig]

    @property
    def section(self) -> str:
        return config_section(self.name)


_ALGORITHMS: dict[str, AlgorithmSpec] = {}


def config_section(name: str) -> str:
    """The config section (a dataclass field, so an identifier) that configures algorithm `name`: its name
    with "-" written "_" (`grsd-grpo` -> `grsd_grpo`)."""
    return name.replace("-", "_")


def register_algorithm(cls: type[Algorithm], config: type[LoopConfig]) -> None:
    """Add an algorithm under its class's `name` (registered once)."""
    if cls.name in _ALGORITHMS:
        raise ValueError(f"algorithm {cls.name!r} is already registered")
    if not config_section(cls.name).isidentifier():
        raise ValueError(f"algorithm name {cls.name!r}: expected letters, digits, '_' and '-' only (its "
                         f"config section {config_section(cls.name)!r} must be an identifier)")
    clash = [a for a in _ALGORITHMS if config_section(a) == config_section(cls.name)]
    if clash:
        raise ValueError(f"algorithm {cls.name!r} would share config section {config_section(cls.name)!r} "
                         f"with {clash[0]!r}")
    _ALGORITHMS[cls.name] = AlgorithmSpec(cls.name, cls, config)


def algorithm_names() -> list[str]:
    """The registered algorithms, in registration order."""
    return list(_ALGORITHMS)


def algorithm_spec(name: str) -> AlgorithmSpec:
    if name not in _ALGORITHMS:
        raise ValueError(f"unknown algo {name!r}; expected one of {', '.join(_ALGORITHMS)}")
    return _ALGORITHMS[name]


def make_algorithm(name: str, cfg: Any = None, context: RunContext | None = None) -> Algorithm:
    """Algorithm `name` with `cfg` (an instance of its config class; default: the defaults) and, when given,
    what its run hands it (`RunContext`; else `Algorithm.setup` takes it later)."""
    spec = algorithm_spec(name)
    if cfg is None:
        cfg = spec.config()
    elif not isinstance(cfg, spec.config):
        raise TypeError(f"algo {name!r} takes a {spec.config.__name__}, got {type(cfg).__name__}")
    return spec.cls(cfg, context)


for _cls, _config in ((RFT, RFTConfig), (GRSD, GRSDConfig), (GRPO, GRPOConfig), (PPO, PPOConfig),
                      (GiGPO, GiGPOConfig), (Vine, VineConfig), (GRSDGRPO, GRSDGRPOConfig),
                      (GRSDReflect, GRSDReflectConfig)):
    register_algorithm(_cls, _config)
