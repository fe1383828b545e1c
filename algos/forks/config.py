"""Fork-detection settings: `ForkConfig.faithful()` is UI-Voyager's detector as published, `robust()` our
hardened variant (each fix a switchable field, measured in benchmarks/forkpoint_quality.py)."""

from __future__ import annotations

import dataclasses
import math

Region = tuple[float, float, float, float]  # (x0, y0, x1, y1) fractions of the screen: fits any resolution

STATUS_BAR: Region = (0.0, 0.0, 1.0, 0.045)  # AndroidWorld's 1080x2400 bar: ~96-110 px; SimDroid's 96
NAV_BAR: Region = (0.0, 0.945, 1.0, 1.0)  # 3-button navigation bar (132 px of 2400)
HEADS_UP: Region = (0.0, 0.04, 1.0, 0.145)  # where heads-up notifications drop in, below the status bar
TOAST: Region = (0.1, 0.78, 0.9, 0.885)  # where system toasts sit, above the navigation bar


@dataclasses.dataclass
class ForkConfig:
    """Every knob of fork detection."""

    threshold: float = 0.95  # theta: SAME(a, b) iff score >= threshold - tolerance
    tolerance: float = 1e-4
    # screen -> gray thumbnail
    crop_top: float = 25 / 878  # fraction of the height cut off the top first (UI-Voyager's status-bar crop)
    thumb_size: tuple[int, int] = (480, 270)  # (width, height), cv2's order (UI-Voyager squashes portrait)
    keep_aspect: bool = False  # thumbnail height from the screen's aspect ratio (width thumb_size[0])
    # prefilter
    hash_size: int = 16  # mean-hash grid
    hash_threshold: float = 0.80  # hash similarity below this: different, without SSIM
    # SSIM (skimage's defaults)
    win_size: int = 7
    k1: float = 0.01
    k2: float = 0.03
    data_range: float = 255.0
    # robust: screen regions
    masks: tuple[Region, ...] = ()  # always ignored (status bar, navigation bar)
    overlay_regions: tuple[Region, ...] = ()  # ignored in a pair when all that differs lies inside them and
    # is no UI: the element trees agree there, or (no trees) it looks like a card
    local_diff: int = 0  # > 0: SAME also needs no thumbnail pixel outside the masks to differ by more than
    # this many gray levels (SSIM's mean hides a changed digit or a toggled switch), after the excuses below
    caret: bool = False  # excuse a difference shaped like a blinking text caret (needs local_diff)
    deblend: bool = False  # a screenshot caught mid-transition (a blend of its trajectory's previous screen
    # and this one) counts as the screen it is becoming
    blend_agreement: float = 0.6  # share of the changed pixels whose blend weight must match the median
    # robust: actions, accessibility tree, teacher
    action_match: str = "exact"  # exact: dict equality (invalid never equal); target: same type and target
    # element (text/description/resource id/class, not coordinates), same arguments
    a11y: str = "off"  # ui_elements fingerprints: off; confirm (pixels decide, but differences excused as
    # overlays or blends need the trees to agree); and (pixels and trees must agree); or (either suffices)
    a11y_threshold: float = 0.9  # multiset Jaccard similarity of two element lists that counts as agreeing
    teacher: str = "shortest"  # shortest: the shortest success (first on ties); similar: per failed rollout,
    # the success showing most of its screens (then the shorter), if it beats the shortest by teacher_margin;
    # all: every success teaches every failed rollout (the walk run once per pair)
    teacher_margin: int = 2  # failed steps a success must cover beyond the shortest's to teach instead
    oracle: bool = False  # SAME iff Step.screen_key is equal (SimDroid's ground truth; for benchmarks)
    screen_size: tuple[int, int] = (1080, 2400)  # logical (width, height) of element boxes and x/y actions

    def __post_init__(self) -> None:
        for name, allowed in (("action_match", ("exact", "target")),
                              ("teacher", ("shortest", "similar", "all")),
                              ("a11y", ("off", "confirm", "and", "or"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"ForkConfig.{name}={getattr(self, name)!r}; expected one of {allowed}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"ForkConfig.threshold={self.threshold}; expected a value in (0, 1]")
        if self.win_size < 3 or self.win_size % 2 == 0 or self.win_size > 13:
            raise ValueError(f"ForkConfig.win_size={self.win_size}; expected an odd size in [3, 13] (SSIM's "
                             "window sums are exact int32)")
        if not 0.0 <= self.crop_top < 1.0:
            raise ValueError(f"ForkConfig.crop_top={self.crop_top}; expected a fraction in [0, 1)")
        for r in self.masks + self.overlay_regions:
            if len(r) != 4 or not (0 <= r[0] < r[2] <= 1 and 0 <= r[1] < r[3] <= 1):
                raise ValueError(f"screen region {r}; expected (x0, y0, x1, y1) fractions with x0<x1, y0<y1")

    @property
    def same_at(self) -> float:
        """The lowest score that counts as SAME."""
        return self.threshold - self.tolerance

    @classmethod
    def faithful(cls) -> ForkConfig:
        """UI-Voyager's published detector (cores/fork_utils.py and fork_algorithm.py in its repository)."""
        return cls()

    @classmethod
    def robust(cls) -> ForkConfig:
        """Our hardened detector (each fix switchable; see benchmarks/forkpoint_quality.py)."""
        return cls(crop_top=0.0, thumb_size=(180, 400), keep_aspect=True, masks=(STATUS_BAR, NAV_BAR),
                   overlay_regions=(HEADS_UP, TOAST), local_diff=16, caret=True, deblend=True,
                   action_match="target", a11y="confirm", teacher="similar")


@dataclasses.dataclass(frozen=True)
class Fork:
    """One fork: the failed step and the teacher step that faced the same screen and acted differently."""

    failed_step: int  # index in the failed trajectory
    teacher_step: int  # index in the teacher (successful) trajectory
    sim_current: float  # similarity of the two current screens
    sim_next: float  # similarity of the two next screens (nan when a step is terminal)


def region_slice(region: Region, h: int, w: int) -> tuple[slice, slice]:
    """Pixel rows and columns of a region of an h x w image, rounded outwards."""
    x0, y0, x1, y1 = region
    return (slice(int(math.floor(y0 * h)), int(math.ceil(y1 * h))),
            slice(int(math.floor(x0 * w)), int(math.ceil(x1 * w))))
