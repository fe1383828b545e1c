"""Group-Reflective Self-Distillation (arXiv 2607.28076): GRPO with turn advantages a self-teacher modulates.

Terminal rewards tangle a rollout's good moves, mistakes and incidental choices in one outcome. Per group (a
task instance x G rollouts, algos/loop.py), with both a success and a failure:

1. **reflect**: each verified trajectory is summarised with its outcome;
2. **guide**: a stop-gradient snapshot of the policy contrasts the reflections of the successes with those of
   the failures into one group-level guidance (what separated them);
3. **teach**: the snapshot conditioned on the guidance (the self-teacher) scores every turn's response,
   log pi_T(y_t | x_t, guidance); the student's log-prob is the behaviour log-prob in the buffer, since the
   snapshot is the iteration's start weights, which also acted (the update computes all of this before its
   first gradient step, under no_grad);
4. **modulate**: trajectory i's GRPO advantage A (algos/grpo.py) becomes A_t = A * w_t, with w_t > 0 growing
   with z_t, the teacher-student gap signed by A (gap_t minus its trajectory mean, over the group's spread
   floored at `gap_scale_min`): a successful turn the teacher favours gets more credit, a failed turn it
   disfavours more blame. `modulation=exp`: w_t = clip(exp(strength * z_t), 1/max_weight, max_weight);
   `tanh`: w_t = 1 + strength * tanh(z_t) (strength < 1); `renormalise` scales them to mean 1 over the
   trajectory's turns. Every variant keeps sign(A_t) = sign(A), keeps 0 where A is 0, and at `strength=0` is
   GRPO to the bit (w_t = 1 exactly).

Groups with signal but one outcome only (e.g. scores 0 and 0.5) get no guidance: teacher = snapshot = the
behaviour policy, gap 0, w_t = 1 (not scored again). The loss is GRPO's (clipped surrogate, optional k3 KL).

Two reflectors (`reflect`; auto picks text when the policy can write, `generate_text`, else structured):

- **text** (LM policies, algos/policies/hf.py): the snapshot writes one reflection per trajectory from
  `reflection_prompt` (the goal, its transcript, the verifier's outcome) and one guidance per group from
  `guidance_prompt` (the labelled reflections), greedily; the teacher is the policy's log-prob of each turn's
  response with the guidance in the prompt (`PolicyInput.guidance`).
- **structured**: this project's adaptation for the small CPU policy, which cannot write text. A reflection
  is the trajectory's (screen class, action key) pairs: screens by the fork package's classes (`screens`:
  robust compares screenshots, exact uses SimDroid's screen_key; algos.gigpo.anchor_classes), actions by
  algos.forks.action_key (target matching). The guidance is the group's contrast over the screens both
  outcomes visited: g(c, k) = (share of the successes at screen c that took k there) - (share of the failures
  at c that took k there). The teacher is the snapshot's distribution tilted toward what it favours,
  pi_T(y | x) = pi(y | x) exp(tilt * g(c, k(y))) / Z(x), with Z(x) = 1 + sum_k pi(r_k | x) (exp(tilt * g) - 1)
  over the guided keys at x's class (r_k: a response of the group that took k there, scored at x; the
  turn's own response for its own key). A screen no guidance names keeps the snapshot's distribution.

Logged beside GRPO's metrics: `grsd_reflect/guided_groups`, `guidance_size` (structured: (screen, action)
entries; text: characters), `teacher_steps`, `gap_abs` (mean |gap| over them), `weight_std`, `weight_max`,
`reflect_s` and `teacher_s` (the cost over GRPO's), and credit localisation (`credit=True`, SimDroid): on
the failed rollouts with signal, the AUC of the per-turn weights against the true fork steps (the fork walk
of algos/forks/walk.py with SAME = equal screen_key against every success of the group), pooled over
(fork, other turn) pairs within a rollout, with a 95% bootstrap interval over rollouts
(`credit_auc`, `credit_auc_lo`, `credit_auc_hi`, `credit_rollouts`); GRPO's equal weights give 0.5.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import string
import time
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from algos.buffer import Group, Step, Trajectory
from algos.fields import setting
from algos.forks import ForkConfig, action_key, walk
from algos.gigpo import ANCHORS, anchor_classes
from algos.grpo import GRPO, GRPOConfig, grpo_advantages, signal_metrics
from algos.loop import RunContext, fork_frames
from algos.pg import score_in_chunks
from algos.policies.base import Policy
from algos.rollout import RolloutConfig

MODULATIONS = ("exp", "tanh")
REFLECTORS = ("auto", "structured", "text")
KEYS = ForkConfig.robust()  # action keys by target (a click by index or x/y on one element is one action)
CREDIT_STREAM = 0x637264  # second entropy word of the credit AUC's bootstrap stream ([seed, CREDIT_STREAM])

SYSTEM_PROMPT = ("You review an Android agent's attempts at a task"
                 " and say plainly what made them succeed or fail.")
REFLECTION_PROMPT = (
    "Goal: {goal}\nThe agent's actions, in order:\n{transcript}\nOutcome (from the task's checker): "
    "{outcome}\n"
    "In two sentences, say which action decided this outcome and why.")
GUIDANCE_PROMPT = (
    "Goal: {goal}\nReflections on attempts that succeeded:\n{successes}\nReflections on attempts that "
    "failed:\n{failures}\nIn at most three short sentences, tell the agent which actions lead to success "
    "on this task and which mistakes to avoid, naming the screens and actions.")


def placeholders(template: str) -> set[str]:
    """The `{name}` fields of a str.format template."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


@dataclasses.dataclass
class GRSDReflectConfig(GRPOConfig):
    SECTION: ClassVar[str] = "grsd_reflect"
    modulation: str = setting("exp", choices=MODULATIONS)  # exp: w_t = clip(exp(strength * z_t),
    # 1/max_weight, max_weight) | tanh: w_t = 1 + strength * tanh(z_t); z_t the teacher-student log-prob gap
    # signed by A, standardised in its group
    strength: float = setting(1.0, ge=0)  # how far the teacher moves the weights (0: GRPO exactly; tanh needs
    # < 1)
    max_weight: float = setting(3.0, ge=1)  # modulation=exp: weights clipped to [1/max_weight, max_weight]
    renormalise: bool = True  # scale each trajectory's weights to mean 1 over its turns
    gap_scale_min: float = setting(0.5, gt=0)  # floor (nats) of the spread z_t is divided by: near-equal gaps
    # stay near 0
    reflect: str = setting("auto", choices=REFLECTORS)  # auto (text when the policy can write text, else
    # structured) | structured (reflections as (screen, action) summaries, the teacher a tilt of the
    # snapshot) | text (LM policies)
    screens: str = setting("robust", choices=ANCHORS)  # structured: screen classes by robust screenshot
    # comparison | exact (SimDroid's screen_key)
    tilt: float = setting(2.0, ge=0)  # structured: the teacher's exp(tilt * g) on an action the guidance
    # scores g in [-1, 1]
    credit: bool = True  # log credit localisation (weights' AUC against true fork steps; SimDroid screen_key)
    system_prompt: str = SYSTEM_PROMPT  # text: system turn of reflection and guidance generation
    reflection_prompt: str = REFLECTION_PROMPT  # text: one per trajectory; {goal}, {transcript}, {outcome}
    guidance_prompt: str = GUIDANCE_PROMPT  # text: one per group; {goal}, {successes}, {failures}
    reflection_tokens: int = setting(96, ge=1)  # text: longest reflection generated
    guidance_tokens: int = setting(128, ge=1)  # text: longest guidance generated
    transcript_steps: int = setting(16, ge=1)  # text: the last this many turns of a trajectory go into its
    # reflection prompt

    def __post_init__(self) -> None:
        super().__post_init__()  # every field's own range (algos.fields)
        s = self.SECTION
        if self.modulation == "tanh" and not self.strength < 1.0:
            raise ValueError(f"{s}.strength={self.strength!r}: expected a value in [0, 1) with "
                             "modulation=tanh (weights stay > 0)")
        for key, need in (("reflection_prompt", {"transcript", "outcome"}),
                          ("guidance_prompt", {"successes", "failures"})):
            have = placeholders(getattr(self, key))
            if not need <= have or not have <= need | {"goal"}:
                raise ValueError(f"{s}.{key} has fields {sorted(have)}: expected {sorted(need)} (and "
                                 "optionally 'goal')")


# -- modulation (pure) --------------------------------------------------------------------------------------
def standardised_gaps(adv: Sequence[float], gaps: Sequence[np.ndarray], scale_min: float) -> list[np.ndarray]:
    """z per turn of each trajectory of one group: sign(A) * (gap - its trajectory's mean) / max(std of those
    centred gaps over the group's turns, scale_min)."""
    centred = [np.asarray(g, dtype=np.float64) - np.mean(g) if len(g) else np.zeros(0) for g in gaps]
    flat = np.concatenate(centred) if centred else np.zeros(0)
    scale = max(float(flat.std()) if flat.size else 0.0, scale_min)
    return [np.sign(a) * c / scale for a, c in zip(adv, centred, strict=True)]


def turn_weights(z: np.ndarray, cfg: GRSDReflectConfig) -> np.ndarray:
    """w_t > 0 per turn from z_t (see the module docstring); all exactly 1 at strength 0."""
    z = np.asarray(z, dtype=np.float64)
    if cfg.modulation == "exp":
        w = np.clip(np.exp(cfg.strength * z), 1.0 / cfg.max_weight, cfg.max_weight)
    elif cfg.modulation == "tanh":
        w = 1.0 + cfg.strength * np.tanh(z)
    else:
        raise ValueError(f"modulation={cfg.modulation!r}: expected one of {', '.join(MODULATIONS)}")
    if cfg.renormalise and w.size:
        w = w / w.mean()
    return w


# -- structured reflections (any policy that scores responses) ----------------------------------------------
@dataclasses.dataclass
class Reflection:
    """A trajectory summarised as the screens it passed (class ids) and the action it took on each."""

    success: bool
    classes: list[int]
    keys: list[Any]  # action keys (None: an invalid action)

    def visits(self) -> dict[int, set[Any]]:
        """Screen class -> the action keys taken there (invalid actions count as a key of their own)."""
        out: dict[int, set[Any]] = {}
        for c, k in zip(self.classes, self.keys, strict=True):
            out.setdefault(c, set()).add(k)
        return out


def structured_reflections(trajs: Sequence[Trajectory], screens: str,
                           labels: Sequence[bool] | None = None) -> list[Reflection]:
    """One Reflection per trajectory (labels: success per trajectory, default each one's own)."""
    labels = [t.success for t in trajs] if labels is None else list(labels)
    if screens == "exact" and any(not s.screen_key for t in trajs for s in t.steps):
        raise ValueError("grsd_reflect.screens='exact' matches Step.screen_key, but some steps have none "
                         "(only SimDroid records it); use grsd_reflect.screens=robust")
    classes = anchor_classes(trajs, screens)
    return [Reflection(ok, ids, [action_key(s.action, s.ui_elements, KEYS) for s in t.steps])
            for t, ids, ok in zip(trajs, classes, labels, strict=True)]


def structured_guidance(refls: Sequence[Reflection]) -> dict[int, dict[Any, float]]:
    """Screen class -> {action key: g} over the classes both outcomes visited: the share of the successes at
    the class that took the action there minus the share of the failures; only g != 0 is kept."""
    by = {True: [r.visits() for r in refls if r.success], False: [r.visits() for r in refls if not r.success]}
    out: dict[int, dict[Any, float]] = {}
    shared = set().union(*by[True]) & set().union(*by[False]) if by[True] and by[False] else set()
    for c in sorted(shared):
        share = {}
        for ok in (True, False):
            there = [v[c] for v in by[ok] if c in v]
            share[ok] = {k: sum(k in ks for ks in there) / len(there) for k in set().union(*there)}
        g = {k: share[True].get(k, 0.0) - share[False].get(k, 0.0) for k in share[True].keys() | share[False]}
        g = {k: v for k, v in g.items() if v != 0.0}
        if g:
            out[c] = g
    return out


@torch.no_grad()
def tilted_teacher_logprobs(policy: Policy, trajs: Sequence[Trajectory], refls: Sequence[Reflection],
                            guide: dict[int, dict[Any, float]], tilt: float) -> list[np.ndarray]:
    """log pi_T(y_t | x_t) per turn of each trajectory: the snapshot's (`policy` now) log-prob tilted by
    exp(tilt * g) toward the guided actions at the turn's screen and renormalised (module docstring)."""
    rep: dict[tuple[int, Any], str] = {}  # (class, key) -> a response of the group that took it there
    for t, r in zip(trajs, refls, strict=True):
        for s, c, k in zip(t.steps, r.classes, r.keys, strict=True):
            rep.setdefault((c, k), s.response)
    xs, ys = [], []
    plan: list[list[tuple[int, float, list[tuple[int, float]]]]] = []  # per traj, per turn: (own row, own g,
    # [(row, g) of the other guided responses])
    for t, r in zip(trajs, refls, strict=True):
        turns = []
        for s, c, k in zip(t.steps, r.classes, r.keys, strict=True):
            x = s.policy_input()
            xs.append(x)
            ys.append(s.response)
            own = len(xs) - 1
            others, seen = [], {s.response}
            for k2, g in guide.get(c, {}).items():
                resp = rep.get((c, k2))
                if k2 == k or resp is None or resp in seen:
                    continue
                seen.add(resp)
                xs.append(x)
                ys.append(resp)
                others.append((len(xs) - 1, g))
            turns.append((own, guide.get(c, {}).get(k, 0.0), others))
        plan.append(turns)
    lp = score_in_chunks(policy, xs, ys)[0].double().numpy() if xs else np.zeros(0)
    out = []
    for turns in plan:
        row = []
        for own, g, others in turns:
            z = math.expm1(tilt * g) * math.exp(lp[own]) + sum(math.expm1(tilt * g2) * math.exp(lp[i])
                                                               for i, g2 in others)
            row.append(lp[own] + tilt * g - math.log1p(max(z, -1.0 + 1e-12)))
        out.append(np.asarray(row, dtype=np.float64))
    return out


# -- text reflections (LM policies) -------------------------------------------------------------------------
def transcript(traj: Trajectory, last: int) -> str:
    """A trajectory's last `last` turns, one line each: its number and its response on one line."""
    lines = [f"{s.t + 1}. {' '.join(s.response.split())[:300]}" for s in traj.steps[-last:]]
    return "\n".join(lines) or "(no actions)"


def outcome(traj: Trajectory) -> str:
    return f"{'success' if traj.success else 'failure'} (score {traj.score:g})"


def text_reflections(policy: Any, trajs: Sequence[Trajectory], cfg: GRSDReflectConfig) -> list[str]:
    """One reflection per trajectory, written greedily by the snapshot (`policy` now)."""
    prompts = [cfg.reflection_prompt.format(goal=t.goal, transcript=transcript(t, cfg.transcript_steps),
                                            outcome=outcome(t)) for t in trajs]
    return [r.strip() for r in policy.generate_text(prompts, cfg.system_prompt, cfg.reflection_tokens)]


def text_guidance(policy: Any, goal: str, refls: Sequence[str], labels: Sequence[bool],
                  cfg: GRSDReflectConfig) -> str:
    """The group's guidance from its labelled reflections, written greedily by the snapshot."""
    def listed(ok: bool) -> str:
        return "\n".join(f"- {r or '(empty)'}" for r, y in zip(refls, labels, strict=True) if y == ok)
    prompt = cfg.guidance_prompt.format(goal=goal, successes=listed(True), failures=listed(False))
    return policy.generate_text([prompt], cfg.system_prompt, cfg.guidance_tokens)[0].strip()


@torch.no_grad()
def guided_teacher_logprobs(policy: Policy, trajs: Sequence[Trajectory], guidance: str) -> list[np.ndarray]:
    """log pi_T(y_t | x_t with `guidance` in the prompt) per turn of each trajectory, from the snapshot."""
    xs = [dataclasses.replace(s.policy_input(), guidance=guidance) for t in trajs for s in t.steps]
    lp = score_in_chunks(policy, xs, [s.response for t in trajs for s in t.steps])[0].double().numpy()
    out, i = [], 0
    for t in trajs:
        out.append(lp[i : i + len(t.steps)])
        i += len(t.steps)
    return out


# -- credit localisation ------------------------------------------------------------------------------------
def true_fork_steps(group: Group) -> dict[str, set[int]]:
    """traj_id -> the steps where a failed rollout forked from some success of its group: the fork walk
    (algos/forks/walk.py) with SAME = equal SimDroid screen_key and actions compared by target; empty when
    the steps carry no screen_key."""
    out: dict[str, set[int]] = {}
    for f in group.failures:
        forks: set[int] = set()
        for ok in group.successes:
            a, b = f.steps, ok.steps

            def same(i: int, j: int, a: list[Step] = a, b: list[Step] = b) -> bool:
                return bool(a[i].screen_key) and a[i].screen_key == b[j].screen_key

            def same_action(i: int, j: int, a: list[Step] = a, b: list[Step] = b) -> bool:
                ka = action_key(a[i].action, a[i].ui_elements, KEYS)
                return ka is not None and ka == action_key(b[j].action, b[j].ui_elements, KEYS)

            forks |= {i for i, _ in walk(len(a), len(b), same, lambda i, j: 1.0, same_action)}
        out[f.traj_id] = forks
    return out


def credit_auc(rows: Sequence[tuple[np.ndarray, set[int]]], seed: int = 0,
               resamples: int = 1000) -> tuple[float, float, float, int]:
    """AUC of per-turn weights at the fork steps against the other turns of the same rollout, pooled over
    (fork, other) pairs of every row (weights, fork steps), ties counting half; with a 95% bootstrap interval
    over rows. (nan, nan, nan, 0) when no row has both kinds of turn."""
    wins, pairs = [], []
    for w, forks in rows:
        pos = np.array([w[i] for i in sorted(forks) if i < len(w)])
        neg = np.array([x for i, x in enumerate(w) if i not in forks])
        if pos.size and neg.size:
            d = pos[:, None] - neg[None, :]
            wins.append(float((d > 0).sum() + 0.5 * (d == 0).sum()))
            pairs.append(d.size)
    if not pairs:
        return math.nan, math.nan, math.nan, 0
    wins_a, pairs_a = np.array(wins), np.array(pairs, dtype=np.float64)
    rng = np.random.default_rng([seed, CREDIT_STREAM])
    idx = rng.integers(0, len(pairs), size=(resamples, len(pairs)))
    boot = wins_a[idx].sum(1) / pairs_a[idx].sum(1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return float(wins_a.sum() / pairs_a.sum()), float(lo), float(hi), len(pairs)


# -- the algorithm ------------------------------------------------------------------------------------------
class GRSDReflect(GRPO):
    """GRPO with per-turn advantages modulated by a guided self-teacher (see the module docstring)."""

    name = "grsd-reflect"
    cfg: GRSDReflectConfig

    def __init__(self, cfg: GRSDReflectConfig, context: RunContext | None = None):
        super().__init__(cfg, context)
        # structured reflections with robust screens compare screenshots (the text reflector reads none)
        self.needs_pixels = cfg.screens == "robust" and cfg.reflect != "text"
        self._policy: Policy | None = None  # the snapshot while an update computes its advantages
        self._seed = 0

    def reflector(self, policy: Policy) -> str:
        """structured or text for `policy` (auto: text when it can write text)."""
        can_write = callable(getattr(policy, "generate_text", None))
        if self.cfg.reflect == "text" and not can_write:
            raise ValueError(f"grsd_reflect.reflect='text' needs a policy that writes text (generate_text); "
                             f"{type(policy).__name__} cannot: use grsd_reflect.reflect=structured or auto")
        if self.cfg.reflect == "auto":
            return "text" if can_write else "structured"
        return self.cfg.reflect

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        cfg = super().rollout_config(envs, seed, progress, policy)
        if not self.needs_pixels or (policy is not None and self.reflector(policy) == "text"):
            return cfg
        return fork_frames(self, cfg, envs, policy, self.name)

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        with self.snapshot(policy, seed):  # GRPO.update asks for advantages before its first step
            return super().update(policy, groups, iteration, seed)

    @contextlib.contextmanager
    def snapshot(self, policy: Policy, seed: int = 0) -> Iterator[None]:
        """`policy` (the iteration's start weights, which also acted) as the snapshot that reflects, guides
        and teaches while `advantages` runs inside this block; `seed` seeds the credit AUC's bootstrap."""
        self._policy, self._seed = policy, seed
        try:
            yield
        finally:
            self._policy = None

    def teacher_gaps(self, policy: Policy, group: Group, trajs: list[Trajectory],
                     stats: dict[str, float]) -> list[np.ndarray] | None:
        """log pi_T - behaviour log-prob per turn of `trajs` (the group's trajectories with signal), or None
        when the group gets no guidance (teacher = snapshot = behaviour policy)."""
        cfg = self.cfg
        if not group.has_both_outcomes:
            return None
        every = [t for t in group.trajectories if not t.errored and not math.isnan(t.score)]
        t0 = time.perf_counter()
        if self.reflector(policy) == "text":
            notes = text_reflections(policy, every, cfg)
            guidance = text_guidance(policy, every[0].goal, notes, [t.success for t in every], cfg)
            stats["reflect_s"] += time.perf_counter() - t0
            if not guidance:
                return None
            stats["guidance_size"] += len(guidance)
            t1 = time.perf_counter()
            teacher = guided_teacher_logprobs(policy, trajs, guidance)
        else:
            refls = structured_reflections(every, cfg.screens)
            guide = structured_guidance(refls)
            stats["reflect_s"] += time.perf_counter() - t0
            if not guide:
                return None
            stats["guidance_size"] += sum(len(g) for g in guide.values())
            t1 = time.perf_counter()
            by_id = {t.traj_id: r for t, r in zip(every, refls, strict=True)}
            mine = [by_id[t.traj_id] for t in trajs]
            teacher = tilted_teacher_logprobs(policy, trajs, mine, guide, cfg.tilt)
        stats["teacher_s"] += time.perf_counter() - t1
        stats["guided_groups"] += 1
        return [lp - np.array([s.logprob for s in t.steps]) for lp, t in zip(teacher, trajs, strict=True)]

    def advantages(self, groups: list[Group]) -> tuple[list[tuple[Step, float]], dict[str, float]]:
        cfg, policy = self.cfg, self._policy
        if policy is None:
            raise RuntimeError("grsd-reflect's advantages need the snapshot policy: call update()")
        adv_of, with_signal = grpo_advantages(groups, cfg.scale_std, cfg.eps, cfg.invalid_penalty)
        stats = dict.fromkeys(("guided_groups", "guidance_size", "reflect_s", "teacher_s"), 0.0)
        steps: list[tuple[Step, float]] = []
        gaps_all, weights_all, credit_rows = [], [], []
        for g in groups:
            trajs = [t for t in g.trajectories if t.traj_id in adv_of]
            if not trajs:
                continue
            adv = [adv_of[t.traj_id] for t in trajs]
            gaps = self.teacher_gaps(policy, g, trajs, stats)
            if gaps is None:
                weights = [np.ones(len(t.steps)) for t in trajs]
            else:
                gaps_all += [x for gap in gaps for x in gap]
                z = standardised_gaps(adv, gaps, cfg.gap_scale_min)
                weights = [turn_weights(zt, cfg) for zt in z]
            for t, a, w in zip(trajs, adv, weights, strict=True):
                steps += [(s, a * float(wt)) for s, wt in zip(t.steps, w, strict=True)]
            weights_all += [x for w in weights for x in w]
            if cfg.credit:
                forks = true_fork_steps(g)
                credit_rows += [(w, forks[t.traj_id]) for t, a, w in zip(trajs, adv, weights, strict=True)
                                if a < 0 and t.traj_id in forks]
        metrics = signal_metrics(groups, steps, with_signal)
        w = np.asarray(weights_all)
        metrics.update({f"grsd_reflect/{k}": v for k, v in stats.items()})
        metrics.update({
            "grsd_reflect/teacher_steps": len(gaps_all),
            "grsd_reflect/gap_abs": float(np.mean(np.abs(gaps_all))) if gaps_all else math.nan,
            "grsd_reflect/weight_std": float(w.std()) if w.size else math.nan,
            "grsd_reflect/weight_max": float(w.max()) if w.size else math.nan,
        })
        if cfg.credit:
            auc, lo, hi, n = credit_auc(credit_rows, self._seed)
            metrics.update({"grsd_reflect/credit_auc": auc, "grsd_reflect/credit_auc_lo": lo,
                            "grsd_reflect/credit_auc_hi": hi, "grsd_reflect/credit_rollouts": n})
        return steps, metrics
