// Preact bindings: one bridge per widget document, components re-render on every change.
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { Bridge, type Snapshot } from "./bridge";

export const BridgeContext = createContext<Bridge | null>(null);

export function useBridge(): Bridge {
  const bridge = useContext(BridgeContext);
  if (!bridge) throw new Error("useBridge() outside <BridgeContext.Provider>");
  return bridge;
}

/** The bridge's current snapshot; re-renders when input, result, context or state change. */
export function useSnapshot(): Snapshot {
  const bridge = useBridge();
  const [snap, setSnap] = useState(bridge.snapshot);
  useEffect(() => {
    setSnap(bridge.snapshot); // a change between the first render and this effect
    return bridge.subscribe(() => setSnap(bridge.snapshot));
  }, [bridge]);
  return snap;
}
