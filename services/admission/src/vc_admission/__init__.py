"""Tephra admission: validation and defaulting."""
