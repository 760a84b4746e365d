/*
 * RegionPlayer: the annotation pages' player for precise work, built on the shared ClipPlayer
 * (static/core/js/clip_player.js: play / pause, time, volume, listening).
 *
 * - A timeline that zooms (Ctrl or ⌘ + wheel, a pinch, + / -, 0 shows the whole clip) and pans (, and .,
 *   Shift + wheel, dragging the overview strip), with a time ruler whose ticks follow the zoom.
 * - Every event's spans as labelled bars (player_regions.js), each with a play button and handles.
 * - The waveform per channel (waveform.json, 5 ms buckets) and the spectrogram (spectrogram_view.js) with a
 *   frequency axis, mel or linear, adjustable brightness; a stereo clip shows as two lanes and plays both
 *   channels, the left or the right alone (audio_channels.js).
 * - A selection: drag on the waveform or spectrogram, or i / o at the cursor, or Shift + arrows on the timeline;
 *   Play plays it (Loop repeats it); playback speed 0.5-2x.
 *
 *   const player = new RegionPlayer(element, {keyboard: true, spectrogramUrl, waveformUrl, topHz, channels});
 *   player.selection  // {start, end} in seconds, or null; "regionplayer:selection" on changes
 *   player.setRegions([...]) / playRange(start, end) / zoomIn() / zoomOut() / zoomFit() / pan(fraction)
 */
window.RegionPlayer = (function () {
  "use strict";

  const SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 2];
  const GUTTER = 46; // CSS px left of every lane: channel names, the frequency axis
  const MIN_SPAN = 0.2; // s: the deepest zoom
  const DRAG_PIXELS = 4;
  const SPECTROGRAM_KEY = "regionPlayerSpectrogram";
  const TICK_STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300];

  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (text) node.textContent = text;
    return node;
  }

  function clockLabel(seconds, step) {
    const decimals = step < 0.1 ? 2 : step < 1 ? 1 : 0;
    const minutes = Math.floor(seconds / 60);
    const rest = (seconds - minutes * 60).toFixed(decimals);
    return minutes ? minutes + ":" + rest.padStart(decimals ? 3 + decimals : 2, "0") : rest + " s";
  }

  function decodePeaks(encoded) {
    const bytes = atob(encoded);
    const peaks = new Uint8Array(bytes.length);
    for (let index = 0; index < bytes.length; index++) peaks[index] = bytes.charCodeAt(index);
    return peaks;
  }

  class RegionPlayer extends window.ClipPlayer {
    constructor(root, options) {
      super(root, options);
      if (!this.audio) return;
      options = options || {};
      this.channelCount = options.channels || 1;
      this.selection = null;
      this.range = null; // a span played once (a region's play button), besides the selection
      this.loop = false;
      this.drag = null;
      this.markedIn = null;
      this.activeRegion = null;
      this.splitChannels = this.channelCount > 1;
      this.channelPeaks = null; // {peaksPerSecond, channels: [Uint8Array]}
      this.view = {start: 0, end: this.duration || 1};
      this.router = this.channelCount > 1 && window.ChannelRouter ? new window.ChannelRouter(this.audio) : null;
      this._scalePeaks();
      this._buildTimeline();
      this._buildControls(options);
      if (options.waveformUrl) this._loadWaveform(options.waveformUrl);
      this.audio.preservesPitch = true;
      this.audio.addEventListener("loadedmetadata", () => {
        if (this.view.start === 0) this.setView(0, this.duration);
      });
      window.addEventListener("resize", () => this.draw());
      this.draw();
    }

    /* Quiet clips would draw as a flat line: scale the drawing (not the sound) to the loudest peak. */
    _scalePeaks() {
      const top = this.peaks.reduce((highest, peak) => Math.max(highest, peak), 0);
      this.displayGain = top > 0 && top < 0.6 ? 0.9 / top : 1;
      if (this.displayGain !== 1) this.canvas.title = "Waveform scaled ×" + this.displayGain.toFixed(1) + " for display";
    }

    // -- building -------------------------------------------------------------------------------
    _buildTimeline() {
      this.timeline = element("div", {
        class: "timeline",
        tabindex: "0",
        role: "group",
        "aria-label": "Timeline. ← → move the cursor, Shift + ← → select, + − zoom, 0 whole clip, , . pan",
      });
      this.canvas.before(this.timeline);
      this.ruler = element("canvas", {class: "timeline-ruler", "aria-hidden": "true"});
      this.laneElement = element("div", {class: "timeline-regions"});
      this.timeline.appendChild(this.ruler);
      this.timeline.appendChild(this.laneElement);
      this.timeline.appendChild(this.canvas);
      this.canvas.classList.add("timeline-waveform");
      this.canvas.setAttribute("aria-label", "Waveform: drag to select, click to move the cursor");
      this.spectrogramCanvas = null;
      this.overview = element("canvas", {class: "timeline-overview", "aria-label": "Whole clip: drag to move the view"});
      this.timeline.appendChild(this.overview);
      this.lane = new window.RegionLane(this.laneElement, this);
      this.lane.container.style.setProperty("--gutter", GUTTER + "px");
      this._bindPointer(this.canvas);
      this._bindOverview();
      this._bindWheel();
      this.timeline.addEventListener("keydown", (event) => this._timelineKey(event));
    }

    _buildControls(options) {
      const controls = this.root.querySelector(".clip-player-controls");
      const volume = controls.querySelector(".clip-player-volume");
      const add = (node) => controls.insertBefore(node, volume);
      const speedLabel = element("label", {class: "region-player-speed"}, "Speed ");
      this.speedSelect = element("select", {"aria-label": "Playback speed ([ and ])"});
      SPEEDS.forEach((speed) => {
        const option = element("option", {value: String(speed)}, speed + "×");
        if (speed === 1) option.selected = true;
        this.speedSelect.appendChild(option);
      });
      this.speedSelect.addEventListener("change", () => this.setSpeed(Number(this.speedSelect.value)));
      speedLabel.appendChild(this.speedSelect);
      add(speedLabel);
      this.loopButton = element("button", {type: "button", class: "region-player-loop", "aria-pressed": "false", title: "Loop the selection (l)"}, "Loop");
      this.loopButton.addEventListener("click", () => this.toggleLoop());
      add(this.loopButton);
      const zoom = element("span", {class: "region-player-zoom", role: "group", "aria-label": "Zoom"});
      for (const [label, title, action] of [["−", "Zoom out (−)", () => this.zoomOut()], ["+", "Zoom in (+)", () => this.zoomIn()], ["⤢", "Whole clip (0)", () => this.zoomFit()]]) {
        const button = element("button", {type: "button", title: title, "aria-label": title}, label);
        button.addEventListener("click", action);
        zoom.appendChild(button);
      }
      add(zoom);
      if (this.router) {
        const channelLabel = element("label", {class: "region-player-channel"}, "Play ");
        this.channelSelect = element("select", {"aria-label": "Channels played (c)"});
        [["both", "both channels"], ["left", "left only"], ["right", "right only"]].forEach(([value, text]) => {
          this.channelSelect.appendChild(element("option", {value: value}, text));
        });
        this.channelSelect.addEventListener("change", () => this.setChannelMode(this.channelSelect.value));
        channelLabel.appendChild(this.channelSelect);
        add(channelLabel);
        this.splitButton = element("button", {type: "button", class: "region-player-split", "aria-pressed": "true", title: "Show the two channels apart or mixed (v)"}, "L / R");
        this.splitButton.addEventListener("click", () => this.toggleSplit());
        add(this.splitButton);
      }
      if (options.spectrogramUrl) this._buildSpectrogram(options, add);
      this.selectionLabel = element("span", {class: "region-player-selection muted", "aria-live": "polite"}, "Drag on the waveform to select");
      add(this.selectionLabel);
    }

    _buildSpectrogram(options, add) {
      this.spectrogram = new window.SpectrogramView({
        url: options.spectrogramUrl,
        topHz: options.topHz,
        lowestHz: options.lowestHz,
        onLoad: () => this.draw(),
        onError: () => this._say("The spectrogram could not be loaded."),
      });
      this.spectrogramCanvas = element("canvas", {class: "clip-player-spectrogram", role: "img", "aria-label": "Spectrogram (low frequencies at the bottom): drag to select, click to move the cursor"});
      this.canvas.after(this.spectrogramCanvas);
      this._bindPointer(this.spectrogramCanvas);
      this.spectrogramButton = element("button", {type: "button", class: "region-player-spectrogram-toggle", "aria-pressed": "true", title: "Show or hide the spectrogram (g)"}, "Spectrogram");
      this.spectrogramButton.addEventListener("click", () => this.toggleSpectrogram());
      add(this.spectrogramButton);
      this.scaleSelect = element("select", {"aria-label": "Frequency scale (m)"});
      [["mel", "mel"], ["linear", "linear Hz"]].forEach(([value, text]) => this.scaleSelect.appendChild(element("option", {value: value}, text)));
      this.scaleSelect.addEventListener("change", () => this.setScale(this.scaleSelect.value));
      add(this.scaleSelect);
      const brightness = element("label", {class: "region-player-brightness"}, "Brightness ");
      this.brightnessInput = element("input", {type: "range", min: String(window.SpectrogramView.MIN_BRIGHTNESS), max: String(window.SpectrogramView.MAX_BRIGHTNESS), step: "0.05", value: "1", "aria-label": "Spectrogram brightness ({ and })"});
      this.brightnessInput.addEventListener("input", () => this.setBrightness(Number(this.brightnessInput.value)));
      brightness.appendChild(this.brightnessInput);
      add(brightness);
      let hidden = false;
      try { hidden = localStorage.getItem(SPECTROGRAM_KEY) === "hidden"; } catch (error) { /* private mode */ }
      if (hidden) this.toggleSpectrogram();
    }

    _loadWaveform(url) {
      fetch(url, {credentials: "same-origin"})
        .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
        .then((data) => {
          this.channelPeaks = {peaksPerSecond: data.peaks_per_second, channels: data.peaks.map(decodePeaks)};
          const top = this.channelPeaks.channels.reduce((most, peaks) => peaks.reduce((a, b) => Math.max(a, b), most), 0) / 255;
          this.displayGain = top > 0 && top < 0.6 ? 0.9 / top : 1;
          this.draw();
        })
        .catch(() => { /* the stored mono peaks stay */ });
    }

    // -- settings ---------------------------------------------------------------------------------
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

    toggleSpectrogram() {
      if (!this.spectrogramCanvas) return;
      const show = this.spectrogramCanvas.hidden;
      this.spectrogramCanvas.hidden = !show;
      this.spectrogramButton.setAttribute("aria-pressed", String(show));
      try { localStorage.setItem(SPECTROGRAM_KEY, show ? "shown" : "hidden"); } catch (error) { /* ignore */ }
      this.draw();
    }

    setScale(scale) {
      if (!this.spectrogram) return;
      this.spectrogram.scale = scale;
      this.scaleSelect.value = scale;
      this._say("Spectrogram: " + (scale === "mel" ? "mel scale" : "linear frequency scale") + ".");
      this.draw();
    }

    toggleScale() {
      this.setScale(this.spectrogram && this.spectrogram.scale === "mel" ? "linear" : "mel");
    }

    setBrightness(value) {
      if (!this.spectrogram) return;
      this.brightnessInput.value = String(this.spectrogram.setBrightness(value));
      this.draw();
    }

    brighter(factor) {
      if (this.spectrogram) this.setBrightness(this.spectrogram.brightness * factor);
    }

    /* "both" | "left" | "right": what is played; the spectrogram shows that channel (or the mix). */
    setChannelMode(mode) {
      if (!this.router) return;
      try {
        this.router.setMode(mode);
      } catch (error) {
        this._say("This browser cannot play one channel alone.");
        return;
      }
      this.channelSelect.value = mode;
      if (this.spectrogram) this.spectrogram.channel = mode === "both" ? "mix" : mode;
      this._say(mode === "both" ? "Playing both channels." : "Playing the " + mode + " channel only (in both ears).");
      this.draw();
    }

    nextChannelMode() {
      if (this.router) this.setChannelMode(window.ChannelRouter.MODES[(window.ChannelRouter.MODES.indexOf(this.router.mode) + 1) % 3]);
    }

    toggleSplit() {
      if (this.channelCount < 2) return;
      this.splitChannels = !this.splitChannels;
      this.splitButton.setAttribute("aria-pressed", String(this.splitChannels));
      this.draw();
    }

    // -- view: zoom and pan ------------------------------------------------------------------------
    setView(start, end) {
      const duration = this.duration || 0;
      if (!duration) return;
      let span = Math.min(duration, Math.max(MIN_SPAN, end - start));
      start = Math.max(0, Math.min(start, duration - span));
      span = Math.min(span, duration - start);
      this.view = {start: start, end: start + span};
      this.draw();
      this.root.dispatchEvent(new CustomEvent("regionplayer:view", {detail: {view: this.view}, bubbles: true}));
    }

    /* Zoom by `factor` (> 1 in) keeping the time `at` where it is (default: the cursor when visible, else the middle). */
    zoom(factor, at) {
      const view = this.view;
      const now = this.audio.currentTime;
      if (at === undefined) at = now >= view.start && now <= view.end ? now : (view.start + view.end) / 2;
      const span = view.end - view.start;
      const newSpan = Math.min(this.duration, Math.max(MIN_SPAN, span / factor));
      const fraction = span ? (at - view.start) / span : 0.5;
      this.setView(at - fraction * newSpan, at - fraction * newSpan + newSpan);
    }

    zoomIn() { this.zoom(2); }

    zoomOut() { this.zoom(0.5); }

    zoomFit() { this.setView(0, this.duration); }

    pan(fraction) {
      const span = this.view.end - this.view.start;
      this.setView(this.view.start + fraction * span, this.view.end + fraction * span);
    }

    /* A keyboard step for moving spans and the cursor: about a two-hundredth of the view, 10 ms at the least. */
    step() {
      const raw = (this.view.end - this.view.start) / 200;
      return Math.max(0.01, Math.round(raw * 100) / 100);
    }

    _laneWidth(canvas) {
      return Math.max(1, canvas.getBoundingClientRect().width - GUTTER);
    }

    _secondsAt(canvas, clientX) {
      const box = canvas.getBoundingClientRect();
      const fraction = Math.min(1, Math.max(0, (clientX - box.left - GUTTER) / Math.max(1, box.width - GUTTER)));
      return this.view.start + fraction * (this.view.end - this.view.start);
    }

    // -- pointer: selection, seeking, pinch ---------------------------------------------------------
    _waveformClick() { /* seeking is done on pointerup (see _bindPointer) */ }

    _bindPointer(canvas) {
      const touches = new Map();
      canvas.addEventListener("pointerdown", (event) => {
        if (event.button > 0) return;
        event.preventDefault(); // keep the focus (e.g. in the new event's name) while selecting
        canvas.setPointerCapture(event.pointerId);
        touches.set(event.pointerId, event.clientX);
        if (touches.size === 2) {
          const [a, b] = Array.from(touches.values());
          this.drag = null;
          this.pinch = {distance: Math.abs(a - b) || 1, view: Object.assign({}, this.view), at: this._secondsAt(canvas, (a + b) / 2)};
          return;
        }
        this.drag = {canvas: canvas, startX: event.clientX, start: this._secondsAt(canvas, event.clientX), moved: false};
      });
      canvas.addEventListener("pointermove", (event) => {
        if (!touches.has(event.pointerId)) return;
        touches.set(event.pointerId, event.clientX);
        if (this.pinch && touches.size === 2) {
          const [a, b] = Array.from(touches.values());
          const factor = (Math.abs(a - b) || 1) / this.pinch.distance;
          const span = Math.min(this.duration, Math.max(MIN_SPAN, (this.pinch.view.end - this.pinch.view.start) / factor));
          const fraction = (this.pinch.at - this.pinch.view.start) / (this.pinch.view.end - this.pinch.view.start);
          this.setView(this.pinch.at - fraction * span, this.pinch.at - fraction * span + span);
          return;
        }
        const drag = this.drag;
        if (!drag || (!drag.moved && Math.abs(event.clientX - drag.startX) < DRAG_PIXELS)) return;
        drag.moved = true;
        const here = this._secondsAt(canvas, event.clientX);
        this.setSelection(Math.min(drag.start, here), Math.max(drag.start, here), {quiet: true});
      });
      const end = (event) => {
        touches.delete(event.pointerId);
        if (this.pinch) {
          if (!touches.size) this.pinch = null;
          return;
        }
        const drag = this.drag;
        this.drag = null;
        if (!drag || event.type === "pointercancel") return;
        if (drag.moved) {
          if (this.selection) super.seek(this.selection.start);
          this._emitSelection();
        } else {
          this.seek(drag.start);
        }
      };
      canvas.addEventListener("pointerup", end);
      canvas.addEventListener("pointercancel", end);
    }

    _bindOverview() {
      const move = (event) => {
        const box = this.overview.getBoundingClientRect();
        const at = ((event.clientX - box.left - GUTTER) / Math.max(1, box.width - GUTTER)) * this.duration;
        const span = this.view.end - this.view.start;
        this.setView(at - span / 2, at + span / 2);
      };
      this.overview.addEventListener("pointerdown", (event) => {
        event.preventDefault();
        this.overview.setPointerCapture(event.pointerId);
        move(event);
        const follow = (moveEvent) => move(moveEvent);
        const stop = () => {
          this.overview.removeEventListener("pointermove", follow);
          this.overview.removeEventListener("pointerup", stop);
        };
        this.overview.addEventListener("pointermove", follow);
        this.overview.addEventListener("pointerup", stop);
      });
    }

    _bindWheel() {
      this.timeline.addEventListener("wheel", (event) => {
        const canvas = event.target.closest("canvas") || this.canvas;
        const width = this._laneWidth(canvas);
        const span = this.view.end - this.view.start;
        if (event.ctrlKey || event.metaKey) { // a modifier, or a trackpad pinch (sent with ctrlKey)
          event.preventDefault();
          this.zoom(Math.exp(-event.deltaY * 0.0025), this._secondsAt(canvas, event.clientX));
        } else if (span < this.duration && (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY))) {
          event.preventDefault();
          const delta = event.shiftKey && !event.deltaX ? event.deltaY : event.deltaX;
          this.pan(delta / width);
        }
      }, {passive: false});
    }

    _timelineKey(event) {
      if (event.target !== this.timeline || event.altKey || event.ctrlKey || event.metaKey) return;
      const sign = event.key === "ArrowLeft" ? -1 : event.key === "ArrowRight" ? 1 : 0;
      if (sign) {
        event.preventDefault();
        const from = this.audio.currentTime;
        const to = Math.max(0, Math.min(this.duration, from + sign * this.step()));
        if (event.shiftKey) {
          const anchor = this.selection ? (Math.abs(this.selection.start - from) < 1e-6 ? this.selection.end : this.selection.start) : from;
          this.setSelection(Math.min(anchor, to), Math.max(anchor, to));
        }
        super.seek(to);
        this._reveal(to);
      } else if (event.key === "Home" || event.key === "End") {
        event.preventDefault();
        super.seek(event.key === "Home" ? 0 : this.duration);
        this._reveal(this.audio.currentTime);
      }
    }

    _reveal(time) {
      const span = this.view.end - this.view.start;
      if (time < this.view.start) this.setView(time - span * 0.1, time + span * 0.9);
      else if (time > this.view.end) this.setView(time - span * 0.9, time + span * 0.1);
      else this.draw();
    }

    // -- selection and playing ---------------------------------------------------------------------
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
      this.markedIn = null;
      this.setSelection(0, 0);
    }

    /* i: the selection starts at the cursor; o: it ends there (from the mark, or the selection's start). */
    markIn() {
      const now = Math.round(this.audio.currentTime * 1000) / 1000;
      this.markedIn = now;
      if (this.selection && this.selection.end > now) this.setSelection(now, this.selection.end);
      else this._say("Start marked at " + now.toFixed(2) + " s: o marks the end.");
      this.draw();
    }

    markOut() {
      const now = Math.round(this.audio.currentTime * 1000) / 1000;
      const from = this.markedIn !== null ? this.markedIn : this.selection ? this.selection.start : 0;
      this.markedIn = null;
      this._say("");
      this.setSelection(Math.min(from, now), Math.max(from, now));
    }

    _emitSelection() {
      this.root.dispatchEvent(new CustomEvent("regionplayer:selection", {detail: {selection: this.selection}, bubbles: true}));
    }

    seek(seconds) {
      this.range = null;
      super.seek(seconds);
    }

    play() {
      const span = this.range || this.selection;
      if (span && (this.audio.currentTime < span.start || this.audio.currentTime >= span.end - 0.01)) super.seek(span.start);
      super.play();
    }

    /* Play one span once (a region's play button), whatever is selected. */
    playRange(start, end) {
      this.range = {start: start, end: end};
      super.seek(start);
      this._reveal(start);
      super.play();
    }

    _keepInSpan() {
      const span = this.range || this.selection;
      if (!span || this.audio.paused || this.drag) return;
      if (this.audio.currentTime >= span.end) {
        if (this.loop && !this.range) super.seek(span.start);
        else {
          this.audio.pause();
          super.seek(span.start);
          this.range = null;
        }
      }
    }

    /* While playing, the view pages along with the cursor. */
    _follow() {
      if (this.audio.paused || this.drag) return;
      const now = this.audio.currentTime;
      const span = this.view.end - this.view.start;
      if (span < this.duration && (now > this.view.end || now < this.view.start)) {
        const start = Math.max(0, Math.min(now - span * 0.05, this.duration - span));
        this.view = {start: start, end: start + span};
      }
    }

    // -- regions ------------------------------------------------------------------------------------
    setRegions(regions) {
      if (this.lane) this.lane.setRegions(regions);
    }

    // -- drawing ------------------------------------------------------------------------------------
    _fit(canvas) {
      const ratio = window.devicePixelRatio || 1;
      const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
      const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
      if (canvas.width !== width) canvas.width = width;
      if (canvas.height !== height) canvas.height = height;
      return {context: canvas.getContext("2d"), width: width, height: height, ratio: ratio, gutter: GUTTER * ratio};
    }

    _x(time, area) {
      return area.gutter + ((time - this.view.start) / (this.view.end - this.view.start)) * (area.width - area.gutter);
    }

    draw() {
      if (!this.view) return; // ClipPlayer's constructor draws before this class has set up
      this._keepInSpan();
      this._follow();
      this._drawRuler();
      this._drawWaveform();
      this._drawSpectrogram();
      this._drawOverview();
      if (this.lane) this.lane.position();
      this.timeline.dataset.viewStart = this.view.start.toFixed(3);
      this.timeline.dataset.viewEnd = this.view.end.toFixed(3);
    }

    _drawRuler() {
      const area = this._fit(this.ruler);
      const {context, width, height, ratio} = area;
      context.clearRect(0, 0, width, height);
      const span = this.view.end - this.view.start;
      const pixelsPerSecond = (width - area.gutter) / ratio / span;
      const step = TICK_STEPS.find((candidate) => candidate * pixelsPerSecond >= 64) || 600;
      context.fillStyle = "#5d6878";
      context.font = Math.round(10 * ratio) + "px system-ui, sans-serif";
      context.textBaseline = "top";
      for (let tick = Math.ceil(this.view.start / step) * step; tick <= this.view.end + 1e-9; tick += step) {
        const x = Math.round(this._x(tick, area));
        context.fillRect(x, height - 6 * ratio, Math.max(1, ratio), 6 * ratio);
        context.fillText(clockLabel(tick, step), x + 3 * ratio, 2 * ratio);
        const minor = step / 5;
        for (let index = 1; index < 5; index++) {
          const minorX = Math.round(this._x(tick + index * minor, area));
          if (minorX < width) context.fillRect(minorX, height - 3 * ratio, Math.max(1, ratio), 3 * ratio);
        }
      }
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, area.gutter - 1, height);
      context.fillStyle = "#5d6878";
      context.fillText(span < this.duration ? "×" + (this.duration / span).toFixed(1) : "s", 4 * ratio, 2 * ratio);
    }

    _lanePeaks() {
      if (this.channelPeaks) {
        const channels = this.channelPeaks.channels;
        if (this.splitChannels && channels.length > 1) return channels.slice(0, 2).map((peaks) => ({peaks: peaks, perSecond: this.channelPeaks.peaksPerSecond, scale: 255}));
        if (channels.length > 1 && this.router && this.router.mode !== "both") {
          return [{peaks: channels[this.router.mode === "left" ? 0 : 1], perSecond: this.channelPeaks.peaksPerSecond, scale: 255}];
        }
        const mixed = new Uint8Array(channels[0].length);
        channels.forEach((peaks) => peaks.forEach((value, index) => { if (value > mixed[index]) mixed[index] = value; }));
        return [{peaks: mixed, perSecond: this.channelPeaks.peaksPerSecond, scale: 255}];
      }
      return [{peaks: this.peaks, perSecond: this.duration ? this.peaks.length / this.duration : 0, scale: 1}];
    }

    _shade(context, area, top, height) {
      for (const [span, fill, edge] of [
        [this.activeRegion, this.activeRegion && this.activeRegion.color ? this.activeRegion.color + "33" : null, null],
        [this.range, "rgba(31, 138, 76, 0.12)", null],
        [this.selection, "rgba(42, 98, 201, 0.18)", "rgba(42, 98, 201, 0.9)"],
      ]) {
        if (!span || !fill) continue;
        const left = Math.max(area.gutter, this._x(span.start, area));
        const right = Math.min(area.width, this._x(span.end, area));
        if (right <= area.gutter || left >= area.width) continue;
        context.fillStyle = fill;
        context.fillRect(left, top, Math.max(1, right - left), height);
        if (edge) {
          context.fillStyle = edge;
          context.fillRect(left, top, 2 * area.ratio, height);
          context.fillRect(Math.max(left, right - 2 * area.ratio), top, 2 * area.ratio, height);
        }
      }
      if (this.markedIn !== null) {
        context.fillStyle = "#b36b00";
        context.fillRect(this._x(this.markedIn, area), top, 2 * area.ratio, height);
      }
    }

    _cursor(context, area, top, height, colour) {
      const now = this.audio.currentTime;
      if (now < this.view.start || now > this.view.end) return;
      context.fillStyle = colour;
      context.fillRect(Math.min(Math.round(this._x(now, area)), area.width - 2), top, Math.max(2, area.ratio), height);
    }

    _drawWaveform() {
      const lanes = this._lanePeaks();
      this.canvas.classList.toggle("is-split", lanes.length > 1);
      const area = this._fit(this.canvas);
      const {context, width, height, ratio} = area;
      const styles = getComputedStyle(document.documentElement);
      const played = styles.getPropertyValue("--accent").trim() || "#2a62c9";
      context.clearRect(0, 0, width, height);
      const laneHeight = height / lanes.length;
      const now = this.audio.currentTime;
      const barWidth = Math.max(1, Math.round(2 * ratio));
      const secondsPerPixel = (this.view.end - this.view.start) / (width - area.gutter);
      lanes.forEach((lane, laneIndex) => {
        const middle = laneHeight * laneIndex + laneHeight / 2;
        for (let x = area.gutter; x < width; x += barWidth + 1) {
          const from = this.view.start + (x - area.gutter) * secondsPerPixel;
          const to = from + (barWidth + 1) * secondsPerPixel;
          const first = Math.floor(from * lane.perSecond);
          const last = Math.max(first + 1, Math.ceil(to * lane.perSecond));
          let peak = 0;
          for (let index = Math.max(0, first); index < last && index < lane.peaks.length; index++) peak = Math.max(peak, lane.peaks[index]);
          const half = Math.max(ratio * 0.5, Math.min(1, (peak / lane.scale) * this.displayGain) * (laneHeight / 2 - 2 * ratio));
          context.fillStyle = from < now ? played : "#9aa7b8";
          context.fillRect(x, middle - half, barWidth, half * 2);
        }
        if (lanes.length > 1) {
          context.fillStyle = "#d8dee8";
          context.fillRect(area.gutter, laneHeight * (laneIndex + 1) - ratio, width, ratio);
        }
      });
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, area.gutter, height);
      context.fillStyle = "#5d6878";
      context.font = Math.round(10 * ratio) + "px system-ui, sans-serif";
      context.textBaseline = "middle";
      const names = lanes.length > 1 ? ["L", "R"] : [this.router && this.router.mode !== "both" ? (this.router.mode === "left" ? "L only" : "R only") : this.channelCount > 1 ? "L+R" : "mono"];
      names.forEach((name, index) => context.fillText(name, 4 * ratio, laneHeight * index + laneHeight / 2));
      this._shade(context, area, 0, height);
      this._cursor(context, area, 0, height, "#1d2430");
    }

    _drawSpectrogram() {
      const canvas = this.spectrogramCanvas;
      if (!canvas || canvas.hidden) return;
      const area = this._fit(canvas);
      const box = {x: area.gutter, y: 0, width: area.width - area.gutter, height: area.height};
      this.spectrogram.draw(area.context, box, this.view, this.duration, area.ratio);
      this._shade(area.context, area, 0, area.height);
      this._cursor(area.context, area, 0, area.height, "#ffffff");
    }

    _drawOverview() {
      const area = this._fit(this.overview);
      const {context, width, height} = area;
      context.clearRect(0, 0, width, height);
      context.fillStyle = "#e3e8ef";
      context.fillRect(area.gutter, 0, width - area.gutter, height);
      const duration = this.duration || 1;
      const left = area.gutter + (this.view.start / duration) * (width - area.gutter);
      const right = area.gutter + (this.view.end / duration) * (width - area.gutter);
      context.fillStyle = "rgba(42, 98, 201, 0.45)";
      context.fillRect(left, 0, Math.max(3, right - left), height);
      context.fillStyle = "#1d2430";
      context.fillRect(area.gutter + (this.audio.currentTime / duration) * (width - area.gutter), 0, Math.max(1, area.ratio), height);
    }
  }

  RegionPlayer.GUTTER = GUTTER;
  return RegionPlayer;
})();
