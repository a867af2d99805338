"""The soak: the embedded system under steady gang load for up to an hour, every process's
RSS, open file descriptors and asyncio tasks sampled; after warm-up none may grow beyond a stated bound.

verdict (pure: the bounds and the judgement), probe (reading /proc and /metrics), run (the system, the
load, the sampling), __main__ (`make soak MINUTES=n`). See docs/reliability.md.
"""
