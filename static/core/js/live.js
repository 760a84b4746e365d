/*
 * Pages that refresh themselves: the one mechanism every page uses that shows work done elsewhere (a worker's
 * metric run, a recomputed dashboard, another person's submission). Loaded on every page by base.html; it does
 * nothing on a page without the element below.
 *
 * Markup (templates/core/_live.html renders the first line from the view's `live` context):
 *   <div id="live" data-live-status="STATUS_URL" data-live-version="VERSION" hidden></div>
 *   <section id="some-id" data-live-region> ... </section>     (each part that changes; ids unique on the page)
 *
 * Status convention (accounts/live.py): GET STATUS_URL answers JSON
 *   {"version": "...", "busy": true|false, "refresh": null | "URL"}
 * - version: changes whenever the page would render differently;
 * - busy: work is under way that will change the page soon: ask again in 1.5 s (otherwise in 10 s);
 * - refresh: the page's numbers are stale and nobody is recomputing them: POST there once (CSRF token of the page).
 *
 * When the version differs from the page's, the page is fetched again and each [data-live-region] is replaced by
 * the element with the same id; when the two pages do not have the same regions (e.g. "computing for the first
 * time" became the dashboard), the page reloads. Nothing is polled while the tab is hidden. After an update the
 * document gets a "live:updated" event (page scripts that fill a region re-run on it) and <div id="live"> gets
 * data-live-updates (how many times it was updated: tests wait on it).
 */
(function () {
  "use strict";

  const marker = document.getElementById("live");
  if (!marker || !marker.dataset.liveStatus) return;

  const BUSY_MS = 1500;
  const IDLE_MS = 10000;
  const RETRY_MS = 5000;
  let version = marker.dataset.liveVersion || "";
  let refreshedFor = null; // the version a refresh was requested for (one POST per stale state)
  let timer = null;

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const cookie = document.cookie.match(/(?:^|; )csrftoken=([^;]*)/);
    return cookie ? decodeURIComponent(cookie[1]) : "";
  }

  function regionIds(root) {
    return Array.from(root.querySelectorAll("[data-live-region]")).map((element) => element.id).sort().join(" ");
  }

  async function swapRegions() {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    if (regionIds(fresh) !== regionIds(document)) {
      window.location.reload();
      return false;
    }
    const focused = document.activeElement && document.activeElement.id;
    fresh.querySelectorAll("[data-live-region]").forEach((region) => {
      const current = document.getElementById(region.id);
      if (current) current.replaceWith(document.importNode(region, true));
    });
    const freshMarker = fresh.getElementById("live");
    if (freshMarker) version = freshMarker.dataset.liveVersion || version;
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus({ preventScroll: true });
    marker.dataset.liveVersion = version;
    marker.dataset.liveUpdates = String(Number(marker.dataset.liveUpdates || 0) + 1);
    const announcement = document.getElementById("live-announcement");
    if (announcement) announcement.textContent = `Updated at ${new Date().toLocaleTimeString()}`;
    document.dispatchEvent(new CustomEvent("live:updated"));
    return true;
  }

  async function check() {
    timer = null;
    if (document.hidden) return; // resumed by visibilitychange
    let delay = IDLE_MS;
    try {
      const response = await fetch(marker.dataset.liveStatus, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const status = await response.json();
      if (status.refresh && refreshedFor !== status.version) {
        refreshedFor = status.version;
        // Not awaited: where the computation runs in the request (eager Celery in tests, a page computing inline)
        // the POST lasts as long as it does, and the page keeps polling meanwhile, showing each part once stored.
        fetch(status.refresh, { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" } })
          .catch(() => {}); // a lost request shows as a computation never begun: the status says so and asks again
      }
      if (status.version !== version && !(await swapRegions())) return;
      delay = status.busy ? BUSY_MS : IDLE_MS;
      marker.removeAttribute("data-live-error");
    } catch (failure) {
      marker.dataset.liveError = failure.message; // the network or the server hiccuped: try again a little later
      delay = RETRY_MS;
    }
    schedule(delay);
  }

  function schedule(delay) {
    if (timer === null) timer = setTimeout(check, delay);
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      clearTimeout(timer);
      timer = null;
      schedule(0);
    }
  });
  schedule(marker.dataset.liveBusy === "true" ? 300 : BUSY_MS);
})();
