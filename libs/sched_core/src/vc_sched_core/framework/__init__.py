"""The pure scheduling framework (Volcano's pkg/scheduler/framework and api, reshaped for Python).

- `session.Session`: the cluster state of one cycle plus one generic tier walker per extension point;
- `statement.Statement`: allocate / pipeline / evict, then commit (decisions) or discard (undo);
- `framework.open_session` / `close_session`: plugin hooks and the PodGroup status Volcano writes;
- `conf`: Volcano's scheduler configuration YAML; `decisions`: what a cycle hands to the service shell.

Nothing here performs I/O, reads a clock or starts an event loop.
"""

from __future__ import annotations
