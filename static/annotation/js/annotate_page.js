/*
 * The annotator's editor page: player, event editor, autosave, automated checks, submit, skip.
 * Page data comes from json_script blocks (see templates/annotation/task.html).
 */
(function () {
  "use strict";

  const Page = window.WorkspacePage;
  const root = document.getElementById("annotation-page");
  const task = Page.data("task-data");
  const urls = Page.data("task-urls");
  const checksElement = document.getElementById("checks-list");
  const {statusElement, banner, dialog, player} = Page.elements();

  const sync = new DraftSync({
    url: urls.draft,
    version: task.draft_version,
    storageKey: "annotation-task-" + task.id,
    csrfToken: Page.csrfToken,
    statusElement: statusElement,
    onConflict: (conflict) => Page.showConflict(banner, conflict, sync),
    onSaved: () => scheduleChecks(),
    // A merge (another tab's or device's edits, or a closed tab's copy) replaces the draft, undoably.
    applyDraft: (draft, what, summary) => {
      editor.setDraft(draft, what);
      editor.say(summary);
    },
  });

  const start = task.editable ? sync.restoreLocal(task.draft) : {draft: task.draft};
  let syncRegions = () => {};
  const editor = new EventEditor({
    root: document.getElementById("event-editor"),
    relationsRoot: document.getElementById("relations-panel"),
    messageElement: document.getElementById("editor-message"),
    noteElement: document.getElementById("annotation-note"),
    draft: start.draft,
    library: Page.data("tag-library"),
    suggestions: Page.data("suggestions"),
    soundSources: Page.data("sound-sources"),
    player: player,
    readOnly: !task.editable,
    onChange: (draft) => {
      sync.edit(draft);
      syncRegions();
    },
  });
  syncRegions = Page.connectPlayer(editor, player);
  if (!task.editable) {
    statusElement.dataset.state = "locked";
    statusElement.textContent = "Read only: this clip is " + task.status_display.toLowerCase() + ".";
  } else if (!start.restored) {
    statusElement.dataset.state = "saved";
    statusElement.textContent = task.draft_version ? "Saved (version " + task.draft_version + ")" : "Nothing typed yet";
  }
  if (task.editable) sync.findOrphans().then((copies) => Page.offerOrphans(document.getElementById("stale-local"), sync, editor, copies));

  // -- relations form (mouse) -----------------------------------------------------------------------
  const relationForm = document.querySelector("#relations-panel .relation-form");
  if (relationForm) {
    relationForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const [first, second] = relationForm.querySelectorAll("select[data-role=event]");
      editor.addRelation(first.value, second.value, relationForm.querySelector("select[name=kind]").value);
    });
  }

  // -- checks -----------------------------------------------------------------------------------------
  let checksTimer = null;
  function scheduleChecks() {
    clearTimeout(checksTimer);
    checksTimer = setTimeout(runChecks, 300);
  }

  function runChecks() {
    return Page.callJson("POST", urls.checks, {}).then(({response, body}) => {
      if (response.ok) Page.renderChecks(checksElement, body.checks, (check) => Page.focusCheck(editor, check));
      return body;
    }).catch(() => null);
  }
  // A fresh clip is checked after its first save, not greeted with "add an event" before anything was typed.
  if (task.editable && (start.draft.events || []).length) runChecks();

  // -- submit -----------------------------------------------------------------------------------------
  function submit(confirmWarnings) {
    if (!task.editable) return;
    const button = document.getElementById("submit-button");
    button.disabled = true;
    sync.flush()
      .then((version) => Page.callJson("POST", urls.submit, {base_version: version, confirm_warnings: !!confirmWarnings}))
      .then(({response, body}) => {
        if (response.ok) {
          sync.discardLocal();
          statusElement.dataset.state = "submitted";
          statusElement.textContent = "Submitted. Loading your next clip…";
          return goNext();
        }
        if (response.status === 400 && body.checks) return showRefusal(body);
        if (response.status === 409 && body.code === "stale_version") {
          // Saved elsewhere between this tab's save and the submit: save again, which merges the other edits in.
          sync.edit(editor.draft);
          editor.say("Not submitted: this clip was saved in another tab or device meanwhile; its edits are merged here. Check them and submit again.", true);
          return null;
        }
        if (response.status === 409) return Page.showConflict(banner, {code: body.code, currentVersion: body.current_version, message: body.detail}, sync);
        editor.say("Not submitted: " + (body.detail || JSON.stringify(body)), true);
        return null;
      })
      .catch((error) => editor.say("Not submitted: " + (error.message || "the server could not be reached") + ". Your work is kept.", true))
      .finally(() => { button.disabled = false; });
  }

  function showRefusal(body) {
    Page.renderChecks(dialog.querySelector(".dialog-checks"), body.checks, (check) => {
      dialog.close();
      Page.focusCheck(editor, check);
    });
    dialog.querySelector(".dialog-title").textContent = body.needs_confirmation
      ? "Please confirm these warnings" : "Fix these errors before submitting";
    dialog.querySelector("[data-action=confirm-submit]").hidden = !body.needs_confirmation;
    dialog.showModal();
    const focusTarget = body.needs_confirmation ? dialog.querySelector("[data-action=confirm-submit]") : dialog.querySelector("[data-action=close]");
    focusTarget.focus();
  }

  dialog.querySelector("[data-action=confirm-submit]").addEventListener("click", () => {
    dialog.close();
    submit(true);
  });
  dialog.querySelector("[data-action=close]").addEventListener("click", () => dialog.close());
  document.getElementById("submit-button").addEventListener("click", () => submit(false));

  function goNext() {
    return Page.callJson("POST", urls.next).then(({response, body}) => {
      window.location.href = response.status === 200 && body && body.id ? urls.taskPage.replace("/0/", "/" + body.id + "/") : urls.queue + "?done=" + task.id;
    });
  }

  // -- skip -------------------------------------------------------------------------------------------
  const skipDialog = document.getElementById("skip-dialog");
  const skipButton = document.getElementById("skip-button");
  if (skipButton) {
    skipButton.addEventListener("click", () => skipDialog.showModal());
    skipDialog.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      Page.callJson("POST", urls.skip, {reason: form.get("reason"), comment: form.get("comment") || ""}).then(({response, body}) => {
        if (!response.ok) {
          skipDialog.querySelector(".dialog-error").textContent = Object.values(body).join(" ");
          return;
        }
        sync.discardLocal();
        skipDialog.close();
        goNext();
      });
    });
    skipDialog.querySelector("[data-action=close]").addEventListener("click", () => skipDialog.close());
  }

  // A second tab on the same clip: say so at once (the server refuses its stale saves anyway).
  if ("BroadcastChannel" in window && task.editable) {
    const channel = new BroadcastChannel("annotation-task-" + task.id);
    channel.onmessage = (message) => {
      if (message.data === "open") channel.postMessage("also-open");
      document.getElementById("second-tab").hidden = false;
    };
    channel.postMessage("open");
  }

  Page.bindShortcuts({editor: editor, player: player, sync: sync, onSubmit: () => submit(false), helpElement: document.getElementById("shortcuts")});
  root.dataset.readyMs = String(Math.round(performance.now())); // since navigation started (bench/annotation_editor_bench.py)
  root.dataset.ready = "true";
  window.annotationPage = {editor: editor, sync: sync, player: player};
})();
