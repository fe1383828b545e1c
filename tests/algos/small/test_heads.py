"""The heads: a span's end reads the field breaks it crosses."""

from __future__ import annotations

import torch

from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


def test_a_span_end_reads_the_field_breaks_it_crosses_in_the_goal_and_in_labels():
    """The end_breaks bias reaches both copy sources: made to forbid crossing a break, a span that runs past a
    line break (the goal) or a "|" (a note's row) loses its probability, one that stops before gains."""
    pol = SmallPolicy(app_names(), seed=0, memory=8)
    field = UIElement(text="", hint_text="Title", class_name="android.widget.EditText", is_editable=True,
                      bbox_pixels=BoundingBox(0, 1080, 300, 420))
    note = UIElement(text="title|servings\nTofu Bowl|2 servings", bbox_pixels=BoundingBox(0, 1080, 600, 900))
    x = PolicyInput("Recipe: Miso Soup\n servings: 4 servings", (field,), [], seen=(note,))
    typed = [render_response(Action("input_text", index=0, text=t, clear_text=True))
             for t in ("Miso Soup", "Miso Soup\n servings", "Tofu Bowl", "Tofu Bowl|2")]
    before = pol.log_probs([x] * 4, typed)
    with torch.no_grad():
        pol.model.end_breaks.bias.copy_(torch.tensor([0.0, -50.0, -50.0, -50.0]))
    after = pol.log_probs([x] * 4, typed)
    assert after[0] > before[0] and after[2] > before[2]
    assert after[1] < before[1] - 40 and after[3] < before[3] - 40
