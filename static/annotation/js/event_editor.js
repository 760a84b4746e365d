/*
 * EventEditor: the keyboard-first editor of an AudioCaps-F annotation graph (events with sources, attributes
 * and time spans, temporal relations), used by the annotator page and by the reviewer's gold editor.
 *
 *   const editor = new EventEditor({root, relationsRoot, messageElement, draft, library, suggestions,
 *                                   soundSources, player, onChange});
 *   editor.draft  // the current draft; onChange(draft) after every change
 *
 * Keys (see the page's shortcut list): in "New event" Enter adds the event (it takes the waveform selection
 * as its first span); in a field Enter adds the typed source / attribute (or moves on when empty), Tab moves,
 * Backspace on an empty field removes the last chip, Esc goes to the event card; on a card Delete removes it,
 * x selects it, b / a / s relate the two selected events (or the selected one and this one), r adds the
 * waveform selection as a span (another occurrence), R removes its spans, Alt+Up/Down reorders, Up/Down
 * (j/k) move between cards. Ctrl+Z undoes any edit, Ctrl+Shift+Z (or Ctrl+Y) redoes it.
 * Attributes complete from the tag library grouped by its nine categories (a template such as "on a ___"
 * asks for the word); anything else is kept as free text and flagged, as are sources outside the list of
 * common sound sources. The relations panel is relations_panel.js.
 *
 * The editor is one class assembled from parts by concept: this file holds its state, the edits of events and
 * their sources / attributes, focus and the page's input, click and focus events; event_spans.js (time
 * spans), event_relations.js (temporal relations), event_cards.js (rendering), event_suggestions.js (the list
 * under a field), event_editor_keys.js (keys) add their methods; event_tag_library.js (the vocabulary) and
 * edit_history.js (undo / redo) are objects it holds. event_editor_common.js has what they share; all load
 * before this file.
 */
window.EventEditor = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;
  const el = window.AnnotationDom.el;
  const Parts = window.EventEditorParts;
  const {BLANK, MAX_TEXT, PALETTE, isTextField, seconds} = Parts.common;

  class EventEditor {
    constructor(options) {
      this.root = options.root;
      this.relationsRoot = options.relationsRoot;
      this.messageElement = options.messageElement;
      this.player = options.player || null;
      this.onChange = options.onChange || (() => {});
      this.readOnly = !!options.readOnly;
      this.draft = EventEditor.normalise(options.draft || Graph.emptyDraft());
      this.tags = new Parts.TagLibrary(options.library || [], (options.suggestions && options.suggestions.attributes) || [], options.soundSources || []);
      this.sourceWords = (options.suggestions && options.suggestions.sources) || [];
      this.eventWords = (options.suggestions && options.suggestions.events) || [];
      this.support = null; // review: {eventId: {sources: {key: "2/3"}, attributes: {...}}}
      this.selected = [];
      this.history = new Parts.EditHistory();
      this.root.classList.add("event-editor");
      this.list = el("div", "event-list");
      this.list.setAttribute("role", "list");
      this.root.appendChild(this.list);
      if (!this.readOnly) this._buildNewEvent();
      this.suggest = new window.SuggestBox(this.root);
      this.relations = this.relationsRoot ? new window.RelationsPanel(this, this.relationsRoot) : null;
      this.root.addEventListener("keydown", (event) => this._keydown(event));
      this.root.addEventListener("input", (event) => this._input(event));
      this.root.addEventListener("focusout", (event) => this._focusout(event));
      this.root.addEventListener("click", (event) => this._click(event));
      this._bindNote(options.noteElement || null);
      this.render();
    }

    /* The annotation's note for the reviewer: a field outside the event list, undoable like any edit (typing
     * is one step). No maxlength: a note past the limit is refused by the server with its length, not cut. */
    _bindNote(element) {
      this.noteElement = element;
      if (!element) return;
      element.readOnly = this.readOnly;
      element.addEventListener("input", () => {
        this._record("edit the note", "note");
        this.draft.note = element.value;
        this.onChange(Graph.clone(this.draft));
      });
    }

    /* A draft with every event's spans as a sorted list (drafts from before spans had onset / offset). */
    static normalise(draft) {
      const copy = Graph.clone(draft);
      copy.events = (copy.events || []).map((event) => {
        let spans = event.spans;
        if (!spans) spans = event.onset !== null && event.onset !== undefined ? [[event.onset, event.offset === null || event.offset === undefined ? event.onset : event.offset]] : [];
        const normal = {id: event.id, label: event.label || "", sources: event.sources || [], attributes: event.attributes || [], spans: spans.map((span) => [Number(span[0]), Number(span[1])])};
        normal.spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        return normal;
      });
      copy.relations = copy.relations || [];
      copy.note = copy.note || "";
      return copy;
    }

    // -- vocabulary (event_tag_library.js) --------------------------------------------------------------
    /* The library tag of an attribute (by its text, or the template it fills in), as annotation/vocabulary.py. */
    tagOf(text) {
      return this.tags.tagOf(text);
    }

    /* What clashes with attribute `index` of `attributes`: {text, kind} or null. */
    attributeClash(attributes, index) {
      return this.tags.attributeClash(attributes, index);
    }

    sourceIsListed(text) {
      return this.tags.sourceIsListed(text);
    }

    // -- history: every edit can be undone (edit_history.js) ------------------------------------------
    /* Call before changing the draft; consecutive edits with the same `coalesce` key (typing a name, moving a
     * span with the arrows) are one step. */
    _record(what, coalesce) {
      this.history.record(this.draft, what, coalesce);
    }

    undo() {
      const entry = this.history.undo(this.draft);
      if (!entry) {
        this.say("Nothing to undo.");
        return false;
      }
      this.draft = entry.draft;
      this.selected = this.selected.filter((id) => this._event(id));
      this.say("Undone: " + entry.what + ". Ctrl+Shift+Z redoes it.");
      this._changed(this._keptFocus());
      return true;
    }

    redo() {
      const entry = this.history.redo(this.draft);
      if (!entry) {
        this.say("Nothing to redo.");
        return false;
      }
      this.draft = entry.draft;
      this.say("Redone: " + entry.what + ".");
      this._changed(this._keptFocus());
      return true;
    }


    _keptFocus() {
      const where = this._describeFocus(document.activeElement);
      if (where && (where.part === "new" || this._event(where.eventId))) return where;
      return this.draft.events.length ? {eventId: this.draft.events[0].id, part: "card"} : {part: "new"};
    }

    // -- state changes ---------------------------------------------------------------------------------
    /* Replace the draft (a restored copy, a reviewer starting from a submission); `what` makes it undoable. */
    setDraft(draft, what) {
      if (what) this._record(what);
      this.draft = EventEditor.normalise(draft);
      this.selected = [];
      this.render();
      if (what) this.onChange(Graph.clone(this.draft));
    }

    _changed(focus) {
      this.render(focus);
      this.onChange(Graph.clone(this.draft));
    }

    _event(id) {
      return this.draft.events.find((event) => event.id === id);
    }

    _name(event) {
      const index = this.draft.events.indexOf(event);
      return "'" + (event.label.trim() || "event " + (index + 1)) + "'";
    }

    names() {
      const names = {};
      this.draft.events.forEach((event) => { names[event.id] = this._name(event); });
      return names;
    }

    say(text, isError) {
      if (!this.messageElement) return;
      this.messageElement.textContent = text || "";
      this.messageElement.classList.toggle("is-error", !!isError);
    }

    /* A name or word over the server's limit is refused with its length (a field's maxlength would cut a
     * pasted text short without a word); true when `text` fits. */
    _fits(text, what) {
      if (text.length <= MAX_TEXT) return true;
      this.say("Too long: " + what + " has " + text.length + " characters, at most " + MAX_TEXT + " fit. Shorten it.", true);
      return false;
    }

    addEvent(label, focusPart) {
      label = label.trim();
      if (!label || !this._fits(label, "the event name")) return null;
      this._record("adding '" + label + "'");
      const event = {id: Graph.newEventId(this.draft.events), label: label, sources: [], attributes: [], spans: []};
      const selection = this.player && this.player.selection;
      if (selection) {
        event.spans.push([selection.start, selection.end]);
        this.player.clearSelection();
      }
      this.draft.events.push(event);
      this.say(selection ? "'" + label + "' takes the selection " + seconds(selection.start) + "–" + seconds(selection.end) + " s as its span." : "");
      this._changed({eventId: event.id, part: focusPart || "sources"});
      return event;
    }

    removeEvent(id) {
      const index = this.draft.events.findIndex((event) => event.id === id);
      if (index < 0) return;
      const event = this.draft.events[index];
      const relations = this.draft.relations.filter((r) => r.first === id || r.second === id);
      this._record("removing '" + (event.label || "unnamed") + "'");
      this.draft.events.splice(index, 1);
      this.draft.relations = this.draft.relations.filter((r) => r.first !== id && r.second !== id);
      this.selected = this.selected.filter((selected) => selected !== id);
      this.say("Removed event '" + (event.label || "unnamed") + "'" + (relations.length ? " and its " + relations.length + " relation(s)" : "") + ". Ctrl+Z brings it back.");
      const next = this.draft.events[Math.min(index, this.draft.events.length - 1)];
      this._changed(next ? {eventId: next.id, part: "card"} : {part: "new"});
    }

    moveEvent(id, delta, part) {
      const index = this.draft.events.findIndex((event) => event.id === id);
      const target = index + delta;
      if (index < 0 || target < 0 || target >= this.draft.events.length) return;
      this._record("moving " + this._name(this.draft.events[index]));
      const [event] = this.draft.events.splice(index, 1);
      this.draft.events.splice(target, 0, event);
      this._changed({eventId: id, part: part || "card"});
    }

    addChild(id, kind, text, focusPart) {
      const event = this._event(id);
      text = text.trim();
      if (!event || !text || !this._fits(text, kind === "sources" ? "the source" : "the attribute")) return false;
      if (event[kind].some((existing) => Graph.libraryKey(existing) === Graph.libraryKey(text))) {
        this.say("'" + text + "' is already listed for this event.");
        return false;
      }
      const template = kind === "attributes" ? this.tags.awaitingWord(text) : null;
      if (template) {
        this.say("Type the word for " + BLANK + " in '" + template.tag.template + "' first.", true);
        return false;
      }
      this._record("adding '" + text + "' to " + this._name(event));
      event[kind].push(text);
      let note = "";
      if (kind === "attributes" && !this.tagOf(text)) note = "'" + text + "' is not in the tag library: kept as free text (flagged).";
      if (kind === "sources" && !this.sourceIsListed(text)) note = "'" + text + "' is not in the list of sound sources: kept and flagged.";
      this.say(note);
      this._changed({eventId: id, part: focusPart || kind});
      return true;
    }

    removeChild(id, kind, index) {
      const event = this._event(id);
      if (!event || !event[kind][index]) return;
      this._record("removing '" + event[kind][index] + "' from " + this._name(event));
      event[kind].splice(index, 1);
      this._changed({eventId: id, part: kind});
    }

    setLabel(id, label) {
      const event = this._event(id);
      if (!event) return false;
      if (!this._fits(label, "the event name")) return false;
      this._record("renaming " + this._name(event), "label:" + id);
      event.label = label;
      if (this.relations) this.relations.render();
      this.onChange(Graph.clone(this.draft));
      return true;
    }

    // -- focus ----------------------------------------------------------------------------------
    _describeFocus(element) {
      if (!element) return null;
      if (element === this.newInput) return {part: "new"};
      const card = element.closest && element.closest(".event-card");
      if (!card || !this.root.contains(card)) return null;
      if (element.classList.contains("event-label")) return {eventId: card.dataset.eventId, part: "label"};
      if (element.classList.contains("chip-input")) return {eventId: card.dataset.eventId, part: element.dataset.kind};
      return {eventId: card.dataset.eventId, part: "card"};
    }

    _focus(target) {
      if (!target) return;
      if (target.part === "new") {
        if (this.newInput) this.newInput.focus();
        return;
      }
      const card = this.list.querySelector('.event-card[data-event-id="' + target.eventId + '"]');
      if (!card) return;
      let element = card;
      if (target.part === "label") element = card.querySelector(".event-label");
      if (target.part === "sources" || target.part === "attributes") element = card.querySelector('.chip-input[data-kind="' + target.part + '"]');
      (element || card).focus();
    }

    focusCard(id) {
      this._focus({eventId: id, part: "card"});
    }

    focusNewEvent() {
      if (this.newInput) this.newInput.focus();
    }

    focusedEventId() {
      const card = document.activeElement && document.activeElement.closest && document.activeElement.closest(".event-card");
      return card && this.root.contains(card) ? card.dataset.eventId : null;
    }

    // -- events -----------------------------------------------------------------------------------
    _input(event) {
      const target = event.target;
      if (target.classList.contains("event-label")) {
        const kept = this.setLabel(target.closest(".event-card").dataset.eventId, target.value);
        target.setAttribute("aria-invalid", kept ? "false" : "true"); // the draft keeps the last name that fit
        return;
      }
      if (target.classList.contains("chip-input") || target === this.newInput) this._suggestFor(target);
    }

    _focusout(event) {
      const target = event.target;
      if (!target.classList || !target.classList.contains("chip-input")) return;
      // Leaving a field with typed text keeps it (Tab moves on without losing a word).
      setTimeout(() => {
        if (document.activeElement === target) return;
        // Only this field's list: after an edit re-renders the card, the removed field's focusout may run once
        // the new field has opened its own (keys come before timers on a busy machine) and closed it, so Tab
        // found no list and the word stayed half-typed.
        if (this.suggest.input === target) this.suggest.close();
        if (target.value.trim() && target.isConnected) {
          const card = target.closest(".event-card");
          const text = target.value;
          const where = this._describeFocus(document.activeElement);
          if (this.tags.awaitingWord(text)) return; // the word is still to come
          target.value = "";
          this.addChild(card.dataset.eventId, target.dataset.kind, text);
          if (where) this._focus(where);
        }
      }, 0);
    }

    _click(event) {
      const button = event.target.closest("[data-action]");
      if (!button || !this.root.contains(button)) return;
      if (this.readOnly && button.dataset.action !== "play-span") return;
      const card = button.closest(".event-card");
      const id = card && card.dataset.eventId;
      switch (button.dataset.action) {
        case "remove": this.removeEvent(id); break;
        case "up": this.moveEvent(id, -1); break;
        case "down": this.moveEvent(id, 1); break;
        case "select": this.toggleSelected(id); break;
        case "add-span": this.addSpanFromSelection(id); break;
        case "play-span": {
          const span = this._event(id).spans[Number(button.closest(".chip").dataset.index)];
          if (this.player && span) {
            this.player.setSelection(span[0], span[1], {quiet: true});
            this.player.playRange(span[0], span[1]);
          }
          break;
        }
        case "remove-span": this.removeSpan(id, Number(button.closest(".chip").dataset.index)); break;
        case "join-spans": this.joinSpans(id); break;
        case "remove-chip": this.removeChild(id, button.closest(".chips").dataset.kind, Number(button.closest(".chip").dataset.index)); break;
        default: break;
      }
    }
  }

  /* The parts' methods become EventEditor's own, as if written in this class. */
  for (const Part of [Parts.Spans, Parts.Relations, Parts.Cards, Parts.Suggestions, Parts.Keys]) {
    for (const name of Object.getOwnPropertyNames(Part.prototype)) {
      if (name === "constructor") continue;
      if (Object.prototype.hasOwnProperty.call(EventEditor.prototype, name)) throw new Error("EventEditor." + name + " is defined twice");
      Object.defineProperty(EventEditor.prototype, name, Object.getOwnPropertyDescriptor(Part.prototype, name));
    }
  }

  EventEditor.isTextField = isTextField;
  EventEditor.CATEGORIES = Parts.TagLibrary.CATEGORIES;
  EventEditor.PALETTE = PALETTE;
  return EventEditor;
})();
