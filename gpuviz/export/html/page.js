/* gpuviz exported page: draws the frames gpuviz computed and steps through them.

Every word (frame titles, captions, notes, questions, answers) and every state (lanes, blocks) comes
from the page's data, made by gpuviz's Python model; this code only draws them and navigates. */
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const Views = window.gpuvizViews;  // views.js: which views stand on the page, where, and how large
  const S = {data: null, scene: null, si: -1, frame: 0, beat: -1, followed: null, followFrames: null, picked: null,
             playing: false, lastTick: 0, fps: 8, theme: document.documentElement.dataset.theme || "light",
             pal: null, heat: null, heatAt: -1, arrays: [], laneEls: [], warpLabels: []};
  const KIND = {START: 0, END: 1, GLOBAL_LOAD: 2, GLOBAL_STORE: 3, SHARED_LOAD: 4, SHARED_STORE: 5, ATOMIC: 6,
                BARRIER: 7, WARP_OP: 8};
  const ACTIVE = 2;
  const BANK_HEADER_PX = 14;  // over a shared array: each bank's mark, lit when this warp uses it

  async function decode() {
    const text = $("gpuviz-data").textContent.trim();
    const bin = atob(text);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // ---- colours: the app's themes --------------------------------------------------------------------
  function rgb(css) { const c = d3.color(css).rgb(); return [Math.round(c.r), Math.round(c.g), Math.round(c.b)]; }
  function applyTheme(name) {
    S.theme = name;
    const p = S.data.palettes[name];
    document.documentElement.dataset.theme = name;
    const st = document.documentElement.style;
    for (const [v, k] of [["--bg", "background"], ["--panel", "panel"], ["--fg", "foreground"], ["--muted", "muted"],
                          ["--grid", "grid"], ["--current", "current"], ["--selected", "selected"], ["--line", "line"]]) {
      st.setProperty(v, p[k]);
    }
    const bg = rgb(p.background);
    const lut = [];
    for (let i = 0; i < 256; i++) {  // cividis, pulled toward the background as the app's heat maps are
      const c = rgb(d3.interpolateCividis(i / 255));
      lut.push(c.map((v, j) => Math.round(v * (1 - p.heat_toward) + bg[j] * p.heat_toward)));
    }
    S.pal = Object.assign({}, p, {lut: lut, untouchedRGB: rgb(p.untouched), backgroundRGB: bg});
    legends();
    if (S.scene) { S.laneEls.forEach((el) => { el.dataset.colour = ""; }); draw(); }
  }

  function sw(colour, text, outline) {
    return `<span><span class="sw${outline ? " outline" : ""}" style="${outline ? "border-color" : "background"}:${colour}"></span>${text}</span>`;
  }
  function legends() {
    const p = S.pal, L = S.scene ? S.scene.launch : S.data.scenes[0].launch;
    $("lane-legend").innerHTML = L.lane_labels.map((lab, i) => sw(p.lane[i], lab)).join("") +
      sw(p.selected, "followed thread", true);
    $("grid-legend").innerHTML = L.block_labels.map((lab, i) => sw(p.block[i], lab)).join("") +
      sw(p.current, "this frame's block", true);
    // the memory keys name only the accesses this scene makes: on a projector's narrow columns each entry is a line's
    // share of the height that the arrays need
    const made = accessesMade(S.scene || S.data.scenes[0]);
    const kinds = (space) => [["read", "read now"], ["write", "written now"], ["atomic", "atomic now"]]
      .filter(([k]) => made.has(`${space} ${k}`)).map(([k, text]) => sw(p[k], text)).join("");
    $("global-legend").innerHTML = kinds("global") + sw(p.current, "its 32-byte sectors", true) +
      `<span><span class="sw" style="width:3em;background:linear-gradient(90deg, rgb(${p.lut[0].join(",")}), ` +
      `rgb(${p.lut[128].join(",")}), rgb(${p.lut[255].join(",")}))"></span>accesses so far (cividis)</span>`;
    $("shared-legend").innerHTML = kinds("shared") +
      sw(p.conflict, "bank serving more than one word (a conflict)") + "<span>one row = 32 banks × 4 bytes</span>";
  }

  function accessesMade(sc) {  // "global read", "shared write", "global atomic"...: the accesses a scene's events make
    if (sc.accessesMade) return sc.accessesMade;
    const e = sc.events, arrays = sc.launch.arrays, made = new Set();
    for (let k = 0; k < e.kind.length; k++) {
      if (!isMemory(e.kind[k]) || !arrays[e.array[k]]) continue;
      const kind = e.kind[k] === KIND.ATOMIC ? "atomic" :
        (e.kind[k] === KIND.GLOBAL_STORE || e.kind[k] === KIND.SHARED_STORE) ? "write" : "read";
      made.add(`${arrays[e.array[k]].space} ${kind}`);
    }
    return (sc.accessesMade = made);
  }

  // ---- a scene: one launch ----------------------------------------------------------------------------
  function loadScene(i) {
    if (i === S.si) return;
    S.si = i;
    const sc = S.scene = S.data.scenes[i];
    const L = sc.launch;
    S.followed = null; S.followFrames = null; S.picked = null; S.heat = null; S.heatAt = -1;
    // the notice: what this page leaves out, events a GPU buffer dropped
    const notes = [];
    if (sc.left_out) notes.push(sc.left_out);
    if (L.dropped) notes.push(`${L.dropped.toLocaleString()} events were DROPPED when this trace was recorded.`);
    $("notice").hidden = !notes.length;
    $("notice").textContent = notes.join(" ");
    $("origin").textContent = `${L.kernel} · ${L.device} · grid (${L.grid.join(", ")}) × block (${L.block.join(", ")}) = ` +
      `${L.n_threads.toLocaleString()} threads · frames ${(sc.first + 1).toLocaleString()}–${(sc.last + 1).toLocaleString()} of ` +
      `${sc.n_frames_total.toLocaleString()}`;
    buildLanes(L);
    buildSource(L);
    buildArrays(sc);
    const scrub = $("scrubber");
    scrub.min = sc.first; scrub.max = sc.last;
    if (S.data.kind === "lesson") {
      $("scene-select").value = String(i);
      // the whole title, wrapped, over which the list lies: a <select> shows what fits of it (issue 28)
      $("scene-title").textContent = $("scene-select").title = `${i + 1}. ${sc.title}`;
      Views.showScene(sc.views);
    }
    legends();
  }

  function buildLanes(L) {
    const box = $("lanes");
    box.innerHTML = "";
    S.laneEls = []; S.warpLabels = [];
    const ws = L.warp_size, T = L.threads_per_block;
    box.style.gridTemplateColumns = `2.4rem repeat(${ws}, minmax(0, 1fr))`;
    for (let w = 0; w < L.warps_per_block; w++) {
      const lab = document.createElement("div");
      lab.className = "wlabel"; lab.textContent = `w${w}`;
      box.appendChild(lab); S.warpLabels.push(lab);
      for (let l = 0; l < ws; l++) {
        const t = w * ws + l;
        const el = document.createElement("button");
        el.type = "button";
        if (t >= T) { el.className = "lane pad"; el.tabIndex = -1; box.appendChild(el); continue; }
        el.className = "lane";
        el.dataset.thread = String(t);
        el.setAttribute("aria-label", `thread ${threadName(L, t)}, warp ${w} lane ${l}`);
        el.addEventListener("click", () => follow(t));
        box.appendChild(el); S.laneEls.push(el);
      }
    }
  }

  function threadName(L, t) {
    const [bx, by, bz] = L.block;
    const x = t % bx, y = Math.floor(t / bx) % by, z = Math.floor(t / (bx * by));
    if (by === 1 && bz === 1) return String(x);
    return bz === 1 ? `(${x},${y})` : `(${x},${y},${z})`;
  }

  function buildSource(L) {
    // Prism tokenises the whole source (strings over several lines stay strings); split into lines after
    const text = L.source.join("\n");
    const tokens = Prism.tokenize(text, Prism.languages.python);
    const lines = [[]];
    const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    (function walk(toks, cls) {
      for (const tk of toks) {
        if (typeof tk === "string") {
          tk.split("\n").forEach((part, k) => {
            if (k) lines.push([]);
            if (part) lines[lines.length - 1].push(cls.length ? `<span class="${cls.join(" ")}">${esc(part)}</span>` : esc(part));
          });
        } else {
          const c = cls.concat(["token", tk.type]).concat(tk.alias ? [].concat(tk.alias) : []);
          walk(Array.isArray(tk.content) ? tk.content : [tk.content], c);
        }
      }
    })(tokens, []);
    const pre = $("source");
    pre.innerHTML = lines.map((parts, k) => {
      const n = L.first_line + k;
      return `<span class="src-line" data-line="${n}"><span class="ln">${n}</span>${parts.join("")}</span>`;
    }).join("");
    S.srcLines = new Map();
    pre.querySelectorAll(".src-line").forEach((el) => S.srcLines.set(Number(el.dataset.line), el));
    S.lit = [];
  }

  function figs(box) {  // a memory view's figure lines, after its arrays
    let f = box.querySelector(".afigs");
    if (!f) { f = document.createElement("div"); f.className = "afigs"; box.appendChild(f); }
    return f;
  }

  function buildArrays(sc) {
    S.arrays = [];
    const L = sc.launch;
    for (const box of [$("global-arrays"), $("shared-arrays")]) box.innerHTML = "";
    L.arrays.forEach((a, id) => {
      if (a.space !== "global" && a.space !== "shared") return;
      const box = a.space === "shared" ? $("shared-arrays") : $("global-arrays");
      const div = document.createElement("div");
      div.className = "array";
      const shape = a.shape.length ? a.shape.join("×") : "1";
      div.innerHTML = `<div class="aname">${a.space === "shared" ? "shared " : ""}${a.name} <span class="muted">` +
        `(${shape} ${a.dtype})</span></div><canvas></canvas>`;
      box.insertBefore(div, box.querySelector(".afigs"));
      // the array's figure goes in its view's figure lines under all the arrays, the width of the view: under an
      // array three to a row (a projector's layout) 'this warp: 32 elements in 32 sectors (4 at best)' took 5 lines
      const row = document.createElement("div");
      row.className = "afig-row muted";
      row.hidden = true;
      row.innerHTML = `<span class="afig-of"></span> <span class="afig"></span>`;
      row.firstChild.textContent = `${a.name}:`;
      figs(box).appendChild(row);
      const cv = div.querySelector("canvas");
      const rec = {id: id, info: a, div: div, canvas: cv, fig: row.querySelector(".afig"), figRow: row, layout: a.layout};
      if (a.space === "shared") {
        rec.words = a.layout.size;
      }
      cv.addEventListener("click", (ev) => clickArray(rec, ev));
      S.arrays.push(rec);
    });
    $("view-shared").hidden = !S.arrays.some((r) => r.info.space === "shared");
    $("view-global").hidden = !S.arrays.some((r) => r.info.space === "global");
    if ($("global-arrays").children.length === 0) $("global-arrays").innerHTML = '<div class="empty">no global arrays</div>';
    reserveFigureLines(sc);
    // the heat scale of each global array: its busiest element over the page's frames
    const ev = sc.events;
    for (const r of S.arrays) {
      if (r.info.space !== "global") continue;
      const c = new Int32Array(r.layout.size);
      for (let k = 0; k < ev.array.length; k++) {
        if (ev.array[k] === r.id && isMemory(ev.kind[k]) && ev.index[k] >= 0 && ev.index[k] < c.length) c[ev.index[k]]++;
      }
      let m = 1; for (let k = 0; k < c.length; k++) if (c[k] > m) m = c[k];
      r.vmax = m; r.counts = new Int32Array(r.layout.size);
    }
  }

  function reserveFigureLines(sc) {
    // a memory view keeps a line for each array a frame of this scene touches at most: its height, and the picture
    // sizes fitted to it (views.js), then stay put from beat to beat
    const e = sc.events, arrays = sc.launch.arrays, most = {global: 1, shared: 1};
    for (let i = 0; i + 1 < e.offsets.length; i++) {
      const seen = {global: new Set(), shared: new Set()};
      for (let k = e.offsets[i]; k < e.offsets[i + 1]; k++) {
        const a = arrays[e.array[k]];
        if (a && seen[a.space] && isMemory(e.kind[k])) seen[a.space].add(e.array[k]);
      }
      for (const space in most) most[space] = Math.max(most[space], seen[space].size);
    }
    for (const [space, box] of [["global", $("global-arrays")], ["shared", $("shared-arrays")]]) {
      if (box.querySelector(".afigs")) figs(box).style.minHeight = `${most[space] * 1.35}em`;
    }
  }

  function isMemory(k) { return k >= KIND.GLOBAL_LOAD && k <= KIND.ATOMIC; }

  // ---- stepping --------------------------------------------------------------------------------------
  function local(f) { return f - S.scene.first; }
  function clampFrame(f) { return Math.max(S.scene.first, Math.min(S.scene.last, f)); }

  function go(f, keepBeat) {
    S.frame = clampFrame(f);
    if (!keepBeat && S.beat >= 0) S.beat = -S.beat - 1;  // leave the lesson's beat, remembering which it was
    draw();
  }

  function lessonBeat() { return S.beat >= 0 ? S.data.beats[S.beat] : null; }
  function lastBeat() { return S.beat >= 0 ? S.beat : -S.beat - 1; }

  function gotoBeat(k) {
    const beats = S.data.beats;
    k = Math.max(0, Math.min(beats.length - 1, k));
    const b = beats[k];
    stop();
    loadScene(b.scene);
    S.beat = k;
    S.frame = b.frame;
    draw();
  }

  function step(d) {
    if (S.followed && S.followFrames && S.followFrames.length) {
      const ff = S.followFrames;
      let k = d > 0 ? ff.findIndex((x) => x > S.frame) : findLastIndex(ff, (x) => x < S.frame);
      if (k >= 0) go(ff[k]);
      return;
    }
    if (S.data.kind === "lesson") { gotoBeat(lastBeat() + d); return; }
    go(S.frame + d);
  }

  function findLastIndex(a, pred) { for (let i = a.length - 1; i >= 0; i--) if (pred(a[i])) return i; return -1; }

  function barrier(d) {
    const bs = S.scene.barriers;
    const k = d > 0 ? bs.findIndex((x) => x > S.frame) : findLastIndex(bs, (x) => x < S.frame);
    if (k >= 0) go(bs[k]);
  }

  function togglePlay() { if (S.playing) stop(); else play(); }
  function play() {
    if (S.frame >= S.scene.last) go(S.scene.first);
    S.playing = true; S.lastTick = performance.now();
    $("b-play").textContent = "⏸ pause";
    requestAnimationFrame(tick);
  }
  function stop() { S.playing = false; $("b-play").textContent = "▶ play"; }
  function tick(now) {
    if (!S.playing) return;
    // advance by elapsed time: a slow machine drops frames, never queues them
    const n = Math.floor((now - S.lastTick) * S.fps / 1000);
    if (n > 0) {
      S.lastTick += n * 1000 / S.fps;
      const f = Math.min(S.scene.last, S.frame + n);
      go(f);
      if (f >= S.scene.last) { stop(); return; }
    }
    requestAnimationFrame(tick);
  }

  function follow(t) {
    const sc = S.scene, b = sc.frames.block[local(S.frame)];
    if (S.followed && S.followed.thread === t && S.followed.block === b) { unfollow(); return; }
    S.picked = null;
    followThread(b, t);
  }
  // the presenter's selection (the class share): {block, thread} to follow, {block, thread: null} to outline a block,
  // null for none
  function select(sel) {
    const L = S.scene.launch;
    const ok = sel && Number.isInteger(sel.block) && sel.block >= 0 && sel.block < L.n_blocks;
    S.picked = ok && sel.thread === null ? sel.block : null;
    if (ok && Number.isInteger(sel.thread) && sel.thread >= 0 && sel.thread < S.laneEls.length) {
      followThread(sel.block, sel.thread);
    } else {
      S.followed = null; S.followFrames = null; draw();
    }
  }
  function followThread(b, t) {
    const sc = S.scene;
    S.followed = {block: b, thread: t};
    const ff = [];
    const ev = sc.events;
    for (let i = 0; i <= sc.last - sc.first; i++) {
      if (sc.frames.block[i] !== b) continue;
      for (let k = ev.offsets[i]; k < ev.offsets[i + 1]; k++) if (ev.thread[k] === t) { ff.push(sc.first + i); break; }
    }
    S.followFrames = ff;
    draw();
  }
  function unfollow() { S.followed = null; S.followFrames = null; S.picked = null; draw(); }

  function clickArray(rec, ev) {
    // a click on an element: go to the next frame (after this one) that touches it
    const sc = S.scene, r = rec.canvas.getBoundingClientRect();
    const col = Math.floor((ev.clientX - r.left) / r.width * rec.layout.cols);
    const row = Math.floor((ev.clientY - r.top) / r.height * rec.layout.rows);
    let cell = row * rec.layout.cols + col;
    if (cell < 0 || cell >= rec.layout.size) return;
    const e = sc.events, item = rec.info.itemsize;
    for (let i = local(S.frame) + 1; i <= sc.last - sc.first; i++) {
      for (let k = e.offsets[i]; k < e.offsets[i + 1]; k++) {
        if (e.array[k] !== rec.id || !isMemory(e.kind[k])) continue;
        const c = rec.info.space === "shared" ? Math.floor(e.index[k] * item / 4) : e.index[k];
        if (c === cell) { go(sc.first + i); return; }
      }
    }
  }

  // ---- drawing ---------------------------------------------------------------------------------------
  function draw() {
    const sc = S.scene, i = local(S.frame), F = sc.frames, L = sc.launch;
    const beat = lessonBeat();
    // while a question waits, the frame's title with its answer blanked (made by the exporter, as the window does)
    $("frame-title").textContent = beat && !beat.revealed && beat.title !== undefined ? beat.title : F.title[i];
    $("caption").textContent = beat ? beat.caption : F.caption[i];
    const scrub = $("scrubber");
    if (Number(scrub.value) !== S.frame) scrub.value = S.frame;
    // numbered from 1, as the window numbers frames
    $("counter").textContent = `frame ${(S.frame + 1).toLocaleString()} / ${sc.n_frames_total.toLocaleString()}` +
      (sc.first > 0 || sc.last < sc.n_frames_total - 1 ? ` (here ${(sc.first + 1).toLocaleString()}–${(sc.last + 1).toLocaleString()})` : "");
    document.body.dataset.frame = String(S.frame);
    drawLesson();
    drawFollow();
    drawLanes(sc, i, L);
    drawSource(F.lines[i], F.line[i]);
    drawPictures(sc, i, L);
  }

  function drawPictures(sc, i, L) {
    // as large as the page holds them (views.js measures, and draws them again smaller where they overflow)
    Views.fit(() => { drawGrid(sc, i, L); drawArrays(sc, i); });
  }

  function drawLesson() {
    if (S.data.kind !== "lesson") return;
    const k = lastBeat(), b = S.data.beats[k], sc = S.data.scenes[b.scene];
    const inBeat = S.beat >= 0;
    $("progress").textContent = b.progress + (inBeat ? "" : " · stepping freely (→ goes on with the lesson)");
    $("scene-notes").textContent = b.notes !== undefined ? b.notes : sc.notes;  // the last beat says the end
    $("question-box").hidden = !b.question;
    $("question").textContent = b.question;
    $("answer").hidden = !b.revealed || !b.question;
    $("answer-text").textContent = b.revealed ? b.answer : "";
    $("reveal-button").hidden = !b.question || b.revealed;
    $("beat-prev").disabled = k === 0 && inBeat;
    $("beat-next").disabled = k === S.data.beats.length - 1 && inBeat;
  }

  function drawFollow() {
    const el = $("follow");
    if (!S.followed) { el.hidden = true; return; }
    const sc = S.scene, L = sc.launch, f = S.followed;
    const n = S.followFrames.length, k = S.followFrames.filter((x) => x <= S.frame).length;
    let state = "";
    if (sc.frames.block[local(S.frame)] === f.block) {
      state = ` · now ${L.lane_labels[Number(sc.frames.lane_states[local(S.frame)][f.thread])]}`;
    }
    el.hidden = false;
    el.textContent = `Following thread ${threadName(L, f.thread)} of block ${sc.block_names[f.block]}: it executes in ` +
      `${n.toLocaleString()} frames of this page, ${k.toLocaleString()} so far${state}. → ← go to its next / previous; ` +
      `Esc (or a click on it) stops following.`;
  }

  function drawLanes(sc, i, L) {
    const states = sc.frames.lane_states[i], p = S.pal, w = sc.frames.warp[i];
    const fb = S.followed && sc.frames.block[i] === S.followed.block ? S.followed.thread : -1;
    $("block-heading").textContent = `Block ${sc.block_names[sc.frames.block[i]]}: ${L.warps_per_block} warps × ${L.warp_size} lanes`;
    for (let t = 0; t < S.laneEls.length; t++) {
      const el = S.laneEls[t], s = states.charCodeAt(t) - 48;
      const colour = p.lane[s];
      if (el.dataset.colour !== colour) { el.style.background = colour; el.dataset.colour = colour; }
      const label = L.lane_labels[s];
      if (el.dataset.state !== label) el.dataset.state = label;
      el.classList.toggle("followed", t === fb);
      el.classList.toggle("warp-now", Math.floor(t / L.warp_size) === w);
    }
    S.warpLabels.forEach((lab, k) => lab.classList.toggle("current", k === w));
  }

  function drawSource(lines, main) {
    for (const el of S.lit) el.classList.remove("lit");
    S.lit = [];
    for (const n of lines) {
      const el = S.srcLines.get(n);
      if (el) { el.classList.add("lit"); S.lit.push(el); }
    }
    const el = S.srcLines.get(main) || S.lit[0];
    if (el) {  // keep the lit line in sight inside the source box, without scrolling the page
      const pre = $("source"), top = el.offsetTop - pre.offsetTop;
      if (top < pre.scrollTop || top + el.offsetHeight > pre.scrollTop + pre.clientHeight) {
        pre.scrollTop = Math.max(0, top - pre.clientHeight / 3);
      }
    }
  }

  function fitCanvas(cv, cssW, cssH) {
    const dpr = window.devicePixelRatio || 1;
    cv.style.height = `${cssH}px`;
    const w = Math.max(1, Math.round(cssW * dpr)), h = Math.max(1, Math.round(cssH * dpr));
    if (cv.width !== w || cv.height !== h) { cv.width = w; cv.height = h; }
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function drawGrid(sc, i, L) {
    const cv = $("grid-canvas"), [gx, gy, gz] = L.grid, rows = gy * gz;
    const W = cv.clientWidth || cv.parentElement.clientWidth, room = Views.pictureRoom();
    const cell = Math.max(3, Math.min(room.gridCell, W / gx, room.grid / rows));
    const ctx = fitCanvas(cv, W, cell * rows + 2);
    const p = S.pal, states = sc.frames.block_states[i], cur = sc.frames.block[i];
    ctx.fillStyle = p.background; ctx.fillRect(0, 0, W, cell * rows + 2);
    const gap = cell > 8 ? 2 : 0;
    for (let b = 0; b < L.n_blocks; b++) {
      const x = b % gx, y = Math.floor(b / gx);
      ctx.fillStyle = p.block[states.charCodeAt(b) - 48];
      ctx.fillRect(x * cell + 1, y * cell + 1, cell - gap, cell - gap);
    }
    const outline = (b, colour, lw) => {
      const x = b % gx, y = Math.floor(b / gx);
      ctx.strokeStyle = colour; ctx.lineWidth = lw;
      ctx.strokeRect(x * cell + 1 + lw / 2, y * cell + 1 + lw / 2, cell - gap - lw, cell - gap - lw);
    };
    if (S.followed) outline(S.followed.block, p.selected, Math.max(2, cell / 8));
    else if (S.picked !== null && S.picked !== undefined) outline(S.picked, p.selected, Math.max(2, cell / 8));
    outline(cur, p.current, Math.max(2, cell / 10));
    if (cell >= 26) {
      ctx.fillStyle = p.foreground; ctx.font = `${Math.min(14, cell / 3.2)}px system-ui, sans-serif`;
      ctx.textAlign = "center"; ctx.textBaseline = "middle";
      for (let b = 0; b < L.n_blocks; b++) {
        const x = b % gx, y = Math.floor(b / gx);
        ctx.fillText(sc.block_names[b], x * cell + cell / 2, y * cell + cell / 2);
      }
    }
    cv.onclick = (ev) => {
      const r = cv.getBoundingClientRect();
      const b = Math.floor((ev.clientY - r.top - 1) / cell) * gx + Math.floor((ev.clientX - r.left - 1) / cell);
      const k = sc.frames.block.indexOf(b);
      if (k >= 0) go(sc.first + k);
    };
  }

  function advanceHeat(sc, i) {
    // accesses so far (frames first..i): move the running counts forward or back from where they are,
    // noting the cells that changed so that only their pixels are repainted
    const e = sc.events, gl = S.arrays.filter((r) => r.info.space === "global");
    if (!gl.length) return;
    const byId = new Map(gl.map((r) => [r.id, r]));
    const apply = (fi, sign) => {
      for (let k = e.offsets[fi]; k < e.offsets[fi + 1]; k++) {
        const r = byId.get(e.array[k]);
        if (r && isMemory(e.kind[k]) && e.index[k] >= 0 && e.index[k] < r.counts.length) {
          r.counts[e.index[k]] += sign;
          if (r.changed) r.changed.push(e.index[k]);
        }
      }
    };
    if (S.heatAt > i && S.heatAt - i > i) {
      gl.forEach((r) => { r.counts.fill(0); r.img = null; });
      S.heatAt = -1;
    }
    while (S.heatAt < i) apply(++S.heatAt, 1);
    while (S.heatAt > i) apply(S.heatAt--, -1);
  }

  function heatImage(r, shared) {
    // one pixel per cell: heat of accesses so far (global) or untouched words (shared); kept between frames
    const p = S.pal, lay = r.layout;
    const colour = (c) => (c >= lay.size ? p.backgroundRGB : (!shared && r.counts[c] > 0)
      ? p.lut[Math.round(Math.sqrt(Math.min(1, r.counts[c] / r.vmax)) * 255)] : p.untouchedRGB);
    const off = r.off || (r.off = document.createElement("canvas"));
    const octx = off.getContext("2d");
    if (!r.img || r.imgTheme !== S.theme) {
      off.width = lay.cols; off.height = lay.rows;
      r.img = new ImageData(lay.cols, lay.rows);
      for (let c = 0; c < lay.rows * lay.cols; c++) { const col = colour(c); r.img.data.set([col[0], col[1], col[2], 255], c * 4); }
      r.imgTheme = S.theme;
      octx.putImageData(r.img, 0, 0);
    } else if (r.changed && r.changed.length) {
      for (const c of r.changed) { const col = colour(c); r.img.data.set([col[0], col[1], col[2], 255], c * 4); }
      octx.putImageData(r.img, 0, 0);
    }
    r.changed = [];
    return off;
  }

  function arraysPlan(space, height) {  // a lesson scene's arrays of one view, so many to a row (views.js)
    const box = $(`${space}-arrays`), gap = parseFloat(getComputedStyle(box).columnGap) || 0;
    const layouts = S.arrays.filter((r) => r.info.space === space).map((r) => r.layout);
    return Views.arrayPlan(space, layouts, box.clientWidth, gap, height);
  }

  function drawArrays(sc, i) {
    advanceHeat(sc, i);
    const e = sc.events, p = S.pal, facts = sc.frames.facts[i];
    const lo = e.offsets[i], hi = e.offsets[i + 1];
    const fb = S.followed && sc.frames.block[i] === S.followed.block ? S.followed.thread : -1;
    // as tall as views.js allows: on a projector's short, wide screen a global array among every view is at most 150 px
    // tall, so that the arrays of a kernel with five (fused attention's Q, K, V, S, O) stay above the fold: at 230 px,
    // O ran 213 px below; a scene's own views, fewer, are drawn larger
    const room = Views.pictureRoom();
    const plans = {global: arraysPlan("global", room.global), shared: arraysPlan("shared", room.shared)};
    for (const r of S.arrays) {
      const shared = r.info.space === "shared", lay = r.layout, plan = plans[r.info.space];
      r.div.style.flex = plan ? `0 0 ${plan.width}px` : "";
      const box = r.div.clientWidth || 300;
      // (a planned shared tile's bank header is part of its height: a scene's pictures are measured with it)
      const tallest = plan ? plan.tallest - (shared ? BANK_HEADER_PX : 0) : room[r.info.space];
      const cell = Math.max(1, Math.min(room.cell, box / lay.cols, tallest / lay.rows));
      const W = cell * lay.cols, H = cell * lay.rows + (shared ? BANK_HEADER_PX : 0);
      r.canvas.style.width = `${W}px`;
      const ctx = fitCanvas(r.canvas, W, H);
      const top = shared ? BANK_HEADER_PX : 0;
      const off = heatImage(r, shared);
      ctx.fillStyle = p.background; ctx.fillRect(0, 0, W, H);
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(off, 0, top, W, cell * lay.rows);
      // this frame's accesses: cells lit by kind; sectors (global) or banks (shared)
      const cells = new Map(), sectors = new Set(), bankWords = new Map();
      let mine = -1;
      for (let k = lo; k < hi; k++) {
        if (e.array[k] !== r.id || !isMemory(e.kind[k]) || e.index[k] < 0) continue;
        const kind = e.kind[k];
        const colour = kind === KIND.ATOMIC ? p.atomic : (kind === KIND.GLOBAL_STORE || kind === KIND.SHARED_STORE) ? p.write : p.read;
        const item = r.info.itemsize;
        if (shared) {
          const w0 = Math.floor(e.index[k] * item / 4), nw = Math.max(1, item / 4);
          for (let w = w0; w < w0 + nw; w++) {
            cells.set(w, colour);
            const bank = w % 32;
            if (!bankWords.has(bank)) bankWords.set(bank, new Set());
            bankWords.get(bank).add(w);
          }
          if (e.thread[k] === fb) mine = w0;
        } else {
          cells.set(e.index[k], colour);
          sectors.add(Math.floor(e.index[k] * item / 32));
          if (e.thread[k] === fb) mine = e.index[k];
        }
      }
      const inset = cell > 6 ? 1 : 0;
      for (const [c, colour] of cells) {
        if (c >= lay.size) continue;
        ctx.fillStyle = colour;
        ctx.fillRect((c % lay.cols) * cell + inset, top + Math.floor(c / lay.cols) * cell + inset, cell - 2 * inset, cell - 2 * inset);
      }
      const lw = Math.max(1.5, Math.min(3, cell / 5));
      if (!shared) {
        const per = Math.max(1, Math.floor(32 / r.info.itemsize));
        ctx.strokeStyle = p.current; ctx.lineWidth = lw;
        for (const s of sectors) {  // a sector's elements, one rectangle per row it spans
          let a = s * per, b = Math.min(lay.size, a + per);
          while (a < b) {
            const row = Math.floor(a / lay.cols), end = Math.min(b, (row + 1) * lay.cols);
            ctx.strokeRect((a % lay.cols) * cell + lw / 2, row * cell + lw / 2, (end - a) * cell - lw, cell - lw);
            a = end;
          }
        }
      } else {
        for (const [bank, words] of bankWords) {  // bank header: conflict colour where a bank serves several words
          ctx.fillStyle = words.size > 1 ? p.conflict : p.read;
          ctx.fillRect(bank * cell + inset, 2, cell - 2 * inset, 9);
        }
      }
      if (mine >= 0 && mine < lay.size) {
        ctx.strokeStyle = p.selected; ctx.lineWidth = lw + 1;
        ctx.strokeRect((mine % lay.cols) * cell, top + Math.floor(mine / lay.cols) * cell, cell, cell);
      }
      // the figure under the array: the model's numbers for this request
      let fig = "", conflict = false;
      const beat = lessonBeat(), asking = beat && beat.question && !beat.revealed;
      if (cells.size && asking) {
        // a lesson's question waits: the sectors or ways it asks about are held back, as the window does
        fig = `this warp: ${cells.size} element${cells.size === 1 ? "" : "s"}`;
      } else if (cells.size) {
        if (!shared && facts.sectors !== undefined) {
          fig = `this warp: ${cells.size} element${cells.size === 1 ? "" : "s"} in ${facts.sectors} sector${facts.sectors === 1 ? "" : "s"}` +
            (facts.ideal_sectors !== undefined ? ` (${facts.ideal_sectors} at best)` : "");
        } else if (shared && facts.ways !== undefined) {
          conflict = facts.ways > 1;
          fig = conflict ? `this warp: ${facts.ways}-way bank conflict (${facts.ways} passes)` : "this warp: no bank conflict";
        } else {
          fig = `this warp: ${cells.size} element${cells.size === 1 ? "" : "s"}`;
        }
      }
      r.fig.textContent = fig;
      r.figRow.hidden = !fig;
      r.fig.classList.toggle("conflict", conflict);
      r.div.dataset.lit = String(cells.size);
    }
  }

  // ---- keys and buttons ----------------------------------------------------------------------------
  function onKey(ev) {
    if (ev.target && ev.target.tagName === "SELECT") return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key;
    const act = {
      ArrowRight: () => step(1), PageDown: () => step(1), ArrowLeft: () => step(-1), PageUp: () => step(-1),
      ArrowDown: () => barrier(1), ArrowUp: () => barrier(-1),
      Home: () => go(S.scene.first), End: () => go(S.scene.last), " ": togglePlay,
      Escape: () => { if (S.followed) unfollow(); $("keys").hidden = true; },
      t: () => applyTheme(S.theme === "light" ? "dark" : "light"),
      v: () => { if (S.data.kind === "lesson") toggleEveryView(); },
      "?": () => { $("keys").hidden = !$("keys").hidden; },
    }[k];
    if (!act) return;
    ev.preventDefault();
    if (k !== " ") stop();
    act();
  }

  function wire() {
    document.addEventListener("keydown", onKey);
    $("b-first").onclick = () => { stop(); go(S.scene.first); };
    $("b-last").onclick = () => { stop(); go(S.scene.last); };
    $("b-prev").onclick = () => { stop(); S.followed ? step(-1) : go(S.frame - 1); };
    $("b-next").onclick = () => { stop(); S.followed ? step(1) : go(S.frame + 1); };
    $("b-prev-barrier").onclick = () => { stop(); barrier(-1); };
    $("b-next-barrier").onclick = () => { stop(); barrier(1); };
    $("b-play").onclick = togglePlay;
    $("scrubber").addEventListener("input", (ev) => { stop(); go(Number(ev.target.value)); });
    $("theme-button").onclick = () => applyTheme(S.theme === "light" ? "dark" : "light");
    $("help-button").onclick = () => { $("keys").hidden = !$("keys").hidden; };
    $("views-button").onclick = toggleEveryView;
    if (S.data.kind === "lesson") {
      $("beat-next").onclick = () => { S.followed = null; gotoBeat(S.beat >= 0 ? S.beat + 1 : lastBeat()); };
      $("beat-prev").onclick = () => { S.followed = null; gotoBeat(S.beat >= 0 ? S.beat - 1 : lastBeat()); };
      $("reveal-button").onclick = () => gotoBeat(lastBeat() + 1);
      $("scene-select").addEventListener("change", (ev) => {
        const i = Number(ev.target.value);
        ev.target.blur();  // the keys step the lesson again, not the list
        gotoBeat(S.data.beats.findIndex((b) => b.scene === i));
      });
    }
    let pending = false;
    new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; if (S.scene) draw(); });
    }).observe($("views"));
    // a window resized past a layout's edge: the page is the screen, or a page again (its pictures as large as fit)
    // (and its pictures start again from their largest, shrunk to what the new size holds)
    window.addEventListener("resize", () => { Views.fitScreen(); if (S.scene) draw(); });
  }

  function toggleEveryView() { Views.toggleEveryView(); draw(); }

  async function main() {
    S.data = await decode();
    const d = S.data;
    $("page-title").textContent = d.title;
    if (d.summary) { $("summary").hidden = false; $("summary").textContent = d.summary; }
    document.title = `${d.title} · gpuviz`;
    document.body.dataset.kind = d.kind;  // page.css lays a lesson's page out its own way on a projector
    Views.init(d.kind);
    if (d.kind === "lesson") {
      $("lesson").hidden = false;
      $("scene-select").innerHTML = d.scenes.map((s, i) => `<option value="${i}"></option>`).join("");
      [...$("scene-select").options].forEach((o, i) => { o.textContent = `${i + 1}. ${d.scenes[i].title}`; });
    }

    applyTheme(S.theme);
    wire();
    if (d.kind === "lesson") gotoBeat(0);
    else { loadScene(0); go(S.scene.first); }
    // what a script added to the page may drive (gpuviz's class share follows the presenter with it)
    window.gpuvizPage = {state: S, go: go, gotoBeat: gotoBeat, applyTheme: applyTheme, draw: draw, stop: stop,
                         select: select};
    document.body.dataset.ready = "1";
    document.dispatchEvent(new Event("gpuviz-ready"));
  }

  main().catch((err) => {
    document.body.dataset.ready = "error";
    $("frame-title").textContent = `This page could not be read: ${err}`;
    throw err;
  });
})();
