"""Tephra queue controller."""
