"""
title: Compat embeds
"""
from fastapi.responses import HTMLResponse

PAGE = "<html><body><h1>Chart</h1></body></html>"


class Tools:
    def embed(self) -> HTMLResponse:
        """An inline HTMLResponse: a rich embed."""
        return HTMLResponse(content=PAGE, headers={"Content-Disposition": "inline"})

    def embed_with_context(self) -> tuple:
        """An inline HTMLResponse with context for the model."""
        return HTMLResponse(content=PAGE, headers={"Content-Disposition": "inline"}), {"rows": 3}

    def html_string(self) -> tuple:
        """HTML text with the inline marker headers."""
        return PAGE, {"Content-Type": "text/html", "Content-Disposition": "inline"}

    def download(self) -> HTMLResponse:
        """Not inline: the body is the result text."""
        return HTMLResponse(content=PAGE)
