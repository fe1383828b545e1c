"""Adapters that put SimDroid (or AndroidWorld) inside trainers people already use (`integrations.trl`)."""
