/*
 * SuggestBox: the completion list under an editor field (events, sources, attributes grouped by category).
 * Arrow keys move the highlight, a click picks; the first item is highlighted when the typed text starts it
 * or one of its words, but only an item chosen (arrow keys, Tab) counts: Enter otherwise keeps what was typed
 * ("pan" stays "pan", not the highlighted "panting"). Tab takes the highlighted item at once.
 *   SuggestBox.matches(words, typed, limit): words starting with the typed text (the whole or one of its
 *   words) first, then substrings; within each, in the order given (the callers give the most used first).
 */
window.SuggestBox = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;

  const el = window.AnnotationDom.el;

  /* Whether `query` starts `key` or one of its words ("dist" starts "in the distance"). */
  function startsAWord(key, query) {
    return key.startsWith(query) || key.includes(" " + query) || key.includes("-" + query);
  }

  // The words' keys, computed once: the lists hold thousands of words and are searched at every letter.
  const keys = new Map();
  function keyOf(word) {
    const text = word.text || word;
    let key = keys.get(text);
    if (key === undefined) {
      key = Graph.libraryKey(text);
      keys.set(text, key);
    }
    return key;
  }

  /* Ranked completions: the typed word itself, then words starting with it (the whole or one of its words),
   * then substrings; otherwise in the order given. A word start counts as much as the whole's start: experts
   * type the telling word ("dist" for "in the distance"), and the callers' order (most used first) then puts
   * the usual word on top after a letter or two, where length used to put rare short words first. */
  function matches(words, typed, limit) {
    const query = Graph.libraryKey(typed);
    if (!query) return words.slice(0, limit);
    const exact = [];
    const starting = [];
    const inside = [];
    for (const word of words) {
      const key = keyOf(word);
      if (key === query) exact.push(word);
      else if (starting.length < limit && startsAWord(key, query)) starting.push(word);
      else if (inside.length < limit && key.includes(query)) inside.push(word);
    }
    return exact.concat(starting, inside).slice(0, limit);
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
      this.active = items.length && query && startsAWord(Graph.libraryKey(items[0].text), query) ? 0 : -1;
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

    /* Take the highlighted item (the first one when none is); false when there is nothing to take. */
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
  SuggestBox.startsAWord = startsAWord;
  return SuggestBox;
})();
