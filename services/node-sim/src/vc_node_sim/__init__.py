"""Tephra node simulator (hollow nodes)."""
