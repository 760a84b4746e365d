/*
 * Import forms: refuse, before sending, more files than the server takes in one form (it would answer a bare
 * 400), naming the field and the limit; then disable the button and say the upload is under way, so it is not
 * sent twice.
 */
(function () {
  "use strict";

  document.querySelectorAll("input[type=file][data-max-files]").forEach((input) => {
    const limit = Number(input.dataset.maxFiles);
    if (!limit) return;
    input.addEventListener("change", () => {
      const count = input.files ? input.files.length : 0;
      input.setCustomValidity(
        count > limit ? `${count} files chosen; a form takes at most ${limit}: put them in a zip archive instead.` : ""
      );
      if (count > limit) input.reportValidity();
    });
  });

  document.querySelectorAll("form[data-busy-form]").forEach((form) => {
    form.addEventListener("submit", () => {
      const button = form.querySelector("button[type=submit]");
      const note = form.querySelector(".busy-note");
      if (button) button.disabled = true;
      if (note) note.hidden = false;
    });
  });
})();
