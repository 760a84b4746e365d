/*
 * The reviewer's page, the submitted annotations side by side: one read-only card per submission with its
 * events (each with "+ gold"), the annotator's note for the reviewer, "Start gold from this" and "Send back…".
 *
 * The note is the annotator's free text: it is shown as text (textContent), never parsed as HTML, so a note
 * holding markup or a script shows it literally. Line breaks are kept by the stylesheet.
 */
window.ReviewSubmissions = (function () {
  "use strict";

  // dom.js loads after this file (with the editor scripts); it is there by the time the page renders
  function el(tag, className, text) {
    return window.AnnotationDom.el(tag, className, text);
  }

  function noteView(note) {
    const text = (note || "").trim();
    const block = el("div", "submission-note");
    if (!text) {
      block.appendChild(el("p", "muted small", "No note for the reviewer."));
      return block;
    }
    block.appendChild(el("p", "submission-note-label small", "Note for the reviewer"));
    block.appendChild(el("blockquote", "submission-note-text", text));
    return block;
  }

  function goldButtons(graphRoot, submission, onCopy) {
    graphRoot.querySelectorAll(".event-card").forEach((eventCard) => {
      const button = el("button", "add-to-gold", "+ gold");
      button.type = "button";
      button.title = "Copy this event (sources, attributes, spans) into the gold annotation, or into the gold event of its matched group";
      button.addEventListener("click", () => onCopy(submission, eventCard.dataset.eventId));
      eventCard.querySelector(".event-head").appendChild(button);
    });
  }

  function actionsView(submission, actions) {
    const row = el("div", "submission-actions");
    const use = el("button", "", "Start gold from this");
    use.type = "button";
    use.addEventListener("click", () => actions.onStart(submission));
    const back = el("button", "", "Send back…");
    back.type = "button";
    back.addEventListener("click", () => actions.onReturn(submission));
    row.appendChild(use);
    row.appendChild(back);
    return row;
  }

  /* Fill `container` with one card per submission; `editorOptions` are passed to each read-only EventEditor,
   * `actions` = {onCopy(submission, eventId), onStart(submission), onReturn(submission)}. */
  function render(container, submissions, editorOptions, actions) {
    container.textContent = "";
    if (!submissions.length) container.appendChild(el("p", "muted", "No submitted annotation yet."));
    submissions.forEach((submission) => {
      const card = el("section", "card submission");
      card.dataset.annotator = submission.annotator;
      const title = el("h3", "");
      title.appendChild(el("span", "", submission.annotator));
      title.appendChild(el("span", "muted small", submission.graph.events.length + " events"));
      card.appendChild(title);
      const graphRoot = el("div", "");
      graphRoot.id = "submission-" + submission.task;
      card.appendChild(graphRoot);
      const relations = el("div", "");
      relations.innerHTML = '<ul class="relations-stated"></ul><ul class="relations-implied" hidden></ul>';
      card.appendChild(relations);
      new EventEditor(Object.assign({root: graphRoot, relationsRoot: relations, draft: submission.graph, readOnly: true}, editorOptions));
      goldButtons(graphRoot, submission, actions.onCopy);
      card.appendChild(noteView(submission.graph.note));
      card.appendChild(actionsView(submission, actions));
      container.appendChild(card);
    });
  }

  return {render: render};
})();
