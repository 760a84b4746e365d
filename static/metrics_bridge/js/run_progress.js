// Polls the run's progress until it ends, so admins see chunks complete without reloading.
(function () {
  const box = document.getElementById("run");
  if (!box) return;
  const url = box.dataset.progressUrl;
  const bar = document.getElementById("run-progress");
  const count = document.getElementById("run-count");
  const status = document.getElementById("run-status");
  const error = document.getElementById("run-error");
  const failed = document.getElementById("run-failed");
  const noWorker = document.getElementById("run-no-worker");
  const finished = ["done", "done_with_errors", "failed", "cancelled"];

  async function poll() {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const run = await response.json();
    bar.max = Math.max(run.total, 1);
    bar.value = run.done;
    count.textContent = `${run.done}/${run.total}`;
    status.textContent = run.status_label;
    status.className = `status status-${run.status}`;
    status.dataset.status = run.status;
    error.textContent = run.error;
    failed.textContent = run.failed ? `(${run.failed} failed)` : "";
    const over = finished.includes(run.status);
    noWorker.hidden = over || run.workers > 0;
    if (!over) setTimeout(poll, 1000);
  }
  if (!finished.includes(status.dataset.status)) setTimeout(poll, 500);
})();
