"""One typed configuration for every entry point, composed from the same parts, with `key=value` overrides.

Parts: the run (seed, folders, logging), the suite (tasks, held-out instances), `env.*` (where episodes run),
`policy.*` (which policy), `base.*` (the BC base policy) and one section per algorithm (`rft.*`, `grsd.*`,
`grpo.*`, `ppo.*`, `gigpo.*`, `vine.*`, `grsd_grpo.*` for algo=grsd-grpo and `grsd_reflect.*` for
algo=grsd-reflect: algos.registry.config_section).
train, pretrain, evaluate and compare each take the parts they use, so a key means the same thing everywhere.
Overrides are checked by OmegaConf: an unknown key, a value of the wrong type or a choice outside its options
is an error that names the key, the value and what is allowed. Lists take either form (`tasks=[A,B]` or
`tasks=A,B`), maps `k=v,k2=v2` or `{k: v}`; a section with a `name` can be picked by its name (`policy=hf` is
`policy.name=hf`). `preset=NAME` applies a named set of overrides first (the user's own overrides win).
`--help` lists every key with its type, default and meaning, read from this file's and the algorithm modules'
field comments, so it cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import inspect
import io
import re
import sys
import tokenize
import typing
from collections.abc import Sequence
from typing import Any, ClassVar

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from algos.fields import check_fields, setting
from algos.gigpo import GiGPOConfig
from algos.grpo import GRPOConfig
from algos.grsd import GRSDConfig
from algos.grsd_grpo import GRSDGRPOConfig
from algos.grsd_reflect import GRSDReflectConfig
from algos.policies.base import LR_SCHEDULES
from algos.policies.hf import LORA_EXTRA, LORA_TARGETS, check_lora
from algos.ppo import PPOConfig
from algos.registry import algorithm_names, config_section
from algos.rft import RFTConfig
from algos.vine import VineConfig
from voyager_gym.suites import TASK_SPLITS

# Trainable by train.py: the registered algorithms (algos/registry.py), each set by the config section of its
# name; compare.py also runs sb3-ppo, a separate baseline with its own training loop (algos/sb3_ppo.py)
ALGORITHMS = tuple(algorithm_names())
SECTIONS = tuple(config_section(a) for a in ALGORITHMS)  # their config sections, in the same order
SB3 = "sb3-ppo"


def _choice(key: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ValueError(f"{key}={value!r}: expected one of {', '.join(map(str, allowed))}")


# -- parts ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class BaseConfig:
    """The base policy: behaviour cloning on a limited set of expert demonstrations (cached)."""

    SECTION: ClassVar[str] = "base"
    demos_per_task: int = setting(2, ge=1)  # expert episodes per task in the BC set (base Pass@1 0.310 on all
    # 116 tasks)
    task_fraction: float = setting(1.0, gt=0, le=1)  # share of tasks that get demonstrations (the rest are
    # never shown)
    epochs: int = setting(8, ge=1)  # BC epochs: a clone short of converged (24 epochs on the same
    # demonstrations: 0.422); RFT, which fine-tunes on them too (rft.demos), finishes it and goes on (0.310 ->
    # 0.587 in 12 rounds)
    lr: float = setting(1e-3, gt=0)  # BC learning rate
    lr_schedule: str = setting("constant", choices=LR_SCHEDULES)  # constant | linear (decay to 0; the better
    # clone on 20 demos per task, the lower base on 3: see the README's "Policy headroom")
    seed: int = setting(0, ge=0)  # seeds the demonstrations and the BC run (the base is shared by every
    # training seed)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclasses.dataclass
class EnvConfig:
    """Where episodes run: SimDroid in-process by default, the real AndroidWorld on emulators, or Ray actors
    across machines (one backend, one emulator, per actor)."""

    SECTION: ClassVar[str] = "env"
    backend: str = setting("simdroid", choices=("simdroid", "androidworld"))  # simdroid | androidworld (needs
    # the android_world package and emulators)
    params: str = setting("auto", choices=("auto", "simdroid", "androidworld"))  # who draws each instance's
    # params: auto (SimDroid's generators on simdroid, the emulator's task on androidworld), simdroid, or
    # androidworld (android_world's own generators, in this process: SimDroid's suites become AndroidWorld's,
    # instance for instance; needs android_world installed)
    num_envs: int = setting(16, ge=1)  # sub-envs of the local vector env (SimDroid)
    vector: str = setting("sync", choices=("sync", "async", "pipelined"))  # sync | async (each sub-env in its
    # own process) | pipelined (lanes of sub-envs stepped in worker processes while the policy acts on another
    # lane; 1.3-1.7x the loop's speed measured under load; results depend on the lanes, never on
    # env.lane_workers)
    lanes: int = setting(2, ge=1)  # vector=pipelined: lanes the sub-envs are split into
    lane_workers: int = setting(1, ge=0)  # vector=pipelined: worker processes stepping lanes (0: in-process,
    # e.g. when compare runs two pairs at once)
    noise: str = setting("default", choices=("default", "none", "heavy"))  # SimDroid screen noise: default |
    # none | heavy
    screenshots: str = setting("auto", choices=("auto", "always", "never"))  # which runs render screenshots:
    # auto (when the policy reads pixels or the algorithm compares screens, as GRSD does), always, or never
    # (elements only; GRSD then cannot run)
    screen_scale: float = setting(0.25, gt=0, le=1)  # screenshot size as a fraction of the 1080x2400 logical
    # screen
    workers: int = setting(0, ge=0)  # > 0: a RayVectorEnv of this many actors (replaces num_envs / vector)
    ray_address: str = ""  # "" starts a local Ray; "auto" joins the cluster this machine belongs to
    actor_resources: dict[str, float] = dataclasses.field(default_factory=dict)  # per-actor custom Ray
    # resources, e.g. env.actor_resources=emulator=1 (one emulator per actor)
    console_ports: list[int] = dataclasses.field(default_factory=lambda: [5554])  # androidworld without
    # Ray: one local emulator per console port
    grpc_ports: list[int] = dataclasses.field(default_factory=list)  # androidworld: the matching gRPC ports
    # (default 8554, 8555, ...)
    transition_pause: float = setting(1.0, ge=0)  # androidworld: seconds to let the screen settle before
    # observing

    def __post_init__(self) -> None:
        check_fields(self)
        if self.vector == "pipelined" and self.backend != "simdroid":
            raise ValueError(f"env.vector=pipelined: expected env.backend=simdroid, got {self.backend!r} "
                             "(real emulators step in their own processes: use sync, async or env.workers)")
        if self.grpc_ports and len(self.grpc_ports) != len(self.console_ports):
            raise ValueError(f"env.grpc_ports={self.grpc_ports}: expected one per console port "
                             f"{self.console_ports}")

    def scale(self, needs_pixels: bool) -> float:
        """The render scale of this run's observations (0: elements only)."""
        if self.screenshots == "always" or (self.screenshots == "auto" and needs_pixels):
            return self.screen_scale
        return 0.0


@dataclasses.dataclass
class PolicyConfig:
    """Which policy acts and learns."""

    SECTION: ClassVar[str] = "policy"
    name: str = setting("small", choices=("small", "hf", "expert", "random"))  # small | hf to train; evaluate
    # also takes expert | random
    hf_model: str = "tiny-vlm"  # policy=hf: a path or hub id, or tiny-lm / tiny-vlm / tiny-qwen3-vl /
    # tiny-qwen2.5-vl (built offline)
    path: str = ""  # a saved policy to start from or evaluate: a policy folder, or a run folder (its latest
    # checkpoint)
    memory: int = 0  # policy=small: elements of the episode's earlier screens it reads (0: none; at most 64)
    memory_mode: str = setting("encoder", choices=("encoder", "heads"))  # policy=small: how it reads them:
    # encoder (beside the screen's elements in the encoder) or heads (only the copy, list, quantity and sum
    # heads read them; ~1.4x faster than encoder)
    layers: int = setting(2, ge=1)  # policy=small: encoder layers over CLS, history and elements (1: ~1.13x
    # faster acting and ~1.3x faster training, but a lower ceiling: see the README's "Policy headroom")
    d_model: int = 96  # policy=small: width of its states (a multiple of its 4 attention heads; 64: ~1.1x
    # faster acting and ~1.3x faster training; see the README's "Policy headroom" for what it reaches)
    device: str = "auto"  # policy=hf: where the model runs: auto (cuda when torch sees a GPU, else cpu) |
    # cpu | cuda | cuda:N; a saved policy (policy.path, the cached base) reloads on its own device unless
    # this is set
    dtype: str = "auto"  # policy=hf: the weights' dtype: auto (float32 on CPU, the checkpoint's own on GPU:
    # bf16 for Qwen) | float32 | bfloat16 | float16 (trained through float32 master weights, or float32 LoRA
    # adapters: docs/gpu.md)
    min_pixels: int = 0  # policy=hf: a Qwen-VL processor's pixel budget per screenshot, lower end (0: the
    # processor's own)
    max_pixels: int = 0  # policy=hf: upper end (0: the processor's own; 1003520 makes a 1080x2400 frame
    # 672x1472, 966 image tokens)
    crop_status_bar: bool = False  # policy=hf: cut the screenshot's status bar (top 4%) before the processor
    gradient_checkpointing: str = "auto"  # policy=hf: recompute activations in fit_sft: auto (on except on
    # CPU) | on | off
    max_new_tokens: int = 64  # policy=hf: the longest response (tokens) an action may take
    sft_batch_size: int = 8  # policy=hf: fit_sft's batch size
    lora_r: int = 0  # policy=hf: LoRA rank (0: every weight trains; > 0: adapters on the language model's
    # lora_targets train, the base stays frozen; needs peft: pip install -e '.[lora]')
    lora_alpha: float = 16.0  # policy=hf: LoRA's scale numerator (updates are scaled by alpha / r)
    lora_dropout: float = 0.0  # policy=hf: dropout on LoRA's input in fit_sft
    lora_targets: list[str] = dataclasses.field(default_factory=lambda: list(LORA_TARGETS))  # policy=hf: the
    # language model's linear layers that get adapters (never a vision tower's)

    def __post_init__(self) -> None:
        check_fields(self)
        if not 0 <= self.memory <= 64:
            raise ValueError(f"policy.memory={self.memory!r}: expected 0 to 64 (algos.prompt.SEEN_MAX)")
        if self.d_model < 4 or self.d_model % 4:
            raise ValueError(f"policy.d_model={self.d_model!r}: expected a positive multiple of 4 (the small "
                             "policy's attention heads)")
        self._check_hf()

    def _check_hf(self) -> None:
        """The HF policy's settings, each error naming its key."""
        import torch

        m = re.fullmatch(r"auto|cpu|cuda(?::(\d+))?", self.device)
        if m is None:
            raise ValueError(f"policy.device={self.device!r}: expected auto, cpu, cuda or cuda:N")
        if self.device.startswith("cuda"):
            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if int(m.group(1) or 0) >= n:
                raise ValueError(f"policy.device={self.device!r}: torch sees {n} CUDA devices here; expected "
                                 "auto or cpu" + (f", or cuda:0 to cuda:{n - 1}" if n else ""))
        _choice("policy.dtype", self.dtype, ("auto", "float32", "bfloat16", "float16"))
        _choice("policy.gradient_checkpointing", self.gradient_checkpointing, ("auto", "on", "off"))
        for key in ("min_pixels", "max_pixels"):
            if getattr(self, key) < 0:
                raise ValueError(f"policy.{key}={getattr(self, key)!r}: expected pixels >= 0 (0: the "
                                 "processor's own)")
        if 0 < self.max_pixels < self.min_pixels:
            raise ValueError(f"policy.min_pixels={self.min_pixels}, policy.max_pixels={self.max_pixels}: "
                             "expected min_pixels <= max_pixels")
        for key in ("max_new_tokens", "sft_batch_size"):
            if getattr(self, key) < 1:
                raise ValueError(f"policy.{key}={getattr(self, key)!r}: expected an integer >= 1")
        try:
            check_lora(self.lora_r, self.lora_alpha, self.lora_dropout, self.lora_targets)
        except ValueError as e:
            raise ValueError(f"policy.{e}") from None
        if self.lora_r and self.name == "small":
            raise ValueError(f"policy.lora_r={self.lora_r}: LoRA adapts policy=hf models; the small policy "
                             "trains every weight (expected policy.lora_r=0)")
        if self.lora_r and importlib.util.find_spec("peft") is None:
            raise ValueError(f"policy.lora_r={self.lora_r}: needs peft, which is not installed: {LORA_EXTRA}")


@dataclasses.dataclass
class CommonPart:
    """What every entry point takes."""

    preset: str = ""  # a named set of overrides applied first (see the presets below)
    progress: bool = True  # progress bars
    torch_threads: int = setting(1, ge=1)  # small models gain little from more, and stall badly when cores
    # are shared


@dataclasses.dataclass
class SeededPart(CommonPart):
    """Entry points that train: one seed, and the cache of base policies and RFT checkpoints."""

    seed: int = setting(0, ge=0)  # seeds torch, numpy, the training-instance generator and env noise
    cache_dir: str = ".cache/voyager-gym"  # where base policies and RFT checkpoints are cached


@dataclasses.dataclass
class SuitePart:
    """Which tasks, and the held-out evaluation suite (AndroidWorld suite seed 30)."""

    tasks: list[str] = dataclasses.field(default_factory=lambda: ["all"])  # task names, or all
    eval_n_per_task: int = setting(4, ge=1)  # held-out instances per task: 308 episodes for the 77 tasks
    split: str = setting("instances", choices=TASK_SPLITS)  # instances (train and evaluate on the same tasks,
    # other instances) | tasks (train on some tasks, base and RFT included; evaluate also on tasks never
    # trained on: heldout_pass_at_1)
    heldout_fraction: float = setting(0.25, gt=0, lt=1)  # split=tasks: share of the tasks held out (at least
    # one, never all)
    split_seed: int = setting(0, ge=0)  # split=tasks: which tasks are held out
    # (voyager_gym.suites.split_tasks)



@dataclasses.dataclass
class LoggedPart:
    """Entry points that write a run folder."""

    out_dir: str = ""  # run folder (each entry point has its own default)
    wandb: str = setting("offline", choices=("offline", "online", "disabled"))  # offline | online | disabled


@dataclasses.dataclass
class AlgosPart:
    """Every algorithm's section (each configures the algorithm of its name): one per registered algorithm,
    of its registered config class (tests/test_config.py checks they match algos/registry.py), at that
    class's own defaults: the algorithm modules hold the defaults and the checks of their keys, and the
    presets below are the only overlay."""

    rft: RFTConfig = dataclasses.field(default_factory=RFTConfig)
    grpo: GRPOConfig = dataclasses.field(default_factory=GRPOConfig)
    ppo: PPOConfig = dataclasses.field(default_factory=PPOConfig)
    grsd: GRSDConfig = dataclasses.field(default_factory=GRSDConfig)
    gigpo: GiGPOConfig = dataclasses.field(default_factory=GiGPOConfig)
    vine: VineConfig = dataclasses.field(default_factory=VineConfig)
    grsd_grpo: GRSDGRPOConfig = dataclasses.field(default_factory=GRSDGRPOConfig)  # algo=grsd-grpo
    # algo=grsd-reflect
    grsd_reflect: GRSDReflectConfig = dataclasses.field(default_factory=GRSDReflectConfig)


def _post_init_parts(cfg: Any) -> None:
    """The checks of an entry point's top-level keys (its parts' fields; each section, `env.*`, `grsd.*` and
    the others, checked itself when it was made): finite floats, each field's range or choices
    (algos.fields), then what a range cannot say."""
    check_fields(cfg, "")
    if isinstance(cfg, SuitePart) and not cfg.tasks:
        raise ValueError("tasks=[]: expected task names or all")


# -- entry points --------------------------------------------------------------------------------------------
@dataclasses.dataclass
class PretrainConfig(SuitePart, SeededPart):
    """experiments/pretrain.py: the base policy (cached) and its Pass@1."""

    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    policy: PolicyConfig = dataclasses.field(default_factory=PolicyConfig)
    base: BaseConfig = dataclasses.field(default_factory=BaseConfig)

    def __post_init__(self) -> None:
        _post_init_parts(self)
        _choice("policy.name", self.policy.name, ("small", "hf"))


@dataclasses.dataclass
class TrainConfig(AlgosPart, LoggedPart, PretrainConfig):
    """experiments/train.py: one algorithm from the base policy (rft), the cached RFT checkpoint (the others)
    or a saved policy (policy.path)."""

    algo: str = setting("rft", choices=ALGORITHMS)  # rft | grsd | grpo | ppo | gigpo | vine | grsd-grpo |
    # grsd-reflect
    budget: int = setting(0, ge=0)  # environment steps to train for (0: the algorithm's own `iterations`)
    resume: bool = True  # continue from out_dir's last checkpoint if there is one

    def __post_init__(self) -> None:
        PretrainConfig.__post_init__(self)  # the parts' checks (super() would stop at the first part)


@dataclasses.dataclass
class CompareConfig(AlgosPart, LoggedPart, PretrainConfig):
    """experiments/compare.py: several algorithms from one RFT checkpoint (trained with `seed`, cached), the
    same budget of environment steps each, `seeds` training seeds each."""

    preset: str = "default"  # a named set of overrides applied first (see the presets below)
    algo: list[str] = setting(factory=lambda: ["grsd", "grpo", "ppo"], choices=(*ALGORITHMS, SB3))  # the
    # algorithms compared: rft, grsd, grpo, ppo, gigpo, vine, grsd-grpo, grsd-reflect, sb3-ppo
    seeds: int = setting(3, ge=1)  # training seeds per algorithm (0 .. seeds-1)
    budget: int = setting(22_000, ge=1)  # environment steps per algorithm and seed
    workers: int = setting(2, ge=1)  # algorithm-seed pairs trained in parallel processes
    sb3_budget: int = setting(20_000, ge=1)  # sb3-ppo's env steps (it trains on the simple tasks only, see
    # algos/sb3_ppo.py)
    name: str = ""  # comparison name (wandb group); default: the run folder's name

    def __post_init__(self) -> None:
        if not self.algo:
            raise ValueError("algo=[]: expected one or more of " + ", ".join([*ALGORITHMS, SB3]))
        PretrainConfig.__post_init__(self)  # the parts' checks (super() would stop at the first part)


@dataclasses.dataclass
class EvalConfig(SuitePart, CommonPart):
    """experiments/evaluate.py: Pass@1 of a policy on the held-out suite over several noise seeds."""

    seeds: int = setting(3, ge=1)  # evaluation runs with noise seeds 0 .. seeds-1 (Pass@1 reported as mean
    # and spread)
    out: str = ""  # optional JSON file for the results
    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    policy: PolicyConfig = dataclasses.field(default_factory=PolicyConfig)

    def __post_init__(self) -> None:
        _post_init_parts(self)
        if self.policy.name in ("small", "hf") and not self.policy.path:
            raise ValueError(f"policy={self.policy.name} needs policy.path=<a saved policy or run folder>")


@dataclasses.dataclass
class ReportConfig:
    """experiments/report.py: redraw a comparison folder's outputs (curves, table, report) from its runs."""

    run_dir: str = ""  # the comparison folder (also accepted as the first bare argument)

    def __post_init__(self) -> None:
        if not self.run_dir:
            raise ValueError("run_dir: expected a comparison folder (python experiments/report.py RUN_DIR)")


# -- presets -------------------------------------------------------------------------------------------------
SMOKE_TASKS = "tasks=[SystemWifiTurnOn,SystemBluetoothTurnOff,OpenAppTaskEval,SystemBrightnessMaxVerify]"
SMOKE_BASE = [SMOKE_TASKS, "env.num_envs=8", "eval_n_per_task=2", "base.demos_per_task=2", "base.epochs=4"]
SMOKE = [  # a handful of short tasks, tiny budgets: a whole pipeline in a minute or two
    *SMOKE_BASE,
    *[f"{a}.{k}" for a in SECTIONS for k in ("iterations=1", "instances_per_iter=4", "group_size=4")],
]
COMPARE_DEFAULT = [*(f"{a}.{k}" for a in ("grsd", "grpo", "ppo", "gigpo", "vine", "grsd_grpo", "grsd_reflect")
                     for k in ("instances_per_iter=77", "eval_every=2")),
                   # the one tuned setting: PPO's 4 epochs beat its 2 by more than two evaluation sds on
                   # seed 0 (0.492 vs 0.463; README "Tuning, written down")
                   "ppo.epochs=4",
                   # VinePPO's Monte Carlo values cost ~6 branch steps per rollout step (K=2 from each of 4
                   # states a trajectory): 77 instances made one ~40,000-step iteration, so it gets 12, which
                   # leaves room for 3-4 updates in the budget
                   "vine.instances_per_iter=12"]
PRESETS: dict[str, dict[str, list[str]]] = {  # entry point -> preset -> overrides
    "train": {"smoke": SMOKE},
    "pretrain": {"smoke": SMOKE_BASE},
    "evaluate": {"smoke": [SMOKE_TASKS, "env.num_envs=8", "eval_n_per_task=2", "seeds=1"]},
    "compare": {
        # all 77 tasks, 3 seeds, 22,000 env steps per pair (5 iterations, ~24,700 steps), ~18 minutes on 2
        # cores with the small policy once the RFT checkpoint (~7 minutes) is cached;
        # one instance per task per iteration (~4,900 env steps), so each pair gets 5 updates; Pass@1 on
        # the held-out suite every 2 iterations and after the last
        "default": COMPARE_DEFAULT,
        # the long version for more time or cores: 5 seeds, 4x the default budget per pair (its expected
        # duration is printed before it starts: ~3 hours on 2 cores)
        "paper": [*COMPARE_DEFAULT, "seeds=5", "budget=88000"],
        "smoke": [*SMOKE, "seeds=2", "budget=240", "sb3_budget=256"],
    },
    "report": {},
}
SCHEMAS: dict[str, type] = {"train": TrainConfig, "pretrain": PretrainConfig, "evaluate": EvalConfig,
                            "compare": CompareConfig, "report": ReportConfig}


# -- parsing -------------------------------------------------------------------------------------------------
def _fields(schema: type) -> dict[str, Any]:
    """Dotted key -> resolved type of every leaf field of a config dataclass."""
    out: dict[str, Any] = {}
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        t = hints[f.name]
        if dataclasses.is_dataclass(t):
            out.update({f"{f.name}.{k}": v for k, v in _fields(t).items()})
        else:
            out[f.name] = t
    return out


def _sections(schema: type) -> dict[str, type]:
    hints = typing.get_type_hints(schema)
    return {f.name: hints[f.name] for f in dataclasses.fields(schema)
            if dataclasses.is_dataclass(hints[f.name])}


def _normalise(arg: str, schema: type, keys: dict[str, Any]) -> tuple[str, Any]:
    """One `key=value` override as (key, value for OmegaConf): comma lists and k=v maps become real ones,
    `section=NAME` becomes `section.name=NAME`."""
    key, value = arg.split("=", 1)
    key = key.strip()
    if key in _sections(schema) and f"{key}.name" in keys:
        key = f"{key}.name"
    t = keys.get(key)
    origin = typing.get_origin(t)
    v = value.strip()
    if origin is list and not v.startswith("["):
        return key, [x.strip() for x in v.split(",") if x.strip()]
    if origin is dict and not v.startswith("{"):
        pairs = [p for p in v.split(",") if p.strip()]
        bad = [p for p in pairs if "=" not in p]
        if bad:
            raise SystemExit(f"{key}={value!r}: expected a map written k=v,k2=v2 or {{k: v}}")
        return key, {k.strip(): _scalar(x) for k, x in (p.split("=", 1) for p in pairs)}
    return key, (v if t is str else _scalar(value))  # a str key keeps its text ("no" is not False)


def _scalar(text: str) -> Any:
    """A value as YAML reads it (numbers, booleans, lists), OmegaConf's override syntax."""
    return OmegaConf.from_dotlist([f"v={text.strip()}"]).v


def _type_name(t: Any) -> str:
    if typing.get_origin(t) in (list, dict):
        return f"{typing.get_origin(t).__name__}[{', '.join(_type_name(a) for a in typing.get_args(t))}]"
    return getattr(t, "__name__", str(t))


def parse(argv: Sequence[str], schema: type = TrainConfig, prog: str | None = None) -> Any:
    """The config of entry point `prog` (default: the schema's) from `argv`: `--help` prints the keys and
    exits; preset overrides first, then the user's; every error is a SystemExit naming the key and value."""
    prog = prog or next((p for p, s in SCHEMAS.items() if s is schema), "voyager-train")
    argv = list(argv)
    if any(a in ("-h", "--help", "help") for a in argv):
        print(help_text(prog, schema))
        raise SystemExit(0)
    keys = _fields(schema)
    if "run_dir" in keys:  # report: the folder may be given bare
        argv = [a if "=" in a else f"run_dir={a}" for a in argv]
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise SystemExit(f"arguments must be key=value overrides, got {bad}; see `{prog} --help`")
    presets = PRESETS.get(prog, {})
    default = next((f.default for f in dataclasses.fields(schema) if f.name == "preset"), "")
    chosen = [a.split("=", 1)[1].strip() for a in argv if a.split("=", 1)[0].strip() == "preset"]
    preset = chosen[-1] if chosen else default
    if preset and preset not in presets:
        names = ", ".join(presets) or f"(none: {prog} has no presets)"
        raise SystemExit(f"preset={preset!r}: expected one of {names}")
    cfg = OmegaConf.structured(schema)
    for arg in [*presets.get(preset, []), *argv]:
        key = arg.split("=", 1)[0].strip()
        known = key in keys or (key in _sections(schema) and f"{key}.name" in keys)
        if not known:
            close = difflib.get_close_matches(key, list(keys), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SystemExit(f"unknown key {key!r} for {prog}{hint} (`{prog} --help` lists every key)")
        try:
            k, v = _normalise(arg, schema, keys)
        except Exception as e:  # noqa: BLE001 - YAML's parser errors (an unclosed [ or {) have no common base
            problem = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise SystemExit(f"{key}={arg.split('=', 1)[1]!r}: cannot be read ({problem}); lists are written "
                             "[a,b] or a,b, maps {k: v} or k=v,k2=v2") from None
        try:
            OmegaConf.update(cfg, k, v, merge=False)
        except OmegaConfBaseException:
            raise SystemExit(f"{k}={arg.split('=', 1)[1]!r}: expected {_type_name(keys[k])} "
                             f"(`{prog} --help` lists every key)") from None
    try:
        return OmegaConf.to_object(cfg)
    except (ValueError, OmegaConfBaseException) as e:
        msg = e.__cause__ if isinstance(e, OmegaConfBaseException) and e.__cause__ else e
        raise SystemExit(f"{prog}: {msg}") from None


def as_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def run_config(cfg: Any, algo: str | None = None, seed: int | None = None) -> dict[str, Any]:
    """The config a run folder of `algo` (default cfg.algo) with `seed` stores: the resolved config without
    the other algorithms' sections, which cannot change this run (its identity, see algos/run.py)."""
    algo = algo or cfg.algo
    d = {k: v for k, v in as_dict(cfg).items() if k not in SECTIONS or k == config_section(algo)}
    d["algo"] = algo
    if seed is not None:
        d["seed"] = seed
    return d


# -- help ----------------------------------------------------------------------------------------------------
@functools.cache  # help asks once per key; reading a class's source costs ~10 ms
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its comment in the class body (the trailing comment and the comment lines under it),
    for `cls` and the dataclasses it inherits from (the same dict on every call: do not modify it)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass is object:
            continue
        try:
            src = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        names = set(klass.__dict__.get("__annotations__", {}))
        current: str | None = None
        depth = 0
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
            elif tok.type == tokenize.NAME and depth == 0 and tok.start[1] == 4 and tok.string in names:
                current = tok.string
                docs[current] = ""
            elif tok.type == tokenize.COMMENT and current is not None:
                docs[current] = (docs[current] + " " + tok.string.lstrip("#").strip()).strip()
            elif tok.type == tokenize.NAME and tok.start[1] == 4 and depth == 0:
                current = None  # a method or another statement ends the field's comment
    return docs


def _doc_of(schema: type, dotted: str) -> str:
    parts = dotted.split(".")
    cls = schema
    for p in parts[:-1]:
        cls = typing.get_type_hints(cls)[p]
    return field_docs(cls).get(parts[-1], "")


def help_text(prog: str, schema: type) -> str:
    """Every key of `schema` with its type, default and meaning, then the presets and what they set."""
    defaults = OmegaConf.to_container(OmegaConf.structured(schema))
    lines = [f"usage: voyager-train {prog} [key=value ...]  (or: python experiments/{prog}.py "
             "[key=value ...])",
             "", inspect.cleandoc(schema.__doc__ or ""), "",
             "Lists take [a,b] or a,b; maps k=v,k2=v2; `policy=hf` is policy.name=hf. Keys:"]
    rows = []
    for key, t in _fields(schema).items():
        d: Any = defaults
        for p in key.split("."):
            d = d[p]
        rows.append((key, _type_name(t), "" if d is None else str(d), _doc_of(schema, key)))
    wk = max(len(r[0]) for r in rows)
    wt = max(len(r[1]) for r in rows)
    wd = min(24, max(len(r[2]) for r in rows))
    for key, t, d, doc in rows:
        lines.append(f"  {key:<{wk}}  {t:<{wt}}  {d:<{wd}}  {doc}")
    presets = PRESETS.get(prog, {})
    if presets:
        default = next((f.default for f in dataclasses.fields(schema) if f.name == "preset"), "")
        lines += ["", "Presets (preset=NAME; the only overlay on the defaults above, which are the algorithm "
                  "classes' own; your own overrides win):"]
        for name, overrides in presets.items():
            note = " (applied unless preset= says otherwise)" if name == default else ""
            lines.append(f"  {name}{note}: {' '.join(overrides) or '(the defaults above)'}")
    return "\n".join(lines)


def main_help(prog: str) -> None:  # pragma: no cover - convenience for `python -m experiments.config train`
    print(help_text(prog, SCHEMAS[prog]))


if __name__ == "__main__":  # pragma: no cover
    main_help(sys.argv[1] if len(sys.argv) > 1 else "train")
