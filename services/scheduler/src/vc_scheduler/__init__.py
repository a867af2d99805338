"""Tephra scheduler service: the shell (cache, loop, ledger, binder, status writer) around vc_sched_core."""
