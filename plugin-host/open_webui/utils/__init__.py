"""open_webui.utils (Parley's compatibility package, see open_webui/__init__.py)."""
