"""GRSD fork points (UI-Voyager stage 2): where a failed rollout faced the screen a successful one faced,
acted differently and went elsewhere. `walk` holds the rule, `steps` how SAME is decided, `screens` and
`ssim` the image side, `keys` actions and element trees, `examples` the fork examples GRSD trains on and
keeps, `figure` their pictures."""

from algos.forks.config import HEADS_UP, NAV_BAR, STATUS_BAR, TOAST, Fork, ForkConfig
from algos.forks.keys import action_key
from algos.forks.walk import detect_forks, group_forks, screen_classes, walk, walk_matrices

__all__ = ["HEADS_UP", "NAV_BAR", "STATUS_BAR", "TOAST", "Fork", "ForkConfig", "action_key", "detect_forks",
           "group_forks", "screen_classes", "walk", "walk_matrices"]
