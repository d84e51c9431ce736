"""``GET /files/samples/NAME``: the files the listing's test cases hand to ``analyze_file`` and
``compare_files`` (app/features/files/listing.toml), and a reviewer may download to try the app
with. Bundled with the feature, read once, served as they are."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from app.feature import Deps

FOLDER = Path(__file__).parent / "samples"
TYPES = {".csv": "text/csv; charset=utf-8"}


def routes(_: Deps) -> list[Route]:
    # Read at start: the request names one of these, never a path.
    samples = {path.name: (path.read_bytes(), TYPES[path.suffix])
               for path in sorted(FOLDER.iterdir()) if path.suffix in TYPES}

    async def sample(request: Request) -> Response:
        found = samples.get(request.path_params["name"])
        if found is None:
            return PlainTextResponse("No such sample file", status_code=404)
        body, media_type = found
        return Response(body, media_type=media_type, headers={
            "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff",
            "content-disposition": f'attachment; filename="{request.path_params["name"]}"'})

    return [Route("/files/samples/{name}", sample, methods=["GET", "HEAD"])]
