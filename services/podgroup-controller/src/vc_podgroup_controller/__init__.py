"""Tephra podgroup controller."""
