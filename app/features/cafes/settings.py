"""The cafés feature's settings (APP_CAFES_*): where the widget's map tiles come from and the
attribution their licence asks for (data/NOTICE.txt)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from app.mcp.widgets import is_origin
from app.settings import ENV_PREFIX, SettingsPart

OSM_TILES = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
_PLACEHOLDER = re.compile(r"\{[^}]*\}")


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class CafesMapSettings(SettingsPart):
    model_config = SettingsConfigDict(env_prefix=f"{ENV_PREFIX}CAFES_")

    # A tile URL template with {z}, {x} and {y} on ONE origin (no {s} subdomains: the widget's CSP
    # declares that origin, and ChatGPT takes no wildcard); empty: no map, the list alone.
    map_tiles: str = Field(default=OSM_TILES, max_length=500)
    # Shown on the map, as the tiles' licence asks; the link opens outside the widget.
    map_attribution: str = Field(default="© OpenStreetMap contributors", max_length=200)
    map_attribution_url: str = Field(default="https://www.openstreetmap.org/copyright",
                                     max_length=500)

    @field_validator("map_tiles")
    @classmethod
    def _template(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        placeholders = sorted(set(_PLACEHOLDER.findall(value)))
        origin = origin_of(value)
        if "{" in origin or not is_origin(origin) or placeholders != ["{x}", "{y}", "{z}"]:
            raise ValueError("must be an https URL with {z}, {x} and {y} and no other placeholder "
                             "(http only on loopback), or empty for no map")
        return value

    @field_validator("map_attribution_url")
    @classmethod
    def _link(cls, value: str) -> str:
        value = value.strip()
        if value and (urlsplit(value).scheme != "https" or not is_origin(origin_of(value))):
            raise ValueError("must be an https URL, or empty for no link")
        return value

    @property
    def tiles_origin(self) -> str | None:
        return origin_of(self.map_tiles) if self.map_tiles else None
