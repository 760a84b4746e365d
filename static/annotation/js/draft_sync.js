/*
 * DraftSync: autosave of an editor draft that never loses work.
 *
 *   const sync = new DraftSync({url, version, storageKey, csrfToken, statusElement, onConflict, onSaved});
 *   sync.edit(draft);        // after every change: kept in localStorage at once, sent after a pause
 *   await sync.flush();      // send now (before submitting); resolves when the server has it
 *
 * Every save says which version it started from (base_version). The server refuses a save based on
 * an older version with 409 (a second tab or device saved meanwhile): this tab then stops saving and
 * offers to load the newer version or to keep its own (an explicit choice, never a silent overwrite).
 * While the server cannot be reached, edits stay in localStorage and are retried with back-off and
 * when the browser says it is online again; a reload restores them (restoreLocal).
 * The status element shows the state in words and in data-state (saved / dirty / saving / offline /
 * conflict / locked / invalid / signed-out); data-round-trip-ms holds the last save's round trip.
 */
window.DraftSync = (function () {
  "use strict";

  const DEBOUNCE_MS = 700;
  const MAX_BACKOFF_MS = 30000;
  const REQUEST_TIMEOUT_MS = 15000;

  /* JSON with sorted keys: the server may store objects with their keys in another order (PostgreSQL jsonb). */
  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((key) => JSON.stringify(key) + ":" + canonical(value[key])).join(",") + "}";
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  class DraftSync {
    constructor(options) {
      this.url = options.url;
      this.version = options.version;
      this.storageKey = options.storageKey;
      this.csrfToken = options.csrfToken;
      this.statusElement = options.statusElement;
      this.onConflict = options.onConflict || (() => {});
      this.onSaved = options.onSaved || (() => {});
      this.pending = null; // the newest draft not yet acknowledged by the server
      this.sending = null; // promise of the request in flight
      this.timer = null;
      this.backoff = 1000;
      this.stopped = false;
      this.lastRoundTripMs = null;
      window.addEventListener("online", () => this._retrySoon(0));
      // No "leave the page?" prompt: the local copy already survives a closed tab; this is a last attempt.
      window.addEventListener("pagehide", () => this._sendOnLeave());
    }

    _csrf() {
      return typeof this.csrfToken === "function" ? this.csrfToken() : this.csrfToken;
    }

    // -- local copy ---------------------------------------------------------------------------
    _storeLocal(draft) {
      try {
        localStorage.setItem(this.storageKey, JSON.stringify({baseVersion: this.version, draft: draft, at: Date.now()}));
      } catch (error) { /* private mode or quota: the server copy is all we have */ }
    }

    _clearLocal() {
      try { localStorage.removeItem(this.storageKey); } catch (error) { /* ignore */ }
    }

    /* What to start from: {draft, restored, staleLocal}. A local copy based on the server's current version
     * holds unsent edits (sent now); one based on an older version is offered back, not applied. */
    restoreLocal(serverDraft) {
      let local = null;
      try { local = JSON.parse(localStorage.getItem(this.storageKey) || "null"); } catch (error) { local = null; }
      if (!local || !local.draft) return {draft: serverDraft, restored: false, staleLocal: null};
      if (local.baseVersion === this.version) {
        if (canonical(local.draft) === canonical(serverDraft)) {
          this._clearLocal();
          return {draft: serverDraft, restored: false, staleLocal: null};
        }
        this.edit(local.draft);
        this._setState("dirty", "Restored edits that had not reached the server; saving them…");
        return {draft: local.draft, restored: true, staleLocal: null};
      }
      if (canonical(local.draft) === canonical(serverDraft)) {
        this._clearLocal(); // it reached the server after all (e.g. sent as the page was left)
        return {draft: serverDraft, restored: false, staleLocal: null};
      }
      return {draft: serverDraft, restored: false, staleLocal: local};
    }

    // -- saving -------------------------------------------------------------------------------
    edit(draft) {
      if (this.stopped) return;
      this.pending = draft;
      this._storeLocal(draft);
      if (!this.sending) this._setState("dirty", "Unsaved changes…");
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush().catch(() => {}), DEBOUNCE_MS);
    }

    flush() {
      clearTimeout(this.timer);
      if (this.stopped) return Promise.reject(new Error(this.statusElement.textContent));
      if (this.sending) return this.sending.then(() => this.flush());
      if (!this.pending) return Promise.resolve(this.version);
      const draft = this.pending;
      const started = performance.now();
      this._setState("saving", "Saving…");
      const controller = new AbortController();
      const timeout = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
      this.sending = fetch(this.url, {
        method: "PUT",
        credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-CSRFToken": this._csrf()},
        body: JSON.stringify({base_version: this.version, draft: draft}),
        signal: controller.signal,
      })
        .then((response) => response.json().catch(() => ({})).then((body) => ({response: response, body: body})))
        .then(({response, body}) => {
          clearTimeout(timeout);
          this.sending = null;
          return this._handle(response, body, draft, performance.now() - started);
        })
        .catch((error) => {
          clearTimeout(timeout);
          this.sending = null;
          if (error && error.isFinal) throw error;
          this._offline();
          throw error;
        });
      return this.sending;
    }

    _handle(response, body, draft, roundTripMs) {
      if (response.ok) {
        this.version = body.version;
        this.backoff = 1000;
        this.lastRoundTripMs = roundTripMs;
        this.statusElement.dataset.roundTripMs = String(Math.round(roundTripMs));
        if (this.pending === draft) {
          this.pending = null;
          this._clearLocal();
          this._setState("saved", "Saved " + new Date().toLocaleTimeString() + " (version " + this.version + ")");
        } else {
          this._storeLocal(this.pending); // newer edits now build on the new version
          this.flush().catch(() => {});
        }
        this.onSaved(this.version);
        return this.version;
      }
      if (response.status === 409) {
        this.stopped = true;
        const conflict = body.code === "stale_version";
        this._setState(conflict ? "conflict" : "locked", conflict
          ? "Not saved: this clip was changed in another tab or window (version " + body.current_version + ")."
          : "Not saved: " + (body.detail || "this clip can no longer be edited."));
        this.onConflict({code: body.code, currentVersion: body.current_version, message: body.detail});
        throw Object.assign(new Error(body.detail || "conflict"), {isFinal: true});
      }
      if (response.status === 400) {
        const [field, messages] = Object.entries(body)[0] || ["draft", ["invalid"]];
        this._setState("invalid", "Not saved: " + field + ": " + [].concat(messages).join(" "));
        throw Object.assign(new Error("invalid draft"), {isFinal: true});
      }
      if (response.status === 401 || response.status === 403) {
        this._setState("signed-out", "Not saved: you are signed out. Sign in again in another tab; your edits are kept in this browser.");
        this._retrySoon(this.backoff);
        throw Object.assign(new Error("signed out"), {isFinal: true});
      }
      this._offline();
      throw Object.assign(new Error("server error " + response.status), {isFinal: true});
    }

    _offline() {
      this._setState("offline", "Offline: your edits are kept in this browser and will be sent when the server is back.");
      this._retrySoon(this.backoff);
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    }

    _retrySoon(delay) {
      if (this.stopped || !this.pending) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush().catch(() => {}), delay);
    }

    _sendOnLeave() {
      if (!this.pending || this.stopped || this.sending) return;
      try {
        fetch(this.url, {
          method: "PUT",
          credentials: "same-origin",
          keepalive: true,
          headers: {"Content-Type": "application/json", "X-CSRFToken": this._csrf()},
          body: JSON.stringify({base_version: this.version, draft: this.pending}),
        });
      } catch (error) { /* the local copy remains */ }
    }

    /* After a conflict: continue from this tab's draft on top of the newer version (explicit choice). */
    overwriteWithMine(currentVersion) {
      this.version = currentVersion;
      this.stopped = false;
      if (this.pending) {
        this._storeLocal(this.pending);
        return this.flush();
      }
      return Promise.resolve(this.version);
    }

    discardLocal() {
      this.pending = null;
      this._clearLocal();
    }

    get isSaved() {
      return !this.pending && !this.sending && !this.stopped;
    }

    _setState(state, text) {
      this.statusElement.dataset.state = state;
      this.statusElement.textContent = text;
    }
  }

  return DraftSync;
})();
