/*
 * The event editor's suggestions: the list under a field (event words, sound sources, the tag library by
 * category and by use) and taking an item from it (a template asks for its word). Methods of EventEditor
 * (event_editor.js); the list itself is suggest_box.js.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.Suggestions = (function () {
  "use strict";

  const {BLANK} = window.EventEditorParts.common;
  const MAX_SUGGESTIONS = 40;

  class EventSuggestions {
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
        items = typed.trim() ? this._rankedTags(typed) : this.tags.library.map((tag) => this._tagItem(tag));
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
      const items = window.SuggestBox.matches(this.tags.byUse, typed, MAX_SUGGESTIONS).map((tag) => this._tagItem(tag));
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
  }

  return EventSuggestions;
})();
