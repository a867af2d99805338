"""Tephra pure domain: quantities, resources, errors, the store port. No I/O, no event loop."""
