/*
 * DraftSync: autosave of an editor draft that never loses work.
 *
 *   const sync = new DraftSync({url, version, storageKey, csrfToken, statusElement, onConflict, onSaved, applyDraft});
 *   const start = sync.restoreLocal(serverDraft);   // what the editor starts from
 *   sync.edit(draft);        // after every change: kept in localStorage at once, sent after a pause
 *   await sync.flush();      // send now (before submitting); resolves when the server has it
 *   sync.findOrphans().then((copies) => ...);  // unsaved copies left by closed tabs, to offer back (mergeIn)
 *
 * Each tab keeps its own local copy (storageKey + ":" + a tab id held in sessionStorage, so a reload finds it
 * and another tab's save never clears it). The copy holds the draft and the version it builds on (the base:
 * what this tab last loaded or saved), so a copy left behind can be merged three-way, not just replaced.
 *
 * Every save says which version it started from (base_version). The server refuses a save based on an older
 * version with 409 and its current draft (another tab or device saved meanwhile): this tab merges its edits
 * into it (DraftMerge, against its base), takes the result through applyDraft and saves it. What both changed
 * differently goes to onConflict with the merge, and autosave waits (edits are still kept locally) until
 * resolveConflict(choices). While the server cannot be reached, edits stay in localStorage and are retried
 * with back-off and when the browser says it is online again.
 * The status element shows the state in words and in data-state (saved / dirty / saving / offline /
 * conflict / locked / invalid / signed-out); data-round-trip-ms holds the last save's round trip.
 */
window.DraftSync = (function () {
  "use strict";

  const DEBOUNCE_MS = 700;
  const MAX_BACKOFF_MS = 30000;
  const REQUEST_TIMEOUT_MS = 15000;

  const Merge = window.DraftMerge;
  const TAB_ID_KEY = "annotation-tab-id";
  const LIVE_TABS_WAIT_MS = 400;

  function newTabId() {
    return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
  }

  /* This tab's id: kept in sessionStorage, which a reload keeps and another tab does not share. */
  function tabId() {
    try {
      let id = sessionStorage.getItem(TAB_ID_KEY);
      if (!id) {
        id = newTabId();
        sessionStorage.setItem(TAB_ID_KEY, id);
      }
      return id;
    } catch (error) {
      return newTabId();
    }
  }

  function readJson(key) {
    try { return JSON.parse(localStorage.getItem(key) || "null"); } catch (error) { return null; }
  }

  class DraftSync {
    constructor(options) {
      this.url = options.url;
      this.version = options.version;
      this.prefix = options.storageKey;
      this.tabId = tabId();
      this.storageKey = this.prefix + ":" + this.tabId;
      this.csrfToken = options.csrfToken;
      this.statusElement = options.statusElement;
      this.onConflict = options.onConflict || (() => {});
      this.onSaved = options.onSaved || (() => {});
      this.applyDraft = options.applyDraft || null;
      this.base = null; // the server's draft at this.version: what a merge compares both sides with
      this.pending = null; // the newest draft not yet acknowledged by the server
      this.sending = null; // promise of the request in flight
      this.conflict = null; // an unresolved merge: autosave waits for the user's choices
      this.timer = null;
      this.backoff = 1000;
      this.stopped = false;
      this.lastRoundTripMs = null;
      this._listenForTabs();
      window.addEventListener("online", () => this._retrySoon(0));
      // No "leave the page?" prompt: the local copy already survives a closed tab; this is a last attempt.
      window.addEventListener("pagehide", () => this._sendOnLeave());
    }

    _csrf() {
      return typeof this.csrfToken === "function" ? this.csrfToken() : this.csrfToken;
    }

    // -- tabs ------------------------------------------------------------------------------------------
    /* Open tabs on this draft answer "who is there?", so a copy of a live tab is never offered as left behind.
     * A duplicated tab starts with its original's sessionStorage: hearing its own id answered, it takes a new one. */
    _listenForTabs() {
      this.liveTabs = new Set();
      if (!("BroadcastChannel" in window)) return;
      this.channel = new BroadcastChannel(this.prefix + ":tabs");
      this.channel.onmessage = (message) => {
        const data = message.data || {};
        if (data.type === "who") this.channel.postMessage({type: "here", tabId: this.tabId});
        if (data.type === "here") {
          if (data.tabId === this.tabId) this._takeNewTabId();
          else this.liveTabs.add(data.tabId);
        }
      };
      this.channel.postMessage({type: "who"});
    }

    _takeNewTabId() {
      const entry = readJson(this.storageKey);
      this.tabId = newTabId();
      this.storageKey = this.prefix + ":" + this.tabId;
      try { sessionStorage.setItem(TAB_ID_KEY, this.tabId); } catch (error) { /* ignore */ }
      if (entry && this.pending) this._storeLocal(this.pending); // the copy follows the tab; the original keeps its own
    }

    // -- local copy ---------------------------------------------------------------------------
    _storeLocal(draft) {
      try {
        localStorage.setItem(this.storageKey, JSON.stringify({tabId: this.tabId, baseVersion: this.version, base: this.base, draft: draft, at: Date.now()}));
      } catch (error) { /* private mode or quota: the server copy is all we have */ }
    }

    _clearLocal() {
      try { localStorage.removeItem(this.storageKey); } catch (error) { /* ignore */ }
    }

    /* What to start from: {draft, restored}. This tab's own unsent copy (a reload) is restored and sent; if
     * the server moved on meanwhile, the save's 409 merges it like any conflict. */
    restoreLocal(serverDraft) {
      this.base = serverDraft;
      const own = readJson(this.storageKey);
      if (!own || !own.draft) return {draft: serverDraft, restored: false};
      if (Merge.same(own.draft, serverDraft)) {
        this._clearLocal();
        return {draft: serverDraft, restored: false};
      }
      if (own.baseVersion !== this.version && own.base) {
        this.version = own.baseVersion;
        this.base = own.base;
      } else if (own.baseVersion !== this.version) {
        return {draft: serverDraft, restored: false}; // no base to merge with: findOrphans offers it instead
      }
      this.edit(own.draft);
      this._setState("dirty", "Restored edits that had not reached the server; saving them…");
      return {draft: own.draft, restored: true};
    }

    /* Unsaved copies of this draft left by tabs that are no longer open (and the shared copy of pages from
     * before copies were per tab), newest first; resolves after the open tabs had time to answer. */
    findOrphans() {
      return new Promise((resolve) => setTimeout(resolve, "BroadcastChannel" in window ? LIVE_TABS_WAIT_MS : 0)).then(() => {
        const found = [];
        let keys = [];
        try {
          for (let index = 0; index < localStorage.length; index += 1) keys.push(localStorage.key(index));
        } catch (error) {
          keys = []; // storage blocked: there is nothing left behind to offer
        }
        keys.forEach((key) => {
          if (key === this.storageKey || !(key === this.prefix || key.startsWith(this.prefix + ":"))) return;
          const entry = readJson(key);
          if (!entry || !entry.draft || this.liveTabs.has(entry.tabId)) return;
          found.push(Object.assign({key: key}, entry));
        });
        return found.sort((a, b) => (b.at || 0) - (a.at || 0));
      });
    }

    forgetCopy(copy) {
      try { localStorage.removeItem(copy.key); } catch (error) { /* ignore */ }
    }

    /* Merge a left-behind copy into what this tab holds now: {merged, result}. Clean merges are applied at
     * once; otherwise onConflict gets the result and resolveConflict applies the choices. */
    mergeIn(copy) {
      const current = () => this.pending || this.base;
      const result = Merge.merge(copy.base || {events: [], relations: [], note: ""}, copy.draft, current());
      const labels = {mine: "the edits kept from " + new Date(copy.at || Date.now()).toLocaleString(), theirs: "this page"};
      if (!result.conflicts.length) {
        this.forgetCopy(copy);
        if (!Merge.same(result.draft, current())) this._apply(result, "restoring edits left in this browser");
        return result;
      }
      this.conflict = {
        labels: labels,
        remerge: () => Merge.merge(copy.base || {events: [], relations: [], note: ""}, copy.draft, current()),
        finish: () => this.forgetCopy(copy),
      };
      this.onConflict({code: "merge", merge: result, labels: labels});
      return result;
    }

    // -- saving -------------------------------------------------------------------------------
    /* Every edit is kept in this tab's local copy at once, also while a conflict waits or the clip is locked. */
    edit(draft) {
      this.pending = draft;
      this._storeLocal(draft);
      if (this.stopped || this.conflict) return;
      if (!this.sending) this._setState("dirty", "Unsaved changes…");
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush().catch(() => {}), DEBOUNCE_MS);
    }

    flush() {
      clearTimeout(this.timer);
      if (this.stopped || this.conflict) return Promise.reject(new Error(this.statusElement.textContent));
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
        this.base = draft;
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
      if (response.status === 409 && body.code === "stale_version" && body.current_draft && this.applyDraft) {
        return this._mergeWithServer(body.current_version, body.current_draft);
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
      if (response.status === 413) {
        // Too large to save: retrying cannot help, so say why and wait for the next (smaller) edit.
        this._setState("too-large", "Not saved: " + (body.detail || "this draft is too large."));
        throw Object.assign(new Error("draft too large"), {isFinal: true});
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

    /* Another tab or device saved `theirs` as `version` meanwhile: merge this tab's edits into it, three-way
     * against this tab's base. Clean: applied and saved. Otherwise the user chooses (resolveConflict). */
    _mergeWithServer(version, theirs) {
      const labels = {mine: "this tab", theirs: "the other tab or device (version " + version + ")"};
      const remerge = () => Merge.merge(this.base, this.pending, theirs);
      const finish = () => {
        this.version = version;
        this.base = theirs;
      };
      if (!this.pending) { // nothing of this tab's left to send (discarded meanwhile): take theirs as the base
        finish();
        return this.version;
      }
      const result = remerge();
      if (!result.conflicts.length) {
        finish();
        this._apply(result, "merging edits saved in another tab or device");
        return this.flush();
      }
      this.conflict = {labels: labels, remerge: remerge, finish: finish};
      this._setState("conflict", "Not saved yet: this clip was also changed in another tab or device (version " + version + "). Choose what to keep; your edits stay in this browser meanwhile.");
      this.onConflict({code: "stale_version", currentVersion: version, merge: result, labels: labels});
      throw Object.assign(new Error("edits in two places need a choice"), {isFinal: true});
    }

    /* Apply the user's choice for every conflict ({key: "mine" | "theirs" | "both"}) and save. The merge is
     * redone with this tab's latest edits first; a conflict that appeared meanwhile is shown again. */
    resolveConflict(choices) {
      const conflict = this.conflict;
      if (!conflict) return Promise.resolve(this.version);
      const result = conflict.remerge();
      if (result.conflicts.some((c) => !choices[c.key])) {
        this.onConflict({code: "merge", merge: result, labels: conflict.labels});
        return Promise.resolve(null);
      }
      this.conflict = null;
      conflict.finish();
      this._apply(Object.assign({}, result, Merge.resolve(result, choices)), "choosing what to keep of two versions");
      return this.flush();
    }

    /* Put a merged draft into the editor (undoable) and make it this tab's pending draft. */
    _apply(result, what) {
      const parts = [];
      if (result.counts.fromTheirs) parts.push(result.counts.fromTheirs + " change(s) from the other version");
      if (result.counts.fromMine) parts.push(result.counts.fromMine + " from this one");
      let summary = "Merged " + (parts.join(" with ") || "two versions");
      if (result.dropped.length) {
        const names = {};
        result.draft.events.forEach((event) => { names[event.id] = "'" + (event.label.trim() || event.id) + "'"; });
        summary += "; dropped " + result.dropped.map((relation) => Merge.describeRelation(relation, names)).join(", ") + " (an event of it was deleted)";
      }
      summary += ".";
      this.statusElement.dataset.lastMerge = summary;
      if (this.applyDraft) this.applyDraft(result.draft, what, summary);
      if (!this.pending || !Merge.same(this.pending, result.draft)) this.edit(result.draft);
    }

    _offline() {
      this._setState("offline", "Offline: your edits are kept in this browser and will be sent when the server is back.");
      this._retrySoon(this.backoff);
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    }

    _retrySoon(delay) {
      if (this.stopped || this.conflict || !this.pending) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush().catch(() => {}), delay);
    }

    _sendOnLeave() {
      if (!this.pending || this.stopped || this.conflict || this.sending) return;
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

    discardLocal() {
      this.pending = null;
      this._clearLocal();
    }

    get isSaved() {
      return !this.pending && !this.sending && !this.stopped && !this.conflict;
    }

    _setState(state, text) {
      this.statusElement.dataset.state = state;
      this.statusElement.textContent = text;
    }
  }

  return DraftSync;
})();
