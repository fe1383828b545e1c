"""TrajectoryBuffer: exact Parquet round trips, atomic saves under errors and SIGKILL, SFT export, groups."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from algos import buffer as B
from algos.buffer import Group, Step, Trajectory, TrajectoryBuffer
from algos.prompt import PolicyInput, render_prompt, render_response
from voyager_gym.env import VoyagerEnv
from voyager_gym.observation import UIElement

REPO = Path(__file__).resolve().parents[2]
UNICODE = "Ünïcödé 日本語 — emoji 😀, quotes \"'\\ and a\nnewline"


def make_step(gid: str, tid: str, t: int, goal: str = "Turn wifi on.", **kw) -> Step:
    action = kw.pop("action", {"action_type": "click", "index": t})
    base = dict(history=[json.dumps({"action_type": "wait"})] * t, prompt=f"prompt {t} {goal}",
                response=f"Reason: r{t}\nAction: {json.dumps(action)}", action=action,
                valid=action is not None,
                ui_elements=[UIElement(text=f"e{t}", class_name="android.widget.TextView").to_dict()],
                screen_key=f"k{t}", reward=0.0, step_max=10)
    return Step(group_id=gid, traj_id=tid, t=t, goal=goal, **(base | kw))


def make_traj(gid: str, tid: str, n: int, task: str = "SystemWifiTurnOn", seed: int = 7,
              goal: str = "Turn wifi on.", **kw) -> Trajectory:
    steps = [make_step(gid, tid, t, goal) for t in range(n)]
    return Trajectory(traj_id=tid, group_id=gid, task=task, instance_seed=seed, params={"seed": seed},
                      goal=goal, steps=steps, **kw)


def hand_buffer() -> TrajectoryBuffer:
    """Every awkward case: NaN score, None values, images and non-image arrays, unicode, empty trajectories
    and groups, an invalid step."""
    rng = np.random.default_rng(0)
    win = make_traj("g0", "g0/0", 3, score=1.0, success=True, env_seed=11)
    win.steps[0].thumbnail = rng.integers(0, 256, (24, 12, 3), dtype=np.uint8)
    win.steps[1].frame = rng.integers(0, 256, (48, 24, 3), dtype=np.uint8)
    win.steps[1].thumbnail = rng.integers(0, 256, (24, 12, 3), dtype=np.uint8)
    win.steps[2].frame = rng.standard_normal((5, 4)).astype(np.float32)  # not an image: stored as .npy bytes
    win.steps[2].value, win.steps[2].reward, win.steps[2].done = 0.25, 1.0, True
    win.steps[2].logprob = -3.5
    lose = make_traj("g0", "g0/1", 2, score=0.0, env_seed=12)
    lose.steps[1] = make_step("g0", "g0/1", 1, action=None, invalid_reason="no JSON object found",
                              response="garbage ¿?", valid=False, logprob=float("nan"))
    crashed = make_traj("g0", "g0/2", 0, score=float("nan"), errored=True, env_seed=13)
    uni = make_traj("g1", "g1/0", 2, task="MarkorCreateNote", seed=2**32 - 1, goal=UNICODE, score=0.5)
    uni.params = {"file_name": "nöte 日本.md", "nested": {"a": [1, 2.5, None, True]}}
    uni.steps[0].prompt, uni.steps[0].response = UNICODE, UNICODE
    g0 = Group("g0", "SystemWifiTurnOn", 7, {"seed": 7}, [win, lose, crashed])
    g1 = Group("g1", "MarkorCreateNote", 2**32 - 1, dict(uni.params), [uni])
    g2 = Group("g2", "ClockStopWatchRunning", 3, {}, [])
    return TrajectoryBuffer([g0, g1, g2])


def test_round_trip_loses_nothing(tmp_path):
    buf = hand_buffer()
    buf.save(tmp_path / "b.parquet")
    back = TrajectoryBuffer.load(tmp_path / "b.parquet")
    assert back == buf
    g0, g1, g2 = back.groups
    assert [tr.length for tr in g0.trajectories] == [3, 2, 0] and g2.trajectories == []
    assert math.isnan(g0.trajectories[2].score) and g0.trajectories[2].errored
    bad = g0.trajectories[1].steps[1]
    assert bad.action is None and not bad.valid and bad.invalid_reason == "no JSON object found"
    assert math.isnan(bad.logprob) and bad.value is None and bad.thumbnail is None and bad.frame is None
    win = g0.trajectories[0].steps
    assert win[0].thumbnail.dtype == np.uint8 and win[0].thumbnail.shape == (24, 12, 3)
    assert win[2].frame.dtype == np.float32 and win[2].value == 0.25 and win[2].done
    assert g1.trajectories[0].goal == UNICODE and g1.trajectories[0].steps[0].response == UNICODE
    assert g1.instance_seed == 2**32 - 1 and g1.params["nested"] == {"a": [1, 2.5, None, True]}


def test_equality_sees_every_difference():
    """The round-trip test relies on `==`; it must notice a changed pixel, a NaN vs 0 and a None vs 0."""
    a, b = hand_buffer(), hand_buffer()
    assert a == b
    b.groups[0].trajectories[0].steps[1].frame[0, 0, 0] ^= 1
    assert a != b
    b = hand_buffer()
    b.groups[0].trajectories[2].score = 0.0
    assert a != b
    b = hand_buffer()
    b.groups[0].trajectories[0].steps[0].value = 0.0
    assert a != b


def test_empty_buffer_round_trip(tmp_path):
    TrajectoryBuffer().save(tmp_path / "e.parquet")
    assert TrajectoryBuffer.load(tmp_path / "e.parquet") == TrajectoryBuffer()


def test_load_rejects_foreign_parquet(tmp_path):
    pq.write_table(pq.read_table(_saved(tmp_path)).replace_schema_metadata(None), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="buffer format"):
        TrajectoryBuffer.load(tmp_path / "x.parquet")


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "b.parquet"
    hand_buffer().save(path)
    return path


def test_real_rollout_steps_round_trip(tmp_path):
    """Steps of a real SimDroid episode (expert and one invalid response) keep their UIElements and pixels."""
    env = VoyagerEnv(observation_mode="full", noise="none", render_scale=0.1)
    obs, info = env.reset(seed=0, options={"task": "SystemWifiTurnOn", "instance_seed": 5})
    gid, tid, history, steps, done = "SystemWifiTurnOn#5", "SystemWifiTurnOn#5/0", [], [], False
    elements_seen = []
    while not done:
        x = PolicyInput.from_obs(obs, history, step=len(steps), max_steps=info["max_steps"])
        text = "tap the wifi thing" if len(steps) == 1 else render_response(json.loads(env.expert_action()))
        key, elements_seen = info["screen_key"], elements_seen + [list(obs["ui_elements"])]
        obs, r, term, trunc, info = env.step(text)
        done = term or trunc
        steps.append(Step(group_id=gid, traj_id=tid, t=x.step, goal=x.goal, history=list(history),
                          prompt=render_prompt(x), response=text,
                          action=json.loads(info["action"]) if info["action"] else None,
                          valid=info["invalid_action"] is None, invalid_reason=info["invalid_action"],
                          ui_elements=[e.to_dict() for e in x.elements], screen_key=key,
                          thumbnail=x.pixels[::4, ::4].copy(), frame=x.pixels if len(steps) == 0 else None,
                          reward=r, done=done, logprob=-0.1 * len(steps), step_max=info["max_steps"]))
        if info["action"]:  # the executed action's JSON text ("" when invalid)
            history.append(info["action"])
    assert info["success"] and not steps[1].valid and steps[1].action is None
    traj = Trajectory(tid, gid, "SystemWifiTurnOn", 5, info["params"], info["goal"], steps,
                      score=info["score"], success=True, env_seed=0)
    buf = TrajectoryBuffer([Group(gid, "SystemWifiTurnOn", 5, info["params"], [traj])])
    buf.save(tmp_path / "r.parquet")
    back = TrajectoryBuffer.load(tmp_path / "r.parquet")
    assert back == buf and back.trajectories()[0].total_reward == 1.0
    for s, els in zip(back.steps(), elements_seen, strict=True):
        x = s.policy_input()
        assert list(x.elements) == els and render_prompt(x) == s.prompt
    assert back.steps()[0].policy_input().pixels.shape == (240, 108, 3)  # the full frame where kept
    assert back.steps()[1].policy_input().pixels.shape == (60, 27, 3)  # else the thumbnail


def test_sft_dataset_rows_and_columns():
    buf = hand_buffer()
    ds = buf.to_sft_dataset()
    steps = buf.steps()  # non-errored trajectories only
    assert ds.column_names == ["prompt", "completion", "task"] and len(ds) == len(steps) == 7
    assert ds["completion"] == [s.response for s in steps] and ds["prompt"] == [s.prompt for s in steps]
    assert ds["task"] == ["SystemWifiTurnOn"] * 5 + ["MarkorCreateNote"] * 2
    wins = buf.filter(lambda tr: tr.success).trajectories()
    with pytest.raises(ValueError, match="float32"):  # a non-image array is no screenshot
        buf.to_sft_dataset(wins, with_images=True)
    wins[0].steps[2].frame = None
    ds = buf.to_sft_dataset(wins, with_images=True)
    assert ds.column_names == ["prompt", "completion", "task", "images"] and len(ds) == 3
    imgs = ds["images"]
    assert isinstance(imgs[0][0], Image.Image) and imgs[0][0].size == (12, 24)
    assert imgs[1][0].size == (24, 48)  # the frame is preferred over the thumbnail
    assert np.array_equal(np.asarray(imgs[1][0]), wins[0].steps[1].frame)
    assert imgs[2] == []


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    path = _saved(tmp_path)
    before = path.read_bytes()
    calls = []
    real = pq.ParquetWriter.write_batch

    def failing(self, batch, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full (simulated)")
        return real(self, batch, *a, **k)

    monkeypatch.setattr(B, "ROWS_PER_ROW_GROUP", 1)
    monkeypatch.setattr(pq.ParquetWriter, "write_batch", failing)
    bigger = hand_buffer()
    bigger.add(Group("g9", "SystemWifiTurnOn", 9, {"seed": 9}, [make_traj("g9", "g9/0", 4, seed=9)]))
    with pytest.raises(OSError, match="disk full"):
        bigger.save(path)
    assert len(calls) == 3  # two row groups were written before the failure
    assert path.read_bytes() == before and TrajectoryBuffer.load(path) == hand_buffer()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.parquet"]  # the temp file was removed


def test_sigkill_mid_write_keeps_previous_file(tmp_path):
    path = _saved(tmp_path)
    before = path.read_bytes()
    rng = np.random.default_rng(1)
    big = make_traj("g5", "g5/0", 40, seed=5)
    for s in big.steps:
        s.thumbnail = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)  # incompressible: bytes hit the disk
    src = tmp_path / "src" / "big.parquet"
    TrajectoryBuffer([Group("g5", "SystemWifiTurnOn", 5, {"seed": 5}, [big])]).save(src)
    child = textwrap.dedent(f"""
        import time, pyarrow.parquet as pq
        from algos import buffer as B
        B.ROWS_PER_ROW_GROUP = 4
        real, n = pq.ParquetWriter.write_batch, []
        def stall(self, batch, *a, **k):
            real(self, batch, *a, **k)
            n.append(1)
            if len(n) == 5:
                print("PARTIAL", flush=True)
                time.sleep(60)
        pq.ParquetWriter.write_batch = stall
        B.TrajectoryBuffer.load({str(src)!r}).save({str(path)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "PARTIAL", proc.stderr.read() if proc.poll() is not None else line
        tmps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert len(tmps) == 1 and tmps[0].stat().st_size > 40_000  # the new file is partly on disk
        assert path.read_bytes() == before
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == before and TrajectoryBuffer.load(path) == hand_buffer()


def test_group_outcomes():
    win = make_traj("g", "g/0", 1, score=1.0, success=True)
    lose = make_traj("g", "g/1", 1, score=0.0)
    half = make_traj("g", "g/2", 1, score=0.5)
    err = make_traj("g", "g/3", 0, score=float("nan"), errored=True)
    both = Group("g", "SystemWifiTurnOn", 7, {"seed": 7}, [win, lose, err, half])
    assert both.has_both_outcomes and both.successes == [win] and both.failures == [lose, half]
    assert not Group("g", "SystemWifiTurnOn", 7, {"seed": 7}, [win, err]).has_both_outcomes  # errors: neither
    assert not Group("g", "SystemWifiTurnOn", 7, {"seed": 7}, [lose, half]).has_both_outcomes
    assert not Group("g", "SystemWifiTurnOn", 7, {"seed": 7}, []).has_both_outcomes
    assert win.length == 1 and make_traj("g", "g/4", 0).total_reward == 0.0


def test_stats_filter_and_queries():
    buf = hand_buffer()
    s = buf.stats()
    assert (s["groups"], s["episodes"], s["errored"], s["steps"], s["mixed_groups"]) == (3, 3, 1, 7, 1)
    assert s["success_rate"] == pytest.approx(1 / 3) and s["mean_score"] == pytest.approx(0.5)
    assert s["success_rate_by_task"] == {"MarkorCreateNote": 0.0, "SystemWifiTurnOn": 0.5}
    assert s["invalid_rate"] == pytest.approx(1 / 7) and s["episodes_by_task"]["SystemWifiTurnOn"] == 2
    assert len(buf.trajectories(include_errored=True)) == 4 and len(buf.steps(valid_only=True)) == 6
    wins = buf.filter(lambda tr: tr.success)
    assert [g.group_id for g in wins] == ["g0"] and [tr.traj_id for tr in wins.trajectories()] == ["g0/0"]
    assert len(buf.groups[0].trajectories) == 3  # the source buffer is untouched


def test_add_rejects_mismatched_ids():
    tr = make_traj("g0", "g0/0", 2)
    with pytest.raises(ValueError, match="group_id='g0'"):
        TrajectoryBuffer([Group("other", "SystemWifiTurnOn", 7, {"seed": 7}, [tr])])
    tr.steps[1].traj_id = "g0/9"
    with pytest.raises(ValueError, match="traj_id='g0/9'; expected 'g0/0'"):
        TrajectoryBuffer([Group("g0", "SystemWifiTurnOn", 7, {"seed": 7}, [tr])])
    tr.steps[1].traj_id = "g0/0"
    buf = TrajectoryBuffer([Group("g0", "SystemWifiTurnOn", 7, {"seed": 7}, [tr])])
    with pytest.raises(ValueError, match="'g0' is already in the buffer"):
        buf.add(Group("g0", "SystemWifiTurnOn", 7, {"seed": 7}, []))
    with pytest.raises(ValueError, match="repeated trajectory ids"):
        twins = [make_traj("g1", "a", 0), make_traj("g1", "a", 1)]
        buf.add(Group("g1", "SystemWifiTurnOn", 7, {"seed": 7}, twins))


def test_prefixed_buffer_joins_one_with_the_same_ids_and_round_trips(tmp_path):
    buf = hand_buffer()
    ids = [g.group_id for g in buf]
    with pytest.raises(ValueError, match="already in the buffer"):
        TrajectoryBuffer([*buf, *buf])
    other = buf.prefixed("rft-")
    assert [g.group_id for g in other] == ["rft-" + i for i in ids]
    assert all(s.group_id == tr.group_id == g.group_id
               for g in other for tr in g.trajectories for s in tr.steps)
    joined = TrajectoryBuffer([*buf, *other])
    assert len(joined) == 2 * len(buf) and [g.group_id for g in buf] == ids  # the original is untouched
    joined.save(tmp_path / "b.parquet")
    assert TrajectoryBuffer.load(tmp_path / "b.parquet") == joined
    steps = [(s.prompt, s.response, s.reward) for s in buf.steps()]
    assert [(s.prompt, s.response, s.reward) for s in other.steps()] == steps
