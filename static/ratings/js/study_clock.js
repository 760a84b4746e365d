/*
 * The countdown on every page of a crowd participant. The server says how many seconds are left (the truth);
 * this counts them down on the browser's own clock from the moment the page arrived, so a wrong clock setting on
 * the participant's computer changes nothing. When the time is up on a rating page, an answer that is complete
 * (every question answered, the clip heard) is submitted, as the participant would have done; anything else is
 * saved as a draft (the server keeps it in the study's record, not counted). Then the page goes to the study,
 * which ends the participation and shows the end page with what to do next.
 */
(function () {
  "use strict";
  const clock = document.getElementById("study-clock");
  if (!clock) return;
  const time = document.getElementById("study-clock-time");
  const note = document.getElementById("study-clock-note");
  const secondsAtLoad = Math.max(0, parseInt(clock.dataset.secondsLeft, 10) || 0);
  const endsAt = Date.now() + secondsAtLoad * 1000;
  const WARN_SECONDS = [300, 60]; // said aloud (aria-live) once each, not every second
  const warned = WARN_SECONDS.filter((mark) => secondsAtLoad <= mark);
  let isOver = false;

  function label(seconds) {
    const minutes = Math.floor(seconds / 60);
    const rest = seconds % 60;
    return minutes + ":" + (rest < 10 ? "0" : "") + rest;
  }

  function rating() {
    const form = document.getElementById("rating-form");
    return form && form.dataset.draftUrl ? form : null;
  }

  /* Every radio question answered and the submit button enabled (the server accepted the listening). */
  function isComplete(form) {
    const submit = document.getElementById("submit-button");
    if (!submit || submit.disabled) return false;
    const names = new Set(Array.from(form.querySelectorAll("input[type=radio]")).map((input) => input.name));
    return Array.from(names).every((name) => form.querySelector('input[name="' + name + '"]:checked'));
  }

  function draftSave(form) {
    const fields = {};
    new FormData(form).forEach((value, key) => {
      if (!["csrfmiddlewaretoken", "version", "replacing"].includes(key)) fields[key] = value;
    });
    const csrf = form.querySelector("[name=csrfmiddlewaretoken]");
    return fetch(form.dataset.draftUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf ? csrf.value : ""},
      body: JSON.stringify({version: Number(form.querySelector("[name=version]").value), fields: fields}),
    }).catch(() => null);
  }

  function leave() {
    window.location.assign(clock.dataset.expiredUrl);
  }

  function expire(wasRunning) {
    isOver = true;
    clock.classList.add("is-over");
    time.textContent = "0:00";
    const form = rating();
    // Submitted only when the countdown ran out on this page: a page opened after the end never sends anything.
    if (form && wasRunning && isComplete(form)) {
      note.textContent = "Time is up: your answer is being submitted.";
      form.requestSubmit(document.getElementById("submit-button"));
      window.setTimeout(leave, 10000); // the submission's own page normally comes first
      return;
    }
    note.textContent = "Time is up.";
    if (form) {
      note.textContent = "Time is up: your unfinished answer is kept as a draft.";
      draftSave(form).then(() => window.setTimeout(leave, 1000));
    } else {
      window.setTimeout(leave, 1000);
    }
  }

  function tick() {
    if (isOver) return;
    const seconds = Math.max(0, Math.ceil((endsAt - Date.now()) / 1000));
    time.textContent = label(seconds);
    clock.classList.toggle("is-short", seconds <= 300);
    const mark = WARN_SECONDS.find((value) => seconds <= value && !warned.includes(value));
    if (mark) {
      warned.push(mark);
      note.textContent = mark >= 60 ? Math.round(mark / 60) + " minute" + (mark >= 120 ? "s" : "") + " left." : "";
    }
    if (seconds <= 0) {
      expire(secondsAtLoad > 0);
      return;
    }
    window.setTimeout(tick, 250);
  }

  /*
   * The heartbeat: while the participant uses this page (a key, a touch, the mouse, scrolling or audio playing
   * within the inactivity window), the page tells the server every few seconds, so reading and thinking count as
   * work. A closed tab, or an open one nobody uses, stops beating and its share goes back to the others.
   */
  function heartbeat() {
    const url = clock.dataset.aliveUrl;
    const every = (parseInt(clock.dataset.heartbeatSeconds, 10) || 0) * 1000;
    const idle = (parseInt(clock.dataset.idleSeconds, 10) || 0) * 1000;
    if (!url || !every) return;
    let lastUse = Date.now(); // the page's own request counted already
    const used = () => { lastUse = Date.now(); };
    ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "touchstart", "input"].forEach((name) =>
      window.addEventListener(name, used, {capture: true, passive: true}));
    ["play", "timeupdate"].forEach((name) => document.addEventListener(name, used, true)); // media events do not bubble
    window.setInterval(() => {
      if (isOver || Date.now() - lastUse > idle) return;
      fetch(url, {method: "POST", credentials: "same-origin", headers: {"X-CSRFToken": clock.dataset.csrf || ""}})
        .then((answer) => answer.ok ? answer.json() : null)
        .then((state) => { if (state && state.finished && !isOver) leave(); })
        .catch(() => null);
    }, every);
  }

  tick();
  heartbeat();
})();
