"""Backends VoyagerEnv runs on: `sim` (SimDroid, the default) and `androidworld` (a real emulator)."""
