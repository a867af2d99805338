"""Tephra scheduler: Volcano sessions, actions, plugins."""
