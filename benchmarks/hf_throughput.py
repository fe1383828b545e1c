"""HFPolicy throughput on a Qwen3-VL: actions/s of batched `act` on SimDroid screenshots at a Qwen-VL pixel
budget, training samples/s of `fit_sft` (TRL, loss on the completion), peak memory, and optionally env
steps/s of whole GRPO iterations (rollouts, update, evaluation, checkpoint) on a few tasks.

References measured in the same run: `act` at batch B against the same prompts acted on one at a time
(`act_vs_one_at_a_time`), and against a bare `model.generate` call on the same encoded batch
(`act_vs_generate`: what the processor, decoding and the exact log-prob forward pass cost on top).

Models: `tiny-qwen3-vl` (the offline tiny model, any machine), `qwen3-vl-4b` (random weights of
Qwen3-VL-4B-Instruct's shape built from its config: no download; the tiny tokenizer's 1,028-token vocabulary
stands in for the real 151,936, which leaves out ~0.39B tied embedding parameters, under 10% of a decoded
token's work), or a local checkpoint folder. Random weights never write an end-of-turn token, so every
response runs to --max-new-tokens.

    python benchmarks/hf_throughput.py [--model tiny-qwen3-vl] [--device cpu] [--batch-sizes 1,4,16]
        [--max-new-tokens 32] [--render-scale 0.05] [--max-pixels 4096] [--sft-samples 16] [--loop-iters 0]
    python benchmarks/hf_throughput.py --model qwen3-vl-4b --device cuda --dtype bfloat16 --render-scale 1 \\
        --max-pixels 1003520 --batch-sizes 1,8,32 --max-new-tokens 48 --sft-samples 64 --loop-iters 1

The last line printed is the figures as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LOOP_TASKS = ("SystemWifiTurnOn", "OpenAppTaskEval", "SystemBluetoothTurnOff", "MarkorCreateNote")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="tiny-qwen3-vl", help="tiny-qwen3-vl, qwen3-vl-4b or a folder")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", help="bfloat16 | float16 | float32")
    ap.add_argument("--batch-sizes", default="1,4", help="comma-separated act batch sizes")
    ap.add_argument("--one-at-a-time", type=int, default=2, help="prompts acted on one by one (reference)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--render-scale", type=float, default=0.05, help="SimDroid frame scale (1: 1080x2400)")
    ap.add_argument("--min-pixels", type=int, default=None, help="Qwen-VL pixel budget (default: its own)")
    ap.add_argument("--max-pixels", type=int, default=None)
    ap.add_argument("--crop-status-bar", action="store_true")
    ap.add_argument("--sft-samples", type=int, default=16, help="samples of the timed fit_sft (0: skip)")
    ap.add_argument("--sft-batch", type=int, default=8)
    ap.add_argument("--grad-ckpt", choices=("auto", "on", "off"), default="auto",
                    help="gradient checkpointing in fit_sft (auto: on except on CPU)")
    ap.add_argument("--loop-iters", type=int, default=0, help="GRPO iterations through train_loop (0: skip)")
    ap.add_argument("--loop-envs", type=int, default=16, help="envs of the loop (4 tasks x group of 4)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if not sizes or min(sizes) < 1:
        ap.error(f"--batch-sizes {args.batch_sizes!r}: expected positive integers, e.g. 1,4,16")
    if args.max_new_tokens < 1 or args.one_at_a_time < 1 or args.sft_samples < 0 or args.loop_iters < 0:
        ap.error("--max-new-tokens and --one-at-a-time must be >= 1, --sft-samples and --loop-iters >= 0")
    args.sizes = sizes
    return args


def build_policy(args: argparse.Namespace) -> Any:
    import torch

    from algos.policies import tiny
    from algos.policies.hf import HFPolicy, torch_dtype

    dtype = torch_dtype(args.dtype)
    ckpt = {"auto": None, "on": True, "off": False}[args.grad_ckpt]
    kwargs = dict(max_new_tokens=args.max_new_tokens, device=args.device, seed=args.seed,
                  sft_batch_size=args.sft_batch, min_pixels=args.min_pixels, max_pixels=args.max_pixels,
                  crop_status_bar=args.crop_status_bar, gradient_checkpointing=ckpt, max_prompt_tokens=None)
    if args.model in ("tiny-qwen3-vl", "qwen3-vl-4b"):
        tok = tiny.build_tiny_tokenizer()
        config = tiny.qwen3_vl_4b_config(tiny.qwen_vl_tokenizer(tok)) if args.model == "qwen3-vl-4b" else None
        with torch.device(args.device):  # random init where the model runs (a 4B init on CPU takes minutes)
            model, processor = tiny.build_tiny_qwen3_vl(tok, seed=args.seed, config=config, dtype=dtype)
        return HFPolicy(model, processor, **kwargs)
    return HFPolicy.from_pretrained(args.model, dtype=dtype, **kwargs)


class Clock:
    """Wall time with the accelerator synchronised, and peak memory of a phase."""

    def __init__(self, device: str):
        import torch

        self.cuda = device.startswith("cuda")
        self.torch = torch

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def start(self) -> float:
        self.sync()
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats()
        return time.perf_counter()

    def stop(self, t0: float) -> float:
        self.sync()
        return time.perf_counter() - t0

    def peak_gib(self) -> float:
        """Peak GPU memory allocated since `start` (CUDA), else the process's peak resident memory."""
        if self.cuda:
            return self.torch.cuda.max_memory_allocated() / 2**30
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def bench_act(policy: Any, inputs: list[Any], args: argparse.Namespace, clock: Clock) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    policy.act(inputs[:1])  # warm-up (kernels, allocator)
    n1 = args.one_at_a_time
    t0 = clock.start()
    for x in inputs[:n1]:
        policy.act([x])
    one = n1 / clock.stop(t0)
    out["act_one_at_a_time_per_s"] = one
    print(f"act one at a time: {one:.2f} actions/s ({n1} prompts)")
    for b in args.sizes:
        batch = list(itertools.islice(itertools.cycle(inputs), b))
        policy.act(batch)  # warm-up at this shape
        t0 = clock.start()
        outs = policy.act(batch)
        dt = clock.stop(t0)
        peak = clock.peak_gib()
        n_tokens = sum(len(policy.tokenizer(o.text, add_special_tokens=False)["input_ids"]) for o in outs)
        enc = policy.encode_prompts(batch)
        gen = dict(max_new_tokens=args.max_new_tokens, do_sample=True, top_k=0, top_p=1.0,
                   pad_token_id=policy.tokenizer.pad_token_id, eos_token_id=policy.stop_ids)
        t1 = clock.start()
        with torch.no_grad():
            policy.model.generate(**enc, **gen)
        dt_gen = clock.stop(t1)
        rate = b / dt
        row = {"actions_per_s": rate, "s": dt, "peak_gib": peak,
               "prompt_tokens": int(enc["input_ids"].shape[1]),
               "response_tokens_mean": n_tokens / b, "act_vs_one_at_a_time": rate / one,
               "act_vs_generate": dt_gen / dt}
        out[f"act_b{b}"] = row
        print(f"act batch {b}: {rate:.2f} actions/s ({dt:.2f} s, prompt {row['prompt_tokens']} tokens, "
              f"~{row['response_tokens_mean']:.0f} generated), {rate / one:.2f}x one at a time, "
              f"{row['act_vs_generate']:.2f}x a bare model.generate ({b / dt_gen:.2f}/s), "
              f"peak {peak:.2f} GiB")
    return out


def bench_sft(policy: Any, samples: list[tuple[Any, str]], args: argparse.Namespace,
              clock: Clock) -> dict[str, Any]:
    if not args.sft_samples:
        return {}
    data = list(itertools.islice(itertools.cycle(samples), args.sft_samples))
    policy.fit_sft(data[: args.sft_batch], epochs=1, lr=1e-6, seed=args.seed)  # warm-up
    t0 = clock.start()
    m = policy.fit_sft(data, epochs=1, lr=1e-6, seed=args.seed)
    dt = clock.stop(t0)
    peak = clock.peak_gib()
    rate = len(data) / dt
    print(f"fit_sft: {rate:.2f} samples/s ({len(data)} samples in {dt:.2f} s, batch {args.sft_batch}, "
          f"{int(m['steps'])} steps, gradient checkpointing {args.grad_ckpt}), peak {peak:.2f} GiB")
    return {"sft_samples_per_s": rate, "sft_s": dt, "sft_peak_gib": peak, "sft_steps": m["steps"]}


def bench_loop(policy: Any, args: argparse.Namespace, clock: Clock) -> dict[str, Any]:
    if not args.loop_iters:
        return {}
    from algos.grpo import GRPO, GRPOConfig
    from algos.loop import train_loop
    from algos.run import Run
    from voyager_gym.vector import make_vec

    group = max(1, args.loop_envs // len(LOOP_TASKS))
    cfg = GRPOConfig(iterations=args.loop_iters, instances_per_iter=len(LOOP_TASKS), group_size=group,
                     minibatch_size=args.sft_batch, epochs=1)
    envs = make_vec(len(LOOP_TASKS) * group, "sync", observation_mode="full", render_scale=args.render_scale,
                    noise="default")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run = Run(Path(tmp) / "run", {"algo": "grpo"}, wandb_mode="disabled")
            t0 = clock.start()
            train_loop(GRPO(cfg), policy, envs, run, list(LOOP_TASKS), seed=args.seed, eval_n_per_task=1)
            dt = clock.stop(t0)
            run.close()
            rows = [json.loads(r) for r in (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()]
    finally:
        envs.close()
    last = rows[-1]
    steps = float(last.get("env_steps", 0))
    peak = clock.peak_gib()
    rate = steps / last["wall_s"] if last.get("wall_s") else 0.0
    print(f"GRPO loop: {args.loop_iters} iteration(s) on {len(LOOP_TASKS)} tasks x {group} rollouts: "
          f"{int(steps)} training env steps in {last['wall_s']:.1f} s ({rate:.2f} env steps/s with "
          f"evaluation "
          f"and checkpoints; {dt:.1f} s in all), peak {peak:.2f} GiB")
    return {"loop_env_steps": steps, "loop_wall_s": last["wall_s"], "loop_env_steps_per_s": rate,
            "loop_peak_gib": peak}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    import torch

    from algos.policies.tiny import expert_samples

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    clock = Clock(args.device)
    t0 = time.perf_counter()
    policy = build_policy(args)
    n_params = sum(p.numel() for p in policy.model.parameters())
    samples = expert_samples(pixels=True, render_scale=args.render_scale)
    inputs = [x for x, _ in samples]
    image = policy.image(inputs[0])
    grid = policy.encode_prompts(inputs[:1])["image_grid_thw"][0].tolist()
    fig: dict[str, Any] = {"model": args.model, "device": args.device, "dtype": args.dtype,
                           "params": n_params,
                           "frame": [int(s) for s in inputs[0].pixels.shape[:2]], "image": list(image.size),
                           "image_grid_thw": grid, "image_tokens": grid[0] * grid[1] * grid[2] // 4,
                           "max_new_tokens": args.max_new_tokens, "setup_s": time.perf_counter() - t0}
    if args.device.startswith("cuda"):
        fig["gpu"] = torch.cuda.get_device_name()
    print(f"{args.model}: {n_params / 1e6:.1f}M parameters, {args.dtype} on {args.device}; frames "
          f"{fig['frame'][1]}x{fig['frame'][0]} -> {image.size[0]}x{image.size[1]} for the processor, "
          f"grid {grid} = {fig['image_tokens']} image tokens; set up in {fig['setup_s']:.1f} s")
    fig.update(bench_act(policy, inputs, args, clock))
    for name, phase in (("sft", lambda: bench_sft(policy, samples, args, clock)),
                        ("loop", lambda: bench_loop(policy, args, clock))):
        try:  # one phase failing (a missing package on a bare GPU machine) still reports the others
            fig.update(phase())
        except Exception as e:  # noqa: BLE001 - recorded in the figures and printed
            fig[f"{name}_error"] = f"{type(e).__name__}: {e}"
            print(f"{name} failed: {fig[f'{name}_error']}")
    print(json.dumps(fig))
    return fig


if __name__ == "__main__":
    main()
