"""parse_action accepts what LLM agents print and rejects everything else with a clear ActionError."""

import pytest

from voyager_gym.actions import (
    ACTION_TYPES,
    Action,
    ActionError,
    format_response,
    parse_action,
    try_parse_action,
)


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"action_type": "click", "index": 3}', Action("click", index=3)),
        (
            'Reason: open settings\nAction: {"action_type": "open_app", "app_name": "Settings"}',
            Action("open_app", app_name="Settings"),
        ),
        ('```json\n{"action_type": "scroll", "direction": "down"}\n```', Action("scroll", direction="down")),
        (
            "Action: {'action_type': 'input_text', 'text': 'hi', 'index': 2}",
            Action("input_text", text="hi", index=2),
        ),
        (
            '{"action_type": "status", "goal_status": "task_complete"}',
            Action("status", goal_status="complete"),
        ),
        ('{"action_type": "tap", "coordinate": [10, 20]}', Action("click", x=10, y=20)),
        ('{"action_type": "click", "index": "4"}', Action("click", index=4)),
        ('Thinking {about} it. Action: {"action_type": "navigate_back"}', Action("navigate_back")),
        ('{"action_type": "answer", "text": "3"}', Action("answer", text="3")),
        (
            '{"action_type": "input_text", "text": "a } b", "clear_text": true}',
            Action("input_text", text="a } b", clear_text=True),
        ),
    ],
)
def test_parses_common_forms(text, expected):
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty"),
        ("click the button", "no JSON object"),
        ('{"action_type": "fly"}', "unknown action_type 'fly'"),
        ('{"action_type": "click", "index": 1, "x": 3, "y": 4}', "both index"),
        ('{"action_type": "click"}', "needs an 'index'"),
        ('{"action_type": "scroll", "direction": "sideways"}', "direction"),
        ('{"action_type": "status", "goal_status": "maybe"}', "goal_status"),
        ('{"action_type": "click", "x": 5}', "only one coordinate"),
        ('{"action_type": "click", "index": -1}', "non-negative"),
        ('{"action_type": "click", "index": [1]}', "integer"),
        ('{"action_type": "wait", "colour": "red"}', "unknown action field"),
        ("[1, 2]", "no JSON object"),
        ('{"index": 2}', "no 'action_type'"),
        ('{"action_type": "input_text"}', "text"),
    ],
)
def test_rejects_with_clear_errors(text, fragment):
    with pytest.raises(ActionError, match=None) as e:
        parse_action(text)
    assert fragment in str(e.value)


def test_try_parse_never_raises_on_garbage():
    import random

    rng = random.Random(0)
    alphabet = "{}[]\":,abc123 \n\\'actiontype_"
    for _ in range(2000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        a, err = try_parse_action(s)
        assert (a is None) != (err is None)
    assert try_parse_action(None)[1] is not None
    assert try_parse_action(12)[1] is not None


def test_round_trip_every_type():
    samples = {
        "click": Action("click", index=1),
        "double_tap": Action("double_tap", x=1, y=2),
        "long_press": Action("long_press", index=0),
        "scroll": Action("scroll", direction="up"),
        "swipe": Action("swipe", direction="left"),
        "input_text": Action("input_text", text="x", index=2),
        "keyboard_enter": Action("keyboard_enter"),
        "navigate_home": Action("navigate_home"),
        "navigate_back": Action("navigate_back"),
        "open_app": Action("open_app", app_name="Clock"),
        "wait": Action("wait"),
        "status": Action("status", goal_status="infeasible"),
        "answer": Action("answer", text="42"),
    }
    assert set(samples) == set(ACTION_TYPES)
    for a in samples.values():
        assert parse_action(a.to_json()) == a
        assert parse_action(format_response("because", a)) == a
