"""open_webui.models (Parley's compatibility package, see open_webui/__init__.py)."""
