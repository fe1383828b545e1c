"""The task catalogue's AndroidWorld metadata (difficulty, tags, optimal_steps) from its package data file,
the `difficulty=` filter, and tools/androidworld_metadata.py, which writes that file: it refuses a metadata
file whose tasks are not the catalogue's, and reproduces the shipped file from AndroidWorld's format."""

from __future__ import annotations

import json
import runpy
import types
from pathlib import Path

import pytest

from voyager_gym import catalogue

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "voyager_gym" / catalogue.METADATA_FILE


def load_tool() -> types.SimpleNamespace:
    """tools/androidworld_metadata.py's functions (a script, not a module of a package)."""
    return types.SimpleNamespace(**runpy.run_path(str(ROOT / "tools" / "androidworld_metadata.py")))


def androidworld_format(doc: dict) -> list[dict]:
    """The shipped file's tasks back in AndroidWorld's task_metadata.json form (optimal_steps a string, a
    task without tags tagged [""], a task_template the tool must drop)."""
    return [{"task_name": name, "task_template": "Do something.", "difficulty": m["difficulty"],
             "tags": m["tags"] or [""], "optimal_steps": str(m["optimal_steps"])}
            for name, m in doc["tasks"].items()]


def test_every_task_has_androidworld_difficulty_tags_and_optimal_steps():
    infos = catalogue.tasks()
    assert len(infos) == 116
    for t in infos:
        assert t.difficulty in ("easy", "medium", "hard"), t.name
        assert isinstance(t.optimal_steps, int) and t.optimal_steps >= 1, t.name
        assert isinstance(t.tags, tuple) and all(isinstance(x, str) and x for x in t.tags), t.name
    # AndroidWorld tags 7 tasks [""]: no tag, kept as an empty tuple; every other task has tags
    assert sorted(t.name for t in infos if not t.tags) == [
        "CameraTakePhoto", "CameraTakeVideo", "ClockStopWatchRunning", "SystemBluetoothTurnOff",
        "SystemBrightnessMax", "SystemBrightnessMin", "TurnOffWifiAndTurnOnBluetooth"]


def test_spot_values_are_androidworlds():
    """Values read by hand from android_world/task_metadata.json (commit d9c569f)."""
    rec = catalogue.task("AudioRecorderRecordAudio")
    assert (rec.difficulty, rec.tags, rec.optimal_steps) == ("easy", ("requires_setup",), 6)
    add = catalogue.task("ExpenseAddMultiple")
    assert (add.difficulty, add.tags, add.optimal_steps) == ("medium", ("data_entry", "parameterized"), 20)
    assert catalogue.task("BrowserMultiply").difficulty == "hard"
    assert catalogue.task("BrowserMaze").tags == (
        "game_playing", "multi_app", "complex_ui_understanding", "memorization", "parameterized")
    assert catalogue.task("CameraTakeVideo").tags == ()
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert (doc["source"], doc["android_world_commit"]) == ("android_world/task_metadata.json", "d9c569f")


def test_difficulty_filter_partitions_the_tasks_and_rejects_an_unknown_one():
    parts = {d: catalogue.tasks(difficulty=d) for d in catalogue.DIFFICULTIES}
    assert {d: len(p) for d, p in parts.items()} == {"easy": 61, "medium": 36, "hard": 19}
    assert sorted(t.name for p in parts.values() for t in p) == list(catalogue.names())
    assert all(t.difficulty == d for d, p in parts.items() for t in p)
    assert catalogue.tasks(difficulty="Hard") == parts["hard"]  # any case, like app=
    both = catalogue.tasks(app="markor", difficulty="easy")
    assert both and all("markor" in t.app_names and t.difficulty == "easy" for t in both)
    with pytest.raises(ValueError, match=r"'expert'.*easy, medium, hard"):
        catalogue.tasks(difficulty="expert")


def test_the_tool_reproduces_the_shipped_file_from_androidworlds_format(tmp_path):
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    entries = androidworld_format(doc)
    entries.reverse()  # AndroidWorld's order is not ours: the file comes out sorted by name
    src, out = tmp_path / "task_metadata.json", tmp_path / "out.json"
    src.write_text(json.dumps(entries), encoding="utf-8")
    assert load_tool().main(["--metadata", str(src), "--commit", "d9c569f", "--out", str(out)]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()
    assert "task_template" not in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("change,error", [
    (lambda e: e.pop(3), "'BrowserMaze' of voyager_gym's catalogue is missing from the metadata"),
    (lambda e: e.append({**e[0], "task_name": "MadeUpTask"}), "'MadeUpTask' of the metadata is not in"),
    (lambda e: e.append(dict(e[0])), "'AudioRecorderRecordAudio' appears twice"),
    (lambda e: e[0].update(difficulty="expert"), "'AudioRecorderRecordAudio': difficulty 'expert'"),
    (lambda e: e[0].update(optimal_steps="six"), "'AudioRecorderRecordAudio': optimal_steps 'six'"),
    (lambda e: e[0].update(optimal_steps="0"), "'AudioRecorderRecordAudio': optimal_steps '0'"),
])
def test_the_tool_refuses_a_file_that_is_not_the_catalogues_tasks(tmp_path, capsys, change, error):
    doc = json.loads(SHIPPED.read_text(encoding="utf-8"))
    entries = androidworld_format(doc)
    change(entries)
    src, out = tmp_path / "task_metadata.json", tmp_path / "out.json"
    src.write_text(json.dumps(entries), encoding="utf-8")
    tool = load_tool()
    assert tool.main(["--metadata", str(src), "--out", str(out)]) == 2
    assert error in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ValueError, match="task "):
        tool.facts(entries, catalogue.names())


def test_the_tool_refuses_a_small_hand_made_file_naming_the_missing_task(tmp_path, capsys):
    src = tmp_path / "task_metadata.json"
    src.write_text(json.dumps([{"task_name": "AudioRecorderRecordAudio", "task_template": "Record.",
                                "difficulty": "easy", "tags": ["requires_setup"], "optimal_steps": "6"}]))
    assert load_tool().main(["--metadata", str(src), "--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "'AudioRecorderRecordAudioWithFileName' of voyager_gym's catalogue is missing" in err
    assert "and 114 more" in err
