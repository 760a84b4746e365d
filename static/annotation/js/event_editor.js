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
 */
window.EventEditor = (function () {
  "use strict";

  const CATEGORIES = ["Duration", "Volume", "Pitch", "Location", "Count", "Distance", "Variation", "Tone", "Other"];
  const MAX_SUGGESTIONS = 40;
  const HISTORY_LIMIT = 200;
  const COALESCE_MS = 1500;
  const BLANK = "___";
  const MAX_TEXT = 255; // the server's limit on a name, source or attribute (annotation_drafts.MAX_TEXT)
  // One colour per event, as its spans are drawn on the timeline.
  const PALETTE = ["#2f6db5", "#e08a1e", "#3a9a5b", "#c0392b", "#7e57c2", "#8d6e63", "#d81b60", "#00838f", "#9e9d24", "#546e7a"];
  const Graph = window.AnnotationGraph;
  const el = window.AnnotationDom.el;

  /* index -> why, for each span that overlaps or touches the one before it (spans sorted by onset): the rule
   * of the server's checks (annotation_checks.overlapping_occurrences), which refuse them at submit. */
  function overlappingOccurrences(spans) {
    const flagged = new Map();
    for (let index = 1; index < spans.length; index++) {
      const [firstOnset, firstOffset] = spans[index - 1];
      const [onset, offset] = spans[index];
      if (onset > firstOffset) continue;
      const why = "Occurrences " + seconds(firstOnset) + "–" + seconds(firstOffset) + " s and " + seconds(onset) + "–" + seconds(offset) + " s overlap or touch, so they are one occurrence: join them (the join button) or move them apart. Submitting refuses them.";
      flagged.set(index - 1, why);
      flagged.set(index, why);
    }
    return flagged;
  }

  function isTextField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable
      || (target.tagName === "INPUT" && !["checkbox", "radio", "button", "range"].includes(target.type)));
  }

  function seconds(value) {
    return Number(value).toFixed(2);
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  /* Plural readings of the last word, as annotation/vocabulary.py reads them ("puppies" -> "puppy"). */
  function singulars(key) {
    const cut = key.lastIndexOf(" ");
    const prefix = cut >= 0 ? key.slice(0, cut + 1) : "";
    const last = key.slice(cut + 1);
    const forms = [];
    if (last.endsWith("ies") && last.length > 4) forms.push(prefix + last.slice(0, -3) + "y");
    if (last.endsWith("es") && last.length > 3) forms.push(prefix + last.slice(0, -2));
    if (last.endsWith("s") && last.length > 2) forms.push(prefix + last.slice(0, -1));
    return forms;
  }

  class EventEditor {
    constructor(options) {
      this.root = options.root;
      this.relationsRoot = options.relationsRoot;
      this.messageElement = options.messageElement;
      this.player = options.player || null;
      this.onChange = options.onChange || (() => {});
      this.readOnly = !!options.readOnly;
      this.draft = EventEditor.normalise(options.draft || Graph.emptyDraft());
      this._buildLibrary(options.library || [], (options.suggestions && options.suggestions.attributes) || []);
      this.sourceKeys = new Set((options.soundSources || []).map((text) => Graph.libraryKey(text)));
      this.sourceWords = (options.suggestions && options.suggestions.sources) || [];
      this.eventWords = (options.suggestions && options.suggestions.events) || [];
      this.support = null; // review: {eventId: {sources: {key: "2/3"}, attributes: {...}}}
      this.selected = [];
      this.undoStack = [];
      this.redoStack = [];
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

    /* The tag library in category order (shown when the field is empty), and `libraryByUse`, the order the
     * typed text is searched in: the attributes annotators used, most used first (`used`: library tags,
     * filled-in templates such as "into a microphone", free text two annotations used), then the other tags,
     * shortest first. */
    _buildLibrary(library, used) {
      const order = new Map(CATEGORIES.map((name, index) => [name, index]));
      this.library = library.map((tag) => ({
        text: tag.template || tag.text, tag: tag.text, category: tag.category, template: tag.template || "", origin: tag.origin,
        synonym_group: tag.synonym_group, antonym_groups: tag.antonym_groups || [],
      }));
      this.library.sort((a, b) => (order.get(a.category) - order.get(b.category)) || a.text.localeCompare(b.text));
      this.libraryByKey = new Map(this.library.map((tag) => [Graph.libraryKey(tag.tag), tag]));
      this.templates = this.library.filter((tag) => tag.template).map((tag) => {
        const [before, after] = Graph.libraryKey(tag.template).split(BLANK);
        return {tag: tag, prefix: before, pattern: new RegExp("^" + escapeRegExp(before) + "\\S.*" + escapeRegExp(after || "") + "$")};
      });
      const byUse = [];
      const listed = new Set();
      for (const text of used) {
        const tag = this.tagOf(text);
        if (tag && !tag.template) {
          if (!listed.has(tag)) byUse.push(tag);
          listed.add(tag);
        } else {
          // A filled-in template belongs to its tag's category; free text is offered apart, and still flagged.
          byUse.push({text: text, tag: text, category: tag ? tag.category : null, template: "", origin: tag ? tag.origin : "used"});
        }
      }
      const rest = this.library.filter((tag) => !listed.has(tag));
      rest.sort((a, b) => (a.text.length - b.text.length) || a.text.localeCompare(b.text));
      this.libraryByUse = byUse.concat(rest);
    }

    /* The library tag of an attribute (by its text, or the template it fills in), as annotation/vocabulary.py. */
    tagOf(text) {
      const key = Graph.libraryKey(text);
      if (!key) return null;
      if (this.libraryByKey.has(key)) return this.libraryByKey.get(key);
      const template = this.templates.find((entry) => entry.pattern.test(key));
      return template ? template.tag : null;
    }

    /* What clashes with attribute `index` of `attributes` (an earlier one the tag library calls its opposite, or
     * another count), as annotation/tag_library.tag_conflict has it: {text, kind} or null. */
    attributeClash(attributes, index) {
      const tag = this.tagOf(attributes[index]);
      if (!tag || tag.synonym_group === undefined) return null;
      for (const text of attributes.slice(0, index)) {
        const other = this.tagOf(text);
        if (!other || other.category !== tag.category || other.synonym_group === tag.synonym_group) continue;
        if (tag.category === "Count") return {text: text, kind: "count"};
        if ((tag.antonym_groups || []).includes(other.synonym_group) || (other.antonym_groups || []).includes(tag.synonym_group)) return {text: text, kind: "antonym"};
      }
      return null;
    }

    sourceIsListed(text) {
      const key = Graph.libraryKey(text);
      if (!key) return false;
      return this.sourceKeys.has(key) || this.sourceKeys.has(key + "s") || singulars(key).some((form) => this.sourceKeys.has(form));
    }

    // -- history: every edit can be undone -------------------------------------------------------------
    /* Call before changing the draft; consecutive edits with the same `coalesce` key (typing a name, moving a
     * span with the arrows) are one step. */
    _record(what, coalesce) {
      const last = this.undoStack[this.undoStack.length - 1];
      const now = Date.now();
      if (coalesce && last && last.coalesce === coalesce && now - last.at < COALESCE_MS) {
        last.at = now;
        return;
      }
      this.undoStack.push({draft: Graph.clone(this.draft), what: what, coalesce: coalesce || null, at: now});
      if (this.undoStack.length > HISTORY_LIMIT) this.undoStack.shift();
      this.redoStack = [];
    }

    undo() {
      const entry = this.undoStack.pop();
      if (!entry) {
        this.say("Nothing to undo.");
        return false;
      }
      this.redoStack.push({draft: Graph.clone(this.draft), what: entry.what});
      this.draft = entry.draft;
      this.selected = this.selected.filter((id) => this._event(id));
      this.say("Undone: " + entry.what + ". Ctrl+Shift+Z redoes it.");
      this._changed(this._keptFocus());
      return true;
    }

    redo() {
      const entry = this.redoStack.pop();
      if (!entry) {
        this.say("Nothing to redo.");
        return false;
      }
      this.undoStack.push({draft: Graph.clone(this.draft), what: entry.what, coalesce: null, at: Date.now()});
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
      const template = kind === "attributes" ? this.templates.find((entry) => Graph.libraryKey(text) === entry.prefix.trim()) : null;
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

    // -- spans (occurrences) ----------------------------------------------------------------------------
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

    // -- relations -----------------------------------------------------------------------------------
    toggleSelected(id) {
      if (this.selected.includes(id)) this.selected = this.selected.filter((selected) => selected !== id);
      else this.selected = this.selected.concat(id).slice(-2);
      this.render({eventId: id, part: "card"});
    }

    /* Relate the two selected events (in the order selected), or the selected one and `focusedId`. */
    relateSelected(kind, focusedId) {
      let pair = null;
      if (this.selected.length === 2) pair = this.selected;
      else if (this.selected.length === 1 && focusedId && focusedId !== this.selected[0]) pair = [this.selected[0], focusedId];
      if (!pair) {
        this.say("Select two events first: x on the first, x on the second (or x on one, then go to the other), then b, a or s.", true);
        return false;
      }
      return this.addRelation(pair[0], pair[1], kind, {eventId: focusedId || pair[1], part: "card"});
    }

    /* Add a relation unless it contradicts the others (then the message says which chain). A pair already
     * related is changed only through changeRelation (b / a / s on the stated relation). */
    addRelation(first, second, kind, focus, origin) {
      if (first === second) {
        this.say("An event cannot be related to itself.", true);
        return false;
      }
      const names = this.names();
      const samePair = this.draft.relations.findIndex((r) => (r.first === first && r.second === second) || (r.first === second && r.second === first));
      if (samePair >= 0) {
        const stated = this.draft.relations[samePair];
        this.selected = [];
        const already = stated.first === first ? stated.kind : Graph.INVERSE[stated.kind];
        this.say(already === kind
          ? "Already stated: " + names[stated.first] + " " + stated.kind + " " + names[stated.second] + "."
          : "Refused: " + names[first] + " " + kind + " " + names[second] + " contradicts the stated " + names[stated.first] + " " + stated.kind + " " + names[stated.second] + ". Change that one (b / a / s on it in Relations) or remove it (Delete).", already !== kind);
        this.render(focus);
        return false;
      }
      const candidate = this.draft.relations.concat({first: first, second: second, kind: kind});
      const report = Graph.derive(candidate, this._spansById(), names);
      const problem = report.contradictions.find((c) => c.index === candidate.length - 1);
      if (problem) {
        this.say("Refused: " + problem.message + ".", true);
        this.render(focus);
        return false;
      }
      this._record("relating " + names[first] + " " + kind + " " + names[second]);
      this.selected = [];
      this.draft.relations = candidate;
      const conflict = Graph.timeConflict(kind, this._event(first).spans, this._event(second).spans, [names[first], names[second]]);
      this.say((origin ? "Added " + origin + ": " : "Added: ") + names[first] + " " + kind + " " + names[second] + "." + (conflict ? " It contradicts the time spans (" + conflict.message + "): f on it fixes it." : ""), !!conflict);
      this._changed(focus === undefined ? null : focus);
      return true;
    }

    /* {event id: spans}: what Graph.derive checks implied relations against. */
    _spansById() {
      return Object.fromEntries(this.draft.events.map((event) => [event.id, event.spans]));
    }

    removeRelation(index, focus) {
      const relation = this.draft.relations[index];
      if (!relation) return;
      const names = this.names();
      this._record("removing " + names[relation.first] + " " + relation.kind + " " + names[relation.second]);
      this.draft.relations.splice(index, 1);
      this.say("Removed the relation " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + ". Ctrl+Z brings it back.");
      this._changed(focus === undefined ? null : focus);
    }

    /* Change a stated relation's kind (b / a / s on it), refused when that contradicts the others. */
    changeRelation(index, kind, focus, reason) {
      const relation = this.draft.relations[index];
      if (!relation || relation.kind === kind) return false;
      const names = this.names();
      const candidate = this.draft.relations.map((r, position) => (position === index ? {first: r.first, second: r.second, kind: kind} : r));
      const moved = candidate.splice(index, 1)[0];
      candidate.push(moved); // checked last, so a contradiction names this relation
      const problem = Graph.derive(candidate, this._spansById(), names).contradictions.find((c) => c.index === candidate.length - 1);
      if (problem) {
        this.say("Refused: " + problem.message + ".", true);
        this.render(focus);
        return false;
      }
      this._record("changing " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + " to " + kind);
      this.draft.relations[index] = {first: relation.first, second: relation.second, kind: kind};
      this.say((reason || "Changed") + ": " + names[relation.first] + " " + kind + " " + names[relation.second] + ".");
      this._changed(focus === undefined ? null : focus);
      return true;
    }

    /* f: make a relation the spans contradict what the spans say, or remove it when they say nothing. */
    fixRelation(index, focus) {
      const relation = this.draft.relations[index];
      if (!relation) return false;
      const names = this.names();
      const conflict = Graph.timeConflict(relation.kind, this._event(relation.first).spans, this._event(relation.second).spans, [names[relation.first], names[relation.second]]);
      if (!conflict) {
        this.say("This relation agrees with the time spans.");
        return false;
      }
      if (conflict.implied) return this.changeRelation(index, conflict.implied, focus, "Fixed from the spans");
      this.removeRelation(index, focus);
      this.say("Removed " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + ": " + conflict.message + ", and they imply no relation. Ctrl+Z brings it back.");
      return true;
    }

    /* The relations the spans imply between events not related yet: [[first, second, kind]]. */
    proposals() {
      const timed = this.draft.events.map((event) => [event.id, event.spans]);
      const key = JSON.stringify([timed, this.draft.relations]);
      if (!this._proposals || this._proposals.key !== key) {
        this._proposals = {key: key, list: Graph.timeProposals(timed, this.draft.relations)};
      }
      return this._proposals.list.slice();
    }

    /* p: take the first proposal (P: all of them). */
    acceptProposal(all) {
      const proposals = this.proposals();
      if (!proposals.length) {
        this.say("No relation to propose: give events their time spans first.");
        return 0;
      }
      let taken = 0;
      for (const [first, second, kind] of all ? proposals : proposals.slice(0, 1)) {
        if (this.addRelation(first, second, kind, null, "from the spans")) taken += 1;
      }
      if (all) this.say("Added " + taken + " relation(s) from the spans.");
      return taken;
    }

    // -- rendering ----------------------------------------------------------------------------
    render(focus) {
      const active = document.activeElement;
      if (focus === undefined && active && this.root.contains(active)) focus = this._describeFocus(active);
      const nodes = [];
      if (!this.draft.events.length) {
        nodes.push(el("p", "muted empty-events", this.readOnly ? "No events." : "No events yet: type the first sound event below and press Enter."));
      }
      // Only the cards whose content changed are rebuilt: at 60 events rebuilding all of them made an edit
      // take most of a second on a busy machine.
      const cards = new Map();
      const duration = this.player ? this.player.duration : 0;
      const count = this.draft.events.length;
      this.draft.events.forEach((event, index) => {
        const support = this.support ? this.support[event.id] || null : null;
        const key = JSON.stringify([event, index, count, this.selected.includes(event.id), support, this.readOnly, duration]);
        const cached = this._cards && this._cards.get(event.id);
        const card = cached && cached.key === key ? cached.card : this._eventCard(event, index);
        cards.set(event.id, {key: key, card: card});
        nodes.push(card);
      });
      this._cards = cards;
      this._place(nodes);
      if (this.relations) this.relations.render();
      if (this.noteElement && this.noteElement.value !== this.draft.note) this.noteElement.value = this.draft.note;
      if (focus) this._focus(focus);
    }

    /* Put `nodes` in the list in order, touching only what changed: a rebuilt card takes its old card's place
     * (inserting it before would move every later card, and moving a card costs as much as a new one: most
     * of an edit at 60 events), cards no longer wanted are removed, the others stay. */
    _place(nodes) {
      const wanted = new Set(nodes);
      nodes.forEach((node, index) => {
        const current = this.list.children[index];
        if (current === node) return;
        if (current && !wanted.has(current)) this.list.replaceChild(node, current);
        else this.list.insertBefore(node, current || null);
      });
      while (this.list.children.length > nodes.length) this.list.lastElementChild.remove();
    }

    _eventCard(event, index) {
      const card = el("div", "event-card");
      card.setAttribute("role", "listitem");
      card.tabIndex = this.readOnly ? -1 : 0;
      card.dataset.eventId = event.id;
      card.style.setProperty("--event-color", PALETTE[index % PALETTE.length]);
      if (this.selected.includes(event.id)) card.classList.add("is-selected");
      card.setAttribute("aria-label", "Event " + (index + 1) + ": " + (event.label || "unnamed") + (this.selected.includes(event.id) ? " (selected)" : ""));
      const head = el("div", "event-head");
      head.appendChild(el("span", "event-number", String(index + 1)));
      if (this.readOnly) head.appendChild(el("strong", "event-label-text", event.label || "(unnamed)"));
      else {
        const label = el("input", "event-label");
        label.type = "text";
        label.value = event.label;
        label.placeholder = "sound event, e.g. barking";
        label.setAttribute("aria-label", "Event " + (index + 1) + " name");
        head.appendChild(label);
      }
      if (!this.readOnly) {
        const buttons = [
          ["add-span", "+ time", "Add the waveform selection as a span (r)"],
          ["select", this.selected.includes(event.id) ? "☑" : "☐", "Select for a relation (x)"],
          ["up", "↑", "Move up (Alt+↑)"],
          ["down", "↓", "Move down (Alt+↓)"],
          ["remove", "✕", "Remove the event (Delete on the card)"],
        ];
        for (const [action, symbol, title] of buttons) {
          const button = el("button", "icon-button", symbol);
          button.type = "button";
          button.tabIndex = -1;
          button.title = title;
          button.setAttribute("aria-label", title);
          button.dataset.action = action;
          head.appendChild(button);
        }
      }
      card.appendChild(head);
      card.appendChild(this._spanRow(event));
      card.appendChild(this._chipRow(event, "sources", "Sources", "add a source (who / what makes it)…"));
      card.appendChild(this._chipRow(event, "attributes", "Attributes", "add an attribute (type for the tag library)…"));
      return card;
    }

    _spanRow(event) {
      const row = el("div", "event-row");
      row.appendChild(el("span", "row-label", "Time"));
      const chips = el("div", "chips spans");
      if (!event.spans.length) chips.appendChild(el("span", "muted small", this.readOnly ? "—" : "no time: drag on the waveform, then r"));
      const overlapping = overlappingOccurrences(event.spans);
      event.spans.forEach(([onset, offset], index) => {
        const chip = el("span", "chip span-chip");
        chip.dataset.index = String(index);
        const text = el("button", "span-text", seconds(onset) + "–" + seconds(offset) + " s");
        text.type = "button";
        text.tabIndex = -1;
        text.title = "Select and play this span";
        text.dataset.action = "play-span";
        chip.appendChild(text);
        const flag = overlapping.get(index);
        if (flag) {
          // The checks' rule (annotation_checks.overlapping_occurrences): submitting and publishing refuse it.
          chip.classList.add("is-clash", "is-overlapping");
          chip.title = flag;
          if (!this.readOnly) {
            const join = el("button", "span-join", "join");
            join.type = "button";
            join.tabIndex = -1;
            join.title = "Join the occurrences that overlap or touch into one span";
            join.dataset.action = "join-spans";
            chip.appendChild(join);
          }
        }
        if (!this.readOnly) {
          const remove = el("button", "chip-remove", "×");
          remove.type = "button";
          remove.tabIndex = -1;
          remove.setAttribute("aria-label", "Remove the span " + seconds(onset) + "–" + seconds(offset) + " s");
          remove.dataset.action = "remove-span";
          chip.appendChild(remove);
        }
        chips.appendChild(chip);
      });
      row.appendChild(chips);
      return row;
    }

    _chipRow(event, kind, title, placeholder) {
      const row = el("div", "event-row");
      row.appendChild(el("span", "row-label", title));
      const chips = el("div", "chips");
      chips.dataset.kind = kind;
      const support = this.support && this.support[event.id] && this.support[event.id][kind];
      event[kind].forEach((text, index) => {
        const tag = kind === "attributes" ? this.tagOf(text) : null;
        const free = kind === "attributes" ? !tag : !this.sourceIsListed(text);
        const chip = el("span", "chip" + (free ? " is-free" : ""));
        chip.dataset.index = String(index);
        chip.appendChild(el("span", "chip-text", text));
        if (tag) chip.appendChild(el("small", "chip-category", tag.category));
        if (free) {
          const flag = el("small", "chip-flag", kind === "attributes" ? "free text" : "new source");
          flag.title = kind === "attributes" ? "Not in the tag library" : "Not in the list of sound sources";
          chip.appendChild(flag);
          chip.title = "'" + text + "' is " + flag.title.toLowerCase();
        }
        const clash = kind === "attributes" ? this.attributeClash(event[kind], index) : null;
        if (clash) {
          chip.classList.add("is-clash");
          const what = clash.kind === "count" ? "another count than" : "the opposite of";
          chip.appendChild(el("small", "chip-flag", "clashes"));
          chip.title = "'" + text + "' is " + what + " '" + clash.text + "' (tag library): keep the one that is right.";
        }
        const given = support && support[Graph.libraryKey(text)];
        if (given) {
          const badge = el("small", "chip-support", given);
          badge.title = "Given by " + given.replace("/", " of ") + " annotators";
          chip.appendChild(badge);
        }
        if (!this.readOnly) {
          const remove = el("button", "chip-remove", "×");
          remove.type = "button";
          remove.tabIndex = -1;
          remove.setAttribute("aria-label", "Remove " + text);
          remove.dataset.action = "remove-chip";
          chip.appendChild(remove);
        }
        chips.appendChild(chip);
      });
      if (!this.readOnly) {
        const input = el("input", "chip-input");
        input.type = "text";
        input.placeholder = placeholder;
        input.dataset.kind = kind;
        input.setAttribute("aria-label", title + " of event " + (event.label || event.id));
        input.setAttribute("autocomplete", "off");
        chips.appendChild(input);
      } else if (!event[kind].length) {
        chips.appendChild(el("span", "muted", "—"));
      }
      row.appendChild(chips);
      return row;
    }

    _buildNewEvent() {
      const row = el("div", "new-event");
      const label = el("label", "new-event-label", "New event");
      this.newInput = el("input", "new-event-input");
      this.newInput.type = "text";
      this.newInput.id = this.root.id + "-new-event";
      this.newInput.placeholder = "type a sound event you hear (e.g. barking) and press Enter";
      this.newInput.setAttribute("autocomplete", "off");
      label.htmlFor = this.newInput.id;
      row.appendChild(label);
      row.appendChild(this.newInput);
      this.root.appendChild(row);
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

    // -- suggestions -----------------------------------------------------------------------------
    _suggestFor(input) {
      const typed = input.value;
      let items;
      if (input === this.newInput) {
        items = window.SuggestBox.matches(this.eventWords, typed, MAX_SUGGESTIONS).map((text) => ({text: text}));
        if (!typed.trim()) items = [];
      } else if (input.dataset.kind === "sources") {
        items = window.SuggestBox.matches(this.sourceWords, typed, MAX_SUGGESTIONS).map((text) => ({text: text}));
        if (!typed.trim()) items = items.slice(0, 12);
      } else {
        const filled = this.tagOf(typed);
        items = typed.trim() ? this._rankedTags(typed) : this.library.map((tag) => this._tagItem(tag));
        if (filled && filled.template) items.unshift({text: typed.trim(), group: filled.category, note: filled.template});
        if (typed.trim() && !filled) items.push({text: typed.trim(), group: "Free text (not in the library)", note: "Shift+Enter"});
      }
      this.suggest.open(input, items, typed, (item) => this._commit(input, item));
    }

    _tagItem(tag) {
      if (!tag.category) return {text: tag.text, group: "Used before, not in the library", note: "free text (flagged)"};
      return {text: tag.text, group: tag.category + (tag.origin === "product" ? " (this product's tags)" : ""), template: tag.template, note: tag.template ? "type the word" : ""};
    }

    /* The tags the typed text starts (or one of their words), most used first, shown under their categories:
     * the category of the best match comes first, so the highlighted first item is the most likely tag. */
    _rankedTags(typed) {
      const items = window.SuggestBox.matches(this.libraryByUse, typed, MAX_SUGGESTIONS).map((tag) => this._tagItem(tag));
      const groupRank = new Map();
      items.forEach((item, index) => { if (!groupRank.has(item.group)) groupRank.set(item.group, index); });
      return items.map((item, index) => [groupRank.get(item.group), index, item])
        .sort((a, b) => a[0] - b[0] || a[1] - b[1])
        .map((entry) => entry[2]);
    }

    _commit(input, item, moveOn) {
      this.suggest.close();
      const text = typeof item === "string" ? item : item.text;
      if (item && item.template && text === item.template) {
        // A template: put its words before the blank in the field and ask for the word.
        input.value = item.template.split(BLANK)[0];
        input.focus();
        this.say("Type the word for " + BLANK + " (" + item.template + ") and press Enter.");
        this._suggestFor(input);
        return;
      }
      if (input === this.newInput) {
        const typed = input.value;
        input.value = "";
        if (!this.addEvent(text)) input.value = typed; // refused (too long): the text stays to be shortened
        return;
      }
      const card = input.closest(".event-card");
      const before = input.value;
      input.value = "";
      const next = moveOn && input.dataset.kind === "sources" ? "attributes" : input.dataset.kind;
      if (!this.addChild(card.dataset.eventId, input.dataset.kind, text, next)) {
        const field = this.list.querySelector('.event-card[data-event-id="' + card.dataset.eventId + '"] .chip-input[data-kind="' + input.dataset.kind + '"]');
        if (field) {
          field.value = before;
          field.focus();
        }
      }
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
          if (this.templates.some((entry) => Graph.libraryKey(text) === entry.prefix.trim())) return; // the word is still to come
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

    /* Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y; true when handled. Typing in a field with text keeps the field's own undo. */
    historyKey(event) {
      if (!(event.ctrlKey || event.metaKey) || event.altKey) return false;
      const key = event.key.toLowerCase();
      if (key !== "z" && key !== "y") return false;
      if (isTextField(event.target) && event.target.value) return false;
      event.preventDefault();
      if (key === "y" || event.shiftKey) this.redo();
      else this.undo();
      return true;
    }

    _keydown(event) {
      if (this.readOnly) return;
      if (this.historyKey(event)) return;
      const target = event.target;
      const card = target.closest && target.closest(".event-card");
      const id = card && card.dataset.eventId;
      if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && id) {
        event.preventDefault();
        this.moveEvent(id, event.key === "ArrowUp" ? -1 : 1, (this._describeFocus(target) || {}).part);
        return;
      }
      if (target === this.newInput || target.classList.contains("chip-input")) return this._fieldKey(event, target, id);
      if (target.classList.contains("event-label")) {
        if (event.key === "Enter") {
          event.preventDefault();
          this._focus({eventId: id, part: "sources"});
        } else if (event.key === "Escape") {
          event.preventDefault();
          card.focus();
        }
        return;
      }
      if (target === card) this._cardKey(event, id);
    }

    _fieldKey(event, input, id) {
      if (event.ctrlKey || event.metaKey) return; // Ctrl+Enter submits, Ctrl+S saves: the page's keys
      const suggestion = this.suggest.input === input ? this.suggest.current() : null;
      switch (event.key) {
        case "Tab": {
          // Tab takes the highlighted (or chosen) item at once and moves on: from the name to the sources, from
          // a source to the attributes (one source is the rule: 96% of AudioCaps-F's events have one), an
          // attribute stays for the next. With nothing to take, Tab moves on as usual (typed text is kept).
          if (event.shiftKey || this.suggest.input !== input || !this.suggest.choose()) return;
          event.preventDefault();
          this._commit(input, this.suggest.current(), true);
          return;
        }
        case "ArrowDown":
        case "ArrowUp":
          event.preventDefault();
          if (!this.suggest.isOpen || this.suggest.input !== input) this._suggestFor(input);
          else this.suggest.move(event.key === "ArrowDown" ? 1 : -1);
          return;
        case "Enter": {
          event.preventDefault();
          const typed = input.value.trim();
          if (!typed && !suggestion) {
            this.suggest.close();
            if (input === this.newInput) return;
            if (input.dataset.kind === "sources") this._focus({eventId: id, part: "attributes"});
            else this._focus({part: "new"});
            return;
          }
          this._commit(input, event.shiftKey || !suggestion ? typed : suggestion);
          return;
        }
        case "Escape":
          event.preventDefault();
          if (this.suggest.isOpen) this.suggest.close();
          else if (id) this.list.querySelector('.event-card[data-event-id="' + id + '"]').focus();
          else if (input === this.newInput && this.draft.events.length) this._focus({eventId: this.draft.events[this.draft.events.length - 1].id, part: "card"});
          return;
        case "Backspace":
          if (!input.value && id) {
            const item = this._event(id);
            const kind = input.dataset.kind;
            if (item[kind].length) {
              event.preventDefault();
              this.removeChild(id, kind, item[kind].length - 1);
            }
          }
          return;
        default:
          return;
      }
    }

    _cardKey(event, id) {
      if (event.ctrlKey || event.metaKey) return;
      const ids = this.draft.events.map((item) => item.id);
      const index = ids.indexOf(id);
      switch (event.key) {
        case "Enter": event.preventDefault(); this._focus({eventId: id, part: "label"}); break;
        case "Delete":
        case "Backspace": event.preventDefault(); this.removeEvent(id); break;
        case "ArrowUp": case "k": event.preventDefault(); if (index > 0) this._focus({eventId: ids[index - 1], part: "card"}); break;
        case "ArrowDown": case "j": event.preventDefault(); if (index < ids.length - 1) this._focus({eventId: ids[index + 1], part: "card"}); else this.focusNewEvent(); break;
        case "x": event.preventDefault(); this.toggleSelected(id); break;
        case "b": event.preventDefault(); this.relateSelected("before", id); break;
        case "a": event.preventDefault(); this.relateSelected("after", id); break;
        case "s": event.preventDefault(); this.relateSelected("simultaneous", id); break;
        case "r": event.preventDefault(); this.addSpanFromSelection(id); break;
        case "R": event.preventDefault(); this.clearSpans(id); break;
        case "t": event.preventDefault(); if (this.player && this.player.lane && !this.player.lane.focusFirstOf(id)) this.say("This event has no span yet."); break;
        default: break;
      }
    }
  }

  EventEditor.isTextField = isTextField;
  EventEditor.CATEGORIES = CATEGORIES;
  EventEditor.PALETTE = PALETTE;
  return EventEditor;
})();
