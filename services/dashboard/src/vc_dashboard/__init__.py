"""Tephra web dashboard (read-only): queues, jobs, a job's history, nodes; live over server-sent events."""
