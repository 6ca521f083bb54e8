/* gpuviz exported page: which views stand on the page, where, and how large their pictures are drawn.

A lesson's scene names the window's views it brings forward (its `views`, e.g. ["shared", "barriers", "source"]);
the page shows its own of them and lays them out large, as the window's presenter mode does on a projector: the
scene's pictures stacked in one column, its source in the other, the lesson's words beside them. A trace's page
(no scene) shows every view in three columns, and so does a lesson's on request (V, or the "every view" button).

Where the page is the screen (page.css's body[data-fit="screen"]) nothing may run below it: the pictures are drawn
at the largest scale at which every column still holds what it shows. page.js draws; this only decides. */
"use strict";
window.gpuvizViews = (function () {
  const $ = (id) => document.getElementById(id);
  // the window's view ids -> the page's views. The page has no barrier swimlanes: its block view draws the warps
  // waiting at a barrier; it has no timings chart and no details panel, so a scene naming those shows the rest
  const PAGE_VIEW = {grid: "view-grid", block: "view-block", barriers: "view-block", source: "view-source",
                     shared: "view-shared", memory: "view-global"};
  // where the page is the screen: any page on a projector's short, wide screen; a lesson's on any landscape screen
  // from 1251 px wide (at 1920x1080 its long page ran 87 px below the fold)
  const SCREEN = {trace: "(max-height: 820px) and (min-width: 1251px)",
                  lesson: "(min-width: 1251px) and (min-aspect-ratio: 4/3)"};
  // the tallest picture of each kind (px), where every view is shown: the sizes the three columns were made to fit
  const EVERY_VIEW_PX = {grid: 260, shared: 96, global: 230, globalOnScreen: 150, cell: 18, gridCell: 64};
  // a scene's views, large: the largest cells; where the page is not the screen (a narrow window, it scrolls), each
  // kind's share of the window's height
  const SCENE_CELL = 30, SCENE_GRID_CELL = 96;
  const SCENE_SHARE = {grid: 0.4, shared: 0.45, global: 0.8};
  // a scene's first view with pictures is its subject (the window's presenter mode keeps it the largest thing on
  // screen): where the pictures of all want more room than the column has, it gets this weight, each other view 2
  const SUBJECT_WEIGHT = 3, OTHER_WEIGHT = 2;
  // the views that draw pictures whose size the page chooses (the block view's lanes are as tall as they are wide)
  const PICTURE_KIND = {"view-grid": "grid", "view-shared": "shared", "view-global": "global"};
  // where the pictures overflow their column, they are drawn again this much smaller, down to the smallest scale
  const SHRINK = 0.88, SMALLEST_SCALE = 0.15;

  // budgets: the height (px) each of a scene's picture views may give its pictures, measured (null: to measure)
  // perRow: how many of a view's arrays stand in a row, by space, once settled ({}: chosen at each draw)
  const V = {kind: "trace", sceneIds: null, everyView: false, scale: 1, budgets: null, perRow: {}, chosenPerRow: {},
             home: null};

  function init(kind) {
    V.kind = kind;
    // each view's own column, in order: where "every view" puts it back
    V.home = [...document.querySelectorAll("#views .col")].map((col) => [col, [...col.children]]);
    fitScreen();
    $("views-button").hidden = kind !== "lesson";
  }

  // ---- which views -------------------------------------------------------------------------------------
  function sceneViewIds(views) {  // the page's views a scene names, in its order; null: every view
    const ids = [];
    for (const v of views || []) if (PAGE_VIEW[v] && !ids.includes(PAGE_VIEW[v])) ids.push(PAGE_VIEW[v]);
    return ids.length ? ids : null;
  }

  function showScene(views) { V.sceneIds = sceneViewIds(views); place(); }
  function toggleEveryView() { V.everyView = !V.everyView; place(); }
  function showingScene() { return V.kind === "lesson" && V.sceneIds !== null && !V.everyView; }

  function place() {
    // every view back in its own column, then, for a scene, its pictures in the first column and its source in the
    // second; the views it does not name are set aside (not shown, drawn still, so that V shows them at once)
    for (const [col, views] of V.home) views.forEach((el) => { col.appendChild(el); el.classList.remove("off-scene"); });
    const scene = showingScene();
    document.body.dataset.views = scene ? "scene" : "every";
    $("views-button").textContent = scene ? "▦ every view" : "▣ the scene's views";
    $("views").dataset.cols = "";
    if (scene) {
      const pictures = V.sceneIds.filter((id) => id !== "view-source");
      pictures.forEach((id) => $("col-1").appendChild($(id)));
      if (V.sceneIds.includes("view-source")) $("col-2").appendChild($("view-source"));
      for (const el of document.querySelectorAll("#views .view")) {  // set aside in the third column, not shown
        if (!V.sceneIds.includes(el.id)) { el.classList.add("off-scene"); $("col-3").appendChild(el); }
      }
      $("views").dataset.cols = [pictures.length ? "pictures" : "", V.sceneIds.includes("view-source") ? "source" : ""]
        .filter(Boolean).join(" ");
    }
    V.scale = 1;
    V.budgets = null;
    V.perRow = {};
  }

  // ---- how large -----------------------------------------------------------------------------------------
  function fitScreen() {  // whether the page is the screen now (on load, and when the window is resized)
    const screen = window.matchMedia(SCREEN[V.kind] || SCREEN.trace).matches;
    document.body.dataset.fit = screen ? "screen" : "page";
    V.scale = 1;
    V.budgets = null;
    V.perRow = {};
    return screen;
  }
  function onScreen() { return document.body.dataset.fit === "screen"; }

  function pictureRoom() {
    // the tallest grid, shared and global pictures (px) and their largest cells, at the current scale
    const s = onScreen() ? V.scale : 1;
    if (showingScene()) {
      const h = window.innerHeight, b = (onScreen() && V.budgets) || {};
      const px = (kind) => (b[kind] !== undefined ? b[kind] : h * SCENE_SHARE[kind]) * s;
      return {grid: px("grid"), shared: px("shared"), global: px("global"), cell: SCENE_CELL, gridCell: SCENE_GRID_CELL};
    }
    const P = EVERY_VIEW_PX;
    return {grid: P.grid * s, shared: P.shared * s, global: (onScreen() ? P.globalOnScreen : P.global) * s,
            cell: P.cell, gridCell: P.gridCell};
  }

  function arrayPlan(space, layouts, width, gap, height) {
    // a scene's arrays of one view (global or shared): how many stand in a row and how wide and tall each may be, in
    // ``height`` px for all their rows; the plan draws the smallest of them with the largest cells (fused attention's
    // S, 40x40 beside four 40x16, is its scene's subject: five in a row drew it with 3.7 px cells, three with 6).
    // null: as page.css has them (every view)
    if (!showingScene() || !layouts.length) return null;
    let best = null;
    for (let n = 1; n <= layouts.length; n++) {
      const settled = V.perRow[space];  // (measureBudgets)
      if (settled !== undefined && settled <= layouts.length && n !== settled) continue;
      const rows = Math.ceil(layouts.length / n), w = Math.floor((width - gap * (n - 1)) / n), h = height / rows;
      const cell = Math.min(...layouts.map((lay) => Math.min(w / lay.cols, h / lay.rows)));
      if (!best || cell > best.cell + 1e-6) best = {perRow: n, width: w, tallest: h, cell: cell};
    }
    V.chosenPerRow[space] = best.perRow;
    return best;
  }

  function fit(paint) {
    // draws the pictures (``paint``) as large as the page allows: a scene's measured on the screen, then, on the
    // screen, a step smaller each time a column still holds more than its height (a frame's figures that wrap)
    if (showingScene() && onScreen() && !V.budgets) measureBudgets(paint);
    paint();
    while (overflows() && shrink()) paint();
  }

  function measureBudgets(paint) {
    // the pictures' column is drawn and measured a few times: without its pictures (what is left of its height is
    // theirs to share); at a first share of that, which settles how many arrays stand in a row (kept from then on:
    // left free, less room made a view's arrays one row, and it drew less than it was given); without its pictures
    // again (the room as the arrays now stand); and each view's pictures as tall as all of it (the height each can
    // use at its width). Each gets what it can use, shared by weight where together they want more (subject first)
    const col = $("col-1");
    const views = [...col.children].filter((el) => PICTURE_KIND[el.id] && el.getClientRects().length);
    const kinds = views.map((el) => PICTURE_KIND[el.id]);
    const weights = views.map((el, k) => (k === 0 ? SUBJECT_WEIGHT : OTHER_WEIGHT));
    const budgets = (px) => Object.fromEntries(kinds.map((kind, k) => [kind, Math.max(1, px[k])]));
    const measure = (px, bare) => {  // each view's height, and the column's height left under its views
      V.budgets = budgets(px);
      paint();
      const pictures = bare ? [...col.querySelectorAll("canvas")] : [];
      pictures.forEach((cv) => { cv.style.display = "none"; });
      const last = col.lastElementChild, used = last ? last.getBoundingClientRect().bottom - col.getBoundingClientRect().top : 0;
      const out = {heights: views.map((el) => el.offsetHeight), free: Math.max(0, col.clientHeight - used)};
      pictures.forEach((cv) => { cv.style.display = ""; });
      return out;
    };
    V.perRow = {};
    const first = measure(kinds.map(() => 1), true), total = weights.reduce((a, b) => a + b, 0);
    measure(weights.map((w) => first.free * w / total));
    V.perRow = Object.assign({}, V.chosenPerRow);
    const least = measure(kinds.map(() => 1), true);
    const most = measure(kinds.map(() => least.free));
    const wants = views.map((el, k) => most.heights[k] - least.heights[k]);
    V.budgets = budgets(shareOut(least.free, wants, weights));
  }

  function shareOut(free, wants, weights) {
    // ``free`` px by ``weights``, none getting more than it ``wants``: what a view cannot use goes to the others
    const gets = wants.map(() => 0);
    let left = free, open = wants.map((w, k) => k).filter((k) => wants[k] > 0);
    while (open.length && left > 0.5) {
      const total = open.reduce((a, k) => a + weights[k], 0);
      const full = open.filter((k) => wants[k] - gets[k] <= left * weights[k] / total);
      if (!full.length) {
        open.forEach((k) => { gets[k] += left * weights[k] / total; });
        break;
      }
      full.forEach((k) => { left -= wants[k] - gets[k]; gets[k] = wants[k]; });
      open = open.filter((k) => !full.includes(k));
    }
    return gets;
  }

  function overflows() {  // whether, the page being the screen, a column holds more than its height
    if (!onScreen()) return false;
    const cols = [$("views"), ...document.querySelectorAll("#views .col")];
    return cols.some((el) => el.clientHeight && el.scrollHeight > el.clientHeight + 1);
  }

  function shrink() {  // one step smaller; false once the pictures are as small as they go
    if (V.scale <= SMALLEST_SCALE) return false;
    V.scale = Math.max(SMALLEST_SCALE, V.scale * SHRINK);
    return true;
  }

  return {init: init, showScene: showScene, toggleEveryView: toggleEveryView, fitScreen: fitScreen,
          pictureRoom: pictureRoom, arrayPlan: arrayPlan, fit: fit, state: V};
})();
