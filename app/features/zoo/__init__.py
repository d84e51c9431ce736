"""The zoo: ``get_zoo_animals``, its app-only sibling ``get_zoo_animal_details``, and ``like_zoo_animal``."""

from app.feature import Feature
from app.features.zoo.seed import seed
from app.features.zoo.tool import register

FEATURE = Feature(
    name="zoo",
    instructions="Use `get_zoo_animals` when the user wants to meet or learn about the zoo's animals.",
    tools=register,
    seed=seed,
)
