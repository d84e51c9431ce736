import { mountWidget } from "../ui/mount";
import { ZooWidget } from "./ZooWidget";

mountWidget("zoo", ZooWidget);
