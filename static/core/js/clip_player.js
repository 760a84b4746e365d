/*
 * ClipPlayer: the reusable audio player of rating, annotation and review pages.
 *
 * Markup: templates/core/clip_player.html. Usage:
 *   const player = new ClipPlayer(element, {keyboard: true});
 *   element.addEventListener("clipplayer:listened", (event) => ...);
 *
 * - Waveform drawn on a canvas from the stored peaks (values in [0, 1]), played part in
 *   colour, a time cursor; click the waveform to seek.
 * - Play/pause with the button or the space bar (keyboard: true; ignored while typing in a
 *   text field). The first play always follows a user gesture (browser autoplay policy).
 * - Volume slider, remembered in localStorage.
 * - Listening rule: "clipplayer:listened" fires once when the clip has been heard to its end
 *   (at least 90 % of it actually played, so seeking to the end does not count), or, when
 *   data-must-listen-seconds > 0 and shorter than the clip, after that many seconds played.
 *   Other events: clipplayer:play, clipplayer:pause, clipplayer:ended, clipplayer:error.
 */
(function () {
  "use strict";

  const HEARD_FRACTION = 0.9;
  const HEARD_SLACK_SECONDS = 0.3;
  const MAX_STEP_SECONDS = 1.0; // bigger jumps between time updates are seeks, not listening
  const VOLUME_KEY = "clipPlayerVolume";

  // Tenths of a second for short clips, where whole seconds say little ("0:01 / 0:01").
  function formatTime(seconds, withTenths) {
    if (!isFinite(seconds) || seconds < 0) seconds = 0;
    const minutes = Math.floor(seconds / 60);
    const rest = seconds - minutes * 60;
    const shown = withTenths ? rest.toFixed(1).padStart(4, "0") : String(Math.floor(rest)).padStart(2, "0");
    return minutes + ":" + shown;
  }

  function handlesSpaceItself(target) {
    if (!target) return false;
    // A focused button already reacts to the space bar itself (the Play button toggles).
    if (target.isContentEditable || ["TEXTAREA", "SELECT", "BUTTON"].includes(target.tagName)) return true;
    if (target.tagName !== "INPUT") return false;
    return !["radio", "checkbox", "range", "button", "submit"].includes(target.type);
  }

  class ClipPlayer {
    constructor(root, options) {
      options = options || {};
      this.root = root;
      this.audio = root.querySelector("audio");
      this.canvas = root.querySelector(".clip-player-waveform");
      this.button = root.querySelector(".clip-player-toggle");
      this.timeLabel = root.querySelector(".clip-player-time");
      this.volume = root.querySelector(".clip-player-volume input");
      this.status = root.querySelector(".clip-player-status");
      this.peaks = this._readPeaks();
      this.knownDuration = parseFloat(root.dataset.duration) || 0;
      this.mustListenSeconds = parseFloat(root.dataset.mustListenSeconds) || 0;
      this.listenedSeconds = 0;
      this.lastTime = null;
      this.isListened = false;
      this.frame = null;
      if (!this.audio) return; // no audio: the template shows a message instead
      this._bind(options);
      this._restoreVolume();
      this.draw();
      this._updateTime();
    }

    _readPeaks() {
      const script = document.getElementById(this.root.dataset.peaksId);
      try {
        const peaks = script ? JSON.parse(script.textContent) : [];
        return Array.isArray(peaks) ? peaks.map(Number) : [];
      } catch (error) {
        return [];
      }
    }

    get duration() {
      return isFinite(this.audio.duration) && this.audio.duration > 0 ? this.audio.duration : this.knownDuration;
    }

    toggle() {
      if (this.audio.paused) this.play();
      else this.audio.pause();
    }

    play() {
      const started = this.audio.play();
      if (started && started.catch) {
        started.catch((error) => {
          this._say(error.name === "NotAllowedError" ? "Press Play (or the space bar) to start." : "The audio could not be played.");
        });
      }
    }

    seek(seconds) {
      this.lastTime = null; // a jump is not listening
      this.audio.currentTime = Math.max(0, Math.min(seconds, this.duration || 0));
      this.draw();
      this._updateTime();
    }

    /* A click on the waveform seeks there (the annotation player replaces this with its own pointer handling). */
    _waveformClick(event) {
      const box = this.canvas.getBoundingClientRect();
      this.seek(((event.clientX - box.left) / box.width) * this.duration);
    }

    markListened(message) {
      if (this.isListened) return;
      this.isListened = true;
      this.root.classList.add("is-listened");
      this._say(message || "Clip heard: you can submit.");
    }

    _bind(options) {
      this.button.addEventListener("click", () => this.toggle());
      this.canvas.addEventListener("click", (event) => this._waveformClick(event));
      this.volume.addEventListener("input", () => {
        this.audio.volume = Number(this.volume.value);
        try { localStorage.setItem(VOLUME_KEY, this.volume.value); } catch (error) { /* private mode */ }
      });
      this.audio.addEventListener("play", () => {
        this.button.innerHTML = "&#10074;&#10074; Pause";
        this.lastTime = this.audio.currentTime;
        this._emit("play");
        this._animate();
      });
      this.audio.addEventListener("pause", () => {
        this.button.innerHTML = "&#9654; Play";
        this._count();
        this.lastTime = null;
        this._emit("pause");
      });
      this.audio.addEventListener("seeking", () => { this.lastTime = null; });
      this.audio.addEventListener("seeked", () => { if (!this.audio.paused) this.lastTime = this.audio.currentTime; });
      this.audio.addEventListener("timeupdate", () => { this._count(); this._updateTime(); });
      this.audio.addEventListener("loadedmetadata", () => { this._updateTime(); this.draw(); });
      this.audio.addEventListener("ended", () => this._ended());
      this.audio.addEventListener("error", () => {
        this._say("The audio could not be loaded.");
        this._emit("error");
      });
      window.addEventListener("resize", () => this.draw());
      if (options.keyboard) {
        document.addEventListener("keydown", (event) => {
          if (event.code !== "Space" || event.ctrlKey || event.metaKey || event.altKey || handlesSpaceItself(event.target)) return;
          event.preventDefault(); // no page scroll, no radio toggle
          this.toggle();
        });
      }
    }

    _count() {
      const now = this.audio.currentTime;
      if (this.lastTime !== null && !this.audio.seeking) {
        const step = now - this.lastTime;
        if (step > 0 && step < MAX_STEP_SECONDS) this.listenedSeconds += step;
      }
      this.lastTime = this.audio.paused ? null : now;
      const threshold = this.mustListenSeconds;
      if (!this.isListened && threshold > 0 && threshold < this.duration && this.listenedSeconds >= threshold) {
        this._emit("listened", {listenedSeconds: this.listenedSeconds, duration: this.duration});
      }
    }

    _ended() {
      this._count();
      this.lastTime = null;
      this.button.innerHTML = "&#9654; Play";
      this.draw();
      this._emit("ended", {listenedSeconds: this.listenedSeconds});
      if (this.isListened) return;
      if (this.listenedSeconds >= this.duration * HEARD_FRACTION - HEARD_SLACK_SECONDS) {
        this._emit("listened", {listenedSeconds: this.listenedSeconds, duration: this.duration});
      } else {
        this._say("Please listen to the whole clip (skipping ahead does not count).");
      }
    }

    _emit(name, detail) {
      this.root.dispatchEvent(new CustomEvent("clipplayer:" + name, {detail: detail || {}, bubbles: true}));
    }

    _say(text) {
      if (this.status) this.status.textContent = text;
    }

    _restoreVolume() {
      let stored = null;
      try { stored = localStorage.getItem(VOLUME_KEY); } catch (error) { /* private mode */ }
      if (stored !== null && !isNaN(Number(stored))) {
        this.volume.value = stored;
        this.audio.volume = Number(stored);
      }
    }

    _updateTime() {
      const withTenths = this.duration > 0 && this.duration < 10;
      this.timeLabel.textContent = formatTime(this.audio.currentTime, withTenths) + " / " + formatTime(this.duration, withTenths);
    }

    _animate() {
      if (this.frame) return;
      const step = () => {
        this.draw();
        this.frame = this.audio.paused ? null : requestAnimationFrame(step);
      };
      this.frame = requestAnimationFrame(step);
    }

    draw() {
      const canvas = this.canvas;
      const ratio = window.devicePixelRatio || 1;
      const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
      const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
      if (canvas.width !== width) canvas.width = width;
      if (canvas.height !== height) canvas.height = height;
      const context = canvas.getContext("2d");
      const styles = getComputedStyle(document.documentElement);
      const played = styles.getPropertyValue("--accent").trim() || "#2a62c9";
      const unplayed = "#9aa7b8";
      context.clearRect(0, 0, width, height);
      const middle = height / 2;
      const progress = this.duration ? this.audio.currentTime / this.duration : 0;
      const cursorX = Math.round(progress * width);
      const barWidth = Math.max(1, Math.round(2 * ratio));
      for (let x = 0; x < width; x += barWidth + 1) {
        let peak = 0.02;
        if (this.peaks.length) {
          const first = Math.floor((x / width) * this.peaks.length);
          const last = Math.max(first + 1, Math.floor(((x + barWidth) / width) * this.peaks.length));
          for (let index = first; index < last && index < this.peaks.length; index++) peak = Math.max(peak, this.peaks[index]);
        }
        const half = Math.max(1, peak * (middle - 2));
        context.fillStyle = x < cursorX ? played : unplayed;
        context.fillRect(x, middle - half, barWidth, half * 2);
      }
      context.fillStyle = "#1d2430";
      context.fillRect(Math.min(cursorX, width - 2), 0, Math.max(2, ratio), height);
    }
  }

  window.ClipPlayer = ClipPlayer;
})();
