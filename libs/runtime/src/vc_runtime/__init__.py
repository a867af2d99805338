"""Tephra service runtime: run_service, probes, logging, settings."""
