/*
 * What the THumBS and pairwise item pages share: the clip player, JSON posts with the CSRF token,
 * the listening rule (submit stays disabled until the server accepted the "listened" report; the
 * server refuses submissions without it, so this is only for the rater's sake) and drafts.
 *
 * Drafts carry the item version the page was built from. If the item was answered again elsewhere
 * (another tab), the server answers 409: autosave stops and the page says so instead of silently
 * overwriting or losing anything.
 */
window.RatingItem = (function () {
  "use strict";

  function csrfToken() {
    const input = document.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function postJson(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(body || {}),
    });
  }

  function playerOnly() {
    const playerRoot = document.getElementById("player");
    return playerRoot && playerRoot.querySelector("audio") ? new ClipPlayer(playerRoot, {keyboard: true}) : null;
  }

  function setup() {
    const form = document.getElementById("rating-form");
    const submit = document.getElementById("submit-button");
    const listenHint = form.querySelector(".listen-hint");
    const autosaveStatus = form.querySelector(".autosave-status");
    const versionInput = form.querySelector("[name=version]");
    const playerRoot = document.getElementById("player");
    const player = playerOnly();
    let isListened = form.dataset.isListened === "true";
    let isReporting = false;
    let isStale = false;

    function unlock(message) {
      isListened = true;
      submit.disabled = false;
      listenHint.hidden = true;
      if (player) player.markListened(message);
    }
    if (isListened) unlock("Clip already heard: you can submit.");
    playerRoot.addEventListener("clipplayer:listened", () => {
      if (isListened || isReporting) return;
      isReporting = true;
      postJson(form.dataset.listenedUrl)
        .then((response) => response.json().then((data) => ({ok: response.ok, data: data})))
        .then((result) => {
          if (result.ok) unlock();
          else listenHint.textContent = result.data.error || "Could not record the listening; play the clip again.";
        })
        .catch(() => { listenHint.textContent = "Could not reach the server; play the clip again."; })
        .finally(() => { isReporting = false; });
    });

    function showStale() {
      autosaveStatus.textContent = "This item was answered again in another tab or window. " +
        "Submit to see that answer and choose which one to keep.";
      autosaveStatus.classList.add("error");
    }

    /* Save the unsubmitted form state; resolves to true when saved. */
    function saveDraft(fields) {
      if (isStale) {
        showStale();
        return Promise.resolve(false);
      }
      return postJson(form.dataset.draftUrl, {version: Number(versionInput.value), fields: fields})
        .then((response) => {
          if (response.status === 409) {
            isStale = true;
            showStale();
            return false;
          }
          if (!response.ok) {
            return response.json().then((data) => {
              autosaveStatus.textContent = "Draft not saved: " + (data.error || "the server refused it") + ".";
              return false;
            }, () => false);
          }
          return true;
        })
        .catch(() => {
          autosaveStatus.textContent = "Draft not saved (no connection).";
          return false;
        });
    }

    return {form: form, submit: submit, player: player, postJson: postJson, saveDraft: saveDraft};
  }

  return {setup: setup, playerOnly: playerOnly};
})();
