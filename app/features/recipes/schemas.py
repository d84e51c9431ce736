from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RecipeSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable recipe id, derived from the title; pass it to delete_saved_recipe")
    title: str = Field(description="The recipe's title as the user saved it")


class SavedRecipes(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipes: list[RecipeSummary] = Field(description="The user's saved recipes, newest first")


class RecipeSaved(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe: RecipeSummary
    created: bool = Field(description="False when the recipe was already in the list")


class RecipeDeleted(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deleted: bool = Field(description="False when the recipe was not in the list")
    recipe_id: str


class RecipeDetail(BaseModel):
    """A saved recipe as its resource (``app://recipes/{id}``) reads."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    source_url: str | None = None
    saved_at: str = Field(description="When it was first saved, ISO 8601")
