/*
 * What the THumBS and pairwise item pages share: the clip player, JSON posts with the CSRF token,
 * and the listening rule (submit stays disabled until the server accepted the "listened" report;
 * the server refuses submissions without it, so this is only for the rater's sake).
 */
window.RatingItem = (function () {
  "use strict";

  function setup() {
    const form = document.getElementById("rating-form");
    const submit = document.getElementById("submit-button");
    const listenHint = form.querySelector(".listen-hint");
    const csrfToken = form.querySelector("[name=csrfmiddlewaretoken]").value;
    const playerRoot = document.getElementById("player");
    const player = playerRoot.querySelector("audio") ? new ClipPlayer(playerRoot, {keyboard: true}) : null;
    let isListened = form.dataset.isListened === "true";
    let isReporting = false;

    function postJson(url, body) {
      return fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken},
        body: JSON.stringify(body || {}),
      });
    }

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

    return {form: form, submit: submit, player: player, postJson: postJson};
  }

  return {setup: setup};
})();
