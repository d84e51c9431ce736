import { mountWidget } from "../ui/mount";
import { SearchWidget } from "./SearchWidget";

mountWidget("search", SearchWidget);
