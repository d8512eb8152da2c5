"""open_webui.routers (Parley's compatibility package, see open_webui/__init__.py)."""
