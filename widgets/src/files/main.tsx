import { mountWidget } from "../ui/mount";
import { FilesWidget } from "./FilesWidget";

mountWidget("files", FilesWidget);
