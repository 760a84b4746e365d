/*
 * The event editor's time spans (occurrences): adding the waveform selection to an event, moving, removing
 * and joining spans, and the regions the player draws. Methods of EventEditor (event_editor.js).
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.Spans = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;
  const {PALETTE, seconds} = window.EventEditorParts.common;

  class EventSpans {
    _sortSpans(event) {
      event.spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    }

    /* A span's id for the timeline, independent of its position: spans stay sorted, so an index names
     * another occurrence once one is moved past its neighbour (keyboard nudges then moved the wrong one). */
    spanKey(span) {
      if (!this._spanKeys) {
        this._spanKeys = new WeakMap();
        this._nextSpanKey = 0;
      }
      if (!this._spanKeys.has(span)) {
        this._nextSpanKey += 1;
        this._spanKeys.set(span, "s" + this._nextSpanKey);
      }
      return this._spanKeys.get(span);
    }

    /* A drag on the waveform while typing in an event's name, sources or attributes adds the span to that
     * event at once and leaves the focus where it was: an occurrence costs one drag, not Esc, drag and r.
     * Elsewhere (the new event's name, a card, the timeline) the selection waits for n or r as before. */
    takeSelectionIntoFocusedEvent() {
      const where = this._describeFocus(document.activeElement);
      if (this.readOnly || !where || !where.eventId || !["label", "sources", "attributes"].includes(where.part)) return false;
      if (!this.player || !this.player.selection) return false;
      const typed = document.activeElement.value;
      this.addSpanFromSelection(where.eventId, where.part);
      const field = where.part === "label" ? null : document.activeElement;
      if (field && field.classList.contains("chip-input") && typed && !field.value) field.value = typed; // an unfinished word stays
      return true;
    }

    /* r: the waveform selection becomes another span of the event. */
    addSpanFromSelection(id, focusPart) {
      const event = this._event(id);
      const selection = this.player && this.player.selection;
      if (!event) return;
      if (!selection) {
        this.say("Select the span first: drag on the waveform, or i and o at the cursor.", true);
        return;
      }
      if (event.spans.some(([onset, offset]) => onset === selection.start && offset === selection.end)) {
        this.say(this._name(event) + " already has this span.");
        return;
      }
      this._record("adding a span to " + this._name(event));
      event.spans.push([selection.start, selection.end]);
      this._sortSpans(event);
      this.player.clearSelection();
      this.say(this._name(event) + ": span " + seconds(selection.start) + "–" + seconds(selection.end) + " s added" + (event.spans.length > 1 ? " (" + event.spans.length + " occurrences)." : "."));
      this._changed({eventId: id, part: focusPart || "card"});
    }

    updateSpan(id, index, start, end) {
      const event = this._event(id);
      if (!event || !event.spans[index]) return;
      const key = this.spanKey(event.spans[index]);
      this._record("moving a span of " + this._name(event), "span:" + id + ":" + key);
      const moved = [start, end];
      this._spanKeys.set(moved, key); // the same occurrence wherever sorting puts it
      event.spans[index] = moved;
      this._sortSpans(event);
      this.say(this._name(event) + ": " + seconds(start) + "–" + seconds(end) + " s.");
      this._changed(undefined);
    }

    removeSpan(id, index) {
      const event = this._event(id);
      if (!event || !event.spans[index]) return;
      this._record("removing a span of " + this._name(event));
      const [onset, offset] = event.spans.splice(index, 1)[0];
      this.say("Removed the span " + seconds(onset) + "–" + seconds(offset) + " s of " + this._name(event) + ". Ctrl+Z brings it back.");
      this._changed({eventId: id, part: "card"});
    }

    /* Occurrences that overlap or touch become one span each (what every rule reading spans sees anyway). */
    joinSpans(id) {
      const event = this._event(id);
      if (!event) return;
      const joined = Graph.mergedSpans(event.spans);
      if (joined.length === event.spans.length) return;
      this._record("joining the spans of " + this._name(event));
      event.spans = joined;
      this.say(this._name(event) + ": occurrences that overlapped or touched joined into " + joined.map(([onset, offset]) => seconds(onset) + "–" + seconds(offset)).join(", ") + " s. Ctrl+Z undoes it.");
      this._changed({eventId: id, part: "card"});
    }

    clearSpans(id) {
      const event = this._event(id);
      if (!event || !event.spans.length) return;
      this._record("removing the spans of " + this._name(event));
      event.spans = [];
      this._changed({eventId: id, part: "card"});
    }

    /* The spans as the player draws them: one row per event that has spans, one colour per event. */
    regions() {
      const regions = [];
      let row = 0;
      this.draft.events.forEach((event, position) => {
        if (!event.spans.length) return;
        event.spans.forEach(([start, end], index) => {
          regions.push({id: event.id + ":" + this.spanKey(event.spans[index]), eventId: event.id, index: index, start: start, end: end, label: event.label.trim() || "unnamed", number: position + 1, row: row, color: PALETTE[position % PALETTE.length]});
        });
        row += 1;
      });
      return regions;
    }
  }

  return EventSpans;
})();
