// Polls the run's progress until it ends, so admins see chunks complete without reloading.
(function () {
  const box = document.getElementById("run");
  if (!box) return;
  const url = box.dataset.progressUrl;
  const bar = document.getElementById("run-progress");
  const count = document.getElementById("run-count");
  const status = document.getElementById("run-status");
  const error = document.getElementById("run-error");
  const finished = ["done", "failed", "cancelled"];

  async function poll() {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const run = await response.json();
    bar.max = Math.max(run.total, 1);
    bar.value = run.done;
    count.textContent = `${run.done}/${run.total}`;
    status.textContent = run.status;
    status.className = `status status-${run.status}`;
    error.textContent = run.error;
    if (!finished.includes(run.status)) setTimeout(poll, 1500);
  }
  if (!finished.includes(status.textContent.trim().toLowerCase())) setTimeout(poll, 1000);
})();
