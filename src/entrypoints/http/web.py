"""The web page: static files, and the browser libraries make installs from npm."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

WEB = Path(__file__).parent / "web"
FILES = {
    "app.js": WEB / "app.js",
    "style.css": WEB / "style.css",
    "organise.css": WEB / "organise.css",  # the sidebar's pins, archive and temporary chats, the presets
    "views.css": WEB / "views.css",  # the "Scheduled" list and the usage view
    "search.js": WEB / "search.js",
    "favicon.svg": WEB / "favicon.svg",
    **{f"js/{module.name}": module for module in (WEB / "js").glob("*.js")},
    "vendor/marked.js": WEB / "node_modules" / "marked" / "lib" / "marked.esm.js",
    "vendor/purify.js": WEB / "node_modules" / "dompurify" / "dist" / "purify.es.mjs",
    "vendor/highlight.js": WEB / "node_modules" / "@highlightjs" / "cdn-assets" / "es" / "highlight.min.js",
    "vendor/katex.js": WEB / "node_modules" / "katex" / "dist" / "katex.mjs",
}
# images are never loaded (the Markdown renderer turns them into links), scripts only ours
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


async def index(request: Request) -> Response:
    return FileResponse(WEB / "index.html", headers=HEADERS)


async def static(request: Request) -> Response:
    path = FILES.get(request.path_params["path"])
    if path is None or not path.is_file():
        return Response("Not Found", status_code=404, media_type="text/plain")
    media = "text/javascript" if path.suffix in (".js", ".mjs") else None
    return FileResponse(path, media_type=media, headers={**HEADERS, "Cache-Control": "no-cache"})


ROUTES = [
    Route("/", index, methods=["GET"]),
    Route("/static/{path:path}", static, methods=["GET"]),
]
