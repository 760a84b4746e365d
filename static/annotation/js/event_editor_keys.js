/*
 * The event editor's keys: Ctrl+Z / Ctrl+Shift+Z, Alt+Up/Down, and the keys of a field (Enter, Tab, arrows,
 * Esc, Backspace) and of an event card (Delete, x, b / a / s, r / R, t, j / k). Methods of EventEditor
 * (event_editor.js); the full list is in its header.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.Keys = (function () {
  "use strict";

  const {isTextField} = window.EventEditorParts.common;

  class EventEditorKeys {
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

  return EventEditorKeys;
})();
