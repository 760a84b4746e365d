/*
 * RegionLane: every event's time spans as labelled bars on the player's timeline, one row per event, with a
 * play button each and handles to move and resize them, by pointer or by keyboard (a bar is focusable):
 *   ← / →  move the span · Shift+← / → its start · Ctrl+← / → its end (steps follow the zoom)
 *   Enter  play it · Delete  remove it · Esc  back to the event
 * Hovering or focusing a bar shades its seconds on the waveform and spectrogram.
 *
 * It changes nothing itself: it dispatches on the player's root element
 *   "regionplayer:regionchange" {eventId, index, start, end}, "regionplayer:regionremove" {eventId, index},
 *   "regionplayer:regionleave" {eventId}
 * and the page applies them to the draft (so each is one undoable edit) and calls setRegions again.
 */
window.RegionLane = (function () {
  "use strict";

  const ROW_HEIGHT = 20;
  const DRAG_PIXELS = 3;
  const el = window.AnnotationDom.el;

  function seconds(value) {
    return value.toFixed(2);
  }

  class RegionLane {
    /* `player`: the RegionPlayer (view, duration, step, playRange, setSelection, root). */
    constructor(container, player) {
      this.container = container;
      this.player = player;
      this.inner = el("div", "timeline-regions-inner");
      this.empty = el("p", "timeline-regions-empty", "Event spans appear here: drag on the waveform (or i / o), then r on an event, or type a new event.");
      this.container.appendChild(this.empty);
      this.container.appendChild(this.inner);
      this.regions = [];
      this.readOnly = false; // a submitted task: spans are shown and played, not changed
      this.bars = new Map(); // region id -> element
      this.active = null; // region id hovered or focused
      this.drag = null;
      this.inner.addEventListener("pointerdown", (event) => this._pointerDown(event));
      this.inner.addEventListener("keydown", (event) => this._keydown(event));
      this.inner.addEventListener("focusin", (event) => this._setActive(this._regionOf(event.target)));
      this.inner.addEventListener("focusout", () => this._setActive(null));
      this.inner.addEventListener("pointerover", (event) => { if (!this.drag) this._setActive(this._regionOf(event.target)); });
      this.inner.addEventListener("pointerleave", () => { if (!this.drag && !this.inner.contains(document.activeElement)) this._setActive(null); });
    }

    /* regions: [{id, eventId, index, start, end, label, number, row, color}]; `id` stays with an occurrence
     * when sorting changes its index (the focused bar keeps editing the span it showed); eventId:index without. */
    setRegions(regions) {
      const focused = this._regionOf(document.activeElement);
      this.regions = regions.map((region) => Object.assign({id: region.eventId + ":" + region.index}, region));
      const rows = this.regions.reduce((most, region) => Math.max(most, region.row + 1), 0);
      this.inner.style.height = rows * ROW_HEIGHT + "px";
      this.empty.hidden = rows > 0;
      const keep = new Set(this.regions.map((region) => region.id));
      for (const [id, bar] of this.bars) {
        if (!keep.has(id)) {
          bar.remove();
          this.bars.delete(id);
        }
      }
      for (const region of this.regions) {
        let bar = this.bars.get(region.id);
        if (!bar) {
          bar = this._bar();
          this.bars.set(region.id, bar);
          this.inner.appendChild(bar);
        }
        bar.dataset.regionId = region.id;
        bar.dataset.eventId = region.eventId;
        bar.dataset.index = String(region.index); // the occurrence's place in the sorted spans, for now
        bar.style.top = region.row * ROW_HEIGHT + "px";
        bar.style.setProperty("--region-color", region.color);
        bar.querySelector(".region-label").textContent = region.number + " " + region.label;
        bar.setAttribute("aria-label", "Event " + region.number + " " + region.label + ", occurrence " + (region.index + 1) + ": " + seconds(region.start) + " to " + seconds(region.end) + " s. Arrows move it, Shift or Ctrl with arrows move its start or end, Enter plays it, Delete removes it.");
        bar.title = region.label + " " + seconds(region.start) + "–" + seconds(region.end) + " s";
      }
      // A moved span may have changed its index (spans stay sorted): keep the focus on it.
      if (focused && !this.bars.has(focused.id)) {
        const same = this.regions.filter((region) => region.eventId === focused.eventId);
        same.sort((a, b) => Math.abs(a.start - focused.start) - Math.abs(b.start - focused.start));
        if (same.length) this.bars.get(same[0].id).focus();
      }
      this.position();
    }

    _bar() {
      const bar = el("div", "region-bar");
      bar.tabIndex = 0;
      bar.setAttribute("role", "button");
      const play = el("button", "region-play", "▶");
      play.type = "button";
      play.tabIndex = -1;
      play.title = "Play this span (Enter)";
      play.setAttribute("aria-hidden", "true");
      bar.appendChild(play);
      bar.appendChild(el("span", "region-label"));
      bar.appendChild(el("span", "region-handle is-start"));
      bar.appendChild(el("span", "region-handle is-end"));
      return bar;
    }

    position() {
      const view = this.player.view;
      if (!view) return;
      const span = view.end - view.start;
      for (const region of this.regions) {
        const bar = this.bars.get(region.id);
        const start = (this.drag && this.drag.region.id === region.id) ? this.drag.start : region.start;
        const end = (this.drag && this.drag.region.id === region.id) ? this.drag.end : region.end;
        const left = ((start - view.start) / span) * 100;
        const width = ((end - start) / span) * 100;
        const visible = end >= view.start && start <= view.end;
        bar.hidden = !visible;
        bar.style.left = left + "%";
        bar.style.width = "max(" + width + "%, 6px)";
        bar.classList.toggle("is-active", this.active === region.id);
      }
    }

    _regionOf(node) {
      const bar = node && node.closest && node.closest(".region-bar");
      return bar && this.inner.contains(bar) ? this.regions.find((region) => region.id === bar.dataset.regionId) || null : null;
    }

    _setActive(region) {
      const id = region ? region.id : null;
      if (this.active === id) return;
      this.active = id;
      this.player.activeRegion = region ? {start: region.start, end: region.end, color: region.color} : null;
      this.position();
      this.player.draw();
    }

    _emit(name, detail) {
      this.player.root.dispatchEvent(new CustomEvent("regionplayer:" + name, {detail: detail, bubbles: true}));
    }

    _change(region, start, end) {
      const duration = this.player.duration || 0;
      const length = end - start;
      if (start < 0) { start = 0; end = length; }
      if (end > duration) { end = duration; start = Math.max(0, duration - length); }
      start = Math.max(0, Math.min(start, duration));
      end = Math.max(start, Math.min(end, duration));
      this._emit("regionchange", {eventId: region.eventId, index: region.index, start: Math.round(start * 1000) / 1000, end: Math.round(end * 1000) / 1000});
    }

    // -- pointer ---------------------------------------------------------------------------------
    _pointerDown(event) {
      const region = this._regionOf(event.target);
      if (!region || event.button > 0) return;
      const bar = this.bars.get(region.id);
      event.preventDefault(); // keep the focus where it is unless this is a click on the bar itself
      if (event.target.closest(".region-play")) {
        this.player.playRange(region.start, region.end);
        return;
      }
      if (this.readOnly) {
        this.player.setSelection(region.start, region.end);
        bar.focus();
        return;
      }
      const handle = event.target.closest(".region-handle");
      const mode = handle ? (handle.classList.contains("is-start") ? "start" : "end") : "move";
      this.drag = {region: region, mode: mode, x: event.clientX, start: region.start, end: region.end, moved: false, pointer: event.pointerId};
      bar.setPointerCapture(event.pointerId);
      const move = (moveEvent) => this._pointerMove(moveEvent);
      const up = (upEvent) => {
        bar.removeEventListener("pointermove", move);
        bar.removeEventListener("pointerup", up);
        bar.removeEventListener("pointercancel", up);
        this._pointerUp(upEvent, bar);
      };
      bar.addEventListener("pointermove", move);
      bar.addEventListener("pointerup", up);
      bar.addEventListener("pointercancel", up);
    }

    _pointerMove(event) {
      const drag = this.drag;
      if (!drag) return;
      if (!drag.moved && Math.abs(event.clientX - drag.x) < DRAG_PIXELS) return;
      drag.moved = true;
      const width = this.inner.getBoundingClientRect().width || 1;
      const view = this.player.view;
      const delta = ((event.clientX - drag.x) / width) * (view.end - view.start);
      const region = drag.region;
      if (drag.mode === "move") {
        drag.start = region.start + delta;
        drag.end = region.end + delta;
      } else if (drag.mode === "start") {
        drag.start = Math.min(region.start + delta, region.end - 0.01);
      } else {
        drag.end = Math.max(region.end + delta, region.start + 0.01);
      }
      this.player.activeRegion = {start: drag.start, end: drag.end, color: region.color};
      this.position();
      this.player.draw();
    }

    _pointerUp(event, bar) {
      const drag = this.drag;
      this.drag = null;
      if (!drag) return;
      if (drag.moved) {
        this._change(drag.region, drag.start, drag.end);
      } else {
        // A click: select the span (so l loops it) and take the focus for the keys.
        this.player.setSelection(drag.region.start, drag.region.end);
        bar.focus();
      }
    }

    // -- keyboard --------------------------------------------------------------------------------
    _keydown(event) {
      const region = this._regionOf(event.target);
      if (!region) return;
      const step = this.player.step();
      const sign = event.key === "ArrowLeft" ? -1 : event.key === "ArrowRight" ? 1 : 0;
      if (this.readOnly && event.key !== "Enter") return;
      if (sign) {
        event.preventDefault();
        const delta = sign * step;
        if (event.shiftKey) this._change(region, Math.min(region.start + delta, region.end - 0.01), region.end);
        else if (event.ctrlKey || event.metaKey) this._change(region, region.start, Math.max(region.end + delta, region.start + 0.01));
        else this._change(region, region.start + delta, region.end + delta);
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      switch (event.key) {
        case "Enter":
          event.preventDefault();
          this.player.playRange(region.start, region.end);
          break;
        case "Delete":
        case "Backspace":
          event.preventDefault();
          this._emit("regionremove", {eventId: region.eventId, index: region.index});
          break;
        case "Escape":
          event.preventDefault();
          this._emit("regionleave", {eventId: region.eventId});
          break;
        default:
          break;
      }
    }

    focusFirstOf(eventId) {
      const region = this.regions.find((item) => item.eventId === eventId);
      if (region) this.bars.get(region.id).focus();
      return !!region;
    }
  }

  RegionLane.ROW_HEIGHT = ROW_HEIGHT;
  return RegionLane;
})();
