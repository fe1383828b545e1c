"""The coverage tool: expert actions encoded as the policy's targets and decoded back."""

from algos.policies.coverage import round_trip, same_action, task_coverage
from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput
from voyager_gym.actions import Action
from voyager_gym.observation import BoundingBox, UIElement


def _input() -> PolicyInput:
    els = (
        UIElement(text="Title", is_editable=True, bbox_pixels=BoundingBox(0, 1080, 200, 300)),
        UIElement(text="Save", is_clickable=True, bbox_pixels=BoundingBox(0, 540, 400, 500)),
    )
    return PolicyInput("Create a note titled 'Groceries' in Markor.", els, [], step=1, max_steps=10)


def test_round_trip_decodes_representable_actions_to_themselves():
    pol = SmallPolicy(seed=0)
    acts = [Action("click", index=1), Action("input_text", index=0, text="Groceries", clear_text=True),
            Action("scroll", direction="down"), Action("answer", text="Save"), Action("navigate_back"),
            Action("status", goal_status="complete"), Action("open_app", app_name="Markor")]
    out = round_trip(pol, [_input()] * len(acts), acts)
    for a, (decoded, why) in zip(acts, out, strict=True):
        assert why == "" and decoded is not None and same_action(decoded, a), (a, decoded)


def test_round_trip_names_what_cannot_be_represented():
    pol = SmallPolicy(seed=0)
    acts = [Action("input_text", index=0, text="zq unseen words", clear_text=True),
            Action("click", index=7), Action("open_app", app_name="NoSuchApp")]
    out = round_trip(pol, [_input()] * len(acts), acts)
    assert [d for d, _ in out] == [None, None, None]
    assert [w for _, w in out] == ["typed text is in neither the goal nor an element's label",
                                   "element index beyond the kept elements",
                                   "unknown app the goal does not name"]


def test_task_coverage_of_a_task_the_policy_can_express():
    cov = task_coverage(SmallPolicy(seed=0), "SystemWifiTurnOn", seeds=3)
    assert (cov.instances, cov.expert_solved, cov.exact, cov.solved) == (3, 3, 3, 3)
    assert cov.covered and cov.steps == cov.representable_steps > 0 and not cov.reasons
