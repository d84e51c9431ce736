"""Saved recipes, per account: ``list_saved_recipes``, ``save_recipe`` and ``delete_saved_recipe`` (OAuth)."""

from app.auth.scopes import Scope
from app.db import UnitOfWork
from app.feature import Deps, Feature
from app.features.recipes.repository import SavedRecipeRepository
from app.features.recipes.tool import READ_SCOPE, WRITE_SCOPE, register


def forget(uow: UnitOfWork, subject: str, _: Deps) -> int:
    """An account deleted: its saved recipes go with it."""
    return uow.repository(SavedRecipeRepository).delete_all(subject)


FEATURE = Feature(
    name="recipes",
    instructions="Use `save_recipe`, `list_saved_recipes` and `delete_saved_recipe` when the user wants to keep, "
    "review or remove recipes in their own saved list.",
    tools=register,
    forget=forget,
    scopes=(
        Scope(READ_SCOPE, {
            "en": "Read your saved recipes",
            "es": "Ver tus recetas guardadas",
            "fr": "Consulter vos recettes enregistrées",
            "pt": "Ver suas receitas salvas",
            "zh": "查看你保存的食谱",
        }),
        Scope(WRITE_SCOPE, {
            "en": "Save and delete recipes in your list",
            "es": "Guardar y eliminar recetas de tu lista",
            "fr": "Enregistrer et supprimer des recettes de votre liste",
            "pt": "Salvar e excluir receitas da sua lista",
            "zh": "在你的列表中保存和删除食谱",
        }, implies=(READ_SCOPE,)),
    ),
    privacy=lambda deps: [{
        "en": "The recipes you save are kept with your account until you delete them.",
        "es": "Las recetas que guardas se conservan con tu cuenta hasta que las eliminas.",
        "fr": "Les recettes que vous enregistrez sont conservées avec votre compte jusqu’à ce que "
              "vous les supprimiez.",
        "pt": "As receitas que você salva ficam guardadas com a sua conta até você excluí-las.",
        "zh": "你保存的食谱会随你的账户保存，直到你将其删除。",
    }],
)
