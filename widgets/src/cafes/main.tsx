import { mountWidget } from "../ui/mount";
import { CafesWidget } from "./CafesWidget";

mountWidget("cafes", CafesWidget);
