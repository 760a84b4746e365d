/*
 * Pairwise item page: listening report, keyboard choice (A/←, B/→, N/↓, Enter), autosave of the choice.
 * Submitting stays disabled until the server has accepted the listening report.
 */
(function () {
  "use strict";

  const {form, submit, saveDraft: postDraft} = RatingItem.setup();
  const autosaveStatus = form.querySelector(".autosave-status");
  const KEYS = {a: "left", arrowleft: "left", b: "right", arrowright: "right", n: "none", arrowdown: "none"};

  function showChoice() {
    form.querySelectorAll(".pair-choice").forEach((label) => {
      label.classList.toggle("is-chosen", label.querySelector("input").checked);
    });
  }
  // Autosave one request at a time, so a quick change of mind never lands before the earlier choice.
  let isSaving = false;
  let isSavePending = false;
  function saveDraft() {
    if (isSaving) {
      isSavePending = true;
      return;
    }
    const chosen = form.querySelector('input[name="side"]:checked');
    isSaving = true;
    form.dataset.draftState = "saving";
    postDraft({side: chosen ? chosen.value : ""})
      .then((saved) => { if (saved) autosaveStatus.textContent = "Choice saved as a draft."; })
      .finally(() => {
        isSaving = false;
        if (isSavePending) {
          isSavePending = false;
          saveDraft();
        } else {
          form.dataset.draftState = "saved";
        }
      });
  }
  form.addEventListener("change", (event) => {
    if (event.target.name !== "side") return;
    showChoice();
    saveDraft();
  });
  showChoice();

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target && (event.target.tagName === "TEXTAREA" || event.target.type === "text")) return;
    const side = KEYS[event.key.toLowerCase()];
    if (side) {
      event.preventDefault(); // arrows would otherwise move the radio selection themselves
      const input = form.querySelector('input[name="side"][value="' + side + '"]');
      input.checked = true;
      input.dispatchEvent(new Event("change", {bubbles: true}));
      return;
    }
    if (event.key === "Enter") {
      event.preventDefault();
      if (!submit.disabled && form.querySelector('input[name="side"]:checked')) form.requestSubmit(submit);
    }
  });

  form.addEventListener("submit", (event) => {
    if (!form.querySelector('input[name="side"]:checked')) {
      event.preventDefault();
      autosaveStatus.textContent = "Choose A, B or no preference first.";
    }
  });
})();
