"""The question page's script, served as /assets/review.js (the pages allow no inline script).

It reads the page's JSON block (`state`), never writes data into the page as markup (only
`textContent`), and saves through the JSON API with the rater's token in a header — a request
another site cannot make (a custom header needs a CORS preflight this server never grants)."""

SCRIPT = r"""
"use strict";
(function () {
  const state = JSON.parse(document.getElementById("state").textContent);
  const $ = (id) => document.getElementById(id);
  const form = $("decision"), video = $("video"), statusLine = $("save-status");
  let lastKey = null, timer = null, chain = Promise.resolve();

  // ---- video: start at the evidence, seek buttons, the cue being played ----
  function clock(t) {
    const s = Math.max(0, t), m = Math.floor(s / 60);
    return String(m).padStart(2, "0") + ":" + (s - m * 60).toFixed(1).padStart(4, "0");
  }
  function seek(t) {
    video.currentTime = Math.max(0, t);
    const played = video.play();
    if (played) played.catch(() => {});
  }
  document.querySelectorAll("[data-seek]").forEach((b) =>
    b.addEventListener("click", (ev) => { ev.preventDefault(); seek(parseFloat(b.dataset.seek)); }));
  function highlight() {
    const t = video.currentTime;
    $("clock").textContent = clock(t) + (isFinite(video.duration) ? " / " + clock(video.duration) : "");
    document.querySelectorAll(".cues").forEach((list) => {
      let first = null;
      for (const li of list.children) {
        const on = t >= parseFloat(li.dataset.start) && t < parseFloat(li.dataset.end);
        li.classList.toggle("now", on);
        if (on && !first) first = li;
      }
      if (first) list.scrollTop = first.offsetTop - 24;
    });
  }
  function toEvidence() {
    if (state.start > 0 && video.currentTime < 0.01) video.currentTime = state.start;
    highlight();
  }
  // a cached video may have its metadata before this script runs: then no event comes
  if (video.readyState >= 1) toEvidence(); else video.addEventListener("loadedmetadata", toEvidence, {once: true});
  video.addEventListener("timeupdate", highlight);
  video.addEventListener("seeked", highlight);

  // ---- the decision: read and fill the controls ----
  const boxes = (name) => Array.from(form.querySelectorAll("input[name='" + name + "']"));
  function collect(status) {
    const d = {status: status, quality: {}, modality: null, answer: null, decoys: [], new_decoys: [],
               reason: $("reason").value, note: $("note").value};
    boxes("quality").forEach((c) => { d.quality[c.value] = c.checked; });
    const m = boxes("modality").find((c) => c.checked);
    if (m) d.modality = m.value;
    if ($("answer-edit-on").checked) d.answer = $("answer-edit").value;
    boxes("decoy").forEach((c) => { if (c.checked) d.decoys.push(parseInt(c.value, 10)); });
    boxes("new-decoy").forEach((c) => { if (c.value.trim()) d.new_decoys.push(c.value); });
    return d;
  }
  function fill(d) {
    if (!d) return;
    boxes("quality").forEach((c) => { c.checked = d.quality[c.value] === true; });
    boxes("modality").forEach((c) => { c.checked = c.value === d.modality; });
    $("answer-edit-on").checked = d.answer !== null && d.answer !== undefined;
    $("answer-edit").value = d.answer || "";
    boxes("decoy").forEach((c) => { c.checked = d.decoys.indexOf(parseInt(c.value, 10)) >= 0; });
    boxes("new-decoy").forEach((c, i) => { c.value = d.new_decoys[i] || ""; });
    $("reason").value = d.reason || "";
    $("note").value = d.note || "";
  }
  function count() {
    const d = collect("draft"), n = d.decoys.length + d.new_decoys.length, out = $("decoy-count");
    out.textContent = "(" + n + " of " + state.needed + " chosen)";
    out.className = "count " + (n === state.needed ? "ok" : "off");
  }
  function show(text, kind) { statusLine.textContent = text; statusLine.className = kind; }
  function content(d) { return JSON.stringify(Object.assign({}, d, {status: null})); }

  // ---- saving: every change autosaved as a draft; accept / reject submit ----
  async function save(status) {
    const d = collect(status), key = content(d), body = JSON.stringify(d);
    if (status === "draft" && key === lastKey) return true;  // nothing changed since the last save
    let reply, data;
    try {
      reply = await fetch(state.api, {method: "POST", credentials: "same-origin", body: body,
        headers: {"Content-Type": "application/json", "X-Review-Token": state.token}});
      data = await reply.json();
    } catch (err) {
      show("not saved (server unreachable) — your changes are still here", "error");
      return false;
    }
    if (!reply.ok) { show("not saved: " + (data.detail || reply.status), "error"); return false; }
    lastKey = key;
    const when = new Date(data.created * 1000).toLocaleTimeString();
    show((status === "draft" ? "draft saved" : status) + " · version " + data.version + " · " + when, status);
    $("current-status").textContent = data.status + " (version " + data.version + ")";
    return true;
  }
  function queue(status) { chain = chain.then(() => save(status)); return chain; }
  function changed() { count(); clearTimeout(timer); timer = setTimeout(() => queue("draft"), 700); }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", (ev) => ev.preventDefault());
  $("answer-edit").addEventListener("focus", () => {
    if (!$("answer-edit-on").checked) {
      $("answer-edit-on").checked = true;
      if (!$("answer-edit").value) $("answer-edit").value = state.answer;
    }
  });
  function accept() { clearTimeout(timer); return queue("accepted"); }
  function reject() {
    clearTimeout(timer);
    if (!$("reason").value.trim()) { show("write why the question is rejected, then press Reject again", "error");
      $("reason").focus(); return chain; }
    return queue("rejected");
  }
  $("accept").addEventListener("click", accept);
  $("reject").addEventListener("click", reject);

  // ---- keyboard ----
  function toggle(c) { c.checked = !c.checked; c.dispatchEvent(new Event("change", {bubbles: true})); }
  document.addEventListener("keydown", (ev) => {
    const t = ev.target, tag = t.tagName || "";
    if (ev.key === "Escape") { if (t.blur) t.blur(); return; }
    if (tag === "TEXTAREA" || (tag === "INPUT" && t.type === "text") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === " " && (tag === "INPUT" || tag === "BUTTON")) return;
    const k = ev.key;
    if (k === " " || k === "k") { if (video.paused) seek(video.currentTime); else video.pause(); }
    else if (k === "j" || k === "l") seek(video.currentTime + (k === "j" ? -5 : 5));
    else if (k >= "1" && k <= "9" && boxes("decoy")[parseInt(k, 10) - 1]) toggle(boxes("decoy")[parseInt(k, 10) - 1]);
    else if (k === "c") boxes("quality").forEach((c) => { if (!c.checked) toggle(c); });
    else if (k === "m") {
      const all = boxes("modality"), at = all.findIndex((c) => c.checked);
      all[(at + 1) % all.length].checked = true;
      changed();
    }
    else if (k === "e") { $("answer-edit").focus(); }
    else if (k === "a") accept();
    else if (k === "x") reject();
    else if ((k === "n" && state.next) || (k === "p" && state.previous)) {
      clearTimeout(timer);
      const to = k === "n" ? state.next : state.previous;
      chain.then(() => queue("draft")).then(() => { window.location.href = to; });
    }
    else if (k === "?") { $("shortcuts").open = !$("shortcuts").open; }
    else return;
    ev.preventDefault();
  });

  fill(state.saved);
  lastKey = content(collect("draft"));
  count();
})();
"""
