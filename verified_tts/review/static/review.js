// The review page: a worst-first list of lines, one line's takes, and keyboard actions.
// Plain DOM, no framework; text from the book is only ever set as textContent.
"use strict";

const TOKEN = document.querySelector('meta[name="review-token"]').content;
const PAGE = 100;
const state = {
  rows: [], total: 0, current: -1, detail: null, summary: null,
  jobs: [], polling: null, lastJobs: "", query: { show: "all", chapter: "", q: "" },
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function toast(text, error) {
  const box = $("toast");
  box.textContent = text;
  box.className = "show" + (error ? " error" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.className = ""; }, error ? 6000 : 2500);
}

async function api(path, body) {
  const options = { headers: { "X-Review-Token": TOKEN }, credentials: "same-origin" };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

async function act(path, body, done) {
  try {
    const data = await api(path, body);
    if (data.summary) showSummary(data.summary);
    if (done) toast(done);
    await refreshLine();
    pollJobs();
    return data;
  } catch (error) {
    toast(error.message, true);
    return null;
  }
}

// ---- summary, jobs ---------------------------------------------------------------------------
function showSummary(summary) {
  state.summary = summary;
  const p = $("progress");
  p.replaceChildren(
    el("b", {}, summary.reviewed), ` of ${summary.lines} reviewed · `,
    el("b", {}, summary.left), " left · ",
    el("b", { id: "flagged-left" }, summary.flagged_left), " flagged left",
    summary.orphans ? ` · ${summary.orphans} decisions for lines no longer here` : "",
  );
  $("words-button").hidden = !summary.words;
  $("words-button").firstChild.textContent = `Words (${summary.words}) `;
  $("speakers-button").hidden = !summary.speakers;
  $("speakers-button").firstChild.textContent = `Speakers (${summary.speakers}) `;
  $("undo").disabled = !summary.undo;
  $("undo").title = summary.undo ? `Undo: ${summary.undo.text} (u)` : "nothing to undo";
  const chapter = $("chapter");
  if (chapter.options.length === 1 && summary.chapters.length > 1) {
    for (const c of summary.chapters) {
      chapter.append(el("option", { value: c.index }, `${c.index + 1}. ${c.title || "chapter"}`));
    }
  }
}

function jobLine(job) {
  if (job.state === "failed") return el("span", { class: "failed" }, `${job.title}: ${job.error}`);
  if (job.state === "done" && job.kind === "deliver" && job.result) {
    const r = job.result;
    const acx = r.acx_passed === true ? "ACX check passed" : r.acx_passed === false ? "ACX check FAILED" : "";
    return el("span", { id: "delivered" },
      `delivered: ${r.rebuilt.length} chapter(s) rebuilt, ${r.kept.length} kept` + (acx ? `; ${acx}` : ""));
  }
  if (job.state === "done") return `done: ${job.title}`;
  return `${job.state === "queued" ? "queued" : "working"}: ${job.title}${job.progress ? " · " + job.progress : ""}`;
}

async function pollJobs() {
  let data;
  try { data = await api("/api/jobs"); } catch (error) { return; }
  const jobs = data.jobs;
  const active = jobs.filter((j) => j.state === "queued" || j.state === "running");
  const last = active[0] || jobs[jobs.length - 1];
  $("jobs").replaceChildren(last ? jobLine(last) : "");
  $("jobs").dataset.state = last ? last.state : "";
  $("jobs").dataset.kind = last ? last.kind : "";
  const signature = JSON.stringify(jobs.map((j) => [j.id, j.state]));
  if (signature !== state.lastJobs) {
    const finished = state.lastJobs !== "";
    state.lastJobs = signature;
    if (finished) {
      const words = state.wordsOpen;
      const speakers = state.speakersOpen;
      showSummary(await api("/api/summary"));
      await reloadList(true);
      if (words) await showWords();
      if (speakers) await showSpeakers();
    }
  }
  clearTimeout(state.polling);
  if (active.length) state.polling = setTimeout(pollJobs, 700);
}

// ---- the list --------------------------------------------------------------------------------
function rowNode(row, index) {
  const badges = [];
  if (row.flagged) badges.push(el("span", { class: "badge flag", title: "no take passed the checks" }, "flag"));
  if (row.decision) badges.push(el("span", { class: "badge done" }, row.decision));
  if (row.pending) badges.push(el("span", { class: "badge work" }, "working"));
  else if (row.changed) badges.push(el("span", { class: "badge" }, "changed"));
  if (row.stale) badges.push(el("span", { class: "badge stale" }, "text changed"));
  return el("li", {
    class: index === state.current ? "current" : "", "data-pos": row.pos,
    onclick: () => select(index),
  }, el("span", { class: "badge", title: "chapter" }, row.chapter + 1),
  el("span", { class: "text" }, row.text, row.reason ? el("span", { class: "why" }, row.reason) : null),
  badges);
}

function drawList() {
  const list = $("list");
  list.replaceChildren(...state.rows.map(rowNode));
  $("count").textContent = `${state.total} line${state.total === 1 ? "" : "s"}`;
  $("more-rows").hidden = state.rows.length >= state.total;
}

function listQuery(offset) {
  const q = state.query;
  const params = new URLSearchParams({ show: q.show, q: q.q, offset, limit: PAGE });
  if (q.chapter !== "") params.set("chapter", q.chapter);
  return "/api/lines?" + params.toString();
}

async function reloadList(keep) {
  const pos = keep && state.detail ? state.detail.pos : null;
  const wanted = Math.max(PAGE, keep ? state.rows.length : 0);
  const data = await api(listQuery(0).replace(`limit=${PAGE}`, `limit=${Math.min(wanted, 500)}`));
  state.rows = data.rows;
  state.total = data.total;
  let index = pos === null ? 0 : state.rows.findIndex((r) => r.pos === pos);
  if (index < 0) index = Math.min(state.current, state.rows.length - 1);
  state.current = -1;
  drawList();
  if (state.rows.length) await select(Math.max(0, index), keep && pos !== null);
  else $("detail").replaceChildren(el("p", { class: "muted" }, "no line matches"));
}

async function moreRows() {
  if (state.rows.length >= state.total) return;
  const data = await api(listQuery(state.rows.length));
  state.rows.push(...data.rows);
  state.total = data.total;
  drawList();
}

async function select(index, quiet) {
  if (index < 0 || index >= state.rows.length) return;
  const previous = $("list").querySelector("li.current");
  if (previous) previous.classList.remove("current");
  state.current = index;
  const item = $("list").children[index];
  if (item) { item.classList.add("current"); if (!quiet) item.scrollIntoView({ block: "nearest" }); }
  if (index > state.rows.length - 10) moreRows();
  await showLine(state.rows[index].pos);
}

async function refreshLine() {
  if (!state.detail) return;
  const pos = state.detail.pos;
  await showLine(pos);
  const index = state.rows.findIndex((r) => r.pos === pos);
  if (index >= 0 && state.detail) {
    const d = state.detail;
    Object.assign(state.rows[index], { decision: d.decision, pending: d.pending.length > 0, stale: !!d.stale, winner: d.winner });
    $("list").children[index].replaceWith(rowNode(state.rows[index], index));
  }
}

// ---- one line --------------------------------------------------------------------------------
function textWithMark(text, marked) {
  // each word is a span (a click opens a lexicon entry for it); the doubtful word is marked,
  // and so is a doubtful punctuation mark between words
  const node = el("p", { id: "line-text" });
  const between = (a, b) => {
    if (marked && marked[0] >= a && marked[1] <= b && marked[1] > marked[0]) {
      return [text.slice(a, marked[0]), el("mark", {}, text.slice(marked[0], marked[1])), text.slice(marked[1], b)];
    }
    return [text.slice(a, b)];
  };
  let at = 0;
  for (const match of text.matchAll(/[\p{L}\p{N}'’-]+/gu)) {
    const start = match.index, end = start + match[0].length;
    if (start > at) node.append(...between(at, start));
    const word = el("span", { class: "word", title: "add a lexicon entry for this word",
      onclick: () => openLexicon(match[0]) }, match[0]);
    node.append(marked && start < marked[1] && end > marked[0] ? el("mark", {}, word) : word);
    at = end;
  }
  if (at < text.length) node.append(...between(at, text.length));
  return node;
}

function reasonList(reasons) {
  if (!reasons.length) return el("ul", { class: "reasons" }, el("li", { class: "ok" }, "passed every check"));
  return el("ul", { class: "reasons" }, reasons.map((r) => el("li", { "data-kind": r.kind }, r.text)));
}

function player(src, id) {
  return src ? el("audio", { controls: true, preload: "none", src, id }) : el("span", { class: "muted" }, "not kept");
}

function showLine(pos) {
  return api(`/api/line/${pos}`).then(drawLine).catch((error) => toast(error.message, true));
}

function drawLine(d) {
  // an open form (an edit, a lexicon entry being tried) stays open while its own line is redrawn
  const kept = state.detail && state.detail.pos === d.pos ? $("forms") : null;
  state.detail = d;
  state.wordsOpen = false;
  state.speakersOpen = false;
  const takes = d.candidates;
  const inBook = takes[d.winner];
  const where = `chapter ${d.chapter + 1}${d.chapter_title ? " · " + d.chapter_title : ""} · line ${d.place} of ${d.chapter_lines}`;
  const versioned = d.versions.length > 0;
  const rows = takes.map((c) => el("tr", { class: c.index === d.winner ? "chosen" : "", "data-take": c.index, "data-version": c.version },
    el("td", {}, el("kbd", {}, c.index < 9 ? c.index + 1 : ""), versioned ? el("span", { class: "muted" }, ` v${c.version}`) : ""),
    el("td", {}, player(c.audio, `take-${c.index}`)),
    el("td", { class: c.passed ? "pass" : "fail" }, c.passed ? "passed" : "failed"),
    el("td", {}, c.reasons.length ? c.reasons.map((r) => r.text).join("; ") : "—",
      c.index === d.selected ? el("span", { class: "muted" }, " (the verifiers' pick)") : ""),
    el("td", { class: "heard" }, c.heard ? el("q", {}, c.heard) : "—"),
    el("td", { class: "num" }, c.duration_s != null ? `${c.duration_s.toFixed(2)} s` : ""),
    el("td", {}, c.index === d.winner ? el("b", {}, "in the book")
      : el("button", { onclick: () => choose(c.index), disabled: !c.audio }, "choose")),
  ));
  const dub = d.dub ? el("div", { class: "card", id: "cue" },
    `cue ${d.dub.start.toFixed(2)}–${d.dub.end.toFixed(2)} s (room to ${d.dub.slot_end.toFixed(2)} s); ` +
    `the take sits at ${d.dub.placed_start.toFixed(2)}–${d.dub.placed_end.toFixed(2)} s` +
    (d.dub.stretch && d.dub.stretch !== 1 ? `, sped up ${d.dub.stretch.toFixed(2)}x` : "") +
    (d.dub.flag_reasons && d.dub.flag_reasons.length ? ` (${d.dub.flag_reasons.join("; ")})` : "")) : null;
  const notes = [];
  if (!inBook.passed) {
    notes.push(el("div", { class: "note warn", id: "in-book-failed" },
      `the take in the book failed the checks: ${reasonsText(inBook)}` + (d.decision === "chosen" ? " (chosen in review)" : "")));
  }
  if (d.stale) notes.push(el("div", { class: "note", id: "stale" }, d.stale));
  if (versioned) {
    notes.push(el("div", { class: "note", id: "versions" }, d.versions.map((v) => el("div", {},
      `version ${v.version}: ` + (v.kind === "lexicon" && v.entry ? `the lexicon entry \u201c${v.entry.match}\u201d (${v.entry.say || v.entry.phonemes})`
        : v.kind === "speaker" ? `the quote given to ${v.speaker}` : "an edit") +
      ` rendered this line again, \u201c${v.spoken_before}\u201d now spoken \u201c${v.spoken}\u201d: ${v.takes} new take${v.takes === 1 ? "" : "s"} (v${v.version}) beside the earlier ones` +
      (v.kept ? `; the take you had decided on, take ${v.kept_take + 1} (version ${v.version - 1}), stays in the book until you choose a new one` : "")))));
  }
  if (d.pending.length) notes.push(el("div", { class: "note" }, `working on it: ${d.pending.join(", ")}`));
  if (d.repeats > 1) notes.push(el("div", { class: "note" }, `this sentence occurs ${d.repeats} times: a decision applies to each`));
  const parts = [
    el("div", { class: "where" }, where, d.flagged ? el("span", { class: "badge flag" }, "flagged") : "",
      d.decision ? el("span", { class: "badge done", id: "decision" }, d.decision) : ""),
    textWithMark(d.text, d.marked),
    d.spoken && d.spoken !== d.text ? el("div", { class: "muted" }, "spoken as: ", el("span", { id: "spoken" }, d.spoken)) : null,
    reasonList(d.reasons),
    el("div", { class: "heard" }, "the ASR model heard: ", d.heard ? el("q", {}, d.heard) : "—"),
    notes, dub,
    el("div", { class: "card inbook" }, el("b", {}, `in the book: take ${d.winner + 1}`),
      player(inBook.audio, "winner-audio"),
      el("button", { id: "approve", onclick: approve }, "approve ", el("kbd", {}, "a")),
      el("button", { id: "context-button", onclick: playContext, disabled: !inBook.audio }, "play in context ", el("kbd", {}, "c")),
      el("span", { id: "context", class: "muted" })),
    el("table", { class: "takes" }, el("thead", {}, el("tr", {}, ["", "take", "checks", "why", "heard", "length", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)),
    el("div", { class: "card actions" },
      el("button", { id: "more", onclick: more }, "more takes ", el("kbd", {}, "m")),
      el("label", {}, "how many ", el("input", { type: "number", id: "more-k", min: 1, max: 32, value: 4 })),
      el("button", { id: "edit", onclick: openEdit }, "edit the spoken text ", el("kbd", {}, "e")),
      el("button", { id: "lexicon", onclick: () => openLexicon(d.word) }, "lexicon entry ", el("kbd", {}, "l"))),
    kept || el("div", { id: "forms" }),
    d.history.length ? el("div", { class: "history" }, el("b", {}, "decisions"),
      el("ul", {}, d.history.map((h) => el("li", {}, `${h.text} — ${h.by}, ${h.at.replace("T", " ").slice(0, 19)}`)))) : null,
  ];
  $("detail").replaceChildren(...parts.flat().filter((part) => part !== null && part !== false));
}

// A book-wide panel (the words, the speakers) takes the detail pane: no line is current.
function openPanel(name) {
  state.detail = null;
  state.wordsOpen = name === "words";
  state.speakersOpen = name === "speakers";
  const previous = $("list").querySelector("li.current");
  if (previous) previous.classList.remove("current");
  state.current = -1;
}

// ---- the words decided once for the book -----------------------------------------------------
// Each word the render decided with every reading: who proposed it, how often the ASR model heard
// the word in its takes, a player for its best take, and one click to put it in the book.
async function showWords() {
  let data;
  try { data = await api("/api/words"); } catch (error) { toast(error.message, true); return; }
  openPanel("words");
  $("detail").replaceChildren(el("div", { id: "words" },
    el("h2", {}, "Words decided once for the book"),
    el("p", { class: "muted" }, "Every line says each word the way marked “in the book”. " +
      "Listen to each reading; “use this” reads the word that way everywhere (its lines are rendered again)."),
    data.words.map(wordCard)));
}

function wordCard(w) {
  const decided = w.by === "review" ? "chosen in review"
    : w.changed ? "another reading chosen by the verifiers" : "espeak-ng's own reading kept";
  return el("div", { class: "card word", "data-word": w.word },
    el("div", {}, el("b", { class: "word-name" }, w.word), ` · ${w.count} time${w.count === 1 ? "" : "s"} · ${w.why} · `,
      el("span", { class: "muted decided" }, decided)),
    w.example ? el("div", { class: "muted" }, el("q", {}, w.example)) : null,
    el("table", { class: "takes readings" }, el("tbody", {}, w.readings.map((r) => el("tr", {
      class: r.chosen ? "chosen" : "", "data-reading": r.index },
    el("td", { class: "phonemes" }, r.phonemes),
    el("td", {}, r.sources.join(", ")),
    el("td", {}, `heard as the word in ${Math.round(100 * (r.heard_word || 0))}% of ${r.takes} take${r.takes === 1 ? "" : "s"}`),
    el("td", {}, player(r.audio, `word-${w.index}-${r.index}`)),
    el("td", {}, r.chosen ? el("b", {}, "in the book")
      : el("button", { class: "use-reading", onclick: () => useReading(w, r) }, "use this")))))));
}

async function useReading(w, r) {
  const yes = await ask(`Read “${w.word}” as ${r.phonemes} everywhere? Every line with it is rendered again.`);
  if (!yes) return;
  const done = await act("/api/lexicon", { word: w.word, phonemes: r.phonemes },
    `“${w.word}” queued: its lines are rendered again`);
  if (done) await showWords();
}

// ---- who says each quote --------------------------------------------------------------------
// The quotes the attribution gave no speaker come first, least sure first, then the rest; one
// click gives a quote to a character of the cast (or the narrator, or the dialogue voice), and its
// lines are rendered again in that voice.
async function showSpeakers() {
  let data;
  try { data = await api("/api/speakers?limit=200"); } catch (error) { toast(error.message, true); return; }
  openPanel("speakers");
  $("detail").replaceChildren(el("div", { id: "speakers" },
    el("h2", {}, "Who says each quote"),
    el("p", { class: "muted" }, `${data.uncertain} of ${data.total} quotes have no speaker: their guess is below ` +
      `the cast's threshold (${data.threshold}), so the dialogue voice reads them. They come first, least sure first. ` +
      "A click gives a quote to a speaker, and its lines are rendered again in that voice."),
    data.quotes.map((q) => quoteCard(q, data.choices))));
}

function quoteCard(q, choices) {
  const now = q.chosen || q.speaker;
  const guess = q.guess ? `guess: ${q.guess}` : "no guess";
  const sure = q.confidence != null ? ` · confidence ${q.confidence.toFixed(2)}` : "";
  return el("div", { class: "card quote" + (q.uncertain ? " uncertain" : ""), "data-pos": q.pos },
    el("div", {}, el("q", { class: "quote-text" }, q.text)),
    el("div", { class: "muted why" }, `${guess}${sure} · ${q.why || ""}`),
    el("div", { class: "now" }, q.chosen ? `given to ${q.chosen} in review` + (q.working ? " (rendering)" : "")
      : now ? `spoken by ${now}` : "spoken in the dialogue voice"),
    el("div", { class: "speaker-choices" }, choices.map((c) => el("button", {
      class: "speaker-choice" + (c === now ? " primary" : ""), "data-speaker": c,
      disabled: c === q.chosen, onclick: () => giveTo(q, c) }, c))));
}

async function giveTo(q, speaker) {
  const done = await act("/api/speaker", { pos: q.pos, speaker }, `given to ${speaker}: rendering it in that voice`);
  if (done) await showSpeakers();
}

// ---- asking first ----------------------------------------------------------------------------
// A question in the page (Enter: yes, Esc: no); resolves true for yes.
function ask(text) {
  const box = $("ask");
  if (box.open) return Promise.resolve(false);
  $("ask-text").textContent = text;
  return new Promise((resolve) => {
    const done = (answer) => { box.onclose = null; if (box.open) box.close(); resolve(answer); };
    $("ask-yes").onclick = () => done(true);
    $("ask-no").onclick = () => done(false);
    // a close event is queued after close(): the one of the question before may arrive only
    // now, after input the browser handled first, while this question is open; it is not ours
    box.onclose = () => { if (!box.open) done(false); };
    box.answer = done;
    box.showModal();
    $("ask-yes").focus();
  });
}

// ---- actions ---------------------------------------------------------------------------------
function reasonsText(take) {
  return take.reasons.length ? take.reasons.map((r) => r.text).join("; ") : `failed: ${take.failed_gates.join(", ")}`;
}
async function choose(index) {
  const d = state.detail;
  if (!d) return;
  const take = d.candidates[index];
  if (take && !take.passed && take.audio && index !== d.winner) {
    const yes = await ask(`Take ${index + 1} failed the checks: ${reasonsText(take)}. Put it in the book anyway?`);
    if (!yes || !state.detail || state.detail.pos !== d.pos) return;
  }
  act("/api/choose", { pos: d.pos, candidate: index }, `take ${index + 1} chosen`);
}
const approve = () => state.detail && act("/api/approve", { pos: state.detail.pos }, "approved");
const undo = () => act("/api/undo", {}, "undone").then(() => reloadList(true));
function more() {
  if (!state.detail) return;
  const k = parseInt(($("more-k") || {}).value || "4", 10);
  act("/api/more", { pos: state.detail.pos, k }, `${k} more takes queued`);
}
async function deliver() {
  const s = state.summary || {};
  const since = s.delivered ? `${s.since_delivery} decision${s.since_delivery === 1 ? "" : "s"} since the last delivery` : "not delivered yet";
  const yes = await ask(`Deliver now? The chapters whose takes changed are assembled again, then the book files, ` +
    `the deliverables, manifest.json and report.html (${s.reviewed || 0} of ${s.lines || 0} lines reviewed; ${since}).`);
  if (!yes) return;
  try { await api("/api/deliver", {}); toast("delivering…"); } catch (error) { toast(error.message, true); }
  pollJobs();
}

function openEdit() {
  const d = state.detail;
  if (!d) return;
  const area = el("textarea", { id: "edit-text", "aria-label": "spoken text" });
  area.value = d.spoken || d.text;
  const save = () => act("/api/edit", { pos: d.pos, spoken: area.value }, "edit queued: rendering the line");
  const form = el("form", { class: "panel", id: "edit-form", onsubmit: (e) => { e.preventDefault(); save(); } },
    el("div", {}, "Say this line as (only this line is rendered again; the book file is not changed):"),
    area, el("div", {}, el("button", { type: "submit", class: "primary" }, "render it ", el("kbd", {}, "Ctrl+Enter")),
      el("button", { type: "button", onclick: closeForms }, "cancel ", el("kbd", {}, "Esc"))));
  area.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); } });
  $("forms").replaceChildren(form);
  area.focus();
}

function openLexicon(word) {
  if (!state.detail) return;
  if (word && !/[\p{L}\p{N}]/u.test(word)) word = "";  // a doubtful comma is no lexicon word
  const w = el("input", { type: "text", id: "lex-word", value: word || "" });
  const say = el("input", { type: "text", id: "lex-say", placeholder: "e.g. her-my-oh-nee" });
  const ipa = el("input", { type: "text", id: "lex-phonemes", placeholder: "IPA (Piper), optional" });
  const count = el("span", { class: "muted", id: "lex-count" });
  const body = () => ({ word: w.value, say: say.value || null, phonemes: ipa.value || null });
  const preview = async () => {
    if (!w.value || (!say.value && !ipa.value)) { count.textContent = ""; return; }
    try {
      const found = await api("/api/lexicon/preview", body());
      count.textContent = `renders ${found.lines.length} line${found.lines.length === 1 ? "" : "s"} again`;
    } catch (error) { count.textContent = error.message; }
  };
  for (const input of [w, say, ipa]) input.addEventListener("input", () => { clearTimeout(preview.t); preview.t = setTimeout(preview, 250); });
  const tried = el("div", { id: "lex-tried" });
  const pos = state.detail.pos;
  const tryIt = async () => {
    tried.replaceChildren(el("span", { class: "muted" }, "rendering this line with it…"));
    let job;
    try { job = (await api("/api/lexicon/try", { pos, ...body() })).job; } catch (error) { tried.replaceChildren(el("span", { class: "fail tried-error" }, error.message)); return; }
    pollJobs();
    for (;;) {
      const found = (await api("/api/jobs")).jobs.find((j) => j.id === job);
      if (found && found.state === "failed") { tried.replaceChildren(el("span", { class: "fail tried-error" }, found.error)); return; }
      if (found && found.state === "done") {
        const r = found.result;
        tried.replaceChildren(el("div", {}, "on this line only, not in the book yet: \u201c", r.spoken, "\u201d"),
          el("table", { class: "takes" }, el("tbody", {}, r.takes.map((t) => el("tr", {},
            el("td", {}, `take ${t.index + 1}`), el("td", {}, player(t.audio, `tried-${t.index}`)),
            el("td", { class: t.passed ? "pass" : "fail" }, t.passed ? "passed" : "failed"),
            el("td", { class: "heard" }, t.heard ? el("q", {}, t.heard) : "—"))))));
        const first = $(`tried-${r.winner}`);
        if (first) { first.preload = "auto"; first.play().catch(() => {}); }
        return;
      }
      await new Promise((done) => setTimeout(done, 400));
    }
  };
  const form = el("form", { class: "panel", id: "lex-form", onsubmit: (e) => { e.preventDefault(); act("/api/lexicon", body(), "lexicon entry queued"); } },
    el("div", {}, "Say a word differently everywhere (only the lines with it are rendered again):"),
    el("label", {}, "word ", w), el("label", {}, "say as ", say), el("label", {}, "or phonemes ", ipa), count,
    el("div", {}, el("button", { type: "button", id: "lex-try", onclick: tryIt }, "hear it on this line first"),
      el("button", { type: "submit", class: "primary" }, "add the entry to the book"),
      el("button", { type: "button", onclick: closeForms }, "cancel ", el("kbd", {}, "Esc"))), tried);
  $("forms").replaceChildren(form);
  (word ? say : w).focus();
}

function closeForms() { const f = $("forms"); if (f) f.replaceChildren(); }

function playTake(index) {
  const audio = index === null ? $("winner-audio") : $(`take-${index}`);
  if (!audio) return;
  for (const other of document.querySelectorAll("audio")) if (other !== audio) other.pause();
  if (audio.paused) audio.play().catch((error) => toast(error.message, true)); else audio.pause();
}

// the take in the book between the end of the line before and the start of the next, as the
// chapter lays them out, so a seam or a pause can be judged
async function playContext() {
  const d = state.detail;
  if (!d) return;
  let figures;
  try { figures = await api(`/api/context/${d.pos}`); } catch (error) { toast(error.message, true); return; }
  if (!state.detail || state.detail.pos !== d.pos) return;
  state.context = { pos: d.pos, ...figures };
  const audio = el("audio", { controls: true, preload: "auto", id: "context-audio", src: `audio/context/${d.pos}?at=${Date.now()}` });
  $("context").replaceChildren(
    figures.before ? `…the end of \u201c${figures.before}\u201d · ` : "(the chapter starts) · ",
    el("b", {}, "this line"),
    figures.after ? ` · the start of \u201c${figures.after}\u201d…` : " · (the chapter ends)",
    " ", audio);
  for (const other of document.querySelectorAll("audio")) if (other !== audio) other.pause();
  audio.play().catch((error) => toast(error.message, true));
}

// ---- keyboard --------------------------------------------------------------------------------
// Keys are read on the window before anything else sees them (capture), so they work wherever
// focus is; only a text field keeps its letters. A player's own controls swallow every key while
// they have focus (Chromium hands none to the page), so a click on a player leaves focus with
// the page: the take plays, and j, k, ? and space go on working.
document.addEventListener("focusin", (event) => {
  if (event.target.tagName === "AUDIO") setTimeout(() => event.target.blur(), 0);
});
const NOT_TEXT = ["button", "checkbox", "radio", "range", "submit", "reset", "file", "color"];
function typingIn(node) {
  if (!node || !node.tagName) return false;
  if (node.isContentEditable || node.tagName === "TEXTAREA" || node.tagName === "SELECT") return true;
  return node.tagName === "INPUT" && !NOT_TEXT.includes(node.type);
}

window.addEventListener("keydown", (event) => {
  const asking = $("ask");
  if (asking.open) {  // a question waits: Enter says yes, Esc no, nothing else happens
    if (event.key === "Enter" || event.key === "Escape") { event.preventDefault(); asking.answer(event.key === "Enter"); }
    else if (event.key !== "Tab") event.preventDefault();
    event.stopPropagation();
    return;
  }
  const typing = typingIn(document.activeElement);
  if (event.key === "Escape") { closeForms(); $("help").hidden = true; document.activeElement.blur(); return; }
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const digit = /^Digit([1-9])$/.exec(event.code);
  const keys = {
    j: () => select(state.current + 1), ArrowDown: () => select(state.current + 1),
    k: () => select(state.current - 1), ArrowUp: () => select(state.current - 1),
    " ": () => playTake(null), p: () => playTake(null), c: playContext,
    a: approve, m: more, e: openEdit, l: () => openLexicon(state.detail && state.detail.word),
    u: undo, D: deliver, w: showWords, s: showSpeakers, "/": () => $("search").focus(), "?": () => { $("help").hidden = !$("help").hidden; },
  };
  const run = digit ? () => { const index = Number(digit[1]) - 1; if (event.shiftKey) playTake(index); else choose(index); }
    : keys[event.key];
  if (!run) return;
  // the page's key, not the focused player's (its space would toggle it a second time)
  event.preventDefault();
  event.stopPropagation();
  if (document.activeElement && document.activeElement.tagName === "AUDIO") document.activeElement.blur();
  run();
}, true);

// ---- start -----------------------------------------------------------------------------------
$("undo").addEventListener("click", undo);
$("words-button").addEventListener("click", showWords);
$("speakers-button").addEventListener("click", showSpeakers);
$("deliver").addEventListener("click", deliver);
$("more-rows").addEventListener("click", moreRows);
$("help-button").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
$("help-close").addEventListener("click", () => { $("help").hidden = true; });
$("show").addEventListener("change", (e) => { state.query.show = e.target.value; reloadList(false); e.target.blur(); });
$("chapter").addEventListener("change", (e) => { state.query.chapter = e.target.value; reloadList(false); e.target.blur(); });
$("search").addEventListener("input", (e) => { clearTimeout(state.searching); state.searching = setTimeout(() => { state.query.q = e.target.value; reloadList(false); }, 200); });
$("search").addEventListener("keydown", (e) => { if (e.key === "Enter") e.target.blur(); });

(async () => {
  try {
    showSummary(await api("/api/summary"));
    await reloadList(false);
    await pollJobs();
    document.body.dataset.ready = "1";
  } catch (error) {
    $("detail").replaceChildren(el("p", { class: "fail" }, error.message));
  }
})();
