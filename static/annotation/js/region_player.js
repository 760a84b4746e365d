/*
 * RegionPlayer: the shared ClipPlayer (static/core/js/clip_player.js, unchanged) plus what annotators need:
 * drag on the waveform (or spectrogram) to select a region, play / loop the selection, playback speed
 * 0.5-2x, and a spectrogram computed on the server drawn under the waveform with the same cursor.
 *
 *   const player = new RegionPlayer(element, {keyboard: true, spectrogramUrl: "..."});
 *   player.selection            // {start, end} in seconds, or null
 *   element.addEventListener("regionplayer:selection", (event) => event.detail.selection);
 *   player.slower() / faster() / toggleLoop() / toggleSpectrogram() / clearSelection()
 *
 * A click (no drag) still seeks, as in ClipPlayer. With a selection, Play starts at its beginning and
 * stops at its end, or loops it when Loop is on.
 */
window.RegionPlayer = (function () {
  "use strict";

  const SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 2];
  const DRAG_PIXELS = 4;
  const SPECTROGRAM_KEY = "regionPlayerSpectrogram";

  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (text) node.textContent = text;
    return node;
  }

  class RegionPlayer extends window.ClipPlayer {
    constructor(root, options) {
      super(root, options);
      if (!this.audio) return;
      options = options || {};
      this.selection = null;
      this.loop = false;
      this.drag = null;
      this.suppressSeek = false;
      this.image = null;
      this._scalePeaks();
      this._buildControls();
      this._buildSpectrogram(options.spectrogramUrl);
      this._bindSelection(this.canvas);
      if (this.spectrogramCanvas) this._bindSelection(this.spectrogramCanvas);
      this.audio.preservesPitch = true;
      this.draw();
    }

    /* Quiet clips would draw as a flat line: scale the drawing (not the sound) to the loudest peak. */
    _scalePeaks() {
      const top = this.peaks.reduce((highest, peak) => Math.max(highest, peak), 0);
      if (top > 0 && top < 0.6) {
        this.peaks = this.peaks.map((peak) => (peak / top) * 0.9);
        this.canvas.title = "Waveform scaled ×" + (0.9 / top).toFixed(1) + " for display";
      }
    }

    // -- controls ---------------------------------------------------------------------------
    _buildControls() {
      const controls = this.root.querySelector(".clip-player-controls");
      const volume = controls.querySelector(".clip-player-volume");
      const speedLabel = element("label", {class: "region-player-speed"}, "Speed ");
      this.speedSelect = element("select", {"aria-label": "Playback speed ([ and ])"});
      SPEEDS.forEach((speed) => {
        const option = element("option", {value: String(speed)}, speed + "×");
        if (speed === 1) option.selected = true;
        this.speedSelect.appendChild(option);
      });
      this.speedSelect.addEventListener("change", () => this.setSpeed(Number(this.speedSelect.value)));
      speedLabel.appendChild(this.speedSelect);
      this.loopButton = element("button", {type: "button", class: "region-player-loop", "aria-pressed": "false", title: "Loop the selection (l)"}, "Loop");
      this.loopButton.addEventListener("click", () => this.toggleLoop());
      this.selectionLabel = element("span", {class: "region-player-selection muted", "aria-live": "polite"}, "Drag on the waveform to select");
      controls.insertBefore(speedLabel, volume);
      controls.insertBefore(this.loopButton, volume);
      controls.insertBefore(this.selectionLabel, volume);
    }

    _buildSpectrogram(url) {
      if (!url) return;
      this.spectrogramButton = element("button", {type: "button", class: "region-player-spectrogram-toggle", "aria-pressed": "true", title: "Show or hide the spectrogram (g)"}, "Spectrogram");
      this.root.querySelector(".clip-player-controls").insertBefore(this.spectrogramButton, this.root.querySelector(".clip-player-volume"));
      this.spectrogramButton.addEventListener("click", () => this.toggleSpectrogram());
      this.spectrogramCanvas = element("canvas", {class: "clip-player-spectrogram", height: "120", role: "img", "aria-label": "Spectrogram (low frequencies at the bottom): drag to select, click to seek"});
      this.canvas.insertAdjacentElement("afterend", this.spectrogramCanvas);
      this.spectrogramCanvas.addEventListener("click", (event) => {
        const box = this.spectrogramCanvas.getBoundingClientRect();
        this.seek(((event.clientX - box.left) / box.width) * this.duration);
      });
      this.image = new Image();
      this.image.addEventListener("load", () => this.draw());
      this.image.addEventListener("error", () => this._say("The spectrogram could not be loaded."));
      this.image.src = url;
      let hidden = false;
      try { hidden = localStorage.getItem(SPECTROGRAM_KEY) === "hidden"; } catch (error) { /* private mode */ }
      if (hidden) this.toggleSpectrogram();
    }

    toggleSpectrogram() {
      if (!this.spectrogramCanvas) return;
      const show = this.spectrogramCanvas.hidden;
      this.spectrogramCanvas.hidden = !show;
      this.spectrogramButton.setAttribute("aria-pressed", String(show));
      try { localStorage.setItem(SPECTROGRAM_KEY, show ? "shown" : "hidden"); } catch (error) { /* ignore */ }
      this.draw();
    }

    setSpeed(speed) {
      this.audio.playbackRate = speed;
      this.speedSelect.value = String(speed);
    }

    slower() {
      const index = Math.max(0, SPEEDS.indexOf(this.audio.playbackRate) - 1);
      this.setSpeed(SPEEDS[index]);
    }

    faster() {
      const index = SPEEDS.indexOf(this.audio.playbackRate);
      this.setSpeed(SPEEDS[Math.min(SPEEDS.length - 1, index < 0 ? 2 : index + 1)]);
    }

    toggleLoop() {
      this.loop = !this.loop;
      this.loopButton.setAttribute("aria-pressed", String(this.loop));
      this.loopButton.classList.toggle("is-on", this.loop);
    }

    // -- selection --------------------------------------------------------------------------
    _secondsAt(canvas, clientX) {
      const box = canvas.getBoundingClientRect();
      const fraction = Math.min(1, Math.max(0, (clientX - box.left) / box.width));
      return fraction * (this.duration || 0);
    }

    _bindSelection(canvas) {
      canvas.addEventListener("mousedown", (event) => {
        if (event.button !== 0) return;
        this.drag = {canvas: canvas, startX: event.clientX, start: this._secondsAt(canvas, event.clientX), moved: false};
      });
      window.addEventListener("mousemove", (event) => {
        if (!this.drag) return;
        if (Math.abs(event.clientX - this.drag.startX) < DRAG_PIXELS && !this.drag.moved) return;
        this.drag.moved = true;
        const here = this._secondsAt(this.drag.canvas, event.clientX);
        this.setSelection(Math.min(this.drag.start, here), Math.max(this.drag.start, here), {quiet: true});
      });
      window.addEventListener("mouseup", () => {
        if (!this.drag) return;
        if (this.drag.moved) {
          this.suppressSeek = true; // the click that ends a drag is not a seek
          setTimeout(() => { this.suppressSeek = false; }, 0); // (no click comes when the drag ended elsewhere)
          if (this.selection) this.seek(this.selection.start, {force: true});
          this._emitSelection();
        }
        this.drag = null;
      });
    }

    setSelection(start, end, options) {
      const duration = this.duration || 0;
      start = Math.max(0, Math.min(start, duration));
      end = Math.max(start, Math.min(end, duration));
      this.selection = end - start >= 0.01 ? {start: Math.round(start * 1000) / 1000, end: Math.round(end * 1000) / 1000} : null;
      this.selectionLabel.textContent = this.selection
        ? "Selection " + this.selection.start.toFixed(2) + "–" + this.selection.end.toFixed(2) + " s"
        : "Drag on the waveform to select";
      this.draw();
      if (!(options && options.quiet)) this._emitSelection();
    }

    clearSelection() {
      this.setSelection(0, 0);
    }

    _emitSelection() {
      this.root.dispatchEvent(new CustomEvent("regionplayer:selection", {detail: {selection: this.selection}, bubbles: true}));
    }

    seek(seconds, options) {
      if (this.suppressSeek && !(options && options.force)) {
        this.suppressSeek = false;
        return;
      }
      super.seek(seconds);
    }

    play() {
      const selection = this.selection;
      if (selection && (this.audio.currentTime < selection.start || this.audio.currentTime >= selection.end - 0.01)) {
        super.seek(selection.start);
      }
      super.play();
    }

    // -- drawing ----------------------------------------------------------------------------
    draw() {
      super.draw();
      if (this.selection === undefined) return; // called by ClipPlayer's constructor, before ours ran
      this._keepInSelection();
      this._shade(this.canvas);
      this._drawSpectrogram();
    }

    _keepInSelection() {
      const selection = this.selection;
      if (!selection || this.audio.paused || this.drag) return;
      if (this.audio.currentTime >= selection.end) {
        if (this.loop) super.seek(selection.start);
        else {
          this.audio.pause();
          super.seek(selection.start);
        }
      }
    }

    _shade(canvas) {
      if (!this.selection || !this.duration) return;
      const context = canvas.getContext("2d");
      const left = (this.selection.start / this.duration) * canvas.width;
      const right = (this.selection.end / this.duration) * canvas.width;
      context.fillStyle = "rgba(42, 98, 201, 0.18)";
      context.fillRect(left, 0, Math.max(1, right - left), canvas.height);
      context.fillStyle = "rgba(42, 98, 201, 0.9)";
      context.fillRect(left, 0, 2, canvas.height);
      context.fillRect(Math.max(left, right - 2), 0, 2, canvas.height);
    }

    _drawSpectrogram() {
      const canvas = this.spectrogramCanvas;
      if (!canvas || canvas.hidden) return;
      const ratio = window.devicePixelRatio || 1;
      const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
      const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
      if (canvas.width !== width) canvas.width = width;
      if (canvas.height !== height) canvas.height = height;
      const context = canvas.getContext("2d");
      context.fillStyle = "#000004";
      context.fillRect(0, 0, width, height);
      if (this.image && this.image.complete && this.image.naturalWidth) context.drawImage(this.image, 0, 0, width, height);
      this._shade(canvas);
      const progress = this.duration ? this.audio.currentTime / this.duration : 0;
      context.fillStyle = "#ffffff";
      context.fillRect(Math.min(Math.round(progress * width), width - 2), 0, Math.max(2, ratio), height);
    }
  }

  return RegionPlayer;
})();
