"""Helpers shared by every test suite, one concept per module:

- waiting: `eventually`, the one way to wait (on a condition, never a fixed time);
- leaks: what a test left behind (tasks, processes), checked after every test by tests/conftest.py;
- services: a real service process (start, wait ready, signals);
- inprocess: a real service app in this event loop, its writes counted; `memberships_settled`;
- system: the whole embedded system for integration tests;
- secure: the session's NATS identities and TLS."""
