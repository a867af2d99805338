"""Seeded, bounded fuzzing of every surface a client reaches: admission's write API and
webhook, the subjects the services subscribe to, values written straight into the buckets, vcctl.

corpus (valid documents to start from), strategies (how hostile input is made), surfaces (the inputs of
each surface), budget (how many, which seed, the tally and its report). `make test` runs a slice of a few
hundred inputs per surface; `make fuzz` runs 10,000 per surface (docs/reliability.md has the counts).
"""
