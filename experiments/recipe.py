"""The recipe: how the experiments build and train one algorithm's run, the same for train.py, each pair of
compare.py and the sb3-ppo baseline.

`train_run(cfg, algo, seed, out, ...)` is the one place a run is assembled: the algorithm from its config
section (`make_algorithm`), its run folder, its vector env (screenshots rendered live, or by replay where the
algorithm compares screens the policy does not read: `frame_replay`), its starting policy (`start`: the base
policy for RFT, the cached RFT start checkpoint for the others, or `policy.path`), and what the algorithm is
handed beside its config, in one `RunContext` (`run_context`: the base's demonstrations with `<algo>.demos`,
RFT's success pool with `grsd.rft_pool`, the replay env), then the shared loop (algos/loop.py) for the
budget. Nothing outside algos/ sets an algorithm's attributes: it takes the context in `Algorithm.setup`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from algos.loop import Algorithm, RunContext, train_loop
from algos.policies.base import Policy
from algos.run import RunFolderError
from experiments.common import (
    cache_entry,
    demonstrations,
    frame_replay,
    load_or_train_base,
    load_saved_policy,
    make_algorithm,
    make_envs,
    rebuild_hint,
    resolve_tasks,
    rft_path,
    suite_backend,
    task_split,
)

SB3 = "sb3-ppo"  # experiments.config.SB3: trains with its own loop (algos/sb3_ppo.py)
STARTS = ("auto", "rft")  # auto: policy.path, else the base (rft) or the RFT checkpoint; rft: that checkpoint


def start_of(cfg: Any, algo: str, start: str = "auto") -> str:
    """Where run `algo` starts: 'path' (policy.path), 'base' (the base policy: RFT's own start) or 'rft' (the
    cached RFT start checkpoint: every other algorithm, and every pair of a comparison)."""
    if start not in STARTS:
        raise ValueError(f"start={start!r}: expected one of {', '.join(STARTS)}")
    if start == "rft":
        return "rft"
    if cfg.policy.path:
        return "path"
    return "base" if algo == "rft" else "rft"


def run_context(cfg: Any, algo: Algorithm, tasks: list[str], envs: Any, start: str = "rft",
                replay_env: dict[str, Any] | None = None) -> RunContext:
    """What `algo` is handed beside its config: the base policy's demonstrations when its config asks for
    them (`demos`; collected again on `envs`: the same expert episodes, deterministic for base.seed), RFT's
    success pool when it asks for that (`rft_pool`: the RFT start checkpoint's, when the run starts there),
    and the replay env of its frames."""
    name = algo.name
    demos = None
    if getattr(algo.cfg, "demos", False):
        if cfg.env.backend == "androidworld":  # the loaded model is the base: it was cloned from nothing here
            print(f"{name}.demos: env.backend=androidworld has no expert demonstrations; {name} fine-tunes "
                  "on its successes only")
            demos = []
        else:
            demos = demonstrations(cfg, tasks, envs)
            print(f"{name}.demos: {len(demos)} demonstration steps fine-tuned on beside its successes")
    pool = None
    if getattr(algo.cfg, "rft_pool", False):
        pool = rft_start_pool(cfg, name, tasks, start)
    return RunContext(replay_env=replay_env, demo_samples=demos, rft_pool=pool)


def rft_start_pool(cfg: Any, name: str, tasks: list[str], start: str) -> Any:
    """The success pool of the cached RFT start checkpoint (call after `load_or_train_rft`; a resumed run then
    loads its own pool over it); an empty one when the run does not start from that checkpoint."""
    from algos.buffer import TrajectoryBuffer
    from algos.run import checkpoint_dir

    if start != "rft":  # nothing says that policy came from the RFT start
        what = f"policy.path={cfg.policy.path!r}" if start == "path" else "the base policy"
        print(f"{name}.rft_pool: {what} is not the RFT start checkpoint, so {name}'s success pool starts "
              "empty")
        return TrajectoryBuffer()
    run_dir = cache_entry(cfg, rft_path(cfg, tasks))
    try:
        path = (checkpoint_dir(run_dir) or run_dir) / "successes.parquet"
    except RunFolderError as e:
        raise SystemExit(f"cache: {e}; {rebuild_hint(run_dir)}") from None
    if not path.exists():
        raise SystemExit(f"{name}.rft_pool=true: the RFT checkpoint has no success pool at {path}")
    # RFT's group ids come from its own rollout seeds, which this run's may repeat: mark them as RFT's
    pool = TrajectoryBuffer.load(path).prefixed("rft-")
    print(f"{name}.rft_pool: {len(pool)} groups ({len(pool.steps())} steps) of RFT's successes to start from")
    return pool


def start_policy(cfg: Any, algo: str, tasks: list[str], envs: Any, start: str) -> Policy:
    """The policy run `algo` starts from (`start_of`)."""
    if start == "path":
        policy = load_saved_policy(cfg)
        print(f"starting {algo} from {cfg.policy.path}")
        return policy
    if start == "base":
        return load_or_train_base(cfg, tasks, envs)
    policy, row = load_or_train_rft(cfg, tasks, envs)
    print(f"starting {algo} from the RFT checkpoint (Pass@1 {row['pass_at_1']:.3f})")
    return policy


def load_or_train_rft(cfg: Any, tasks: list[str], envs: Any) -> tuple[Policy, dict[str, Any]]:
    """The RFT checkpoint later algorithms start from (GRSD, GRPO, PPO in the paper all start there): trained
    once per recipe (`rft.*`, `base.*`) as a resumable run under cfg.cache_dir, RFT from the base policy with
    its context as every run gets it (`run_context`). Returns the policy and its last metrics row."""
    from algos.folders import atomic_write_text, inside
    from algos.policies.registry import load_policy
    from algos.run import Run, checkpoint_dir, read_metrics, verify_manifest

    path = cache_entry(cfg, rft_path(cfg, tasks))
    if not (path / "done").exists():
        try:  # another process building the same start (a comparison sharing cache_dir): wait for it
            run = Run(path, {"rft": vars(cfg.rft), "base": vars(cfg.base)}, wandb_mode="disabled",
                      made_by="cache", wait=True,
                      busy=f"the RFT start checkpoint {path} is being trained by another process (sharing "
                      "cache_dir)")
        except RunFolderError as e:
            raise SystemExit(f"cache: {e}; {rebuild_hint(path)}") from None
        try:
            if not (path / "done").exists():  # (the other process may have finished it meanwhile)
                base = load_or_train_base(cfg, tasks, envs)
                print(f"training the RFT start checkpoint in {path} (cached for later runs)")
                rft = make_algorithm(cfg, "rft")
                rft.setup(run_context(cfg, rft, tasks, envs, start="base"))
                train_loop(rft, base, envs, run, tasks, cfg.seed, cfg.eval_n_per_task, progress=cfg.progress,
                           suite_backend=suite_backend(cfg))
                atomic_write_text(inside(path, "done"), "1")
        finally:
            run.close()
    # read-only from here: the parallel pairs of a comparison read the cached checkpoint at once, unlocked
    try:
        ckpt = checkpoint_dir(path)
        if ckpt is None:
            raise RunFolderError(f"{path}/checkpoint.json is missing")
        verify_manifest(ckpt, "the cached RFT start")
        rows = [r for r in read_metrics(path / "metrics.jsonl") if r.get("pass_at_1") is not None]
        if not rows:
            raise RunFolderError(f"{path}/metrics.jsonl holds no evaluation row")
        policy = load_policy(ckpt / "policy", kind=cfg.policy.name)
    except (RunFolderError, ValueError, OSError) as e:
        raise SystemExit(f"cache: the RFT start in {path} cannot be used: {e}; {rebuild_hint(path)}") \
            from None
    return policy, rows[-1]


def train_run(cfg: Any, algo: str, seed: int, out: Path, *, config: dict[str, Any], budget: int,
              start: str = "auto", progress: bool | None = None, group: str | None = None,
              name: str | None = None, made_by: str | None = None) -> dict[str, Any]:
    """Train (or resume) run `algo` with `seed` in folder `out` for `budget` env steps (0: its iterations),
    as the experiments do (see the module docstring); `config` is what the folder stores (its identity).
    Returns the last evaluation. A folder in use or of another config is a RunFolderError, a training step
    that goes non-finite an algos.loop.NonFiniteError (its last good checkpoint kept). `made_by`: the
    command whose folder it is (algos/folders.py), refusing another's."""
    from algos.run import Run

    progress = cfg.progress if progress is None else progress
    name = name or f"{algo}-s{seed}"
    tasks, heldout = task_split(cfg, resolve_tasks(cfg.tasks, cfg.env.backend))
    if algo == SB3:  # trains from scratch through the fixed-size wrapper, on the simple tasks by default
        from algos import sb3_ppo

        rows = sb3_ppo.train(budget, seed=seed, tasks=None if cfg.tasks == ["all"] else tasks,
                             eval_n_per_task=cfg.eval_n_per_task, out_dir=out, wandb_mode=cfg.wandb,
                             suite_backend=suite_backend(cfg), made_by=made_by)
        return rows[-1] if rows else {}
    a = make_algorithm(cfg, algo)  # checks the section before the folder is touched
    start = start_of(cfg, algo, start)
    run = Run(out, config, wandb_mode=cfg.wandb, group=group or algo, name=name, made_by=made_by)
    try:
        replay = frame_replay(cfg, a.needs_pixels)
        envs = make_envs(cfg, pixels=a.needs_pixels and replay is None)
        try:
            policy = start_policy(cfg, algo, tasks, envs, start)
            a.setup(run_context(cfg, a, tasks, envs, start, replay))
            _, last = train_loop(a, policy, envs, run, tasks, seed, cfg.eval_n_per_task, progress=progress,
                                 max_env_steps=budget, suite_backend=suite_backend(cfg),
                                 heldout_tasks=heldout)
        finally:
            envs.close()
    finally:
        run.close()
    return last
