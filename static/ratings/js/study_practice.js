/*
 * The practice item of a crowd study: the clip player, "check my answer" unlocked once the clip was heard
 * (only for the participant's sake: nothing of the practice is stored), and the rating pages' keys.
 */
(function () {
  "use strict";
  const form = document.getElementById("practice-form");
  if (!form) return;
  const root = document.getElementById("player");
  const submit = document.getElementById("practice-submit");
  const hint = form.querySelector(".listen-hint");
  if (root && root.querySelector("audio")) {
    const player = new ClipPlayer(root, {keyboard: true});
    root.addEventListener("clipplayer:listened", () => {
      submit.disabled = false;
      hint.hidden = true;
      player.markListened("Heard: check your answer.");
    });
  }
  if (form.dataset.pairwise !== "true") return;
  const KEYS = {a: "left", arrowleft: "left", b: "right", arrowright: "right", n: "none", arrowdown: "none"};
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const side = KEYS[event.key.toLowerCase()];
    if (side) {
      event.preventDefault();
      form.querySelector('input[name="side"][value="' + side + '"]').checked = true;
      return;
    }
    if (event.key === "Enter" && event.target.tagName !== "BUTTON" && !submit.disabled) {
      event.preventDefault();
      form.requestSubmit(submit);
    }
  });
})();
