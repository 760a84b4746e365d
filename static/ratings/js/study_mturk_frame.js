/*
 * The landing page of an MTurk study when MTurk shows it in a frame: the browser may refuse the session
 * cookie there, so the study continues in a window of its own (a signed link), and this frame watches the
 * participant's status and submits the HIT to MTurk once the study gave a code.
 *
 * The study window tells this frame when the study is over (its end page posts a message to the window that
 * opened it, study_end_opener.js), and the frame then asks the status endpoint at once. The message only says "ask
 * now": the code and the ending always come from the status endpoint, so a forged message can at worst cause
 * one extra request. Polling on its own is the fallback for a study window that cannot tell (opened on another
 * device or by copying the link, the opener lost to a popup blocker or a browser's policy): slow, because every
 * waiting worker's frame polls and a crowd of them loaded the server (a poll every 5 s was 14 % of all requests
 * in a 300-participant run), and at once when the worker comes back to this tab, which is when an answer matters.
 */
(function () {
  "use strict";
  const panel = document.getElementById("mturk-frame");
  if (!panel || window.self === window.top) return;
  const FALLBACK_MS = 30000; // the poll while no message comes
  const RETRY_MS = 10000; // after a failed poll, doubled on each failure in a row (a struggling server gets air)
  const RETRY_MAX_MS = 120000;
  panel.hidden = false;
  const startForm = document.getElementById("start-form");
  if (startForm) startForm.hidden = true;
  const waiting = panel.querySelector(".mturk-waiting");
  const form = document.getElementById("mturk-submit");
  let timer = 0;
  let isDone = false;
  let isPolling = false;
  let isAskedAgain = false; // a reason to ask came while a poll was on its way (its answer may predate the end)
  let failures = 0;
  let isAway = false; // the worker left this tab or frame (for the study window, say) and may come back done

  function later(milliseconds) {
    window.clearTimeout(timer);
    timer = window.setTimeout(poll, milliseconds);
  }

  function finish(status) {
    isDone = true;
    window.clearTimeout(timer);
    // Declined, study full, screened out, left or timed out: the worker returns the HIT (never submitted).
    if (status.return_hit || !status.code) {
      waiting.textContent = "The study has ended: please return the HIT (do not submit it).";
      return;
    }
    form.querySelector("[name=completion_code]").value = status.code;
    waiting.textContent = "Done: submitting the HIT…";
    form.submit();
  }

  function poll() {
    if (isDone) return;
    if (isPolling) {
      isAskedAgain = true;
      return;
    }
    isPolling = true;
    fetch(panel.dataset.statusUrl, {credentials: "omit", cache: "no-store"})
      .then((response) => {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then((status) => {
        isPolling = false;
        failures = 0;
        if (status.finished) {
          finish(status);
        } else if (isAskedAgain) {
          isAskedAgain = false;
          poll();
        } else {
          later(FALLBACK_MS);
        }
      })
      .catch(() => {
        isPolling = false;
        isAskedAgain = false;
        failures += 1;
        later(Math.min(RETRY_MS * 2 ** (failures - 1), RETRY_MAX_MS));
      });
  }

  // Coming back (the tab shown again, or focus back in this frame after it went elsewhere) asks once; the
  // first focus, the click on "Open the study", does not: nothing can have ended yet.
  function pollOnReturn() {
    if (!isAway) return;
    isAway = false;
    poll();
  }

  function away() {
    isAway = true;
  }

  window.addEventListener("message", (event) => {
    // Only this site's own pages (the study window this frame opened is one); anything else is ignored.
    if (event.origin !== window.location.origin) return;
    if (!event.data || event.data.type !== "study-ended") return;
    poll();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") pollOnReturn();
    else away();
  });
  window.addEventListener("blur", away);
  window.addEventListener("focus", pollOnReturn);
  poll();
})();
