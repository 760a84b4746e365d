/*
 * The study page for admins: copy buttons for the links and codes, and the live part (counts, coverage,
 * participants) refreshed every few seconds from its own URL while the page is visible.
 */
(function () {
  "use strict";
  document.querySelectorAll("[data-copy]").forEach((button) => {
    button.addEventListener("click", () => {
      const field = document.getElementById(button.dataset.copy);
      field.select();
      const done = () => { button.textContent = "Copied"; window.setTimeout(() => { button.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(field.value).then(done, () => document.execCommand("copy") && done());
      else if (document.execCommand("copy")) done();
    });
  });
  const live = document.getElementById("study-live");
  if (!live) return;
  const REFRESH_MS = 5000;
  function refresh() {
    if (document.hidden) {
      window.setTimeout(refresh, REFRESH_MS);
      return;
    }
    fetch(live.dataset.url, {credentials: "same-origin", cache: "no-store"})
      .then((response) => (response.ok ? response.text() : null))
      .then((html) => {
        if (html !== null) {
          live.innerHTML = html;
          live.dataset.refreshedAt = String(Date.now());
        }
      })
      .finally(() => window.setTimeout(refresh, REFRESH_MS));
  }
  window.setTimeout(refresh, REFRESH_MS);
})();
