"""Tephra garbage collector."""
