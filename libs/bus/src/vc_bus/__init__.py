"""Tephra NATS adapter: connection, JetStream KV store, events, dispatcher."""
