"""Cafés: ``recommend_cafe`` reads the locale and coarse city hints ChatGPT sends."""

from app.feature import Feature
from app.features.cafes.seed import seed
from app.features.cafes.settings import CafesMapSettings
from app.features.cafes.tool import register

FEATURE = Feature(
    name="cafes",
    instructions="Use `recommend_cafe` to suggest cafés near the user.",
    tools=register,
    seed=seed,
    settings=CafesMapSettings,
)
