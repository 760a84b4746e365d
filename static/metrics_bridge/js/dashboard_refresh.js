// Dashboards whose cached numbers are out of date (or not computed yet): ask the server to compute the
// current ones (inline, or queued for a Celery worker: then poll until they are ready), then reload. The
// page itself answered at once with what it had. While a run started from the page is going, its end
// reloads the page instead; repeated refreshes back off (data changing fast, e.g. a run by someone else).
(function () {
  const box = document.getElementById("dashboard-stale");
  if (!box) return;
  const run = document.getElementById("dashboard-run");
  if (run && !["done", "done_with_errors", "failed", "cancelled"].includes(run.dataset.status)) return;
  const url = box.dataset.refreshUrl;
  const token = box.querySelector("input[name=csrfmiddlewaretoken]").value;
  const error = document.getElementById("dashboard-stale-error");
  const memory = `dashboard-refresh:${url}`;
  const last = JSON.parse(sessionStorage.getItem(memory) || '{"at": 0, "count": 0}');
  const recent = Date.now() - last.at < 60000;
  const count = recent ? last.count + 1 : 0;
  const wait = recent ? Math.min(30000, 1000 * 2 ** count) : 0;

  function reload() {
    sessionStorage.setItem(memory, JSON.stringify({ at: Date.now(), count }));
    window.location.reload();
  }
  async function ask(method) {
    const response = await fetch(url, { method, headers: { "X-CSRFToken": token, Accept: "application/json" } });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    return response.json();
  }
  async function poll() {
    const state = await ask("GET");
    if (state.fresh) reload();
    else setTimeout(() => poll().catch(fail), 2000);
  }
  function fail(failure) {
    error.textContent = `Could not recompute: ${failure.message}. Reload the page to try again.`;
  }
  setTimeout(() => {
    ask("POST")
      .then((state) => (state.fresh ? reload() : setTimeout(() => poll().catch(fail), 2000)))
      .catch(fail);
  }, wait);
})();
