"""Policies behind one interface: expert, random, a small CPU pointer model, and Hugging Face models."""

from algos.policies.base import Policy, PolicyOutput, make_policy

__all__ = ["Policy", "PolicyOutput", "make_policy"]
