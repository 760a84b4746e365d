// Dashboards: follow a metric run started from the page and reload the page (fresh numbers) once it ends.
(function () {
  const box = document.getElementById("dashboard-run");
  if (!box) return;
  const finished = ["done", "done_with_errors", "failed", "cancelled"];
  const bar = document.getElementById("dashboard-run-progress");
  const count = document.getElementById("dashboard-run-count");
  const status = document.getElementById("dashboard-run-status");
  const error = document.getElementById("dashboard-run-error");
  const failed = document.getElementById("dashboard-run-failed");
  const noWorker = document.getElementById("dashboard-run-no-worker");
  if (finished.includes(box.dataset.status)) return;

  async function poll() {
    let run;
    try {
      const response = await fetch(box.dataset.progressUrl, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(response.statusText);
      run = await response.json();
    } catch (failure) {
      setTimeout(poll, 3000);
      return;
    }
    bar.max = Math.max(run.total, 1);
    bar.value = run.total ? run.done : 1;
    count.textContent = `${run.done}/${run.total}`;
    status.textContent = run.status_label;
    status.className = `status status-${run.status}`;
    error.textContent = run.error;
    failed.textContent = run.failed ? `(${run.failed} failed)` : "";
    noWorker.hidden = finished.includes(run.status) || run.workers > 0;
    if (finished.includes(run.status)) {
      box.dataset.status = run.status;
      setTimeout(() => window.location.reload(), 600);
    } else {
      setTimeout(poll, 1000);
    }
  }
  setTimeout(poll, 500);
})();
