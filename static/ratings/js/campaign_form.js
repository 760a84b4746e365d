/*
 * Campaign form: show only the fields of the chosen task type (the server ignores the other type's
 * fields anyway) and give the judgements-per-item field the default of the chosen type as placeholder.
 */
(function () {
  "use strict";

  const form = document.getElementById("campaign-form");
  const taskType = form.querySelector('[name="task_type"]');
  const judgements = form.querySelector('[name="judgements_per_item"]');
  const DEFAULTS = {pairwise: "4", thumbs: "3"};

  function show() {
    form.querySelectorAll("[data-task]").forEach((section) => {
      const visible = section.dataset.task === taskType.value;
      section.hidden = !visible;
      section.querySelectorAll("input, select, textarea").forEach((input) => { input.disabled = !visible; });
    });
    judgements.placeholder = DEFAULTS[taskType.value] || "";
  }
  taskType.addEventListener("change", show);
  show();
})();
