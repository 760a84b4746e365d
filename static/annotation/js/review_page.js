/*
 * The reviewer's page for one clip: submitted annotations side by side, events matched across annotators
 * with the clip's per-factor agreement (metrics_bridge computes them), the gold editor (same editor and
 * autosave as the annotators'), publish as gold, send a submission back with a comment.
 */
(function () {
  "use strict";

  const Page = window.WorkspacePage;
  const Graph = window.AnnotationGraph;
  const root = document.getElementById("review-page");
  const urls = Page.data("review-urls");
  const library = Page.data("tag-library");
  const returnDialog = document.getElementById("return-dialog");
  const {statusElement, banner, dialog, player} = Page.elements();
  let review = null;
  let sync = null;
  let editor = null;

  const el = window.AnnotationDom.el;

  Page.callJson("POST", urls.open, {campaign: urls.campaignId, clip: urls.clipId}).then(({response, body}) => {
    if (!response.ok) {
      root.querySelector("#review-error").textContent = body.detail || "This review cannot be opened.";
      return;
    }
    review = body;
    renderSubmissions();
    startEditor();
    loadMatching();
    root.dataset.ready = "true";
  });

  // -- submissions ---------------------------------------------------------------------------------
  function renderSubmissions() {
    const container = document.getElementById("submissions");
    container.textContent = "";
    if (!review.submissions.length) container.appendChild(el("p", "muted", "No submitted annotation yet."));
    review.submissions.forEach((submission) => {
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
      new EventEditor({root: graphRoot, relationsRoot: relations, draft: submission.graph, library: library, readOnly: true});
      graphRoot.querySelectorAll(".event-card").forEach((eventCard) => {
        const button = el("button", "add-to-gold", "+ gold");
        button.type = "button";
        button.title = "Copy this event (with its sources, attributes and time) into the gold annotation";
        button.addEventListener("click", () => copyEvent(submission, eventCard.dataset.eventId));
        eventCard.querySelector(".event-head").appendChild(button);
      });
      const actions = el("div", "submission-actions");
      const use = el("button", "", "Start gold from this");
      use.type = "button";
      use.addEventListener("click", () => startFrom(submission));
      const back = el("button", "", "Send back…");
      back.type = "button";
      back.addEventListener("click", () => openReturn(submission));
      actions.appendChild(use);
      actions.appendChild(back);
      card.appendChild(actions);
      container.appendChild(card);
    });
  }

  function startFrom(submission) {
    if (editor.draft.events.length && !window.confirm("Replace the gold draft with " + submission.annotator + "'s annotation?")) return;
    const draft = Graph.clone(submission.graph);
    editor.setDraft(draft);
    sync.edit(editor.draft);
    editor.say("Gold draft started from " + submission.annotator + "'s annotation.");
  }

  function copyEvent(submission, eventId) {
    const source = submission.graph.events.find((event) => event.id === eventId);
    const draft = Graph.clone(editor.draft);
    const existing = draft.events.find((event) => Graph.libraryKey(event.label) === Graph.libraryKey(source.label));
    if (existing) {
      for (const kind of ["sources", "attributes"]) {
        for (const text of source[kind]) {
          if (!existing[kind].some((have) => Graph.libraryKey(have) === Graph.libraryKey(text))) existing[kind].push(text);
        }
      }
      editor.say("Merged " + submission.annotator + "'s '" + source.label + "' into the gold event of that name.");
    } else {
      draft.events.push(Object.assign(Graph.clone(source), {id: Graph.newEventId(draft.events)}));
      editor.say("Added " + submission.annotator + "'s '" + source.label + "' to the gold annotation.");
    }
    editor.setDraft(draft);
    sync.edit(editor.draft);
  }

  function openReturn(submission) {
    returnDialog.querySelector(".return-annotator").textContent = submission.annotator;
    returnDialog.querySelector("textarea").value = "";
    returnDialog.querySelector(".dialog-error").textContent = "";
    returnDialog.dataset.task = submission.task;
    returnDialog.showModal();
  }

  returnDialog.querySelector("form").addEventListener("submit", (event) => {
    event.preventDefault();
    const comment = returnDialog.querySelector("textarea").value;
    const url = urls.returnTask.replace("/0/", "/" + returnDialog.dataset.task + "/");
    Page.callJson("POST", url, {comment: comment}).then(({response, body}) => {
      if (!response.ok) {
        returnDialog.querySelector(".dialog-error").textContent = body.detail || Object.values(body).join(" ");
        return;
      }
      returnDialog.close();
      review.submissions = review.submissions.filter((submission) => submission.task !== body.id);
      renderSubmissions();
      loadMatching();
      editor.say("Sent back to " + body.annotator + " with your comment.");
    });
  });
  returnDialog.querySelector("[data-action=close]").addEventListener("click", () => returnDialog.close());

  // -- matching and agreement ---------------------------------------------------------------------
  function factorText(value) {
    return value === null || value === undefined ? "n/a" : value.toFixed(2);
  }

  function loadMatching() {
    const target = document.getElementById("matching");
    target.textContent = "Matching events…";
    fetch(urls.matching, {credentials: "same-origin"})
      .then((response) => response.json())
      .then((data) => renderMatching(target, data))
      .catch(() => { target.textContent = "The matching could not be computed."; });
  }

  function renderMatching(target, data) {
    target.textContent = "";
    if (!data.annotators || data.annotators.length < 2) {
      target.appendChild(el("p", "muted", "Matching needs at least two submitted annotations."));
      return;
    }
    const factors = el("div", "agreement-factors");
    for (const name of ["event", "source", "attribute", "relation"]) {
      const box = el("div", "");
      box.dataset.factor = name;
      box.appendChild(el("strong", "", factorText(data.factors[name])));
      box.appendChild(el("span", "muted small", name));
      factors.appendChild(box);
    }
    target.appendChild(el("p", "hint", "Agreement of this clip (X-ACE F between each pair of annotators, averaged):"));
    target.appendChild(factors);
    const table = el("table", "matching compact");
    const head = el("tr", "");
    data.annotators.forEach((name) => head.appendChild(el("th", "", name)));
    head.appendChild(el("th", "num", "S"));
    table.appendChild(el("thead", "")).appendChild(head);
    const body = el("tbody", "");
    data.groups.forEach((group) => {
      const row = el("tr", "");
      data.annotators.forEach((name) => {
        const labels = group.events[name];
        row.appendChild(el("td", labels ? "" : "unmatched", labels ? labels.join(", ") : "—"));
      });
      row.appendChild(el("td", "num", group.similarity === null ? "" : group.similarity.toFixed(2)));
      body.appendChild(row);
    });
    table.appendChild(body);
    target.appendChild(el("p", "hint", "Events matched across annotators (mutual best match by X-ACE similarity S ≥ 0.6):"));
    target.appendChild(table);
  }

  // -- gold editor -------------------------------------------------------------------------------
  function startEditor() {
    sync = new DraftSync({
      url: urls.draft.replace("/0/", "/" + review.id + "/"),
      version: review.draft_version,
      storageKey: "annotation-review-" + review.id,
      csrfToken: Page.csrfToken,
      statusElement: statusElement,
      onConflict: (conflict) => Page.showConflict(banner, conflict, sync),
    });
    const start = sync.restoreLocal(review.draft);
    editor = new EventEditor({
      root: document.getElementById("gold-editor"),
      relationsRoot: document.getElementById("gold-relations"),
      messageElement: document.getElementById("editor-message"),
      draft: start.draft,
      library: library,
      suggestions: Page.data("suggestions"),
      player: player,
      onChange: (draft) => sync.edit(draft),
    });
    if (!start.restored) {
      statusElement.dataset.state = "saved";
      statusElement.textContent = review.status === "published" ? "Gold published (version " + review.draft_version + ")" : "Saved (version " + review.draft_version + ")";
    }
    const relationForm = document.querySelector("#gold-relations .relation-form");
    relationForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const [first, second] = relationForm.querySelectorAll("select[data-role=event]");
      editor.addRelation(first.value, second.value, relationForm.querySelector("select[name=kind]").value);
    });
    Page.bindShortcuts({editor: editor, player: player, sync: sync, onSubmit: () => publish(false), helpElement: document.getElementById("shortcuts")});
    window.reviewPage = {editor: editor, sync: sync, player: player};
  }

  function publish(confirmWarnings) {
    const button = document.getElementById("publish-button");
    button.disabled = true;
    sync.flush()
      .then((version) => Page.callJson("POST", urls.publish.replace("/0/", "/" + review.id + "/"), {base_version: version, confirm_warnings: !!confirmWarnings}))
      .then(({response, body}) => {
        if (response.ok) {
          review = body;
          statusElement.dataset.state = "saved";
          statusElement.textContent = "Published as the clip's gold annotation (version " + body.draft_version + ").";
          document.getElementById("gold-state").textContent = "Gold published";
          return;
        }
        if (response.status === 400 && body.checks) {
          Page.renderChecks(dialog.querySelector(".dialog-checks"), body.checks, (check) => { dialog.close(); Page.focusCheck(editor, check); });
          dialog.querySelector(".dialog-title").textContent = body.needs_confirmation ? "Please confirm these warnings" : "Fix these errors before publishing";
          dialog.querySelector("[data-action=confirm-submit]").hidden = !body.needs_confirmation;
          dialog.showModal();
          return;
        }
        if (response.status === 409) {
          Page.showConflict(banner, {code: body.code, currentVersion: body.current_version, message: body.detail}, sync);
          return;
        }
        editor.say("Not published: " + (body.detail || JSON.stringify(body)), true);
      })
      .catch((error) => editor.say("Not published: " + (error.message || "the server could not be reached") + ".", true))
      .finally(() => { button.disabled = false; });
  }

  dialog.querySelector("[data-action=confirm-submit]").addEventListener("click", () => { dialog.close(); publish(true); });
  dialog.querySelector("[data-action=close]").addEventListener("click", () => dialog.close());
  document.getElementById("publish-button").addEventListener("click", () => publish(false));
})();
