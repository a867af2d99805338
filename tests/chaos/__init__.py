"""Seeded chaos runs of the embedded system with a history checker (`make chaos SEED=n SCHEDULES=k`).

plan (the seeded schedule), natsd (NATS servers), fleet (service processes), proxy (faults on the
wire), disk (a disk that stalls), faults (carrying a schedule out), load (the jobs), recorder (every
acknowledged write), history and facts and checker (the invariants, pure), harness (one schedule),
cli (many schedules, the report). See docs/reliability.md.
"""
