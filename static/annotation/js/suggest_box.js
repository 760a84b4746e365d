/*
 * SuggestBox: the completion list under an editor field (events, sources, attributes grouped by category).
 * Arrow keys move the highlight, a click picks; the first item is highlighted when the typed text starts it,
 * but only an item chosen (arrow keys, Tab) counts: Enter otherwise keeps what was typed ("pan" stays "pan",
 * not the highlighted "panting").
 *   SuggestBox.matches(words, typed, limit): prefix matches first, then word starts, then substrings.
 */
window.SuggestBox = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;

  const el = window.AnnotationDom.el;

  /* Ranked completions: prefix matches first, then word-start, then substring; same text excluded. */
  function matches(words, typed, limit) {
    const query = Graph.libraryKey(typed);
    if (!query) return words.slice(0, limit);
    const scored = [];
    for (const word of words) {
      const key = Graph.libraryKey(word.text || word);
      const position = key.indexOf(query);
      if (position < 0) continue;
      const rank = position === 0 ? 0 : key.includes(" " + query) ? 1 : 2;
      scored.push([rank, key.length, word]);
      if (scored.length > limit * 8) break;
    }
    scored.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    return scored.slice(0, limit).map((entry) => entry[2]);
  }

  class SuggestBox {
    constructor(container) {
      this.container = container;
      this.box = el("div", "suggest-box");
      this.box.setAttribute("role", "listbox");
      this.box.hidden = true;
      container.appendChild(this.box);
      this.items = [];
      this.active = -1;
      this.chosen = false;
      this.input = null;
      this.box.addEventListener("mousedown", (event) => {
        const option = event.target.closest("[data-index]");
        if (!option) return;
        event.preventDefault(); // keep the focus in the input
        this.active = Number(option.dataset.index);
        if (this.onPick) this.onPick(this.items[this.active]);
      });
    }

    /* items: [{text, group?, note?}]; the first is highlighted when the typed text starts it. */
    open(input, items, typed, onPick) {
      this.input = input;
      this.items = items;
      this.onPick = onPick;
      const query = Graph.libraryKey(typed || "");
      this.active = items.length && query && Graph.libraryKey(items[0].text).startsWith(query) ? 0 : -1;
      this.chosen = false;
      this._render();
    }

    _render() {
      this.box.textContent = "";
      if (!this.items.length) {
        this.close();
        return;
      }
      let group = null;
      this.items.forEach((item, index) => {
        if (item.group && item.group !== group) {
          group = item.group;
          this.box.appendChild(el("div", "suggest-group", group));
        }
        const option = el("div", "suggest-option" + (index === this.active ? " is-active" : ""));
        option.setAttribute("role", "option");
        option.dataset.index = String(index);
        option.appendChild(el("span", "suggest-text", item.text));
        if (item.note) option.appendChild(el("span", "suggest-note", item.note));
        this.box.appendChild(option);
      });
      const inputBox = this.input.getBoundingClientRect();
      const containerBox = this.container.getBoundingClientRect();
      this.box.style.left = inputBox.left - containerBox.left + "px";
      this.box.style.top = inputBox.bottom - containerBox.top + 2 + "px";
      this.box.style.minWidth = Math.max(220, inputBox.width) + "px";
      this.box.hidden = false;
      const active = this.box.querySelector(".is-active");
      if (active) active.scrollIntoView({block: "nearest"});
    }

    get isOpen() {
      return !this.box.hidden;
    }

    move(delta) {
      if (!this.items.length) return;
      if (!this.chosen && this.active >= 0 && delta > 0) {
        this.chosen = true; // the first arrow down takes the highlighted hint rather than skipping it
        this._render();
        return;
      }
      this.active = (this.active + delta + this.items.length + 1) % (this.items.length + 1);
      if (this.active === this.items.length) this.active = -1;
      this.chosen = this.active >= 0;
      this._render();
    }

    /* Tab: take the highlighted item (the first one when none is); false when there is nothing to take. */
    choose() {
      if (!this.isOpen || !this.items.length) return false;
      if (this.active < 0) this.active = 0;
      this.chosen = true;
      this._render();
      return true;
    }

    /* The item chosen with the arrow keys or Tab, else null (a highlight alone is only a hint). */
    current() {
      return this.isOpen && this.chosen && this.active >= 0 ? this.items[this.active] : null;
    }

    close() {
      this.box.hidden = true;
      this.active = -1;
      this.chosen = false;
    }
  }

  SuggestBox.matches = matches;
  return SuggestBox;
})();
