"""Parley's stand-in for the parts of Open WebUI's Python package that plugins import.

Community tools (and later functions) import `open_webui.models.users`,
`open_webui.storage.provider`, `open_webui.utils.chat` and the like from the
process they run in. Here those module paths exist with the same names and
signatures, backed by Parley through the host's channel (parley_host/bridge.py):
every call is answered by Parley as the user the plugin runs for, only while
that call runs. Nothing here opens Parley's database. See docs/plugin-compat.md.

Modules import only pydantic and the standard library, so a tool pays a few
milliseconds to load them; FastAPI and friends are imported only if a tool does.
"""
