/*
 * RelationsPanel: the stated relations of an EventEditor's draft, those the spans propose, and those the chain
 * rule implies (templates/annotation/_relations_panel.html holds the lists).
 *
 * - A stated relation is a focusable row: Delete (or its ✕) removes it, b / a / s change it, f (or "fix")
 *   makes one the time spans contradict what they say (or removes it when they say nothing), Esc goes back
 *   to the events. A relation against the spans is flagged with the reason.
 * - Proposals (relations the spans imply between events not related yet): Enter or "accept" on one, p on the
 *   page takes the first, P all of them.
 * - Implied relations are listed with the chain that implies them, flagged when the spans contradict them.
 */
window.RelationsPanel = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;
  const el = window.AnnotationDom.el;
  const KIND_KEYS = {b: "before", a: "after", s: "simultaneous"};

  function button(text, action, title, index) {
    const node = el("button", "icon-button", text);
    node.type = "button";
    node.tabIndex = -1;
    node.title = title;
    node.setAttribute("aria-label", title);
    node.dataset.action = action;
    node.dataset.index = String(index);
    return node;
  }

  class RelationsPanel {
    constructor(editor, root) {
      this.editor = editor;
      this.root = root;
      this.stated = root.querySelector(".relations-stated");
      this.proposed = root.querySelector(".relations-proposed");
      this.implied = root.querySelector(".relations-implied");
      this.count = root.querySelector(".relations-proposed-count");
      this.root.addEventListener("click", (event) => this._click(event));
      this.root.addEventListener("keydown", (event) => this._keydown(event));
    }

    render() {
      const editor = this.editor;
      const draft = editor.draft;
      const names = editor.names();
      const spans = {};
      draft.events.forEach((event) => { spans[event.id] = event.spans; });
      // Names, spans and relations are all it shows: an edit of sources or attributes leaves it as it is (its
      // proposals and derived relations cost most of an edit at 60 events).
      const key = JSON.stringify([editor.readOnly, draft.relations, draft.events.map((event) => [event.id, names[event.id], event.spans])]);
      if (key === this.renderedKey) return;
      this.renderedKey = key;
      const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest("li[data-list]");
      const keep = focused && this.root.contains(focused) ? {list: focused.dataset.list, index: Number(focused.dataset.index)} : null;
      this.stated.textContent = "";
      draft.relations.forEach((relation, index) => {
        const item = el("li", "relation");
        item.tabIndex = editor.readOnly ? -1 : 0;
        item.dataset.list = "stated";
        item.dataset.index = String(index);
        const text = el("span", "relation-text");
        text.appendChild(el("span", "", names[relation.first] + " "));
        text.appendChild(el("strong", "relation-kind", relation.kind));
        text.appendChild(el("span", "", " " + names[relation.second]));
        item.appendChild(text);
        const conflict = Graph.timeConflict(relation.kind, spans[relation.first], spans[relation.second], [names[relation.first], names[relation.second]]);
        let label = names[relation.first] + " " + relation.kind + " " + names[relation.second];
        if (conflict) label += ", against the time spans";
        if (!editor.readOnly) {
          const tools = el("span", "relation-tools");
          if (conflict) tools.appendChild(button(conflict.implied ? "fix: " + conflict.implied : "fix: remove", "fix-relation", "Fix from the spans (f)", index));
          tools.appendChild(button("✕", "remove-relation", "Remove this relation (Delete)", index));
          item.appendChild(tools);
          item.setAttribute("aria-label", label + ". Delete removes it, b a s change it" + (conflict ? ", f fixes it." : "."));
        }
        if (conflict) {
          item.classList.add("is-against-time");
          item.appendChild(el("span", "relation-flag", "⚠ against the time spans: " + conflict.message));
        }
        this.stated.appendChild(item);
      });
      if (!draft.relations.length) this.stated.appendChild(el("li", "muted", "None yet."));

      if (this.proposed) {
        this.proposed.textContent = "";
        const proposals = editor.readOnly ? [] : editor.proposals();
        proposals.forEach(([first, second, kind], index) => {
          const item = el("li", "relation is-proposed");
          item.tabIndex = 0;
          item.dataset.list = "proposed";
          item.dataset.index = String(index);
          const text = el("span", "relation-text");
          text.appendChild(el("span", "", names[first] + " "));
          text.appendChild(el("strong", "relation-kind", kind));
          text.appendChild(el("span", "", " " + names[second]));
          item.appendChild(text);
          const accept = button("accept", "accept-proposal", "Accept (Enter; p takes the first)", index);
          accept.classList.add("accept");
          item.appendChild(accept);
          item.setAttribute("aria-label", "Proposed from the spans: " + names[first] + " " + kind + " " + names[second] + ". Enter accepts it.");
          this.proposed.appendChild(item);
        });
        const timed = draft.events.filter((event) => event.spans.length).length;
        if (!proposals.length) this.proposed.appendChild(el("li", "muted", timed < 2 ? "None yet: give two events time spans." : "None: the spans imply nothing more."));
        if (this.count) this.count.textContent = proposals.length ? "(" + proposals.length + ", p takes the first)" : "";
      }

      this.implied.textContent = "";
      // Implied as the server derives them: what the spans contradict is left out and shown as such.
      const report = Graph.derive(draft.relations, spans, names);
      const impliedOnly = report.implied.filter((relation) => relation.isImplied);
      impliedOnly.forEach((relation) => this.implied.appendChild(el("li", "relation is-implied", relation.explanation)));
      report.dropped.forEach((relation) => {
        const item = el("li", "relation is-dropped", relation.explanation);
        item.appendChild(el("span", "relation-flag", " — not derived: " + relation.reason));
        this.implied.appendChild(item);
      });
      if (!impliedOnly.length && !report.dropped.length) this.implied.appendChild(el("li", "muted", "None."));
      this._renderForm();
      if (keep) this._focusItem(keep.list, keep.index);
    }

    _renderForm() {
      const form = this.root.querySelector(".relation-form");
      if (!form) return;
      const events = this.editor.draft.events;
      form.querySelectorAll("select[data-role=event]").forEach((select, position) => {
        const previous = select.value;
        select.textContent = "";
        events.forEach((event, index) => {
          const option = el("option", "", (index + 1) + ". " + (event.label || "unnamed"));
          option.value = event.id;
          select.appendChild(option);
        });
        if (previous && events.some((event) => event.id === previous)) select.value = previous;
        else if (events[position]) select.value = events[position].id; // first / second event
      });
      // Never offer an event related to itself while there is another one to pick.
      const [first, second] = form.querySelectorAll("select[data-role=event]");
      if (first && second && first.value === second.value && events.length > 1) {
        second.value = events.find((event) => event.id !== first.value).id;
      }
    }

    /* Focus the row `index` of a list, or the nearest one left, else the events. */
    _focusItem(list, index) {
      const items = Array.from(this.root.querySelectorAll('li[data-list="' + list + '"]'));
      if (items.length) {
        items[Math.min(index, items.length - 1)].focus();
        return;
      }
      const events = this.editor.draft.events;
      if (events.length) this.editor.focusCard(events[0].id);
    }

    _click(event) {
      const target = event.target.closest("[data-action]");
      if (!target || !this.root.contains(target) || this.editor.readOnly) return;
      const index = Number(target.dataset.index);
      switch (target.dataset.action) {
        case "remove-relation": this.editor.removeRelation(index, null); this._focusItem("stated", index); break;
        case "fix-relation": this.editor.fixRelation(index, null); this._focusItem("stated", index); break;
        case "accept-proposal": this._accept(index); break;
        default: break;
      }
    }

    _accept(index) {
      const proposal = this.editor.proposals()[index];
      if (!proposal) return;
      this.editor.addRelation(proposal[0], proposal[1], proposal[2], null, "from the spans");
      this._focusItem("proposed", index);
    }

    _keydown(event) {
      const item = event.target.closest && event.target.closest("li[data-list]");
      if (!item || this.editor.readOnly) return;
      if (this.editor.historyKey(event)) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const index = Number(item.dataset.index);
      const list = item.dataset.list;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const items = Array.from(this.root.querySelectorAll("li[data-list]"));
        const next = items[items.indexOf(item) + (event.key === "ArrowDown" ? 1 : -1)];
        if (next) next.focus();
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        const events = this.editor.draft.events;
        if (events.length) this.editor.focusCard(events[0].id);
        return;
      }
      if (list === "proposed") {
        if (event.key === "Enter") {
          event.preventDefault();
          this._accept(index);
        }
        return;
      }
      if (event.key === "Delete" || event.key === "Backspace") {
        event.preventDefault();
        this.editor.removeRelation(index, null);
        this._focusItem("stated", index);
      } else if (event.key === "f") {
        event.preventDefault();
        this.editor.fixRelation(index, null);
        this._focusItem("stated", index);
      } else if (KIND_KEYS[event.key]) {
        event.preventDefault();
        this.editor.changeRelation(index, KIND_KEYS[event.key], null);
        this._focusItem("stated", index);
      }
    }

    /* e: go to the relations (the first flagged one, else the first stated one). */
    focus() {
      const flagged = this.root.querySelector('li[data-list="stated"].is-against-time');
      const first = flagged || this.root.querySelector('li[data-list="stated"]') || this.root.querySelector('li[data-list="proposed"]');
      if (first) first.focus();
      return !!first;
    }
  }

  return RelationsPanel;
})();
