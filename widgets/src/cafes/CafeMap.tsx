// The cafés' map: Leaflet (about 40 KB gzip with its CSS, within the map widget's 110 KB; a WebGL
// map library is several times that), one numbered pin per café that has a place, tiles from the
// server's APP_CAFES_MAP_TILES (an origin the widget's CSP declares). The list stays the answer:
// when no tile can be loaded the map gives way to a line saying so, never a grey box.
import { divIcon, latLngBounds, map as leafletMap, marker, tileLayer } from "leaflet";
import type { LeafletKeyboardEvent, Map as LeafletMap, Marker } from "leaflet";
import "leaflet/dist/leaflet.css";
import { useEffect, useRef } from "preact/hooks";
import { spreadOffsets, type MapSource, type Pin } from "./logic";

const MAX_ZOOM = 16; // close enough to tell two cafés of a square apart, not a building plan
const PIN = 28; // px: a pin's size, and the least distance between two pins' centres

export function CafeMap(props: {
  source: MapSource;
  pins: Pin[];
  selected: string | null;
  label: string;
  onPick: (id: string) => void;
  onTilesFailed: () => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const view = useRef<{ map: LeafletMap; markers: Map<string, Marker> } | null>(null);
  // Read at event time: the map is built once per set of pins, not once per render.
  const latest = useRef(props);
  latest.current = props;

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const map = leafletMap(element, {
      attributionControl: false, // shown under the map, its link opened through the host
      scrollWheelZoom: false, // a wheel over an inline widget scrolls the conversation
      maxZoom: MAX_ZOOM,
    });
    // A view first: Leaflet adds layers (and makes the pins' elements) once the map has one.
    const bounds = latLngBounds(props.pins.map((p) => [p.lat, p.lon] as [number, number]));
    map.fitBounds(bounds, { padding: [28, 28], maxZoom: MAX_ZOOM });
    let loaded = 0;
    let failed = 0;
    tileLayer(props.source.tiles, { maxZoom: 19 })
      .on("tileload", () => (loaded += 1))
      .on("tileerror", () => (failed += 1))
      // "load" comes once every visible tile has settled, loaded or not.
      .on("load", () => {
        if (loaded === 0 && failed > 0) latest.current.onTilesFailed();
      })
      .addTo(map);
    const markers = new Map<string, Marker>();
    for (const pin of props.pins) {
      const icon = divIcon({
        className: "c-pin",
        html: `<span aria-hidden="true">${pin.number}</span>`,
        iconSize: [PIN, PIN],
        iconAnchor: [PIN / 2, PIN / 2],
      });
      const m = marker([pin.lat, pin.lon], { icon, title: pin.name, keyboard: true })
        .on("click", () => latest.current.onPick(pin.id))
        // A button to a screen reader (Leaflet's role): Enter and Space press it, as they would.
        .on("keydown", (e) => {
          const key = (e as LeafletKeyboardEvent).originalEvent;
          if (key.key !== "Enter" && key.key !== " ") return;
          key.preventDefault();
          latest.current.onPick(pin.id);
        })
        .addTo(map);
      const el = m.getElement();
      if (el) {
        el.setAttribute("aria-label", `${pin.number}. ${pin.name}`);
        el.dataset.testid = "cafe-pin";
        el.dataset.cafeId = pin.id;
      }
      markers.set(pin.id, m);
    }
    view.current = { map, markers };
    // Pins too close to tell apart at this zoom are set around their common point.
    const spread = () => {
      const points = props.pins.map((p) => {
        const { x, y } = map.latLngToLayerPoint([p.lat, p.lon]);
        return { id: p.id, x, y };
      });
      for (const [id, { dx, dy }] of spreadOffsets(points, PIN + 2)) {
        const el = markers.get(id)?.getElement();
        if (!el) continue;
        el.style.marginLeft = `${dx - PIN / 2}px`;
        el.style.marginTop = `${dy - PIN / 2}px`;
      }
    };
    map.on("zoomend", spread);
    spread();
    // The frame changes size with the display mode: Leaflet measures its box only when told,
    // and the cafés are fitted to the new box.
    const resized = new ResizeObserver(() => {
      map.invalidateSize();
      map.fitBounds(bounds, { padding: [28, 28], maxZoom: MAX_ZOOM });
    });
    resized.observe(element);
    return () => {
      resized.disconnect();
      view.current = null;
      map.remove();
    };
  }, [props.source.tiles, props.pins.map((p) => `${p.id}@${p.lat},${p.lon}`).join("|")]);

  useEffect(() => {
    const current = view.current;
    if (!current) return;
    for (const [id, m] of current.markers) {
      const on = id === props.selected;
      m.getElement()?.classList.toggle("is-selected", on);
      m.getElement()?.setAttribute("aria-pressed", String(on));
      m.setZIndexOffset(on ? 1000 : 0);
      if (on && !current.map.getBounds().contains(m.getLatLng())) current.map.panTo(m.getLatLng());
    }
  }, [props.selected]);

  return (
    <div
      class="c-map"
      ref={box}
      role="region"
      aria-label={props.label}
      data-testid="cafe-map-view"
    />
  );
}
