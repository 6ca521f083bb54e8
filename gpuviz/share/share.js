/* gpuviz class share: the served page follows the presenter (frame, lesson step, selection, theme) over a websocket; a
student leaves with any key that steps (or a click on the transport) and comes back with F; a predict question
the presenter opens is answered here. The server sends no answer before the presenter reveals it, and this
script can send nothing but an answer. */
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const NAV = new Set(["ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", " "]);
  const token = new URLSearchParams(location.search).get("join") || "";
  const seat = seatOfThisDevice();
  const share = window.gpuvizShare = {following: true, latest: null, applied: -1, theme: null, socket: null,
                                      sentAnswer: null, retry: 500};
  let badge = null, box = null;

  function api() { return window.gpuvizPage; }

  function setMode(following) {
    share.following = following;
    document.body.dataset.share = share.socket && share.socket.readyState === 1 ? (following ? "following" : "free")
      : "offline";
    if (badge) {
      badge.textContent = document.body.dataset.share === "offline" ? "○ not connected (reconnecting…)"
        : following ? "● following the presenter · F: step alone" : "○ free · F: follow the presenter again";
    }
    if (following) apply();
  }

  function apply() {
    const P = api(), st = share.latest;
    if (!P || !st || !share.following) return;
    const S = P.state;
    if (st.theme !== share.theme) { share.theme = st.theme; if (S.theme !== st.theme) P.applyTheme(st.theme); }
    if (S.data.kind === "lesson" && st.beat !== null && st.beat !== undefined) {
      if (S.beat !== st.beat || S.si !== S.data.beats[st.beat].scene) P.gotoBeat(st.beat);
      if (S.frame !== st.frame) P.go(st.frame, true);
    } else if (S.frame !== st.frame) {
      P.stop();
      P.go(st.frame);
    }
    // the presenter's selection: a thread the page follows too, or a block it outlines (after the frame: a new
    // scene forgets what the page followed)
    const want = st.selection ? `${st.selection.block}/${st.selection.thread}` : "";
    const have = S.followed ? `${S.followed.block}/${S.followed.thread}` : (S.picked !== null && S.picked !== undefined
      ? `${S.picked}/null` : "");
    if (want !== have && P.select) P.select(st.selection);
    share.applied = st.seq;
    document.body.dataset.shareSeq = String(st.seq);
  }

  function reveal(revealed) {
    const P = api();
    if (!P || !revealed) return false;
    let changed = false;
    for (const [k, r] of Object.entries(revealed)) {
      const b = P.state.data.beats[Number(k)];
      if (b && !b.revealed) { b.answer = r.answer; b.caption = r.caption; b.revealed = true; changed = true; }
    }
    return changed;
  }

  function showQuestion(q) {
    if (!box) return;
    if (!q) { box.hidden = true; share.sentAnswer = null; return; }
    if (box.dataset.question !== q.id) {
      box.dataset.question = q.id;
      $("share-ask").textContent = `Predict: ${q.ask}`;
      $("share-value").value = "";
      $("share-status").textContent = "";
      share.sentAnswer = null;
    }
    box.hidden = false;
  }

  function send() {
    const q = box.dataset.question, v = Number($("share-value").value);
    if (!q || $("share-value").value.trim() === "" || !Number.isFinite(v)) {
      $("share-status").textContent = "type a number";
      return;
    }
    if (!share.socket || share.socket.readyState !== 1) { $("share-status").textContent = "not connected"; return; }
    share.socket.send(JSON.stringify({type: "answer", question: q, value: v}));
    share.sentAnswer = v;
    $("share-status").textContent = `your answer: ${v} (sent; you can change it)`;
  }

  function onMessage(ev) {
    let msg;
    try { msg = JSON.parse(ev.data); } catch (e) { return; }
    if (msg.type === "reload") { location.reload(); return; }
    if (msg.type !== "state") return;
    share.latest = msg;
    const changed = reveal(msg.revealed);
    showQuestion(msg.question);
    if (share.following) apply();
    if (changed && api()) api().draw();
  }

  // One answer per device, whatever happens to its socket: the page reloads when the presenter opens another trace,
  // a phone drops and rejoins the network, a student presses F5. The seat is a random id kept in this browser's
  // storage for the share's address; the server counts one answer per seat (it names no one). Without storage
  // (a private window that refuses it) the seat lasts as long as the page.
  function seatOfThisDevice() {
    const key = "gpuviz-share-seat";
    try {
      const kept = localStorage.getItem(key);
      if (kept && /^[0-9a-f]{24}$/.test(kept)) return kept;
    } catch (e) { /* storage refused: a seat for this page only */ }
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);  // (crypto.randomUUID needs https; a LAN page is http)
    const made = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    try { localStorage.setItem(key, made); } catch (e) { /* as above */ }
    return made;
  }

  function connect() {
    const ws = new WebSocket(`ws://${location.host}/ws?join=${encodeURIComponent(token)}&seat=${seat}`);
    share.socket = ws;
    ws.onopen = () => { share.retry = 500; setMode(share.following); };
    ws.onmessage = onMessage;
    ws.onclose = () => {
      setMode(share.following);
      setTimeout(connect, share.retry);
      share.retry = Math.min(10000, share.retry * 2);
    };
  }

  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target && (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT")) return;
    if (ev.key === "f" || ev.key === "F") { ev.preventDefault(); ev.stopImmediatePropagation(); setMode(!share.following); return; }
    if (share.following && NAV.has(ev.key)) setMode(false);  // the page steps on its own from here
  }

  function build() {
    badge = document.createElement("button");
    badge.id = "share-badge";
    badge.type = "button";
    badge.title = "follow the presenter, or step on your own (F)";
    badge.onclick = () => setMode(!share.following);
    $("top-buttons").prepend(badge);
    box = document.createElement("div");
    box.id = "share-answer";
    box.hidden = true;
    box.innerHTML = '<span id="share-ask"></span><input id="share-value" type="number" inputmode="decimal" step="any" ' +
      'aria-label="your answer"><button id="share-send" type="button">Send</button><span id="share-status" class="muted"></span>';
    $("now").appendChild(box);
    $("share-send").onclick = send;
    $("share-value").addEventListener("keydown", (ev) => {
      ev.stopPropagation();  // typing an answer steps nothing
      if (ev.key === "Enter") send();
    });
    document.addEventListener("keydown", onKey, true);
    for (const id of ["transport", "lesson-buttons", "scene-select", "views"]) {
      const el = $(id);
      if (el) el.addEventListener("pointerdown", () => { if (share.following) setMode(false); }, true);
    }
    setMode(true);
    connect();
  }

  if (window.gpuvizPage) build(); else document.addEventListener("gpuviz-ready", build, {once: true});
})();
