/*
 * EventEditor: the keyboard-first editor of an AudioCaps-F annotation graph (events with sources and
 * attributes, temporal relations), used by the annotator page and by the reviewer's gold editor.
 *
 *   const editor = new EventEditor({root, relationsRoot, messageElement, draft, library, suggestions,
 *                                   player, onChange});
 *   editor.draft  // the current draft; onChange(draft) after every change
 *
 * Keys (see the page's shortcut list): in "New event" Enter adds the event; in a field Enter adds the
 * typed source / attribute (or moves on when empty), Tab moves, Backspace on an empty field removes the
 * last chip, Esc goes to the event card; on a card Delete removes it (Ctrl+Z brings it back), x selects
 * it, b / a / s relate the two selected events (or the selected one and this one), r takes the time
 * span from the waveform selection, Alt+Up/Down reorders, Up/Down (j/k) move between cards.
 * Attributes complete from the tag library grouped by its nine categories; anything else is kept as
 * free text and flagged. Sources complete from the words already used in the dataset.
 */
window.EventEditor = (function () {
  "use strict";

  const CATEGORIES = ["Duration", "Volume", "Pitch", "Location", "Count", "Distance", "Variation", "Tone", "Other"];
  const MAX_SUGGESTIONS = 40;
  const Graph = window.AnnotationGraph;

  const el = window.AnnotationDom.el;

  function isTextField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable
      || (target.tagName === "INPUT" && !["checkbox", "radio", "button", "range"].includes(target.type)));
  }

  function seconds(value) {
    return value === null || value === undefined ? "" : Number(value).toFixed(2);
  }

  class EventEditor {
    constructor(options) {
      this.root = options.root;
      this.relationsRoot = options.relationsRoot;
      this.messageElement = options.messageElement;
      this.player = options.player || null;
      this.onChange = options.onChange || (() => {});
      this.readOnly = !!options.readOnly;
      this.draft = Graph.clone(options.draft || Graph.emptyDraft());
      this.library = (options.library || []).map((tag) => ({text: tag.text, category: tag.category}));
      this.libraryByKey = new Map(this.library.map((tag) => [Graph.libraryKey(tag.text), tag]));
      const order = new Map(CATEGORIES.map((name, index) => [name, index]));
      this.library.sort((a, b) => (order.get(a.category) - order.get(b.category)) || a.text.localeCompare(b.text));
      this.sourceWords = (options.suggestions && options.suggestions.sources) || [];
      this.eventWords = (options.suggestions && options.suggestions.events) || [];
      this.selected = [];
      this.lastRemoved = null;
      this.root.classList.add("event-editor");
      this.list = el("div", "event-list");
      this.list.setAttribute("role", "list");
      this.root.appendChild(this.list);
      if (!this.readOnly) this._buildNewEvent();
      this.suggest = new window.SuggestBox(this.root);
      this.root.addEventListener("keydown", (event) => this._keydown(event));
      this.root.addEventListener("input", (event) => this._input(event));
      this.root.addEventListener("focusout", (event) => this._focusout(event));
      this.root.addEventListener("click", (event) => this._click(event));
      this.render();
    }

    // -- state changes ------------------------------------------------------------------------
    setDraft(draft) {
      this.draft = Graph.clone(draft);
      this.selected = [];
      this.render();
    }

    _changed(focus) {
      this.render(focus);
      this.onChange(Graph.clone(this.draft));
    }

    _event(id) {
      return this.draft.events.find((event) => event.id === id);
    }

    _names() {
      const names = {};
      this.draft.events.forEach((event, index) => { names[event.id] = "'" + (event.label.trim() || "event " + (index + 1)) + "'"; });
      return names;
    }

    say(text, isError) {
      if (!this.messageElement) return;
      this.messageElement.textContent = text || "";
      this.messageElement.classList.toggle("is-error", !!isError);
    }

    addEvent(label, focusPart) {
      label = label.trim();
      if (!label) return null;
      const event = {id: Graph.newEventId(this.draft.events), label: label, sources: [], attributes: [], onset: null, offset: null};
      this.draft.events.push(event);
      this.say("");
      this._changed({eventId: event.id, part: focusPart || "sources"});
      return event;
    }

    removeEvent(id) {
      const index = this.draft.events.findIndex((event) => event.id === id);
      if (index < 0) return;
      const event = this.draft.events[index];
      const relations = this.draft.relations.filter((r) => r.first === id || r.second === id);
      this.lastRemoved = {event: event, index: index, relations: relations};
      this.draft.events.splice(index, 1);
      this.draft.relations = this.draft.relations.filter((r) => r.first !== id && r.second !== id);
      this.selected = this.selected.filter((selected) => selected !== id);
      this.say("Removed event '" + (event.label || "unnamed") + "'" + (relations.length ? " and its " + relations.length + " relation(s)" : "") + ". Ctrl+Z brings it back.");
      const next = this.draft.events[Math.min(index, this.draft.events.length - 1)];
      this._changed(next ? {eventId: next.id, part: "card"} : {part: "new"});
    }

    undoRemove() {
      if (!this.lastRemoved) return;
      const {event, index, relations} = this.lastRemoved;
      this.lastRemoved = null;
      this.draft.events.splice(Math.min(index, this.draft.events.length), 0, event);
      this.draft.relations.push(...relations);
      this.say("Restored event '" + event.label + "'.");
      this._changed({eventId: event.id, part: "card"});
    }

    moveEvent(id, delta, part) {
      const index = this.draft.events.findIndex((event) => event.id === id);
      const target = index + delta;
      if (index < 0 || target < 0 || target >= this.draft.events.length) return;
      const [event] = this.draft.events.splice(index, 1);
      this.draft.events.splice(target, 0, event);
      this._changed({eventId: id, part: part || "card"});
    }

    addChild(id, kind, text) {
      const event = this._event(id);
      text = text.trim();
      if (!event || !text) return false;
      if (event[kind].some((existing) => Graph.libraryKey(existing) === Graph.libraryKey(text))) {
        this.say("'" + text + "' is already listed for this event.");
        return false;
      }
      event[kind].push(text);
      const free = kind === "attributes" && !this.libraryByKey.has(Graph.libraryKey(text));
      this.say(free ? "'" + text + "' is not in the tag library: kept as free text (flagged)." : "");
      this._changed({eventId: id, part: kind});
      return true;
    }

    removeChild(id, kind, index) {
      const event = this._event(id);
      if (!event) return;
      event[kind].splice(index, 1);
      this._changed({eventId: id, part: kind});
    }

    setTimeFromSelection(id) {
      const event = this._event(id);
      const selection = this.player && this.player.selection;
      if (!event) return;
      if (!selection) {
        this.say("Drag on the waveform to select the event's time span first.", true);
        return;
      }
      event.onset = selection.start;
      event.offset = selection.end;
      this.say("");
      this._changed({eventId: id, part: "card"});
    }

    clearTime(id) {
      const event = this._event(id);
      if (!event) return;
      event.onset = null;
      event.offset = null;
      this._changed({eventId: id, part: "card"});
    }

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
      return this.addRelation(pair[0], pair[1], kind, focusedId);
    }

    addRelation(first, second, kind, focusedId) {
      if (first === second) {
        this.say("An event cannot be related to itself.", true);
        return false;
      }
      const names = this._names();
      const samePair = this.draft.relations.find((r) => (r.first === first && r.second === second) || (r.first === second && r.second === first));
      const candidate = this.draft.relations.concat({first: first, second: second, kind: kind});
      const report = Graph.analyse(candidate, names);
      const problem = report.contradictions.find((c) => c.index === candidate.length - 1) || report.contradictions[0];
      if (problem) {
        // A stated relation is never replaced silently: the annotator removes it first.
        this.say("Refused: " + problem.message + "." + (samePair ? " Remove the stated relation first to change it." : ""), true);
        this.render({eventId: focusedId || second, part: "card"});
        return false;
      }
      this.selected = [];
      if (samePair) {
        this.say("Already stated: " + names[samePair.first] + " " + samePair.kind + " " + names[samePair.second] + ".");
        this.render({eventId: focusedId || second, part: "card"});
        return false;
      }
      this.draft.relations = candidate;
      this.say("Added: " + names[first] + " " + kind + " " + names[second] + ".");
      this._changed({eventId: focusedId || second, part: "card"});
      return true;
    }

    removeRelation(index) {
      this.draft.relations.splice(index, 1);
      this._changed(null);
    }

    // -- rendering ----------------------------------------------------------------------------
    render(focus) {
      const active = document.activeElement;
      if (focus === undefined && active && this.root.contains(active)) focus = this._describeFocus(active);
      this.list.textContent = "";
      if (!this.draft.events.length) {
        this.list.appendChild(el("p", "muted empty-events", this.readOnly ? "No events." : "No events yet: type the first sound event below and press Enter."));
      }
      this.draft.events.forEach((event, index) => this.list.appendChild(this._eventCard(event, index)));
      this._renderRelations();
      if (focus) this._focus(focus);
    }

    _eventCard(event, index) {
      const card = el("div", "event-card");
      card.setAttribute("role", "listitem");
      card.tabIndex = this.readOnly ? -1 : 0;
      card.dataset.eventId = event.id;
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
        label.maxLength = 255;
        head.appendChild(label);
      }
      const time = el("span", "event-time");
      if (event.onset !== null && event.onset !== undefined) {
        time.textContent = seconds(event.onset) + "–" + seconds(event.offset) + " s";
        time.title = "Click to select this span on the waveform";
        time.dataset.action = "select-time";
      } else if (!this.readOnly) {
        time.textContent = "no time";
        time.classList.add("muted");
      }
      head.appendChild(time);
      if (!this.readOnly) {
        const buttons = [
          ["set-time", "time", "Time span from the waveform selection (r)"],
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
      card.appendChild(this._chipRow(event, "sources", "Sources", "add a source (who / what makes it)…"));
      card.appendChild(this._chipRow(event, "attributes", "Attributes", "add an attribute (type for the tag library)…"));
      return card;
    }

    _chipRow(event, kind, title, placeholder) {
      const row = el("div", "event-row");
      row.appendChild(el("span", "row-label", title));
      const chips = el("div", "chips");
      chips.dataset.kind = kind;
      event[kind].forEach((text, index) => {
        const tag = kind === "attributes" ? this.libraryByKey.get(Graph.libraryKey(text)) : null;
        const free = kind === "attributes" && !tag;
        const chip = el("span", "chip" + (free ? " is-free" : ""));
        chip.dataset.index = String(index);
        chip.appendChild(el("span", "chip-text", text));
        if (tag) chip.appendChild(el("small", "chip-category", tag.category));
        if (free) {
          const flag = el("small", "chip-flag", "free text");
          flag.title = "Not in the tag library";
          chip.appendChild(flag);
          chip.title = "'" + text + "' is not in the tag library";
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
        input.maxLength = 255;
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
      this.newInput.maxLength = 255;
      label.htmlFor = this.newInput.id;
      row.appendChild(label);
      row.appendChild(this.newInput);
      this.root.appendChild(row);
    }

    _renderRelations() {
      const root = this.relationsRoot;
      if (!root) return;
      const names = this._names();
      const report = Graph.analyse(this.draft.relations, names);
      const stated = root.querySelector(".relations-stated");
      const implied = root.querySelector(".relations-implied");
      stated.textContent = "";
      implied.textContent = "";
      this.draft.relations.forEach((relation, index) => {
        const item = el("li", "relation");
        item.appendChild(el("span", "", names[relation.first] + " "));
        item.appendChild(el("strong", "relation-kind", relation.kind));
        item.appendChild(el("span", "", " " + names[relation.second]));
        if (!this.readOnly) {
          const remove = el("button", "icon-button", "✕");
          remove.type = "button";
          remove.title = "Remove this relation";
          remove.setAttribute("aria-label", "Remove relation " + (index + 1));
          remove.dataset.action = "remove-relation";
          remove.dataset.index = String(index);
          item.appendChild(remove);
        }
        stated.appendChild(item);
      });
      if (!this.draft.relations.length) stated.appendChild(el("li", "muted", "None yet."));
      const impliedOnly = report.implied.filter((relation) => relation.isImplied);
      impliedOnly.forEach((relation) => {
        const item = el("li", "relation is-implied", relation.explanation);
        implied.appendChild(item);
      });
      if (!impliedOnly.length) implied.appendChild(el("li", "muted", "None."));
      const form = root.querySelector(".relation-form");
      if (form) {
        form.querySelectorAll("select[data-role=event]").forEach((select, position) => {
          const previous = select.value;
          select.textContent = "";
          this.draft.events.forEach((event, index) => {
            const option = el("option", "", (index + 1) + ". " + (event.label || "unnamed"));
            option.value = event.id;
            select.appendChild(option);
          });
          if (previous && this._event(previous)) select.value = previous;
          else if (this.draft.events[position]) select.value = this.draft.events[position].id; // first / second event
        });
        // Never offer an event related to itself while there is another one to pick.
        const [first, second] = form.querySelectorAll("select[data-role=event]");
        if (first && second && first.value === second.value && this.draft.events.length > 1) {
          second.value = this.draft.events.find((event) => event.id !== first.value).id;
        }
      }
    }

    // -- focus ----------------------------------------------------------------------------------
    _describeFocus(element) {
      if (element === this.newInput) return {part: "new"};
      const card = element.closest(".event-card");
      if (!card) return null;
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
        const found = typed.trim() ? window.SuggestBox.matches(this.library, typed, MAX_SUGGESTIONS) : this.library;
        const order = new Map(CATEGORIES.map((name, index) => [name, index]));
        items = found.slice().sort((a, b) => order.get(a.category) - order.get(b.category)).map((tag) => ({text: tag.text, group: tag.category}));
        if (typed.trim() && !this.libraryByKey.has(Graph.libraryKey(typed))) items.push({text: typed.trim(), group: "Free text (not in the library)", note: "Shift+Enter"});
      }
      this.suggest.open(input, items, typed, (item) => this._commit(input, item.text));
    }

    _commit(input, text) {
      this.suggest.close();
      if (input === this.newInput) {
        input.value = "";
        this.addEvent(text);
        return;
      }
      const card = input.closest(".event-card");
      input.value = "";
      this.addChild(card.dataset.eventId, input.dataset.kind, text);
    }

    // -- events -----------------------------------------------------------------------------------
    _input(event) {
      const target = event.target;
      if (target.classList.contains("event-label")) {
        const item = this._event(target.closest(".event-card").dataset.eventId);
        item.label = target.value;
        this._renderRelations();
        this.onChange(Graph.clone(this.draft));
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
        this.suggest.close();
        if (target.value.trim() && target.isConnected) {
          const card = target.closest(".event-card");
          const text = target.value;
          target.value = "";
          const where = this._describeFocus(document.activeElement);
          this.addChild(card.dataset.eventId, target.dataset.kind, text);
          if (where) this._focus(where);
        }
      }, 0);
    }

    _click(event) {
      const button = event.target.closest("[data-action]");
      if (!button || this.readOnly && button.dataset.action !== "select-time") return;
      const card = button.closest(".event-card");
      const id = card && card.dataset.eventId;
      switch (button.dataset.action) {
        case "remove": this.removeEvent(id); break;
        case "up": this.moveEvent(id, -1); break;
        case "down": this.moveEvent(id, 1); break;
        case "select": this.toggleSelected(id); break;
        case "set-time": this.setTimeFromSelection(id); break;
        case "select-time": {
          const item = this._event(id);
          if (this.player && item) this.player.setSelection(item.onset, item.offset);
          break;
        }
        case "remove-chip": this.removeChild(id, button.closest(".chips").dataset.kind, Number(button.closest(".chip").dataset.index)); break;
        case "remove-relation": this.removeRelation(Number(button.dataset.index)); break;
        default: break;
      }
    }

    _keydown(event) {
      if (this.readOnly) return;
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
      const suggestion = this.suggest.input === input ? this.suggest.current() : null;
      switch (event.key) {
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
          this._commit(input, event.shiftKey || !suggestion ? typed : suggestion.text);
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
      if (event.ctrlKey || event.metaKey) {
        if (event.key.toLowerCase() === "z") {
          event.preventDefault();
          this.undoRemove();
        }
        return;
      }
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
        case "r": event.preventDefault(); this.setTimeFromSelection(id); break;
        case "R": event.preventDefault(); this.clearTime(id); break;
        default: break;
      }
    }
  }

  EventEditor.isTextField = isTextField;
  EventEditor.CATEGORIES = CATEGORIES;
  return EventEditor;
})();
