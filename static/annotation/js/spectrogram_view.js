/*
 * SpectrogramView: the clip's spectrogram as the annotation player draws it. The server sends grey images
 * (annotation/services/spectrogram.py: mel or linear, mixed or one channel); this colours them with the
 * "magma" map at the chosen brightness and draws the visible time window with a frequency axis in the gutter.
 * Zoomed in past the whole-clip image's columns, it asks the server for the visible stretch computed at the
 * canvas's width in pixels (?start=&end=&columns=) and draws it over the stretched image once loaded.
 *
 *   const view = new SpectrogramView({url, topHz, lowestHz, onLoad});
 *   view.scale = "mel" | "linear"; view.channel = "mix" | "left" | "right"; view.brightness = 1 (0.4-3)
 *   view.draw(context, {x, y, width, height, gutter}, {start, end}, duration)
 */
window.SpectrogramView = (function () {
  "use strict";

  // matplotlib's magma, 256 RGB entries (hex), so the page needs no library.
  const MAGMA = "00000401000501010601010802010902020b02020d03030f03031204041405041606051806051a07061c08071e0907200a08220b09240c09260d0a290e0b2b100b2d110c2f120d31130d34140e36150e38160f3b180f3d19103f1a10421c10441d11471e114920114b21114e22115024125325125527125829115a2a115c2c115f2d11612f116331116533106734106936106b38106c390f6e3b0f703d0f713f0f72400f74420f75440f764510774710784910784a10794c117a4e117b4f127b51127c52137c54137d56147d57157e59157e5a167e5c167f5d177f5f187f601880621980641a80651a80671b80681c816a1c816b1d816d1d816e1e81701f81721f817320817521817621817822817922827b23827c23827e24828025828125818326818426818627818827818928818b29818c29818e2a81902a81912b81932b80942c80962c80982d80992d809b2e7f9c2e7f9e2f7fa02f7fa1307ea3307ea5317ea6317da8327daa337dab337cad347cae347bb0357bb2357bb3367ab5367ab73779b83779ba3878bc3978bd3977bf3a77c03a76c23b75c43c75c53c74c73d73c83e73ca3e72cc3f71cd4071cf4070d0416fd2426fd3436ed5446dd6456cd8456cd9466bdb476adc4869de4968df4a68e04c67e24d66e34e65e44f64e55064e75263e85362e95462ea5661eb5760ec5860ed5a5fee5b5eef5d5ef05f5ef1605df2625df2645cf3655cf4675cf4695cf56b5cf66c5cf66e5cf7705cf7725cf8745cf8765cf9785df9795df97b5dfa7d5efa7f5efa815ffb835ffb8560fb8761fc8961fc8a62fc8c63fc8e64fc9065fd9266fd9467fd9668fd9869fd9a6afd9b6bfe9d6cfe9f6dfea16efea36ffea571fea772fea973feaa74feac76feae77feb078feb27afeb47bfeb67cfeb77efeb97ffebb81febd82febf84fec185fec287fec488fec68afec88cfeca8dfecc8ffecd90fecf92fed194fed395fed597fed799fed89afdda9cfddc9efddea0fde0a1fde2a3fde3a5fde5a7fde7a9fde9aafdebacfcecaefceeb0fcf0b2fcf2b4fcf4b6fcf6b8fcf7b9fcf9bbfcfbbdfcfdbf";
  const LUT = new Uint8Array(768);
  for (let index = 0; index < 768; index++) LUT[index] = parseInt(MAGMA.substr(index * 2, 2), 16);
  const MIN_BRIGHTNESS = 0.4;
  const MAX_BRIGHTNESS = 3;
  const TILE_WAIT_MS = 150; // a zoom or pan at rest this long asks for its stretch
  const MAX_TILES = 6;
  const MAX_TILE_COLUMNS = 4096; // annotation/services/spectrogram_zoom.MAX_ZOOM_COLUMNS

  function mel(hz) {
    return 2595 * Math.log10(1 + hz / 700);
  }

  function niceHz(hz) {
    return hz >= 1000 ? (hz / 1000).toFixed(hz % 1000 ? 1 : 0).replace(/\.0$/, "") + "k" : String(Math.round(hz));
  }

  class SpectrogramView {
    constructor(options) {
      this.url = options.url;
      this.topHz = options.topHz || 11025;
      this.lowestHz = options.lowestHz || 20;
      this.onLoad = options.onLoad || (() => {});
      this.onError = options.onError || (() => {});
      this.scale = "mel";
      this.channel = "mix";
      this.brightness = 1;
      this.images = new Map(); // "scale/channel" -> {image, coloured: {brightness, canvas}}
      // Zoomed stretches at the screen's resolution: "scale/channel/start/end/columns" -> entry with its range.
      this.tiles = new Map();
      this.tileTimer = null;
    }

    /* The zoomed stretch for this view, asked for once the view has rested (TILE_WAIT_MS), drawn when loaded. */
    _tileKey(view, columns) {
      return [this.scale, this.channel, view.start.toFixed(3), view.end.toFixed(3), columns].join("/");
    }

    _requestTile(view, columns) {
      const key = this._tileKey(view, columns);
      if (this.tiles.has(key)) return;
      clearTimeout(this.tileTimer);
      const range = {start: view.start, end: view.end};
      this.tileTimer = setTimeout(() => {
        if (this.tiles.has(key)) return;
        const image = new Image();
        const entry = {image: image, coloured: null, failed: false, scale: this.scale, channel: this.channel, start: range.start, end: range.end, at: 0};
        image.addEventListener("load", () => { entry.at = performance.now(); this.onLoad(); });
        image.addEventListener("error", () => { entry.failed = true; });
        image.src = this.url + (this.url.includes("?") ? "&" : "?") + "scale=" + this.scale + "&channel=" + this.channel
          + "&start=" + range.start.toFixed(3) + "&end=" + range.end.toFixed(3) + "&columns=" + columns;
        this.tiles.set(key, entry);
        while (this.tiles.size > MAX_TILES) this.tiles.delete(this.tiles.keys().next().value);
      }, TILE_WAIT_MS);
    }

    /* The most recently loaded stretch of this scale and channel that overlaps the view, or null. */
    _bestTile(view) {
      let best = null;
      for (const tile of this.tiles.values()) {
        if (!tile.at || tile.failed || tile.scale !== this.scale || tile.channel !== this.channel) continue;
        if (tile.end <= view.start || tile.start >= view.end) continue;
        if (!best || tile.at > best.at) best = tile;
      }
      return best;
    }

    /* What is drawn now: "whole" (the clip's image stretched) or "zoomed start–end" (a stretch at screen
     * resolution); tests and the bench read it. */
    get drawnFrom() {
      return this.lastDrawn || "whole";
    }

    get key() {
      return this.scale + "/" + this.channel;
    }

    /* The grey image of the current scale and channel (loaded on first use). */
    _entry() {
      let entry = this.images.get(this.key);
      if (!entry) {
        const image = new Image();
        entry = {image: image, coloured: null, failed: false};
        image.addEventListener("load", () => this.onLoad());
        image.addEventListener("error", () => { entry.failed = true; this.onError(); });
        image.src = this.url + (this.url.includes("?") ? "&" : "?") + "scale=" + this.scale + "&channel=" + this.channel;
        this.images.set(this.key, entry);
      }
      return entry;
    }

    get isLoaded() {
      const image = this._entry().image;
      return image.complete && image.naturalWidth > 0;
    }

    setBrightness(value) {
      this.brightness = Math.min(MAX_BRIGHTNESS, Math.max(MIN_BRIGHTNESS, value));
      return this.brightness;
    }

    /* The image coloured at the current brightness (a grey level v shows as magma(v ^ (1 / brightness))). */
    _coloured(entry) {
      if (entry.coloured && entry.coloured.brightness === this.brightness) return entry.coloured.canvas;
      const image = entry.image;
      const canvas = document.createElement("canvas");
      canvas.width = image.naturalWidth;
      canvas.height = image.naturalHeight;
      const context = canvas.getContext("2d");
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height);
      const levels = new Uint8Array(256);
      for (let grey = 0; grey < 256; grey++) levels[grey] = Math.round(255 * Math.pow(grey / 255, 1 / this.brightness));
      const data = pixels.data;
      for (let offset = 0; offset < data.length; offset += 4) {
        const colour = levels[data[offset]] * 3;
        data[offset] = LUT[colour];
        data[offset + 1] = LUT[colour + 1];
        data[offset + 2] = LUT[colour + 2];
        data[offset + 3] = 255;
      }
      context.putImageData(pixels, 0, 0);
      entry.coloured = {brightness: this.brightness, canvas: canvas};
      return canvas;
    }

    /* Fraction of the height (0 at the bottom) where a frequency sits on the current scale. */
    heightOf(hz) {
      if (this.scale === "linear") return hz / this.topHz;
      return (mel(hz) - mel(this.lowestHz)) / (mel(this.topHz) - mel(this.lowestHz));
    }

    draw(context, box, view, duration, ratio) {
      const entry = this._entry();
      context.fillStyle = "#000004";
      context.fillRect(box.x, box.y, box.width, box.height);
      if (entry.image.complete && entry.image.naturalWidth && duration > 0) {
        const coloured = this._coloured(entry);
        const sourceX = (view.start / duration) * coloured.width;
        const sourceWidth = Math.max(1e-3, ((view.end - view.start) / duration) * coloured.width);
        context.imageSmoothingEnabled = sourceWidth < box.width;
        context.drawImage(coloured, sourceX, 0, sourceWidth, coloured.height, box.x, box.y, box.width, box.height);
        this.lastDrawn = "whole";
        // Zoomed past the stored image's columns: draw the stretch computed at this many pixels over it.
        if (sourceWidth < box.width * 0.75) this._drawTile(context, box, view, Math.min(MAX_TILE_COLUMNS, Math.round(box.width)));
      }
      this._axis(context, box, ratio || 1);
    }

    _drawTile(context, box, view, columns) {
      this._requestTile(view, columns);
      const tile = this._bestTile(view);
      if (!tile) return;
      const coloured = this._coloured(tile);
      const span = view.end - view.start;
      const x = box.x + ((tile.start - view.start) / span) * box.width;
      const width = ((tile.end - tile.start) / span) * box.width;
      context.save();
      context.beginPath();
      context.rect(box.x, box.y, box.width, box.height);
      context.clip();
      context.imageSmoothingEnabled = width > coloured.width * 1.01;
      context.drawImage(coloured, 0, 0, coloured.width, coloured.height, x, box.y, width, box.height);
      context.restore();
      this.lastDrawn = "zoomed " + tile.start.toFixed(3) + "–" + tile.end.toFixed(3) + " at " + coloured.width + " columns";
    }

    _axis(context, box, ratio) {
      context.fillStyle = "#ffffff";
      context.fillRect(0, box.y, box.x, box.height);
      context.fillStyle = "#5d6878";
      context.font = Math.round(10 * ratio) + "px system-ui, sans-serif";
      context.textAlign = "right";
      context.textBaseline = "middle";
      const ticks = this.scale === "linear"
        ? [0, 2000, 4000, 6000, 8000, 10000, 12000, 16000, 20000].filter((hz) => hz <= this.topHz)
        : [100, 250, 500, 1000, 2000, 4000, 8000, 16000].filter((hz) => hz <= this.topHz && hz >= this.lowestHz);
      let lastY = Infinity;
      for (const hz of ticks) {
        const y = box.y + box.height * (1 - this.heightOf(hz));
        if (Math.abs(lastY - y) < 12 * ratio) continue;
        lastY = y;
        context.fillRect(box.x - 4 * ratio, Math.round(y), 4 * ratio, Math.max(1, ratio));
        context.fillText(niceHz(hz), box.x - 6 * ratio, Math.min(Math.max(y, box.y + 6 * ratio), box.y + box.height - 6 * ratio));
      }
      context.save();
      context.translate(8 * ratio, box.y + box.height / 2);
      context.rotate(-Math.PI / 2);
      context.textAlign = "center";
      context.fillText("Hz · " + this.scale, 0, 0);
      context.restore();
    }
  }

  SpectrogramView.MIN_BRIGHTNESS = MIN_BRIGHTNESS;
  SpectrogramView.MAX_BRIGHTNESS = MAX_BRIGHTNESS;
  return SpectrogramView;
})();
