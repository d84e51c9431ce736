// The cafés' map: Leaflet (about 50 KB gzip with its CSS, within the map widget's budget; a WebGL
// map library is several times that), one numbered pin per café that has a place, tiles from the
// server's APP_CAFES_MAP_TILES (an origin the widget's CSP declares). The list stays the answer:
// when no tile can be loaded the map gives way to a line saying so, never a grey box.
import { control, divIcon, latLngBounds, map as leafletMap, marker, tileLayer } from "leaflet";
import type { LeafletKeyboardEvent, Map as LeafletMap, Marker } from "leaflet";
import "leaflet/dist/leaflet.css";
import { useEffect, useRef } from "preact/hooks";
import { spreadOffsets, type MapSource, type Pin } from "./logic";

const MAX_ZOOM = 16; // close enough to tell two cafés of a square apart, not a building plan
const PIN = 28; // px: a pin's size, and the least distance between two pins' centres
const PADDING = 44; // px around the pins: room for a pin set around its neighbours' point
// A tile host that never answers fires no event at all: past this, no tile means no map.
const TILES_DEADLINE_MS = 10_000;

/** What identifies a map: its tiles and its pins (a change of either builds it again). */
export const mapKey = (source: MapSource, pins: Pin[]) =>
  `${source.tiles}|${pins.map((p) => `${p.id}@${p.lat},${p.lon}`).join("|")}`;

export function CafeMap(props: {
  source: MapSource;
  pins: Pin[];
  selected: string | null;
  label: string;
  zoomIn: string;
  zoomOut: string;
  onPick: (id: string) => void;
  onTilesFailed: () => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const view = useRef<{ map: LeafletMap; markers: Map<string, Marker> } | null>(null);
  // Read at event time: the map is built once per set of pins, not once per render.
  const latest = useRef(props);
  latest.current = props;
  const key = mapKey(props.source, props.pins);

  /** The selected pin lit (and brought into view), the others not. */
  function showSelection() {
    const current = view.current;
    if (!current) return;
    for (const [id, m] of current.markers) {
      const on = id === latest.current.selected;
      m.getElement()?.classList.toggle("is-selected", on);
      m.getElement()?.setAttribute("aria-pressed", String(on));
      m.setZIndexOffset(on ? 1000 : 0);
      if (on && !current.map.getBounds().contains(m.getLatLng())) current.map.panTo(m.getLatLng());
    }
  }

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    try {
      return build(element);
    } catch (err) {
      // Whatever Leaflet refuses (a template it cannot fill), the list stays: the map gives way.
      console.warn("the cafés' map could not be drawn", err);
      latest.current.onTilesFailed();
      return undefined;
    }
  }, [key]);

  function build(element: HTMLDivElement): () => void {
    const { pins, source } = latest.current;
    const map = leafletMap(element, {
      attributionControl: false, // shown under the map, its link opened through the host
      zoomControl: false, // added below with the widget's words, not Leaflet's English
      scrollWheelZoom: false, // a wheel over an inline widget scrolls the conversation
      maxZoom: MAX_ZOOM,
    });
    control.zoom({ zoomInTitle: props.zoomIn, zoomOutTitle: props.zoomOut }).addTo(map);
    // Fitted to the cafés until the person moves the map; after that, theirs to move.
    const bounds = latLngBounds(pins.map((p) => [p.lat, p.lon] as [number, number]));
    let fitting = false;
    let moved = false;
    const fit = () => {
      fitting = true;
      try {
        map.fitBounds(bounds, { padding: [PADDING, PADDING], maxZoom: MAX_ZOOM, animate: false });
      } finally {
        fitting = false;
      }
    };
    map.on("dragstart", () => (moved = true));
    map.on("zoomstart", () => {
      if (!fitting) moved = true;
    });
    // A view first: Leaflet adds layers (and makes the pins' elements) once the map has one.
    fit();
    let loaded = 0;
    let failed = 0;
    let gaveUp = false;
    const giveUp = () => {
      if (gaveUp) return;
      gaveUp = true;
      latest.current.onTilesFailed();
    };
    const deadline = window.setTimeout(() => loaded === 0 && giveUp(), TILES_DEADLINE_MS);
    tileLayer(source.tiles, { maxZoom: 19 })
      .on("tileload", () => (loaded += 1))
      .on("tileerror", () => (failed += 1))
      // "load" comes once every visible tile has settled, loaded or not.
      .on("load", () => {
        if (loaded === 0 && failed > 0) giveUp();
      })
      .addTo(map);
    const markers = new Map<string, Marker>();
    for (const pin of pins) {
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
        el.dataset.pinFor = pin.id;
      }
      markers.set(pin.id, m);
    }
    view.current = { map, markers };
    // Pins too close to tell apart at this zoom are set around their common point.
    const spread = () => {
      const points = pins.map((p) => {
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
    showSelection();
    // The frame changes size with the display mode: Leaflet measures its box only when told,
    // and fits the cafés to the new box unless the person has moved the map.
    const resized = new ResizeObserver(() => {
      map.invalidateSize();
      if (!moved) fit();
    });
    resized.observe(element);
    return () => {
      window.clearTimeout(deadline);
      resized.disconnect();
      view.current = null;
      map.remove();
    };
  }

  useEffect(showSelection, [props.selected]);

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
