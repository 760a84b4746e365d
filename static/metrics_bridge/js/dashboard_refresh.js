// Dashboards whose cached numbers are out of date (or not computed yet): ask the server to compute the
// current ones, then reload. The page itself answered at once with what it had. While a run started from
// the page is going, its end reloads the page instead; repeated refreshes back off (data changing fast).
(function () {
  const box = document.getElementById("dashboard-stale");
  if (!box) return;
  const run = document.getElementById("dashboard-run");
  if (run && !["done", "failed", "cancelled"].includes(run.dataset.status)) return;
  const token = box.querySelector("input[name=csrfmiddlewaretoken]").value;
  const error = document.getElementById("dashboard-stale-error");
  const memory = `dashboard-refresh:${box.dataset.refreshUrl}`;
  const last = JSON.parse(sessionStorage.getItem(memory) || '{"at": 0, "count": 0}');
  const recent = Date.now() - last.at < 60000;
  const count = recent ? last.count + 1 : 0;
  const wait = recent ? Math.min(30000, 1000 * 2 ** count) : 0;

  setTimeout(() => {
    fetch(box.dataset.refreshUrl, { method: "POST", headers: { "X-CSRFToken": token, Accept: "application/json" } })
      .then((response) => {
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        sessionStorage.setItem(memory, JSON.stringify({ at: Date.now(), count }));
        window.location.reload();
      })
      .catch((failure) => {
        error.textContent = `Could not recompute: ${failure.message}. Reload the page to try again.`;
      });
  }, wait);
})();
