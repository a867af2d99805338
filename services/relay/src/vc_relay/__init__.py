"""Tephra kube relay service: the wiring that runs vc_kube.relay as its own process."""
