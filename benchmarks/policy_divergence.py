"""Where a trained policy leaves the expert: its first wrong step in every failed held-out episode.

Each held-out instance (AndroidWorld suite seed 30, `--n` per task, elements-only SimDroid with default
noise) is played greedily by the policy; at every step SimDroid's task expert says what it would do from the
same screen. For each failed episode the first step where the two actions differ is classified: `type A->B`
(another action type) or `TYPE:field` (same type, that field differs: `input_text:text` is a typed text
with a wrong span, `click:index` a wrong element). Prints the failures per task and the counts per class.

    python benchmarks/policy_divergence.py POLICY_DIR [--n 4] [--tasks A,B] [--seed 0]

POLICY_DIR: a SmallPolicy checkpoint (e.g. the `policy/` folder of a cached base policy:
`python experiments/pretrain.py base.demos_per_task=20` prints where it is cached).
"""

from __future__ import annotations

import argparse
import collections
import json

FIELDS = ("index", "text", "x", "y", "direction", "app_name", "goal_status")


def first_difference(expert, policy) -> str:
    """The class of a divergence between two parsed actions (`policy` None: unparseable)."""
    if policy is None:
        return "unparsed"
    if policy.action_type != expert.action_type:
        return f"type {expert.action_type}->{policy.action_type}"
    fields = [k for k in FIELDS if getattr(expert, k, None) != getattr(policy, k, None)]
    return f"{expert.action_type}:{','.join(fields) or 'other'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policy")
    ap.add_argument("--n", type=int, default=4, help="held-out instances per task")
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all SimDroid tasks)")
    ap.add_argument("--seed", type=int, default=0, help="screen-noise seed of the episodes")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from algos.policies.registry import load_policy
    from algos.prompt import PolicyInput, SeenElements
    from voyager_gym import catalogue
    from voyager_gym.actions import try_parse_action
    from voyager_gym.env import VoyagerEnv
    from voyager_gym.suites import eval_suite

    policy = load_policy(args.policy, kind="small")
    tasks = args.tasks.split(",") if args.tasks else list(catalogue.names())
    env = VoyagerEnv(observation_mode="elements", noise="default")
    episodes: dict[str, list[tuple[float, tuple | None]]] = collections.defaultdict(list)
    for k, inst in enumerate(eval_suite(tasks, n_per_task=args.n)):
        obs, info = env.reset(seed=args.seed * 100_000 + k, options=inst.options())
        history: list[str] = []
        seen = SeenElements()
        first, score = None, 0.0
        for t in range(info["max_steps"]):
            x = PolicyInput.from_obs(obs, history, t, info["max_steps"], seen.view(obs["ui_elements"]),
                                     seen.acted)
            out = policy.act([x], greedy=True)[0]
            seen.add(obs["ui_elements"], out.text)
            if first is None:  # the expert is asked only on its own path (off it, it may be lost)
                expert = env.unwrapped.expert_action()
                mine, _ = try_parse_action(out.text)
                theirs, _ = try_parse_action(expert)
                if mine != theirs:
                    first = (t, first_difference(theirs, mine), expert, out.text)
            obs, score, term, trunc, info = env.step(out.text)
            history.append(out.text)
            if term or trunc:
                break
        episodes[inst.name].append((float(score), first))
    env.close()
    classes: collections.Counter[str] = collections.Counter()
    per_task = {}
    for name, eps in sorted(episodes.items()):
        per_task[name] = sum(s for s, _ in eps) / len(eps)
        failed = [f for s, f in eps if s < 1.0]
        if not failed:
            continue
        print(f"{name} (complexity {catalogue.task(name).complexity:g}): Pass@1 {per_task[name]:.2f}")
        for f in failed:
            if f is None:
                classes["failed on the expert's own actions"] += 1
                print("   failed without leaving the expert's actions")
                continue
            classes[f[1].split(" ")[0] if f[1].startswith("type") else f[1]] += 1
            print(f"   step {f[0]}: {f[1]} | expert {f[2][:100]} | policy {f[3].splitlines()[-1][:100]}")
    n_failed = sum(classes.values())
    mean = sum(per_task.values()) / len(per_task)
    print(f"\nPass@1 {mean:.3f} over {len(per_task)} tasks; first divergence, {n_failed} failed episodes:")
    for c, n in classes.most_common():
        print(f"  {c:40s} {n:4d}  {n / max(1, n_failed):.0%}")
    print(json.dumps({"pass_at_1": mean, "failed": n_failed,
                      "classes": dict(classes)}))


if __name__ == "__main__":
    main()
