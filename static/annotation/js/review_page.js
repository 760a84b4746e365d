/*
 * The reviewer's page for one clip: submitted annotations side by side (review_submissions.js), events matched across annotators by
 * meaning (metrics_bridge computes the groups, their scores, merged proposals, group relations and where the
 * annotators disagree most), the gold editor (same editor and autosave as the annotators'), publish as gold,
 * send a submission back with a comment.
 *
 * "+ gold" on a matched group adds its merged event to the gold draft (the name most used, the union of
 * sources and attributes, each chip showing how many annotators gave it, the seconds most of them marked)
 * or merges it into the gold event already made from that group, and carries the group's relations to the
 * groups already in gold. Every such step is one edit (Ctrl+Z undoes it). A group whose annotators gave
 * attributes the tag library calls opposites (loud / quiet) or different counts shows them side by side with a
 * button per attribute: the reviewer's choice is what "+ gold" carries (and is applied to its gold event).
 *
 * Gold events that name one sound (the review's matching rule, asked of the server after each edit) are listed
 * above the gold editor with a "Merge" button; publishing refuses them until merged or related.
 *
 * Every annotator's time spans are drawn on one timeline above the cards, a lane each (review_lanes.js).
 *
 * Opening the page changes nothing: it shows the review if one was started, else the submissions and an empty
 * gold draft. The reviewer's first change (an edit, "+ gold", "Start gold from this", publish) starts the review
 * (POST), then autosave takes over. A review someone else started meanwhile is not overwritten: the first save
 * is based on version 0, so the server refuses it and the page offers their version or ours.
 */
(function () {
  "use strict";

  const Page = window.WorkspacePage;
  const Graph = window.AnnotationGraph;
  const root = document.getElementById("review-page");
  const urls = Page.data("review-urls");
  const library = Page.data("tag-library");
  const soundSources = Page.data("sound-sources");
  const returnDialog = document.getElementById("return-dialog");
  const {statusElement, banner, dialog, player} = Page.elements();
  const el = window.AnnotationDom.el;
  const initial = Page.data("review-state");
  let review = initial.review; // null until the reviewer's first change starts the review
  let submissions = initial.submissions;
  let sync = null;
  let starting = null; // the request that starts the review, once made
  let editor = null;
  let matching = null;
  const goldOfGroup = new Map(); // group index -> gold event id
  const attributeChoices = new Map(); // group index -> attribute keys the reviewer dropped from its clashes
  let duplicateTimer = null;
  let duplicateRequest = 0;
  const support = {}; // gold event id -> {sources: {key: "n/m"}, attributes: {...}}
  const lanes = new window.ReviewLanes(document.getElementById("annotator-lanes"), player, window.EventEditor.PALETTE);

  renderSubmissions();
  startEditor();
  loadMatching();
  root.dataset.ready = "true";

  /* The review, started on the reviewer's first change (resolves to false when it cannot be). */
  function startReview() {
    if (sync) return Promise.resolve(true);
    if (!starting) {
      statusElement.dataset.state = "saving";
      statusElement.textContent = "Starting the review…";
      starting = Page.callJson("POST", urls.open, {campaign: urls.campaignId, clip: urls.clipId}).then(({response, body}) => {
        if (!response.ok) {
          root.querySelector("#review-error").textContent = body.detail || "This review cannot be started.";
          statusElement.dataset.state = "invalid";
          statusElement.textContent = "Not started";
          starting = null;
          return false;
        }
        review = body;
        // Version 0, not the server's: our edits must not silently replace a draft another reviewer saved.
        sync = newSync(0);
        document.getElementById("gold-state").textContent = "Gold draft";
        return true;
      }).catch(() => {
        // The server could not be reached: the next change tries again (the draft is still on the page).
        statusElement.dataset.state = "offline";
        statusElement.textContent = "Not started: the server could not be reached";
        starting = null;
        return false;
      });
    }
    return starting;
  }

  function newSync(version) {
    return new DraftSync({
      url: urls.draft.replace("/0/", "/" + review.id + "/"),
      version: version,
      storageKey: "annotation-review-" + review.id,
      csrfToken: Page.csrfToken,
      statusElement: statusElement,
      onConflict: (conflict) => Page.showConflict(banner, conflict, sync),
      applyDraft: (draft, what, summary) => {
        editor.setDraft(draft, what);
        editor.say(summary);
      },
    });
  }

  // -- submissions ---------------------------------------------------------------------------------
  function renderSubmissions() {
    window.ReviewSubmissions.render(
      document.getElementById("submissions"),
      submissions,
      {library: library, soundSources: soundSources, player: player},
      {onCopy: copyEvent, onStart: startFrom, onReturn: openReturn},
    );
    lanes.setSubmissions(submissions);
  }

  function startFrom(submission) {
    if (editor.draft.events.length && !window.confirm("Replace the gold draft with " + submission.annotator + "'s annotation?")) return;
    goldOfGroup.clear();
    Object.keys(support).forEach((key) => delete support[key]);
    // The annotator's note was written to the reviewer: the gold keeps its own note.
    const graph = Object.assign({}, submission.graph, {note: editor.draft.note || ""});
    editor.setDraft(graph, "starting the gold from " + submission.annotator + "'s annotation");
    // The events of this submission stand for their groups from now on.
    if (matching) {
      matching.groups.forEach((group, index) => {
        const labels = group.events[submission.annotator] || [];
        const event = editor.draft.events.find((item) => labels.includes(item.label));
        if (event) goldOfGroup.set(index, event.id);
      });
    }
    editor.say("Gold draft started from " + submission.annotator + "'s annotation (Ctrl+Z undoes it).");
    renderMatching();
  }

  function groupOf(annotator, label) {
    if (!matching) return -1;
    return matching.groups.findIndex((group) => (group.events[annotator] || []).includes(label));
  }

  /* The merged attributes of group `index` the reviewer has not dropped from a clash. */
  function keptAttributes(index) {
    const dropped = attributeChoices.get(index) || new Set();
    return matching.groups[index].merged.attributes.filter((entry) => !dropped.has(Graph.libraryKey(entry.text)));
  }

  /* Pairs of the group's merged attributes that clash (the editor's rule, as annotation/tag_library.py has it). */
  function attributeClashes(index) {
    const texts = matching.groups[index].merged.attributes.map((entry) => entry.text);
    const clashes = [];
    texts.forEach((text, position) => {
      const clash = editor.attributeClash(texts, position);
      if (clash) clashes.push({first: clash.text, second: text, kind: clash.kind});
    });
    return clashes;
  }

  /* Keep `kept` of a clash and drop `dropped`, in what "+ gold" carries and in the group's gold event. */
  function chooseAttribute(index, kept, dropped) {
    const choices = attributeChoices.get(index) || new Set();
    choices.delete(Graph.libraryKey(kept));
    choices.add(Graph.libraryKey(dropped));
    attributeChoices.set(index, choices);
    const draft = Graph.clone(editor.draft);
    const target = goldEventOf(index, draft);
    if (target) {
      target.attributes = target.attributes.filter((text) => Graph.libraryKey(text) !== Graph.libraryKey(dropped));
      if (!target.attributes.some((text) => Graph.libraryKey(text) === Graph.libraryKey(kept))) target.attributes.push(kept);
      editor.setDraft(draft, "keeping '" + kept + "' over '" + dropped + "'");
    }
    editor.say("Kept '" + kept + "', dropped '" + dropped + "' for the group '" + matching.groups[index].merged.label + "'.");
    renderMatching();
  }

  function goldEventOf(index, draft) {
    const id = goldOfGroup.get(index);
    return id ? draft.events.find((event) => event.id === id) || null : null;
  }

  function unionInto(target, kind, texts) {
    for (const text of texts) {
      if (!target[kind].some((have) => Graph.libraryKey(have) === Graph.libraryKey(text))) target[kind].push(text);
    }
  }

  function copyEvent(submission, eventId) {
    const source = submission.graph.events.find((event) => event.id === eventId);
    const draft = Graph.clone(editor.draft);
    const index = groupOf(submission.annotator, source.label);
    const existing = (index >= 0 && goldEventOf(index, draft)) || draft.events.find((event) => Graph.libraryKey(event.label) === Graph.libraryKey(source.label));
    let message;
    if (existing) {
      unionInto(existing, "sources", source.sources);
      unionInto(existing, "attributes", source.attributes);
      if (!existing.spans.length) existing.spans = Graph.clone(source.spans || []);
      message = "Merged " + submission.annotator + "'s '" + source.label + "' into the gold event '" + existing.label + "'.";
      if (index >= 0) goldOfGroup.set(index, existing.id);
    } else {
      const added = Object.assign(Graph.clone(source), {id: Graph.newEventId(draft.events)});
      draft.events.push(added);
      if (index >= 0) goldOfGroup.set(index, added.id);
      message = "Added " + submission.annotator + "'s '" + source.label + "' to the gold annotation.";
    }
    editor.setDraft(draft, "copying " + submission.annotator + "'s '" + source.label + "'");
    editor.say(message);
    renderMatching();
  }

  /* "+ gold" on a group: its merged event, and its relations to groups already in gold. */
  function mergeGroup(index) {
    const group = matching.groups[index];
    const merged = group.merged;
    const draft = Graph.clone(editor.draft);
    let target = goldEventOf(index, draft) || draft.events.find((event) => Graph.libraryKey(event.label) === Graph.libraryKey(merged.label));
    if (!target) {
      target = {id: Graph.newEventId(draft.events), label: merged.label, sources: [], attributes: [], spans: []};
      draft.events.push(target);
    }
    unionInto(target, "sources", merged.sources.map((entry) => entry.text));
    unionInto(target, "attributes", keptAttributes(index).map((entry) => entry.text));
    if (!target.spans.length) target.spans = Graph.clone(merged.spans);
    goldOfGroup.set(index, target.id);
    const counted = (entries) => Object.fromEntries(entries.map((entry) => [Graph.libraryKey(entry.text), entry.count + "/" + merged.annotators]));
    support[target.id] = {sources: counted(merged.sources), attributes: counted(merged.attributes)};
    const carried = [];
    const skipped = [];
    for (const relation of matching.relations) {
      if (relation.first !== index && relation.second !== index) continue;
      const first = goldEventOf(relation.first, draft);
      const second = goldEventOf(relation.second, draft);
      if (!first || !second) continue;
      if (draft.relations.some((r) => (r.first === first.id && r.second === second.id) || (r.first === second.id && r.second === first.id))) continue;
      const candidate = draft.relations.concat({first: first.id, second: second.id, kind: relation.kind});
      const text = "'" + first.label + "' " + relation.kind + " '" + second.label + "' (" + relation.count + " of " + matching.annotators.length + ")";
      const spans = Object.fromEntries(draft.events.map((event) => [event.id, event.spans]));
      if (Graph.derive(candidate, spans).contradictions.some((c) => c.index === candidate.length - 1)) skipped.push(text);
      else {
        draft.relations = candidate;
        carried.push(text);
      }
    }
    editor.support = support;
    editor.setDraft(draft, "merging the group '" + merged.label + "'");
    editor.say("Merged the group '" + merged.label + "' (" + merged.annotators + " annotators)" + (carried.length ? "; carried " + carried.join(", ") : "") + (skipped.length ? "; not carried, as they contradict the gold relations: " + skipped.join(", ") : "") + ".");
    renderMatching();
  }

  function openReturn(submission) {
    returnDialog.querySelector(".return-annotator").textContent = submission.annotator;
    returnDialog.querySelector("textarea").value = "";
    returnDialog.querySelector(".dialog-error").textContent = "";
    returnDialog.dataset.task = submission.task;
    returnDialog.showModal();
  }

  returnDialog.querySelector("form").addEventListener("submit", (event) => {
    event.preventDefault();
    const comment = returnDialog.querySelector("textarea").value;
    const url = urls.returnTask.replace("/0/", "/" + returnDialog.dataset.task + "/");
    Page.callJson("POST", url, {comment: comment}).then(({response, body}) => {
      if (!response.ok) {
        returnDialog.querySelector(".dialog-error").textContent = body.detail || Object.values(body).join(" ");
        return;
      }
      returnDialog.close();
      submissions = submissions.filter((submission) => submission.task !== body.id);
      renderSubmissions();
      loadMatching();
      editor.say("Sent back to " + body.annotator + " with your comment.");
    });
  });
  returnDialog.querySelector("[data-action=close]").addEventListener("click", () => returnDialog.close());

  // -- matching and agreement ---------------------------------------------------------------------
  function factorText(value) {
    return value === null || value === undefined ? "n/a" : value.toFixed(2);
  }

  function loadMatching() {
    const target = document.getElementById("matching");
    target.textContent = "Matching events…";
    fetch(urls.matching, {credentials: "same-origin"})
      .then((response) => response.json())
      .then((data) => {
        matching = data;
        lanes.setMatching(data);
        renderMatching();
      })
      .catch(() => { target.textContent = "The matching could not be computed."; });
  }

  function partsText(link) {
    const parts = link.parts;
    const names = {phrase: "phrase", name: "name", source: "sources", attribute: "attributes (not weighed)", time: "time overlap"};
    return link.first[1] + " ↔ " + link.second[1] + ": " + link.score.toFixed(2) + " of " + link.needed.toFixed(2) + " needed (" + Object.entries(names).filter(([key]) => parts[key] !== null).map(([key, label]) => label + " " + parts[key].toFixed(2)).join(", ") + ")" + (link.kind ? "; over the same seconds, sources of one sound class (" + link.kind + ") count as the same" : "");
  }

  function countedText(entries, total) {
    return entries.map((entry) => entry.text + (entry.count < total ? " " + entry.count + "/" + total : "")).join(", ") || "—";
  }

  function renderMatching() {
    const target = document.getElementById("matching");
    if (!matching) return;
    const data = matching;
    target.textContent = "";
    if (!data.annotators || data.annotators.length < 2) {
      target.appendChild(el("p", "muted", "Matching needs at least two submitted annotations."));
      return;
    }
    const factors = el("div", "agreement-factors");
    const lowest = data.disagreements && data.disagreements.length ? data.disagreements[0].factor : null;
    for (const name of ["event", "source", "attribute", "relation"]) {
      const box = el("div", name === lowest ? "is-lowest" : "");
      box.dataset.factor = name;
      box.appendChild(el("strong", "", factorText(data.factors[name])));
      box.appendChild(el("span", "muted small", name));
      factors.appendChild(box);
    }
    target.appendChild(el("p", "hint", "Agreement of this clip on the rows below (per pair of annotators: events linked, and the sources, attributes and relations of linked events they share; averaged):"));
    target.appendChild(factors);
    target.appendChild(disagreementView(data));
    target.appendChild(el("p", "hint", "Events matched by what the sound is: meaning (the phrase, its name and sources) reaching what its time overlap needs (less over the same seconds; S is the weakest link's meaning, the needed value on hover). “+ gold” adds the group's merged event (n/m: how many annotators gave it) and its relations."));
    const table = el("table", "matching compact");
    const head = el("tr", "");
    data.annotators.forEach((name) => head.appendChild(el("th", "", name)));
    head.appendChild(el("th", "num", "S"));
    head.appendChild(el("th", "", "merged"));
    head.appendChild(el("th", "", ""));
    table.appendChild(el("thead", "")).appendChild(head);
    const body = el("tbody", "");
    data.groups.forEach((group, index) => {
      const row = el("tr", "");
      row.dataset.group = String(index);
      data.annotators.forEach((name) => {
        const labels = group.events[name];
        row.appendChild(el("td", labels ? "" : "unmatched", labels ? labels.join(", ") : "—"));
      });
      const score = el("td", "num", group.similarity === null ? "" : group.similarity.toFixed(2));
      score.title = group.links.map(partsText).join("\n");
      row.appendChild(score);
      const merged = group.merged;
      const summary = el("td", "merged-cell");
      summary.appendChild(el("strong", "", merged.label));
      summary.appendChild(el("span", "small", " · " + countedText(merged.sources, merged.annotators) + " · " + countedText(merged.attributes, merged.annotators)));
      if (merged.spans.length) summary.appendChild(el("span", "muted small", " · " + merged.spans.map(([a, b]) => a.toFixed(2) + "–" + b.toFixed(2)).join(", ") + " s"));
      summary.appendChild(clashView(index));
      row.appendChild(summary);
      const action = el("td", "");
      const inGold = editor && goldEventOf(index, editor.draft);
      const button = el("button", "add-group-to-gold", inGold ? "✓ merge again" : "+ gold");
      button.type = "button";
      button.title = "Add this group's merged event and its relations to the gold annotation";
      button.addEventListener("click", () => mergeGroup(index));
      action.appendChild(button);
      row.appendChild(action);
      body.appendChild(row);
    });
    table.appendChild(body);
    const wrap = el("div", "table-scroll");
    wrap.appendChild(table);
    target.appendChild(wrap);
  }

  /* The group's clashing attributes, each with a button that keeps it (the chosen one is marked). */
  function clashView(index) {
    const box = el("div", "attribute-clashes");
    const dropped = attributeChoices.get(index) || new Set();
    const counts = new Map(matching.groups[index].merged.attributes.map((entry) => [Graph.libraryKey(entry.text), entry.count]));
    const total = matching.groups[index].merged.annotators;
    for (const clash of attributeClashes(index)) {
      const line = el("p", "attribute-clash small");
      line.dataset.kind = clash.kind;
      const settled = dropped.has(Graph.libraryKey(clash.first)) || dropped.has(Graph.libraryKey(clash.second));
      line.classList.toggle("is-settled", settled);
      line.appendChild(el("span", "", (clash.kind === "count" ? "different counts" : "opposites") + " (tag library): "));
      for (const [kept, other] of [[clash.first, clash.second], [clash.second, clash.first]]) {
        const chosen = settled && !dropped.has(Graph.libraryKey(kept));
        const button = el("button", chosen ? "keep-attribute is-chosen" : "keep-attribute", (chosen ? "✓ " : "keep ") + kept + " " + (counts.get(Graph.libraryKey(kept)) || 0) + "/" + total);
        button.type = "button";
        button.dataset.attribute = kept;
        button.title = "Keep '" + kept + "' for this event and drop '" + other + "'";
        button.addEventListener("click", () => chooseAttribute(index, kept, other));
        line.appendChild(button);
      }
      box.appendChild(line);
    }
    return box;
  }

  // -- gold duplicates ---------------------------------------------------------------------------
  /* Ask the server (the review's matching rule) which gold events may name one sound, shortly after edits. */
  function scheduleDuplicateCheck() {
    window.clearTimeout(duplicateTimer);
    duplicateTimer = window.setTimeout(checkDuplicates, 500);
  }

  function checkDuplicates() {
    if (!review || editor.draft.events.length < 2) { renderDuplicates([]); return; }
    const request = ++duplicateRequest;
    const url = urls.checks.replace("/0/", "/" + review.id + "/");
    Page.callJson("POST", url, {draft: editor.draft}).then(({response, body}) => {
      if (request !== duplicateRequest || !response.ok) return;
      renderDuplicates(body.checks.filter((check) => check.code === "gold_duplicate"));
    }).catch(() => {});
  }

  function renderDuplicates(checks) {
    const box = document.getElementById("gold-duplicates");
    box.textContent = "";
    box.hidden = !checks.length;
    if (!checks.length) return;
    box.appendChild(el("strong", "", "Events that may name one sound (publishing refuses them until merged or related):"));
    const list = el("ul", "");
    for (const check of checks) {
      const item = el("li", "gold-duplicate");
      item.appendChild(el("span", "", check.message + " "));
      const second = editor.draft.events.find((event) => event.id === check.event);
      const first = editor.draft.events.find((event) => event.id === check.other_event);
      if (first && second) {
        const button = el("button", "merge-duplicate", "Merge '" + second.label + "' into '" + first.label + "'");
        button.type = "button";
        button.addEventListener("click", () => mergeGoldEvents(first.id, second.id));
        item.appendChild(button);
      }
      list.appendChild(item);
    }
    box.appendChild(list);
  }

  /* One gold event from two: the second's sources, attributes and spans join the first, its relations move. */
  function mergeGoldEvents(keptId, removedId) {
    const draft = Graph.clone(editor.draft);
    const kept = draft.events.find((event) => event.id === keptId);
    const removed = draft.events.find((event) => event.id === removedId);
    unionInto(kept, "sources", removed.sources);
    unionInto(kept, "attributes", removed.attributes);
    // An attribute the reviewer dropped from a clash of either event's row stays dropped.
    const dropped = new Set();
    goldOfGroup.forEach((id, group) => {
      if (id === keptId || id === removedId) (attributeChoices.get(group) || new Set()).forEach((key) => dropped.add(key));
    });
    kept.attributes = kept.attributes.filter((text) => !dropped.has(Graph.libraryKey(text)));
    kept.spans = Graph.mergedSpans(kept.spans.concat(removed.spans));
    draft.events = draft.events.filter((event) => event.id !== removedId);
    const moved = draft.relations.map((relation) => ({
      first: relation.first === removedId ? keptId : relation.first,
      second: relation.second === removedId ? keptId : relation.second,
      kind: relation.kind,
    }));
    draft.relations = moved.filter((relation, position) => relation.first !== relation.second && moved.findIndex((other) => (other.first === relation.first && other.second === relation.second) || (other.first === relation.second && other.second === relation.first)) === position);
    goldOfGroup.forEach((id, group) => { if (id === removedId) goldOfGroup.set(group, keptId); });
    editor.setDraft(draft, "merging '" + removed.label + "' into '" + kept.label + "'");
    editor.say("Merged '" + removed.label + "' into '" + kept.label + "' (Ctrl+Z undoes it).");
    renderMatching();
  }

  function disagreementView(data) {
    const box = el("details", "disagreements");
    box.open = true;
    box.appendChild(el("summary", "", "Where the annotators disagree (lowest agreement first)"));
    const list = el("ol", "");
    for (const entry of data.disagreements || []) {
      const item = el("li", "");
      item.dataset.factor = entry.factor;
      item.appendChild(el("strong", "", entry.factor + " " + factorText(entry.agreement)));
      if (!entry.items.length) item.appendChild(el("span", "muted small", ": no difference to point at"));
      const details = el("ul", "small");
      entry.items.slice(0, 6).forEach((text) => details.appendChild(el("li", "", text)));
      if (entry.items.length > 6) details.appendChild(el("li", "muted", "and " + (entry.items.length - 6) + " more"));
      item.appendChild(details);
      list.appendChild(item);
    }
    box.appendChild(list);
    return box;
  }

  // -- gold editor -------------------------------------------------------------------------------
  function startEditor() {
    let start = {draft: initial.emptyDraft, restored: false};
    if (review) {
      sync = newSync(review.draft_version);
      start = sync.restoreLocal(review.draft);
    }
    // Gold edits a closed tab of this review left unsaved (offline) are offered back, as on the annotators' page.
    if (review) sync.findOrphans().then((copies) => Page.offerOrphans(document.getElementById("stale-local"), sync, editor, copies));
    let syncRegions = () => {};
    editor = new EventEditor({
      root: document.getElementById("gold-editor"),
      relationsRoot: document.getElementById("gold-relations"),
      messageElement: document.getElementById("editor-message"),
      noteElement: document.getElementById("gold-note"),
      draft: start.draft,
      library: library,
      suggestions: Page.data("suggestions"),
      soundSources: soundSources,
      player: player,
      onChange: (draft) => {
        syncRegions();
        scheduleDuplicateCheck();
        if (sync) sync.edit(draft);
        // A copy: the editor changes its draft in place, and the sync keeps what it sent as the merge base.
        else startReview().then((started) => { if (started) sync.edit(Graph.clone(editor.draft)); });
      },
    });
    syncRegions = Page.connectPlayer(editor, player);
    if (!review) {
      statusElement.dataset.state = "new";
      statusElement.textContent = "Not started";
    } else if (!start.restored) {
      statusElement.dataset.state = "saved";
      statusElement.textContent = review.status === "published" ? "Gold published (version " + review.draft_version + ")" : "Saved (version " + review.draft_version + ")";
    }
    const relationForm = document.querySelector("#gold-relations .relation-form");
    relationForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const [first, second] = relationForm.querySelectorAll("select[data-role=event]");
      editor.addRelation(first.value, second.value, relationForm.querySelector("select[name=kind]").value);
    });
    // Ctrl+S before the review started has nothing to send.
    const saver = {flush: () => (sync ? sync.flush() : Promise.resolve(0))};
    Page.bindShortcuts({editor: editor, player: player, sync: saver, onSubmit: () => publish(false), helpElement: document.getElementById("shortcuts")});
    window.reviewPage = {editor: editor, get sync() { return sync; }, player: player, matching: () => matching, mergeGroup: mergeGroup, review: () => review};
  }

  function publish(confirmWarnings) {
    const button = document.getElementById("publish-button");
    button.disabled = true;
    startReview()
      .then((started) => {
        if (!started) throw new Error("the review could not be started");
        return sync.flush();
      })
      .then((version) => Page.callJson("POST", urls.publish.replace("/0/", "/" + review.id + "/"), {base_version: version, confirm_warnings: !!confirmWarnings}))
      .then(({response, body}) => {
        if (response.ok) {
          review = body;
          statusElement.dataset.state = "saved";
          statusElement.textContent = "Published as the clip's gold annotation (version " + body.draft_version + ").";
          document.getElementById("gold-state").textContent = "Gold published";
          return;
        }
        if (response.status === 400 && body.checks) {
          Page.renderChecks(dialog.querySelector(".dialog-checks"), body.checks, (check) => { dialog.close(); Page.focusCheck(editor, check); });
          dialog.querySelector(".dialog-title").textContent = body.needs_confirmation ? "Please confirm these warnings" : "Fix these errors before publishing";
          dialog.querySelector("[data-action=confirm-submit]").hidden = !body.needs_confirmation;
          dialog.showModal();
          return;
        }
        if (response.status === 409) {
          Page.showConflict(banner, {code: body.code, currentVersion: body.current_version, message: body.detail}, sync);
          return;
        }
        editor.say("Not published: " + (body.detail || JSON.stringify(body)), true);
      })
      .catch((error) => editor.say("Not published: " + (error.message || "the server could not be reached") + ".", true))
      .finally(() => { button.disabled = false; });
  }

  dialog.querySelector("[data-action=confirm-submit]").addEventListener("click", () => { dialog.close(); publish(true); });
  dialog.querySelector("[data-action=close]").addEventListener("click", () => dialog.close());
  document.getElementById("publish-button").addEventListener("click", () => publish(false));
})();
