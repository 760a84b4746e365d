/*
 * Workbook upload: the rater list shows only the chosen campaign's raters (the server checks it too);
 * "create a new campaign" swaps the campaign list for a name field and lists every account.
 */
(function () {
  "use strict";

  const form = document.getElementById("upload-form");
  const campaign = form.querySelector('[name="campaign"]');
  const create = form.querySelector('[name="create_campaign"]');
  const existing = document.getElementById("existing-campaign");
  const fresh = document.getElementById("new-campaign");
  const rater = form.querySelector('[name="rater"]');

  function update() {
    const isNew = create.checked;
    existing.hidden = isNew;
    campaign.disabled = isNew;
    fresh.hidden = !isNew;
    const chosen = campaign.value;
    Array.from(rater.options).forEach((option) => {
      if (!option.value) return;
      const campaigns = (option.dataset.campaigns || "").trim().split(/\s+/);
      option.hidden = !isNew && !(chosen && campaigns.includes(chosen));
      option.disabled = option.hidden;
    });
    if (rater.selectedOptions.length && rater.selectedOptions[0].hidden) rater.value = "";
  }
  campaign.addEventListener("change", update);
  create.addEventListener("change", update);
  update();
})();
