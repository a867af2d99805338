"""Tephra on a real kube-apiserver: the store adapter and the relay into the NATS cache.

Style B6: this is the only package that imports kubernetes_asyncio.
"""
