/*
 * Headphone check page: a calibration sound, then trials whose sound the server gives out once per
 * attempt. Each trial's WAV is fetched once and played with the Web Audio API (an <audio> element may
 * request a file several times, which the server would refuse). A trial that was already fetched
 * (reload, another tab: the server answers 410) counts as played. Starting a trial stops whatever else
 * plays, and every button ends in a settled state ("Played" or playable again), never stuck.
 * The page does not know the right answers: the server scores them.
 */
(function () {
  "use strict";

  const form = document.getElementById("headphone-form");
  const submit = document.getElementById("headphone-submit");
  const calibrationButton = document.getElementById("calibration-button");
  const calibration = document.getElementById("calibration-audio");
  const trials = Array.from(form.querySelectorAll(".trial"));
  const PLAY_LABEL = "\u25B6 Play the three sounds";
  let context = null;
  let current = null; // {stop: function} of whatever is playing

  function audioContext() {
    if (!context) context = new (window.AudioContext || window.webkitAudioContext)();
    return context;
  }

  function stopCurrent() {
    if (current) {
      const playing = current;
      current = null;
      playing.stop();
    }
  }

  function updateSubmit() {
    submit.disabled = !trials.every((trial) => trial.querySelector("input:checked"));
  }

  // --- calibration (may be played as often as wanted) ------------------------------------------
  function calibrationIdle() { calibrationButton.innerHTML = "&#9654; Play calibration sound again"; }
  calibrationButton.addEventListener("click", () => {
    if (!calibration.paused) {
      calibration.pause();
      return;
    }
    stopCurrent();
    current = {stop: () => calibration.pause()};
    calibration.currentTime = 0;
    calibration.play().catch(calibrationIdle);
  });
  calibration.addEventListener("play", () => { calibrationButton.innerHTML = "&#10074;&#10074; Stop"; });
  calibration.addEventListener("pause", calibrationIdle);
  calibration.addEventListener("ended", calibrationIdle);

  // --- trials -------------------------------------------------------------------------------------
  function markPlayed(trial, message) {
    const button = trial.querySelector(".trial-play");
    button.disabled = true;
    button.textContent = "Played";
    trial.dataset.played = "true";
    trial.classList.add("is-played");
    trial.querySelectorAll("input").forEach((input) => { input.disabled = false; });
    if (message) trial.querySelector(".trial-status").textContent = message;
  }

  function markPlayable(trial, message) {
    const button = trial.querySelector(".trial-play");
    button.disabled = false;
    button.textContent = PLAY_LABEL;
    trial.querySelector(".trial-status").textContent = message || "";
  }

  function play(trial) {
    const button = trial.querySelector(".trial-play");
    stopCurrent();
    button.disabled = true;
    button.textContent = "Loading…";
    const ctx = audioContext();
    fetch(button.dataset.url, {credentials: "same-origin", cache: "no-store"})
      .then((response) => {
        if (response.status === 410) {
          markPlayed(trial, "Already played (each trial plays once).");
          return null;
        }
        if (!response.ok) throw new Error("HTTP " + response.status);
        // From here on the server counts the trial as played, whatever happens in the browser.
        trial.dataset.played = "true";
        return response.arrayBuffer().then((data) => ctx.decodeAudioData(data));
      })
      .then((buffer) => {
        if (!buffer) return;
        stopCurrent();
        const source = ctx.createBufferSource();
        source.buffer = buffer;
        source.connect(ctx.destination);
        let finished = false;
        const finish = (message) => {
          if (finished) return;
          finished = true;
          if (current && current.source === source) current = null;
          markPlayed(trial, message);
        };
        source.onended = () => finish("");
        current = {source: source, stop: () => { finish("Stopped because another sound started."); source.stop(); }};
        button.textContent = "Playing…";
        return ctx.resume().then(() => source.start());
      })
      .catch(() => {
        if (trial.dataset.played === "true") markPlayed(trial, "The sound could not be played; answer as best you can.");
        else markPlayable(trial, "Could not load the sound; try again.");
      });
  }

  trials.forEach((trial) => {
    trial.querySelector(".trial-play").addEventListener("click", () => play(trial));
    trial.querySelectorAll("input").forEach((input) => input.addEventListener("change", updateSubmit));
  });
  updateSubmit();
})();
