/*
 * What the annotator page and the reviewer page share: JSON calls with the CSRF token, the page data
 * (json_script blocks), the shortcuts that are not the editor's, the checks list, and the conflict banner.
 */
window.WorkspacePage = (function () {
  "use strict";

  function data(id) {
    const script = document.getElementById(id);
    return script ? JSON.parse(script.textContent) : null;
  }

  /* The elements both editor pages have: save status, conflict banner, checks dialog, and the region player. */
  function elements() {
    const playerRoot = document.getElementById("player");
    const options = Object.assign({keyboard: true}, data("player-options") || {});
    return {
      statusElement: document.getElementById("save-status"),
      banner: document.getElementById("conflict-banner"),
      dialog: document.getElementById("submit-dialog"),
      player: playerRoot.querySelector("audio") ? new RegionPlayer(playerRoot, options) : null,
    };
  }

  /* The editor's event spans drawn on the player's timeline, and edits made there applied to the draft. */
  function connectPlayer(editor, player) {
    if (!player) return () => {};
    // Most edits (a source, an attribute) leave the spans as they are: the lane is redrawn only when they change.
    let drawn = null;
    const sync = () => {
      const regions = editor.regions();
      const key = JSON.stringify(regions);
      if (key === drawn) return;
      drawn = key;
      player.setRegions(regions);
    };
    const root = player.root;
    if (player.lane) player.lane.readOnly = editor.readOnly;
    root.addEventListener("regionplayer:regionchange", (event) => {
      const {eventId, index, start, end} = event.detail;
      editor.updateSpan(eventId, index, start, end);
    });
    root.addEventListener("regionplayer:regionremove", (event) => editor.removeSpan(event.detail.eventId, event.detail.index));
    root.addEventListener("regionplayer:regionleave", (event) => editor.focusCard(event.detail.eventId));
    root.addEventListener("regionplayer:selection", (event) => {
      if (event.detail.selection) editor.takeSelectionIntoFocusedEvent();
    });
    sync();
    return sync;
  }

  /* Unsaved edits that closed tabs (or this browser before a restart) left behind: offered one at a time in
   * `notice` (templates/annotation/_stale_local.html). Restoring merges them into what `editor` holds through
   * `sync`; what both changed goes to the conflict view. Shared by the annotators' and the reviewers' pages. */
  function offerOrphans(notice, sync, editor, copies) {
    const copy = copies.find((candidate) => {
      const trial = DraftMerge.merge(candidate.base || {events: [], relations: [], note: ""}, candidate.draft, editor.draft);
      if (trial.conflicts.length || !DraftMerge.same(trial.draft, editor.draft)) return true;
      sync.forgetCopy(candidate); // everything in it is already here
      return false;
    });
    if (!copy) {
      notice.hidden = true;
      return;
    }
    const rest = copies.slice(copies.indexOf(copy) + 1);
    const events = (copy.draft.events || []).map((event) => "'" + ((event.label || "").trim() || "unnamed") + "'");
    notice.hidden = false;
    notice.querySelector(".stale-time").textContent = new Date(copy.at).toLocaleString();
    notice.querySelector(".stale-events").textContent = events.join(", ") || "no events";
    notice.querySelector("[data-action=restore]").onclick = () => {
      notice.hidden = true;
      sync.mergeIn(copy);
      if (!sync.conflict) offerOrphans(notice, sync, editor, rest);
    };
    notice.querySelector("[data-action=discard]").onclick = () => {
      sync.forgetCopy(copy);
      offerOrphans(notice, sync, editor, rest);
    };
  }

  /* The CSRF cookie when readable (it changes when the user signs in again in another tab), else the page's token. */
  function csrfToken() {
    const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
    if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
    const input = document.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function callJson(method, url, body) {
    return fetch(url, {
      method: method,
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((response) => {
      if (response.status === 204) return {response: response, body: null};
      return response.json().catch(() => ({})).then((json) => ({response: response, body: json}));
    });
  }

  /* Keys that belong to the page, not to a field (the shortcut list of templates/annotation/_shortcuts.html). */
  function bindShortcuts(options) {
    const {editor, player, sync, onSubmit, helpElement} = options;
    document.addEventListener("keydown", (event) => {
      if (event.defaultPrevented) return;
      const typing = EventEditor.isTextField(event.target);
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        onSubmit();
        return;
      }
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
        event.preventDefault();
        sync.flush().catch(() => {});
        return;
      }
      if (!editor.readOnly && editor.historyKey(event)) return; // Ctrl+Z / Ctrl+Shift+Z anywhere on the page
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      const playerKeys = {
        "[": () => player.slower(),
        "]": () => player.faster(),
        l: () => player.toggleLoop(),
        g: () => player.toggleSpectrogram(),
        m: () => player.toggleScale(),
        "{": () => player.brighter(1 / 1.25),
        "}": () => player.brighter(1.25),
        c: () => player.nextChannelMode(),
        v: () => player.toggleSplit(),
        "+": () => player.zoomIn(),
        "=": () => player.zoomIn(),
        "-": () => player.zoomOut(),
        0: () => player.zoomFit(),
        ",": () => player.pan(-0.25),
        ".": () => player.pan(0.25),
        i: () => player.markIn(),
        o: () => player.markOut(),
      };
      if (player && playerKeys[event.key]) {
        event.preventDefault();
        playerKeys[event.key]();
        return;
      }
      switch (event.key) {
        case "n": event.preventDefault(); editor.focusNewEvent(); break;
        case "p": if (!editor.readOnly) { event.preventDefault(); editor.acceptProposal(false); } break;
        case "P": if (!editor.readOnly) { event.preventDefault(); editor.acceptProposal(true); } break;
        case "e": if (editor.relations) { event.preventDefault(); editor.relations.focus(); } break;
        case "?": if (helpElement) { event.preventDefault(); helpElement.open = !helpElement.open; } break;
        case "Escape": if (player) player.clearSelection(); break;
        default: break;
      }
    });
  }

  function renderChecks(element, checks, onPick) {
    element.textContent = "";
    if (!checks.length) {
      const item = document.createElement("li");
      item.className = "check is-ok";
      item.textContent = "No problems found.";
      element.appendChild(item);
      return;
    }
    for (const check of checks) {
      const item = document.createElement("li");
      item.className = "check is-" + check.level;
      item.textContent = (check.level === "error" ? "Error: " : "Warning: ") + check.message;
      if (check.event && onPick) {
        item.tabIndex = 0;
        item.addEventListener("click", () => onPick(check));
        item.addEventListener("keydown", (event) => { if (event.key === "Enter") onPick(check); });
      }
      element.appendChild(item);
    }
  }

  /* The banner a 409 shows: load the newer version, or keep this tab's (an explicit overwrite). */
  function showConflict(banner, conflict, sync) {
    window.MergeView.show(banner, conflict, sync);
  }

  function focusCheck(editor, check) {
    if (/^relations\[/.test(check.field) && editor.relations) {
      const index = Number(/\[(\d+)\]/.exec(check.field)[1]);
      const item = editor.relationsRoot.querySelector('li[data-list="stated"][data-index="' + index + '"]');
      if (item) {
        item.focus();
        return;
      }
    }
    const part = /\.sources/.test(check.field) ? "sources" : /\.attributes/.test(check.field) ? "attributes" : /\.label/.test(check.field) ? "label" : "card";
    editor._focus({eventId: check.event, part: part});
  }

  return {data: data, elements: elements, connectPlayer: connectPlayer, csrfToken: csrfToken, callJson: callJson, bindShortcuts: bindShortcuts, renderChecks: renderChecks, showConflict: showConflict, focusCheck: focusCheck, offerOrphans: offerOrphans};
})();
