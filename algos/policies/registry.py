"""Every policy kind in one table: build one by name (`make_policy`), load a saved one (`load_policy`, the
one way to read a policy folder back, whatever wrote it).

A kind is registered with a function returning its class, so that the table costs no import: the small
model's torch or the HF policy's transformers load only when that kind is built or loaded. Kinds whose
action space names apps (`open_app`) take the env's vocabulary, `app_names` (an env's
`metadata["app_names"]`), as a constructor argument: the registry passes it to them and to no other kind.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from algos.policies.base import Policy


@dataclasses.dataclass(frozen=True)
class PolicyKind:
    """One registered kind: how to get its class, whether it takes the env's `app_names`, and the file that
    marks a folder it saved (None: its `config.json` names the kind under "policy")."""

    name: str
    cls: Callable[[], type[Policy]]
    takes_app_names: bool = False
    marker: str | None = None


_KINDS: dict[str, PolicyKind] = {}


def register_policy(name: str, cls: Callable[[], type[Policy]], takes_app_names: bool = False,
                    marker: str | None = None) -> None:
    """Add a policy kind (`cls` returns the class, importing it lazily). A name is registered once."""
    if name in _KINDS:
        raise ValueError(f"policy {name!r} is already registered")
    _KINDS[name] = PolicyKind(name, cls, takes_app_names, marker)


def policy_names() -> list[str]:
    """The registered kinds, in registration order."""
    return list(_KINDS)


def policy_kind(name: str) -> PolicyKind:
    if name not in _KINDS:
        raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(_KINDS)}")
    return _KINDS[name]


def make_policy(name: str, app_names: Sequence[str] | None = None, **kwargs: Any) -> Policy:
    """A fresh policy of kind `name`. `app_names` (the env's `metadata["app_names"]`) goes to the kinds that
    name apps, which need it; the other kinds ignore it."""
    kind = policy_kind(name)
    if kind.takes_app_names:
        if app_names is None:
            raise ValueError(f"policy {name!r} needs app_names: the apps open_app may name, from the env's "
                             "metadata['app_names']")
        kwargs["app_names"] = list(app_names)
    return kind.cls()(**kwargs)


def saved_kind(path: str | Path) -> str:
    """The kind of the policy saved in folder `path`: its `config.json`'s "policy" entry, else the kind
    whose marker file is there."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"{p} is not a saved policy folder (it does not exist or is a file)")
    config = p / "config.json"
    if config.is_file():
        name = json.loads(config.read_text()).get("policy")
        if isinstance(name, str) and name in _KINDS:
            return name
    for kind in _KINDS.values():
        if kind.marker and (p / kind.marker).exists():
            return kind.name
    markers = ", ".join(k.marker for k in _KINDS.values() if k.marker)
    raise ValueError(f"{p} holds no saved policy: expected a config.json naming one of "
                     f"{', '.join(_KINDS)} under 'policy', or one of {markers}")


def load_policy(path: str | Path, kind: str | None = None, **overrides: Any) -> Policy:
    """The policy saved in folder `path` (by its `save`), of the kind the folder records; `kind` is what
    the caller expects (an error if the folder holds another, and the kind to read a folder that records
    none, such as a bare Hugging Face checkpoint). `overrides` replace saved settings (device,
    temperature)."""
    try:
        found: str | None = saved_kind(path)
    except ValueError:
        if kind is None:
            raise
        found = None
    if kind is not None and found is not None and found != kind:
        raise ValueError(f"{path} holds a {found!r} policy, expected {kind!r}")
    name = found or policy_kind(kind or "").name
    return policy_kind(name).cls().load(path, **overrides)


def _expert() -> type[Policy]:
    from algos.policies.simple import ExpertPolicy

    return ExpertPolicy


def _random() -> type[Policy]:
    from algos.policies.simple import RandomPolicy

    return RandomPolicy


def _small() -> type[Policy]:
    from algos.policies.small import SmallPolicy

    return SmallPolicy


def _hf() -> type[Policy]:
    from algos.policies.hf import HFPolicy

    return HFPolicy


register_policy("expert", _expert)
register_policy("random", _random, takes_app_names=True)
register_policy("small", _small, takes_app_names=True)
register_policy("hf", _hf, marker="hf_policy.json")  # algos.policies.hf.SETTINGS_FILE
