"""Policies behind one interface: expert, random, a small CPU pointer model, and Hugging Face models."""

from algos.policies.base import Policy, PolicyOutput
from algos.policies.registry import load_policy, make_policy, register_policy

__all__ = ["Policy", "PolicyOutput", "load_policy", "make_policy", "register_policy"]
