"""A chain protocol's question page script, served as /assets/review-edit.js (no inline script).

It reads the page's JSON block (`state`), sets only `textContent`, and sends only the fields the
role may edit (`state.edits`): the question text, the referring query (the text selected in the
question box, as character offsets [start, end)), the options and the correct one, the category,
and the referred moments ([start, end] in seconds, marked at the player's current time). Every
change autosaves a draft; Accept / Reject submit. The token goes in a header, as on every page."""

SCRIPT = r"""
"use strict";
(function () {
  const state = JSON.parse(document.getElementById("state").textContent);
  const $ = (id) => document.getElementById(id);
  const form = $("decision"), video = $("video"), statusLine = $("save-status");
  const edits = new Set(state.edits);
  let annotation = state.annotation, query = annotation.referring_query, moments = annotation.referred_moments.slice();
  let openStart = null, lastKey = null, timer = null, chain = Promise.resolve();

  // ---- video: start at the first referred moment or evidence; seek buttons ----
  function seek(t) { video.currentTime = Math.max(0, t); const p = video.play(); if (p) p.catch(() => {}); }
  function bindSeeks(root) {
    root.querySelectorAll("[data-seek]").forEach((b) => b.addEventListener("click", (ev) => {
      ev.preventDefault(); seek(parseFloat(b.dataset.seek)); }));
  }
  bindSeeks(document);
  function toStart() { if (state.start > 0 && video.currentTime < 0.01) video.currentTime = state.start; }
  if (video.readyState >= 1) toStart(); else video.addEventListener("loadedmetadata", toStart, {once: true});
  video.addEventListener("timeupdate", () => {
    $("clock").textContent = video.currentTime.toFixed(1) + " s" + (isFinite(video.duration) ? " / " + video.duration.toFixed(1) + " s" : "");
  });

  // ---- the question and its referring query ----
  const box = $("edit-question");
  // the query's words, kept while the text is edited: the highlight finds them again once typed back
  let words = query && box ? box.value.slice(query[0], query[1]) : null;
  function showQuery() {
    if (!$("query-shown")) return;
    $("query-shown").textContent = query ? box.value.slice(query[0], query[1]) : "(none)";
  }
  function relocate() {  // the text changed: the query stays where its words are (as the server does)
    const text = box.value;
    if (words && !(query && text.slice(query[0], query[1]) === words)) {
      const at = text.indexOf(words);
      query = at >= 0 ? [at, at + words.length] : null;
    }
    showQuery();
  }
  if (box) box.addEventListener("input", relocate);
  if ($("mark-query")) $("mark-query").addEventListener("click", () => {
    if (box.selectionEnd > box.selectionStart) {
      query = [box.selectionStart, box.selectionEnd]; words = box.value.slice(query[0], query[1]); showQuery(); changed();
    }
    else show("select the referring query in the question text first", "error");
  });
  if ($("clear-query")) $("clear-query").addEventListener("click", () => { query = null; words = null; showQuery(); changed(); });

  // ---- referred moments: mark start / end at the player's current time ----
  function drawMoments() {
    const list = $("moments");
    if (!list) return;
    list.textContent = "";
    moments.forEach((m, i) => {
      const li = document.createElement("li"), b = document.createElement("button");
      b.type = "button"; b.dataset.seek = String(m[0]); b.textContent = "▶ " + m[0].toFixed(1) + "–" + m[1].toFixed(1) + " s";
      const x = document.createElement("button");
      x.type = "button"; x.textContent = "remove";
      x.addEventListener("click", () => { moments.splice(i, 1); drawMoments(); changed(); });
      li.append(b, " ", x); list.append(li); bindSeeks(li);
    });
    if (openStart !== null) { const li = document.createElement("li"); li.textContent = "start " + openStart.toFixed(1) + " s — press mark end"; list.append(li); }
  }
  const now = () => Math.round(video.currentTime * 1000) / 1000;
  if ($("mark-start")) $("mark-start").addEventListener("click", () => { openStart = now(); drawMoments(); });
  if ($("mark-end")) $("mark-end").addEventListener("click", () => {
    const t = now(), s = openStart === null ? t : openStart;
    moments.push([Math.min(s, t), Math.max(s, t)]); openStart = null; drawMoments(); changed();
  });
  if ($("clear-moments")) $("clear-moments").addEventListener("click", () => { moments = []; openStart = null; drawMoments(); changed(); });

  // ---- the decision ----
  const all = (name) => Array.from(form.querySelectorAll("input[name='" + name + "']"));
  function collect(status) {
    const d = {status: status, quality: {}, reason: $("reason").value, note: $("note").value};
    if (edits.has("quality")) all("quality").forEach((c) => { d.quality[c.value] = c.checked; });
    if (edits.has("question") && box) d.question = box.value;
    if (edits.has("referring_query")) d.referring_query = query;
    if (edits.has("referred_moments")) d.referred_moments = moments;
    if (edits.has("category") && $("category")) d.category = $("category").value || null;
    const texts = all("option").map((o) => o.value.trim());
    if (edits.has("options") && texts.length) d.options = texts.filter((t) => t);
    if (edits.has("answer")) {
      const r = all("correct").find((c) => c.checked);
      if (texts.length) d.answer = r ? texts[parseInt(r.value, 10)] : null;
      else if ($("edit-answer")) d.answer = $("edit-answer").value;
    }
    return d;
  }
  function fill(d) {
    if (!d) return;
    all("quality").forEach((c) => { c.checked = d.quality[c.value] === true; });
    $("reason").value = d.reason || ""; $("note").value = d.note || "";
  }
  function show(text, kind) { statusLine.textContent = text; statusLine.className = kind; }
  function content(d) { return JSON.stringify(Object.assign({}, d, {status: null})); }
  async function save(status) {
    const d = collect(status), key = content(d);
    if (status === "draft" && key === lastKey) return true;
    let reply, data;
    try {
      reply = await fetch(state.api, {method: "POST", credentials: "same-origin", body: JSON.stringify(d),
        headers: {"Content-Type": "application/json", "X-Review-Token": state.token}});
      data = await reply.json();
    } catch (err) { show("not saved (server unreachable) — your changes are still here", "error"); return false; }
    if (!reply.ok) { show("not saved: " + (data.detail || reply.status), "error"); return false; }
    lastKey = key;
    show((status === "draft" ? "draft saved" : status) + " · version " + data.version, status);
    $("current-status").textContent = data.status + " (version " + data.version + ")";
    return true;
  }
  function queue(status) { chain = chain.then(() => save(status)); return chain; }
  function changed() { clearTimeout(timer); timer = setTimeout(() => queue("draft"), 700); }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", (ev) => ev.preventDefault());
  $("accept").addEventListener("click", () => { clearTimeout(timer); return queue("accepted"); });
  $("reject").addEventListener("click", () => {
    clearTimeout(timer);
    if (!$("reason").value.trim()) { show("write why the question is rejected, then press Reject again", "error"); $("reason").focus(); return; }
    queue("rejected");
  });

  fill(state.saved);
  showQuery(); drawMoments();
  lastKey = content(collect("draft"));
})();
"""
