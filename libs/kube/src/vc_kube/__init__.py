"""Tephra on a real kube-apiserver: the store adapter and the relay into the NATS cache (B6: the only kubernetes_asyncio user)."""
