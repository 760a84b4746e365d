/*
 * Import forms: the import runs inside the request, which can take some seconds; disable the button and say
 * so, so the upload is not sent twice.
 */
(function () {
  "use strict";

  document.querySelectorAll("form[data-busy-form]").forEach((form) => {
    form.addEventListener("submit", () => {
      const button = form.querySelector("button[type=submit]");
      const note = form.querySelector(".busy-note");
      if (button) button.disabled = true;
      if (note) note.hidden = false;
    });
  });
})();
