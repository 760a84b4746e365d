/*
 * MergeView: the conflict banner of the editor pages. After a refused save (or when restoring edits a closed
 * tab left in this browser) everything that merged is already applied; what both sides changed differently is
 * listed here side by side, and each button says what it keeps and what it drops. Nothing is applied until
 * every item has a choice ("Save with these choices").
 *
 *   MergeView.show(banner, conflict, sync)   // conflict: from DraftSync's onConflict
 */
window.MergeView = (function () {
  "use strict";

  const Merge = window.DraftMerge;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function eventName(event) {
    return "'" + (event.label.trim() || "unnamed") + "'";
  }

  /* Event id -> quoted name, from everything the merge knows (relations name their events). */
  function namesOf(merge) {
    const names = {};
    merge.slots.forEach((slot) => { if (slot.event) names[slot.event.id] = eventName(slot.event); });
    merge.conflicts.forEach((c) => {
      if (c.type !== "event") return;
      [c.base, c.theirs, c.mine].forEach((event) => { if (event) names[event.id] = eventName(event); });
    });
    return names;
  }

  /* [{choice, text}] for one conflict: each button names what it keeps and what it drops. */
  function options(conflict, labels, names) {
    const {mine, theirs, base} = conflict;
    if (conflict.type === "event") {
      const keep = (kept, other, keptFrom, otherFrom) => kept
        ? "Keep the version of " + keptFrom + ": " + Merge.describeEvent(kept) + " — drops from " + otherFrom + ": " + (Merge.lostEvent(kept, other, base) || "nothing")
        : "Delete " + eventName(other) + " as " + keptFrom + " did — drops from " + otherFrom + ": " + Merge.describeEvent(other);
      const list = [
        {choice: "mine", text: keep(mine, theirs, labels.mine, labels.theirs)},
        {choice: "theirs", text: keep(theirs, mine, labels.theirs, labels.mine)},
      ];
      if (mine && theirs) list.push({choice: "both", text: "Keep both as two events — drops nothing (remove the one you do not want afterwards)"});
      return list;
    }
    if (conflict.type === "relation") {
      const keep = (kept, other, keptFrom) => (kept ? "Keep " + Merge.describeRelation(kept, names) : "Keep no relation between these events")
        + " (" + keptFrom + ") — drops " + (other ? Merge.describeRelation(other, names) : "nothing");
      return [
        {choice: "mine", text: keep(mine, theirs, labels.mine)},
        {choice: "theirs", text: keep(theirs, mine, labels.theirs)},
      ];
    }
    const quote = (text) => (text ? "“" + text + "”" : "an empty note");
    return [
      {choice: "mine", text: "Keep the note of " + labels.mine + " — drops " + quote(theirs)},
      {choice: "theirs", text: "Keep the note of " + labels.theirs + " — drops " + quote(mine)},
      {choice: "both", text: "Keep both notes, one after the other — drops nothing"},
    ];
  }

  function describe(conflict, value, names) {
    if (conflict.type === "event") return Merge.describeEvent(value);
    if (conflict.type === "relation") return value ? Merge.describeRelation(value, names) : "no relation";
    return value || "(empty)";
  }

  function title(conflict, names) {
    if (conflict.type === "event") {
      const name = eventName(conflict.mine || conflict.theirs);
      return conflict.mine && conflict.theirs ? "The event " + name + " was changed in both" : "The event " + name + " was deleted in one and changed in the other";
    }
    if (conflict.type === "relation") {
      const relation = conflict.mine || conflict.theirs;
      return "The relation between " + (names[relation.first] || relation.first) + " and " + (names[relation.second] || relation.second) + " was changed in both";
    }
    return "The note was changed in both";
  }

  function show(banner, conflict, sync) {
    banner.hidden = false;
    const message = banner.querySelector(".conflict-message");
    const list = banner.querySelector(".merge-conflicts");
    const apply = banner.querySelector("[data-action=apply-merge]");
    const reload = banner.querySelector("[data-action=load-newer]");
    list.textContent = "";
    if (!conflict.merge) {
      // Locked (submitted or reassigned elsewhere), or a server that sent no draft to merge with.
      message.textContent = conflict.code === "stale_version"
        ? "This clip was saved from another tab or window (version " + conflict.currentVersion + "). Your latest edits here are kept in this browser; reload to merge them."
        : (conflict.message || "This clip can no longer be edited.");
      apply.hidden = true;
      reload.hidden = false;
      reload.onclick = () => window.location.reload();
      return;
    }
    const {merge, labels} = conflict;
    const names = namesOf(merge);
    message.textContent = (conflict.code === "merge"
      ? "The edits restored from this browser and this page changed the same things."
      : "This clip was also changed in another tab or device (version " + conflict.currentVersion + "); nothing was saved or overwritten yet.")
      + " What changed in only one place is merged without asking; "
      + (merge.conflicts.length === 1 ? "this item needs your choice:" : "these " + merge.conflicts.length + " items need your choice:");
    const choices = {};
    merge.conflicts.forEach((item) => {
      const entry = el("li", "merge-conflict");
      entry.dataset.key = item.key;
      entry.appendChild(el("p", "merge-what", title(item, names)));
      const sides = el("div", "merge-sides");
      [["mine", labels.mine], ["theirs", labels.theirs]].forEach(([side, label]) => {
        const column = el("section", "merge-side");
        column.dataset.side = side;
        column.appendChild(el("h4", "", label.charAt(0).toUpperCase() + label.slice(1)));
        column.appendChild(el("p", "", describe(item, item[side], names)));
        sides.appendChild(column);
      });
      entry.appendChild(sides);
      const buttons = el("div", "merge-choices");
      options(item, labels, names).forEach((option) => {
        const button = el("button", "", option.text);
        button.type = "button";
        button.dataset.choice = option.choice;
        button.setAttribute("aria-pressed", "false");
        button.onclick = () => {
          choices[item.key] = option.choice;
          buttons.querySelectorAll("button").forEach((other) => other.setAttribute("aria-pressed", String(other === button)));
          apply.disabled = merge.conflicts.some((c) => !choices[c.key]);
        };
        buttons.appendChild(button);
      });
      entry.appendChild(buttons);
      list.appendChild(entry);
    });
    reload.hidden = true;
    apply.hidden = false;
    apply.disabled = true;
    apply.onclick = () => {
      banner.hidden = true;
      sync.resolveConflict(choices).catch(() => {});
    };
    banner.scrollIntoView({block: "nearest"});
  }

  return {show: show};
})();
