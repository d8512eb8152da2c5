"""Parley's Python plugin host: runs Open WebUI tool code out of the Node process.

One worker process serves one request at a time for the Node pool
(src/core/python). See docs/plugin-host.md for the protocol.
"""

PROTOCOL_VERSION = 1
