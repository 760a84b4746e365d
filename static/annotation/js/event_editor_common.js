/*
 * What the parts of the event editor (event_editor.js and the event_*.js files it is assembled from) share:
 * the events' colours, the limits the server sets, and small text helpers.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.common = (function () {
  "use strict";

  // One colour per event, as its spans are drawn on the timeline.
  const PALETTE = ["#2f6db5", "#e08a1e", "#3a9a5b", "#c0392b", "#7e57c2", "#8d6e63", "#d81b60", "#00838f", "#9e9d24", "#546e7a"];
  const BLANK = "___"; // the word a tag template asks for ("on a ___")
  const MAX_TEXT = 255; // the server's limit on a name, source or attribute (annotation_drafts.MAX_TEXT)

  function isTextField(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable
      || (target.tagName === "INPUT" && !["checkbox", "radio", "button", "range"].includes(target.type)));
  }

  function seconds(value) {
    return Number(value).toFixed(2);
  }

  return {PALETTE: PALETTE, BLANK: BLANK, MAX_TEXT: MAX_TEXT, isTextField: isTextField, seconds: seconds};
})();
