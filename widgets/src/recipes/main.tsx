import { mountWidget } from "../ui/mount";
import { RecipesWidget } from "./RecipesWidget";

mountWidget("recipes", RecipesWidget);
