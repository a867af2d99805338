"""Pure views of the cluster for the pages: plain data in, plain data out (no I/O, no event loop)."""
