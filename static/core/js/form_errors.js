/*
 * Server-side form errors: focus the error summary at the top of the page, scroll the first field with an
 * error into view, and make the summary's links jump to (and focus) their field even when it is a radio
 * group or a hidden input's visible neighbour.
 */
(function () {
  "use strict";

  const summary = document.querySelector("[data-error-summary]");
  if (!summary) return;

  function fieldElement(name) {
    return document.querySelector('[name="' + name + '"]:not([type=hidden])') || document.querySelector('[name="' + name + '"]');
  }

  summary.querySelectorAll("a[data-field]").forEach((link) => {
    link.addEventListener("click", (event) => {
      const field = fieldElement(link.dataset.field);
      if (!field) return;
      event.preventDefault();
      const target = field.closest("fieldset, .field, .penalty, label") || field;
      target.scrollIntoView({block: "center"});
      field.focus({preventScroll: true});
    });
  });

  summary.focus({preventScroll: true});
  // Show the summary (it says what is wrong); if the first wrong field is then out of sight, go to it.
  summary.scrollIntoView({block: "start"});
  const first = document.querySelector("form .errorlist");
  const anchor = first ? first.closest("fieldset, .field, .penalty, section, label, li") || first : null;
  if (anchor && anchor.getBoundingClientRect().bottom > window.innerHeight) {
    anchor.scrollIntoView({block: "center"});
  }
})();
