/*
 * THumBS item page: listening report, autosave, keyboard shortcuts, preset buttons.
 * Submitting stays disabled until the server has accepted the listening report
 * (the server refuses submissions without it, so this is only for the rater's sake).
 */
(function () {
  "use strict";

  const AUTOSAVE_DELAY_MS = 600;
  const {form, submit, saveDraft: postDraft} = RatingItem.setup();
  const autosaveStatus = form.querySelector(".autosave-status");

  function isTyping(target) {
    if (!target) return false;
    if (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable) return true;
    return target.tagName === "INPUT" && !["radio", "checkbox", "range", "button", "submit"].includes(target.type);
  }

  // --- autosave: debounced, one request at a time so an older state never lands last --------
  let saveTimer = null;
  let isSaving = false;
  let isSavePending = false;
  function formState() {
    const state = {};
    new FormData(form).forEach((value, key) => {
      if (!["csrfmiddlewaretoken", "version", "replacing"].includes(key)) state[key] = value;
    });
    return state;
  }
  function saveDraft() {
    saveTimer = null;
    if (isSaving) {
      isSavePending = true;
      return;
    }
    isSaving = true;
    form.dataset.draftState = "saving";
    postDraft(formState())
      .then((saved) => {
        if (saved) autosaveStatus.textContent = "Draft saved at " + new Date().toLocaleTimeString() + ".";
      })
      .finally(() => {
        isSaving = false;
        if (isSavePending) {
          isSavePending = false;
          saveDraft();
        } else if (!saveTimer) {
          form.dataset.draftState = "saved";
        }
      });
  }
  function scheduleSave() {
    clearTimeout(saveTimer);
    form.dataset.draftState = "saving";
    autosaveStatus.textContent = "Saving draft…";
    saveTimer = setTimeout(saveDraft, AUTOSAVE_DELAY_MS);
  }
  form.addEventListener("input", scheduleSave);
  form.addEventListener("change", scheduleSave);

  // --- penalty presets --------------------------------------------------------------
  form.querySelectorAll(".preset").forEach((button) => {
    button.addEventListener("mousedown", (event) => event.preventDefault()); // keep the focus where it was
    button.addEventListener("click", () => {
      const input = button.closest(".penalty-input").querySelector("input");
      input.value = button.dataset.value;
      input.dispatchEvent(new Event("input", {bubbles: true}));
    });
  });

  // --- keyboard: 1-5 set the highlighted score, then move on --------------------------
  const groups = Array.from(form.querySelectorAll(".score-group"));
  let current = null;
  function highlight(group) {
    current = group;
    groups.forEach((other) => other.classList.toggle("is-current", other === group));
  }
  highlight(groups.find((group) => !group.querySelector("input:checked")) || groups[0]);
  groups.forEach((group) => group.addEventListener("focusin", () => highlight(group)));
  groups.forEach((group) => group.addEventListener("click", () => highlight(group)));

  function choose(input) {
    input.checked = true;
    input.dispatchEvent(new Event("change", {bubbles: true}));
  }

  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      if (!submit.disabled) form.requestSubmit(submit);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
    const digit = /^(?:Digit|Numpad)([1-5])$/.exec(event.code);
    if (digit && current) {
      event.preventDefault();
      choose(current.querySelector('input[value="' + digit[1] + '"]'));
      const next = groups[groups.indexOf(current) + 1];
      if (next) {
        highlight(next);
        (next.querySelector("input:checked") || next.querySelector("input")).focus();
      } else {
        current.querySelector("input:checked").focus();
      }
      return;
    }
    const key = event.key.toLowerCase();
    if (key === "y" || key === "n") {
      event.preventDefault();
      choose(form.querySelector('input[name="synthesized"][value="' + (key === "y" ? "yes" : "no") + '"]'));
    }
  });

  // --- submit: say what is missing instead of a server round trip ----------------------
  form.addEventListener("submit", (event) => {
    clearTimeout(saveTimer);
    const missing = groups.filter((group) => !group.querySelector("input:checked"));
    const synthesized = form.querySelector(".synthesized");
    if (!form.querySelector('input[name="synthesized"]:checked')) missing.push(synthesized);
    groups.concat([synthesized]).forEach((element) => element.classList.toggle("is-missing", missing.includes(element)));
    if (missing.length) {
      event.preventDefault();
      autosaveStatus.textContent = "Please answer the highlighted questions.";
      missing[0].scrollIntoView({block: "center"});
    }
  });
})();
