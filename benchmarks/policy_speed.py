"""SmallPolicy speed on real observations: batched `act` (actions/s) and `fit_sft` (samples/s).

Observations come from expert rollouts (elements mode, no noise) over a few tasks; `act` runs on fresh copies
of them (new element objects with equal values, as in a rollout). The reference, measured in the same run, is
the same policy driven one sample at a time (a per-sample loop: `act([x])`, and one log_probs + backward +
Adam step per sample), i.e. what batching buys. Each figure is the best of --reps runs (the machine may be
shared), each run with Python's cyclic garbage collector paused as the training loop has it. Targets for
the harness on 2 cores: act >= 2,000 actions/s at batch 64, fit_sft >= 1,000 samples/s.

With --procs N the same act and fit_sft runs also go on in N processes at once, each with --threads / N torch
threads (at least 1) and its own policy, started together by a barrier, as `experiments/compare.py` runs its
pairs (one process and one torch thread a pair); the combined figure is every process's samples over the
wall time from the first start to the last end, best of --reps, printed beside this run's one-process
figure (its reference).

    python benchmarks/policy_speed.py [--tasks A,B] [--seeds 4] [--batch 64] [--reps 5] [--threads 2]
                                      [--memory K]   (SmallPolicy(memory=K): earlier screens' elements too)
                                      [--memory-mode encoder|heads]   (how they are read)
                                      [--layers N]   (SmallPolicy(layers=N): encoder layers, default 2)
                                      [--d-model D]   (SmallPolicy(d_model=D): state width, default 96)
                                      [--procs N]   (also N processes at once, --threads / N threads each)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import time

import torch

DEFAULT_TASKS = ("SystemWifiTurnOn,MarkorCreateNote,ContactsAddContact,SimpleCalendarLocationOfEvent,"
                 "OpenAppTaskEval,ExpenseAddMultiple,FilesMoveFile,SimpleSmsReply,RecipeDeleteSingleRecipe,"
                 "TasksHighPriorityTasks")


def collect(tasks: list[str], seeds: int) -> list[tuple]:
    """(PolicyInput, expert response) pairs from expert episodes."""
    from algos.prompt import PolicyInput, SeenElements, render_response
    from voyager_gym.actions import parse_action
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="elements", noise="none")
    out = []
    for name in tasks:
        for seed in range(seeds):
            obs, info = env.reset(seed=seed, options={"task": name})
            history: list[str] = []
            seen = SeenElements()
            while True:
                a = env.unwrapped.expert_action()
                x = PolicyInput.from_obs(obs, history, len(history), info["max_steps"],
                                         seen.view(obs["ui_elements"]), seen.acted)
                seen.add(obs["ui_elements"], a)
                out.append((x, render_response(parse_action(a))))
                obs, _, term, trunc, info = env.step(a)
                history.append(a)
                if term or trunc:
                    break
    return out


def fresh_copy(x):
    """The same input with new (equal) element objects, as the next observation of a repeated screen is."""
    import dataclasses

    return dataclasses.replace(x, elements=tuple(dataclasses.replace(e) for e in x.elements))


def best_time(fn, reps: int) -> float:
    """Fastest of `reps` runs: the machine is shared, so the minimum is the least noisy estimate. Each run has
    Python's cyclic garbage collector paused, as the training loop runs rollouts and updates
    (`algos.timing.collector_paused`; its one collection at the end is not timed, the loop pays it once an
    iteration)."""
    from algos.timing import collector_paused

    times = []
    for _ in range(reps):
        with collector_paused():
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(times)


def machine_speed(reps: int) -> tuple[float, float, float]:
    """How fast this machine is right now, on two fixed workloads that stand for the policy's two halves: an
    fp32 linear of the encoder's shape ([1088, 96] x [96, 288], torch's threads) in GFLOP/s, and a pure-Python
    dictionary-and-tuple loop (what featurising does) in millions of iterations/s. The machines these
    benchmarks run on are shared VMs whose speed swings ~2x within a day; these two figures, printed beside
    the policy's, tell a slow spell from a slower policy. Third, the same product by numpy's BLAS (OpenBLAS
    in numpy's wheels), in GFLOP/s: torch's CPU build multiplies with MKL, which on some CPUs (AMD's, seen
    here) runs these small shapes at about half OpenBLAS's speed, so a low torch figure beside a high numpy
    one says the CPU's maker, not its load, is the cause."""
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*s, generator=gen) for s in ((1088, 96), (288, 96), (288,)))
    for _ in range(20):
        F.linear(x, w, b)
    n = 200
    t_mm = best_time(lambda: [F.linear(x, w, b) for _ in range(n)], reps)
    gflops = 2 * 1088 * 96 * 288 * n / t_mm / 1e9
    xn, wn, bn = x.numpy(), w.numpy().T.copy(), b.numpy()
    t_np = best_time(lambda: [xn @ wn + bn for _ in range(n)], reps)
    np_gflops = 2 * 1088 * 96 * 288 * n / t_np / 1e9
    keys = [(f"w{i}", i % 7) for i in range(1000)]

    def py_loop() -> None:
        d: dict = {}
        for _ in range(100):
            for k in keys:
                d[k] = d.get(k, 0) + 1

    m_iters = 100 * len(keys) / best_time(py_loop, reps) / 1e6
    return gflops, m_iters, np_gflops


def new_policy(args: argparse.Namespace):
    """The SmallPolicy the command line asks for (seed 0)."""
    from algos.policies.small import SmallPolicy
    from voyager_gym.env import app_names

    return SmallPolicy(app_names("simdroid"), seed=0, memory=args.memory, memory_mode=args.memory_mode,
                       layers=args.layers, d_model=args.d_model)


def act_batches(pol, xs: list, batch: int) -> None:
    """`pol.act` over `xs` in batches of `batch`."""
    for i in range(0, len(xs), batch):
        pol.act(xs[i : i + batch])


def _parallel_worker(args: argparse.Namespace, threads: int, barrier, out) -> None:
    """One of --procs processes: its own policies on the same samples; each timed run starts at the barrier
    and reports its (start, end) on the shared monotonic clock."""
    import gc

    torch.set_num_threads(threads)
    from algos.timing import collector_paused

    samples = collect(args.tasks.split(","), args.seeds)
    xs = [x for x, _ in samples]
    pol, fit_pol = new_policy(args), new_policy(args)
    pol.act(xs[: args.batch])
    fit_pol.fit_sft(samples, epochs=1, seed=0)
    copies = iter([[fresh_copy(x) for x in xs] for _ in range(args.reps)])
    runs = {"act": lambda: act_batches(pol, next(copies), args.batch),
            "fit": lambda: fit_pol.fit_sft(samples, epochs=args.epochs, seed=0)}
    windows: dict[str, list] = {kind: [] for kind in runs}
    for kind, run in runs.items():
        for _ in range(args.reps):
            gc.collect()
            barrier.wait()
            with collector_paused():
                t0 = time.monotonic()
                run()
                windows[kind].append((t0, time.monotonic()))
    out.put({"n_act": len(xs), "n_fit": len(samples) * args.epochs, "windows": windows})


def parallel_rates(args: argparse.Namespace) -> tuple[float, float, int]:
    """Combined act and fit_sft rates of --procs processes running at once: for each repetition, all
    processes' samples over the span from the first start to the last end; the best repetition."""
    ctx = mp.get_context("spawn")
    threads = max(1, args.threads // args.procs)
    barrier, out = ctx.Barrier(args.procs), ctx.Queue()
    procs = [ctx.Process(target=_parallel_worker, args=(args, threads, barrier, out))
             for _ in range(args.procs)]
    for p in procs:
        p.start()
    results: list[dict] = []
    while len(results) < len(procs):  # a worker that dies would leave the others waiting at the barrier
        try:
            results.append(out.get(timeout=1.0))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    p.kill()
                raise RuntimeError(f"a --procs worker exited with code {dead[0]}") from None
    for p in procs:
        p.join()

    def best(kind: str, n_key: str) -> float:
        rates = []
        for rep in range(args.reps):
            spans = [r["windows"][kind][rep] for r in results]
            wall = max(e for _, e in spans) - min(s for s, _ in spans)
            rates.append(sum(r[n_key] for r in results) / wall)
        return max(rates)

    return best("act", "n_act"), best("fit", "n_fit"), threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--loop-samples", type=int, default=128, help="samples in the per-sample reference loops")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", type=int, default=0, help="SmallPolicy(memory=K): earlier screens' elements")
    ap.add_argument("--memory-mode", default="encoder", choices=("encoder", "heads"),
                    help="SmallPolicy(memory_mode=...): earlier screens' elements in the encoder or heads")
    ap.add_argument("--layers", type=int, default=2, help="SmallPolicy(layers=N): encoder layers")
    ap.add_argument("--d-model", type=int, default=96, help="SmallPolicy(d_model=D): width of its states")
    ap.add_argument("--procs", type=int, default=1,
                    help="also time N processes at once (--threads / N torch threads each), as compare.py's "
                    "pairs run")
    args = ap.parse_args()
    if args.procs < 1:
        ap.error(f"--procs must be >= 1, got {args.procs}")
    torch.set_num_threads(args.threads)

    samples = collect(args.tasks.split(","), args.seeds)
    xs = [x for x, _ in samples]
    n_el = sum(len(x.elements) for x in xs) / len(xs)
    print(f"{len(samples)} expert steps from {len(args.tasks.split(','))} tasks x {args.seeds} seeds "
          f"(mean {n_el:.1f} elements per screen)")
    cold_pol = new_policy(args)
    t0 = time.perf_counter()
    cold_pol.featurize(xs)
    feat_cold = len(xs) / (time.perf_counter() - t0)  # first sight of every goal, element and action text

    pol = new_policy(args)
    n_params = sum(p.numel() for p in pol.model.parameters())
    n_layers = len(pol.model.blocks)  # as built (the network timed), not as asked
    width = pol.model.blocks[0].qkv.in_features
    pol.act(xs[: args.batch])  # warm-up (first-call allocations, value caches)
    # a rollout's observations are new objects each step: act on fresh copies (equal values) every repetition
    copies = iter([[fresh_copy(x) for x in xs] for _ in range(args.reps)])

    act_rate = len(xs) / best_time(lambda: act_batches(pol, next(copies), args.batch), args.reps)
    loop = xs[: args.loop_samples]
    act_ref = len(loop) / best_time(lambda: [pol.act([x]) for x in loop], max(1, args.reps // 2))
    ys = [fresh_copy(x) for x in xs]
    feat_fresh = len(xs) / best_time(lambda: pol.featurize(ys), 1)
    feat_same = len(xs) / best_time(lambda: pol.featurize(xs), args.reps)  # the same objects again (epochs)

    fit_pol = new_policy(args)
    fit_pol.fit_sft(samples, epochs=1, seed=0)  # warm-up: optimizer state, first-call allocations
    losses = []
    t_fit = best_time(lambda: losses.append(fit_pol.fit_sft(samples, epochs=args.epochs, seed=0)["loss"]),
                      args.reps)
    sft_rate = len(samples) * args.epochs / t_fit

    ref_pol = new_policy(args)
    opt = torch.optim.Adam(ref_pol.model.parameters(), lr=1e-3)
    ref = samples[: args.loop_samples]

    def sft_loop() -> None:
        for x, r in ref:
            loss = -ref_pol.log_probs([x], [r]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    t_ref = best_time(sft_loop, max(1, args.reps // 2))
    sft_ref = len(ref) / t_ref

    gflops, m_iters, np_gflops = machine_speed(args.reps)
    par = parallel_rates(args) if args.procs > 1 else None
    n_seen = sum(len(x.seen[-args.memory :]) if args.memory else 0 for x in xs) / len(xs)
    print(f"SmallPolicy: {n_params / 1e6:.2f}M parameters, encoder layers {n_layers}, width "
          f"{width}, torch threads "
          f"{torch.get_num_threads()}, memory "
          f"{args.memory} {args.memory_mode} (mean {n_seen:.1f} earlier-screen elements read per step)")
    print(f"act      batch {args.batch}: {act_rate:8.0f} actions/s   reference (per-sample loop, act([x])): "
          f"{act_ref:6.0f} actions/s   ratio {act_rate / act_ref:5.1f}x   target >= 2,000")
    print(f"fit_sft  batch 64: {sft_rate:8.0f} samples/s   reference (per-sample loop, batch-1 Adam steps): "
          f"{sft_ref:6.0f} samples/s   ratio {sft_rate / sft_ref:5.1f}x   target >= 1,000 "
          f"(featurising included; loss after training {losses[-1]:.3f})")
    print(f"featurise: first sight {feat_cold:6.0f} samples/s, seen values in new objects (a rollout) "
          f"{feat_fresh:6.0f} samples/s, the same objects (training epochs) {feat_same:6.0f} samples/s")
    print(f"machine now: linear [1088,96]x[96,288] {gflops:5.0f} GFLOP/s on {torch.get_num_threads()} "
          f"threads (numpy's BLAS: {np_gflops:5.0f}), Python dict loop {m_iters:5.1f} M iterations/s")
    extra = {}
    if par is not None:
        p_act, p_fit, p_threads = par
        print(f"{args.procs} processes x {p_threads} torch thread(s) at once (as compare.py's pairs), "
              f"combined: act {p_act:8.0f} actions/s ({p_act / act_rate:4.2f}x one process above), fit_sft "
              f"{p_fit:8.0f} samples/s ({p_fit / sft_rate:4.2f}x)")
        extra = {"procs": args.procs, "procs_act_per_s": round(p_act), "procs_sft_per_s": round(p_fit)}
    print(json.dumps({"samples": len(samples), "act_per_s": round(act_rate), "act_ref_per_s": round(act_ref),
                      "sft_per_s": round(sft_rate), "sft_ref_per_s": round(sft_ref),
                      "featurise_per_s": round(feat_fresh), "params": n_params,
                      "machine_gflops": round(gflops, 1), "machine_numpy_gflops": round(np_gflops, 1),
                      "machine_py_miters": round(m_iters, 2),
                      "memory": args.memory, "memory_mode": args.memory_mode, "layers": n_layers,
                      "d_model": width, **extra}))


if __name__ == "__main__":
    main()
