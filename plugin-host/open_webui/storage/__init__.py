"""open_webui.storage (Parley's compatibility package, see open_webui/__init__.py)."""
