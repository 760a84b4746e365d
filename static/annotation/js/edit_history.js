/*
 * The event editor's history: copies of the draft before each edit, so that every edit can be undone and
 * redone. Consecutive edits with the same `coalesce` key (typing a name, moving a span with the arrows)
 * within a moment are one step.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.EditHistory = (function () {
  "use strict";

  const HISTORY_LIMIT = 200;
  const COALESCE_MS = 1500;
  const Graph = window.AnnotationGraph;

  class EditHistory {
    constructor() {
      this.undoStack = [];
      this.redoStack = [];
    }

    /* Call with the draft as it is before an edit described by `what`. */
    record(draft, what, coalesce) {
      const last = this.undoStack[this.undoStack.length - 1];
      const now = Date.now();
      if (coalesce && last && last.coalesce === coalesce && now - last.at < COALESCE_MS) {
        last.at = now;
        return;
      }
      this.undoStack.push({draft: Graph.clone(draft), what: what, coalesce: coalesce || null, at: now});
      if (this.undoStack.length > HISTORY_LIMIT) this.undoStack.shift();
      this.redoStack = [];
    }

    /* The step to undo ({draft, what}), `draft` kept for redo; null when there is none. */
    undo(draft) {
      const entry = this.undoStack.pop();
      if (!entry) return null;
      this.redoStack.push({draft: Graph.clone(draft), what: entry.what});
      return entry;
    }

    /* The step to redo ({draft, what}), `draft` kept for undo; null when there is none. */
    redo(draft) {
      const entry = this.redoStack.pop();
      if (!entry) return null;
      this.undoStack.push({draft: Graph.clone(draft), what: entry.what, coalesce: null, at: Date.now()});
      return entry;
    }
  }

  return EditHistory;
})();
