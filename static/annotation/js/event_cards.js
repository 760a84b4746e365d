/*
 * The event editor's rendering: one card per event (name, time spans, sources, attributes with their flags),
 * rebuilt only when its content changed, and the "New event" field. Methods of EventEditor (event_editor.js).
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.Cards = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;
  const el = window.AnnotationDom.el;
  const {PALETTE, seconds} = window.EventEditorParts.common;

  /* A button the editor's click handler acts on by its data-action; out of the Tab order (the keys reach the
   * same actions), with a tooltip `title` and / or a screen-reader `label`. */
  function actionButton(className, text, action, {title, label}) {
    const button = el("button", className, text);
    button.type = "button";
    button.tabIndex = -1;
    if (title) button.title = title;
    if (label) button.setAttribute("aria-label", label);
    button.dataset.action = action;
    return button;
  }

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

  class EventCards {
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
          head.appendChild(actionButton("icon-button", symbol, action, {title: title, label: title}));
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
        chip.appendChild(actionButton("span-text", seconds(onset) + "–" + seconds(offset) + " s", "play-span", {title: "Select and play this span"}));
        const flag = overlapping.get(index);
        if (flag) {
          // The checks' rule (annotation_checks.overlapping_occurrences): submitting and publishing refuse it.
          chip.classList.add("is-clash", "is-overlapping");
          chip.title = flag;
          if (!this.readOnly) {
            chip.appendChild(actionButton("span-join", "join", "join-spans", {title: "Join the occurrences that overlap or touch into one span"}));
          }
        }
        if (!this.readOnly) {
          chip.appendChild(actionButton("chip-remove", "×", "remove-span", {label: "Remove the span " + seconds(onset) + "–" + seconds(offset) + " s"}));
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
          chip.appendChild(actionButton("chip-remove", "×", "remove-chip", {label: "Remove " + text}));
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
  }

  return EventCards;
})();
