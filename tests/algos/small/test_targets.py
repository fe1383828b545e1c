"""Actions as the heads' targets: taps inside an element, coordinate clicks on the pointer."""

from __future__ import annotations

from algos.policies.small import FLOOR_LOGPROB, SmallPolicy
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


def test_taps_inside_an_element_round_trip_to_grid_points():
    """A slider's far end is a tap at its right edge, not its centre; the centre stays an index click."""
    slider = UIElement(content_description="Brightness", is_clickable=True,
                       bbox_pixels=BoundingBox(90, 991, 400, 508))
    x = PolicyInput(goal="Turn brightness to the max value.", elements=[slider])
    pol = SmallPolicy(app_names(), seed=0)
    taps = [Action("click", x=990, y=454), Action("click", index=0)]
    (right, _), (centre, _) = pol.round_trip([x, x], taps)
    assert (right.x, right.index) == (990, None) and abs(right.y - 454) <= 20
    assert centre == Action("click", index=0)
    lp = pol.log_probs([x, x], [render_response(right), render_response(centre)])
    assert (lp > FLOOR_LOGPROB).all() and lp[0] != lp[1]


def test_coordinate_click_maps_to_smallest_containing_element():
    big = UIElement(text="Row", is_clickable=True, bbox_pixels=BoundingBox(0, 1080, 0, 600))
    small = UIElement(text="Delete", is_clickable=True, bbox_pixels=BoundingBox(800, 1000, 100, 200))
    x = PolicyInput(goal="Delete the row.", elements=[big, small])
    pol = SmallPolicy(app_names(), seed=0)
    lp = pol.log_probs([x] * 3, ['{"action_type": "click", "x": 900, "y": 150}',
                                 '{"action_type": "click", "index": 1}',
                                 '{"action_type": "click", "x": 5000, "y": 5000}']).detach()
    tg = pol._targets(pol.featurize([x] * 3), ['{"action_type": "click", "x": 900, "y": 150}',
                                               '{"action_type": "click", "index": 1}',
                                               '{"action_type": "click", "x": 5000, "y": 5000}'])
    assert tg.element == [2, 2, None]  # the pointer picks "Delete" either way
    assert tg.tap[1] == 0 and tg.tap[0] > 0  # an index taps the centre; a point is a grid point inside it
    assert lp[2] < FLOOR_LOGPROB + 1e-3 < lp[0]  # outside every element: the pointer component is floored
