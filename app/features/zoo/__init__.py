"""The zoo: ``get_zoo_animals`` and its app-only sibling ``get_zoo_animal_details``."""
