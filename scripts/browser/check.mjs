// Loads every page of a running wattcounts in Debian's headless Chromium
// (never a downloaded browser) at a desktop (1,280 px), a tablet (768 px),
// a phone (390 px) and a small phone (320 px), and fails on:
// - console errors, page errors, dialogs (an alert would mean an unescaped
//   <script>), a bad status or a missing key element;
// - expected text missing (in the whole page or in one element);
// - at 768, 390 and 320 px: horizontal overflow of the page;
// - on the phone: a key column of a
//   folding table (GPU, model, J/token and its interval: the cells not
//   marked `.more`) reaching past the screen's edge (a `.matrix` of more
//   than four GPUs scrolls in its box instead, its model column sticky);
// - in every chart: two text labels whose boxes overlap, or text rendered
//   under 11 px (font size × the chart's scale).
// - at 1,280 px, on the pages marked `fit`, a table wider than its box;
// - any axe-core violation of the WCAG 2.1 A and AA rules (tags wcag2a,
//   wcag2aa, wcag21a, wcag21aa), at all four widths, named by page, width, rule
//   and element.
// It saves a full-page screenshot of each page and prints one summary line
// with what it measured.
//
// With FORMS_JSON in the environment it then does, as a person does, what
// every form that posts is for (issue #55: under the pages' old referrer
// policy each answered 403 "origin 'null'"): signs in with the maintainer
// token, approves one submission in review and rejects another, suspends
// a submitter and revokes a key, publishes a snapshot, signs out, and
// uploads a signed bundle through /submit; each lands on its page (no
// 4xx/5xx) and the page says what happened.
// FORMS_JSON: {"token", "approve", "reject", "suspend", "revoke",
//              "bundle": file, "signature": file}
//
// node scripts/browser/check.mjs BASE_URL OUT_DIR PAGES_JSON
// PAGES_JSON: [{"path": "/gpus", "expect": "table tbody tr",
//               "text": "optional", "within": "optional selector for text",
//               "name": "optional screenshot name",
//               "status": "optional, 200 unless given (an error page's 404)",
//               "fit": "optional: true where every table must fit its box at 1,280 px"}]
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

// axe-core (npm, pinned beside playwright-core), injected into each page.
// Evaluated through the DevTools protocol, which the pages' CSP (no inline
// script) does not govern; a <script> tag would be refused, as it should.
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

const [base, out, pagesJson] = process.argv.slice(2);
const pages = JSON.parse(pagesJson);
mkdirSync(out, { recursive: true });
const executablePath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const problems = [];
let current = "";
const figures = { fits: [], loads: 0, charts: 0, labels: 0, minFontPx: Infinity, keyCells: 0, maxPageWidth: 0, axeRules: 0, axeViolations: 0 };

// Runs in the page: what the layout and the charts look like.
function measure() {
  // Folded tables are measured unfolded: a reader opens them.
  for (const d of document.querySelectorAll("main details")) if (d.querySelector("table")) d.open = true;
  const result = { pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth, overflowing: [], keyCells: 0, charts: [] };
  for (const table of document.querySelectorAll("table.folding")) {
    const keys = [...table.querySelectorAll("tbody tr:first-child > td:not(.more)")];
    // A matrix of more GPUs than a phone holds scrolls in its box: there
    // the model column must stay put (sticky) instead.
    if (table.classList.contains("matrix") && keys.length > 5) {
      result.keyCells++;
      if (getComputedStyle(keys[0]).position !== "sticky") result.overflowing.push(`${table.className}: ${keys.length} key columns and a model column that scrolls away (not sticky)`);
      continue;
    }
    for (const cell of keys) {
      const r = cell.getBoundingClientRect();
      if (r.width === 0) continue;
      result.keyCells++;
      if (r.right > window.innerWidth + 0.5) result.overflowing.push(`${table.className} cell ${cell.cellIndex + 1} ends at ${Math.round(r.right)} px`);
    }
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    const vb = svg.viewBox.baseVal;
    const box = svg.getBoundingClientRect();
    const scale = vb && vb.width ? box.width / vb.width : 1;
    const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "");
    const boxes = texts.map((t) => ({ text: t.textContent, r: t.getBoundingClientRect(), px: parseFloat(getComputedStyle(t).fontSize) * scale }));
    const overlaps = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        // A pixel of touching glyph boxes is not an overlap a reader sees.
        if (w > 1 && h > 1) overlaps.push(`"${boxes[i].text}" × "${boxes[j].text}"`);
      }
    }
    // A label reaching past the chart's own box is cut off there (an
    // inline SVG clips what lies outside its viewport).
    const clipped = boxes
      .filter(({ r }) => r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5))
      .map(({ text, r }) => `"${text}" (${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} px in ${Math.round(box.width)})`);
    result.charts.push({ id: svg.id, labels: boxes.length, minPx: Math.min(...boxes.map((b) => b.px)), overlaps, clipped, titled: !!svg.querySelector(":scope > title") && !!svg.querySelector(":scope > desc") });
  }
  // Each table against the box it sits in (its scrolling div, or main):
  // where one is wider, a reader scrolls sideways to find its figures.
  result.tables = [...document.querySelectorAll("main table")].map((t) => {
    const box = t.parentElement.classList.contains("scroll") ? t.parentElement : t.closest("main");
    const cs = getComputedStyle(box);
    const inner = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return { what: t.className || t.closest("section[id]")?.id || "table", width: Math.round(t.getBoundingClientRect().width), box: Math.round(inner) };
  }).filter((t) => t.width > 0);
  // What pushes the page past the screen: the outermost elements reaching
  // beyond its right edge (not those inside a box that scrolls).
  if (result.pageWidth > result.viewport + 1) {
    const out = [];
    for (const e of document.querySelectorAll("body *")) {
      if (e.closest(".scroll") && !e.classList.contains("scroll")) continue;
      const r = e.getBoundingClientRect();
      if (r.right > window.innerWidth + 1 && !(e.parentElement && e.parentElement.getBoundingClientRect().right > window.innerWidth + 1 && e.parentElement !== document.body)) {
        out.push(`${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : ""} (${Math.round(r.right)} px)`);
      }
    }
    // Else the element whose own content is wider than the screen.
    if (!out.length) {
      for (const e of document.querySelectorAll("body *")) {
        if (e.closest(".scroll")) continue;
        if (e.scrollWidth > window.innerWidth + 1 && getComputedStyle(e).overflowX === "visible" && ![...e.children].some((c) => c.scrollWidth > window.innerWidth + 1)) {
          out.push(`${e.tagName.toLowerCase()}${e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : ""} holds ${e.scrollWidth} px`);
        }
      }
    }
    result.beyond = out.slice(0, 4);
  }
  return result;
}

// The leaderboard's filters by keyboard alone: Tab reaches every control of
// the form in order, each shows where focus is, the scenario changes with
// the arrow keys, and the Show button submits with Enter.
async function keyboardWalk(page) {
  current = "/leaderboard (keyboard)";
  await page.goto(base + "/leaderboard", { waitUntil: "load" });
  const controls = await page.$$eval("form.filters select, form.filters input, form.filters button", (els) => els.map((e) => e.name || e.textContent.trim()));
  const reached = [];
  for (let i = 0; i < 200; i++) {
    await page.keyboard.press("Tab");
    const f = await page.evaluate(() => {
      const e = document.activeElement;
      if (!e || !e.closest("form.filters")) return null;
      const s = getComputedStyle(e);
      const visible = (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== "none";
      return { name: e.name || e.textContent.trim(), visible };
    });
    if (!f) continue;
    if (!f.visible) problems.push(`desktop /leaderboard: keyboard focus on ${f.name} is not visible`);
    // Links in the form (a peer origin's) take focus too; only the
    // controls count as reached.
    if (controls.includes(f.name) && !reached.includes(f.name)) reached.push(f.name);
    if (f.name === "scenario") {
      const before = await page.$eval("select[name=scenario]", (s) => s.value);
      await page.keyboard.press("ArrowDown");
      const after = await page.$eval("select[name=scenario]", (s) => s.value);
      if (after === before) problems.push(`desktop /leaderboard: ArrowDown on the scenario select changed nothing`);
    }
    if (f.name === "Show") {
      const wanted = await page.$eval("select[name=scenario]", (s) => s.value);
      await Promise.all([page.waitForNavigation(), page.keyboard.press("Enter")]);
      const url = new URL(page.url());
      if (url.searchParams.get("scenario") !== wanted) problems.push(`desktop /leaderboard: Enter on Show went to ${page.url()}, not scenario=${wanted}`);
      break;
    }
  }
  const missed = controls.filter((c) => !reached.includes(c));
  if (missed.length) problems.push(`desktop /leaderboard: Tab never reached ${missed.join(", ")} (reached ${reached.join(", ")})`);
  figures.keyboardControls = reached.length;
}

// Clicks `button` (a locator) and waits for the page the form lands on;
// fails on an error status, or when `says` is not shown there.
async function post(page, what, button, says) {
  current = what;
  const [resp] = await Promise.all([page.waitForNavigation({ waitUntil: "load" }), button.click()]);
  const status = resp ? resp.status() : 0;
  const shown = await page.locator("main").innerText().catch(() => "");
  if (status >= 400) problems.push(`form ${what}: landed on ${page.url()} with status ${status}: ${shown.slice(0, 300)}`);
  else if (says && !shown.includes(says)) problems.push(`form ${what}: landed on ${page.url()}, which does not say "${says}": ${shown.slice(0, 300)}`);
  else console.log(`ok form ${what} → ${new URL(page.url()).pathname} (${status})`);
  figures.forms = (figures.forms || 0) + 1;
}

async function formsAsAPersonDoes(f) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(`forms ${current}: page error: ${e.message}`));
  await page.goto(base + "/admin", { waitUntil: "load" });
  await page.fill("input[name=token]", f.token);
  await post(page, "sign in", page.locator("form[action='/admin/login'] button[type=submit]"), "Signed in as");
  for (const [id, decision] of [[f.approve, "approve"], [f.reject, "reject"]]) {
    await page.goto(base + "/admin", { waitUntil: "load" });
    const form = page.locator(`form[action='/admin/submissions/${id}/decision']`);
    await form.locator("input[name=reason]").fill(`${decision}d in the browser check`);
    await post(page, decision, form.locator(`button[value=${decision}]`), decision === "approve" ? "Status: accepted" : "Status: rejected");
  }
  await page.goto(base + "/admin", { waitUntil: "load" });
  let form = page.locator("form[action='/admin/submitters/suspend']");
  await form.locator("input[name=handle]").fill(f.suspend);
  await form.locator("input[name=reason]").fill("suspended in the browser check");
  await post(page, "suspend", form.locator("button[type=submit]"), "Submitter suspended");
  form = page.locator("form[action='/admin/keys/revoke']");
  await form.locator("input[name=fingerprint]").fill(f.revoke);
  await form.locator("input[name=reason]").fill("revoked in the browser check");
  await post(page, "revoke", form.locator("button[type=submit]"), "Key revoked");
  form = page.locator("form[action='/admin/snapshots']");
  await post(page, "publish snapshot", form.locator("button[type=submit]"), "manifest");
  await page.goto(base + "/admin", { waitUntil: "load" });
  await post(page, "sign out", page.locator("form[action='/admin/logout'] button[type=submit]"), "Maintainer token");
  await page.goto(base + "/submit", { waitUntil: "load" });
  await page.setInputFiles("input[name=bundle]", f.bundle);
  await page.setInputFiles("input[name=signature]", f.signature);
  await post(page, "upload", page.locator("form[action='/submit'] button[type=submit]"), "Status: accepted");
  await context.close();
}

try {
  for (const [width, height, label] of [[1280, 900, "desktop"], [768, 1024, "tablet"], [390, 844, "phone"], [320, 640, "small"]]) {
    const context = await browser.newContext({ viewport: { width, height }, javaScriptEnabled: true });
    const page = await context.newPage();
    current = "";
    let expected = 200;
    page.on("console", (m) => {
      // An error page's own status is reported by the browser as a failed load.
      if (m.type() === "error" && !(expected !== 200 && m.text().includes(`status of ${expected}`))) problems.push(`${label} ${current}: console error: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`${label} ${current}: page error: ${e.message}`));
    page.on("dialog", async (d) => { problems.push(`${label} ${current}: a dialog opened: ${d.message()}`); await d.dismiss(); });
    for (const p of pages) {
      current = p.path;
      expected = p.status || 200;
      const resp = await page.goto(base + p.path, { waitUntil: "load" });
      figures.loads++;
      const status = resp ? resp.status() : 0;
      if (status !== (p.status || 200)) problems.push(`${label} ${p.path}: status ${status}`);
      const found = await page.locator(p.expect).count();
      if (found === 0) problems.push(`${label} ${p.path}: no element matches ${p.expect}`);
      if (p.text) {
        const where = p.within || "body";
        const shown = (await page.locator(where).allInnerTexts()).join("\n");
        if (!shown.toLowerCase().includes(p.text.toLowerCase())) problems.push(`${label} ${p.path}: text not shown in ${where}: ${p.text}`);
      }
      if (label === "desktop" && !p.path.includes("#")) {
        // The first Tab stop of every page is the skip link to the content
        // (a page opened at a fragment starts Tab from that fragment).
        await page.keyboard.press("Tab");
        const first = await page.evaluate(() => document.activeElement && document.activeElement.classList.contains("skip") && document.activeElement.getAttribute("href"));
        if (first !== "#content") problems.push(`desktop ${p.path}: the first Tab stop is not the skip link (${first})`);
        else figures.skipLinks = (figures.skipLinks || 0) + 1;
        await page.keyboard.press("Escape");
      }
      const m = await page.evaluate(measure);
      if (label === "desktop" && p.path === "/leaderboard") {
        // At a glance: the first screen shows at least 10 ranked rows (all
        // of them when there are fewer), each model name on one line. (The
        // table's fit in its box is the `fit` check below.)
        const g = await page.evaluate(() => {
          const t = document.querySelector("table.board");
          const box = t.parentElement;
          const rows = [...t.querySelectorAll("tbody tr")];
          const first = rows.filter((r) => r.getBoundingClientRect().bottom <= window.innerHeight).length;
          const lines = [...t.querySelectorAll("td.model a")].filter((a) => a.getClientRects().length > 1 || a.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(a).lineHeight || "20")).length;
          return { table: Math.round(t.getBoundingClientRect().width), box: box.clientWidth, rows: rows.length, first, wrapped: lines };
        });
        figures.board = g;
        if (g.first < Math.min(10, g.rows)) problems.push(`desktop /leaderboard: ${g.first} ranked rows in the first ${height} px (at least ${Math.min(10, g.rows)} wanted)`);
        if (g.wrapped) problems.push(`desktop /leaderboard: ${g.wrapped} model names break over lines`);
      }
      if (label === "desktop" && p.fit) {
        // Pages marked `fit`: every table fits its box at 1,280 px (long
        // cells wrap, the rest folds behind "show every column").
        for (const t of m.tables) if (t.width > t.box) problems.push(`desktop ${p.path}: table ${t.what} is ${t.width} px wide in a ${t.box} px box`);
        const widest = m.tables.reduce((a, t) => (t.width > a.width ? t : a), { width: 0, box: 0 });
        figures.fits.push(`${p.name || p.path} ${widest.width} px in ${widest.box}`);
      }
      figures.maxPageWidth = Math.max(figures.maxPageWidth, m.pageWidth);
      if (label !== "desktop") {
        // At 768, 390 and 320 px no page scrolls sideways (a wide table
        // scrolls inside its own box, which says so).
        if (m.pageWidth > m.viewport + 1) problems.push(`${label} ${p.path}: the page is ${m.pageWidth} px wide on a ${m.viewport} px screen (${(m.beyond || []).join(", ")})`);
      }
      if (label === "phone") {
        for (const o of m.overflowing) problems.push(`${label} ${p.path}: key column off screen: ${o}`);
        figures.keyCells += m.keyCells;
      }
      for (const c of m.charts) {
        figures.charts++;
        figures.labels += c.labels;
        figures.minFontPx = Math.min(figures.minFontPx, c.minPx);
        if (c.overlaps.length) problems.push(`${label} ${p.path}: chart ${c.id}: overlapping labels ${c.overlaps.slice(0, 5).join(", ")}`);
        if (c.clipped.length) problems.push(`${label} ${p.path}: chart ${c.id}: labels cut at the chart's edge ${c.clipped.slice(0, 5).join(", ")}`);
        if (c.minPx < 11) problems.push(`${label} ${p.path}: chart ${c.id}: text at ${c.minPx.toFixed(1)} px`);
        if (!c.titled) problems.push(`${label} ${p.path}: chart ${c.id} has no title and desc`);
      }
      await page.evaluate(axeSource);
      const axe = await page.evaluate(async (tags) => {
        // eslint-disable-next-line no-undef
        const r = await axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
        return { rules: r.passes.length + r.violations.length + r.incomplete.length + r.inapplicable.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) })) };
      }, WCAG);
      figures.axeRules = Math.max(figures.axeRules, axe.rules);
      for (const v of axe.violations) {
        figures.axeViolations += v.nodes.length;
        problems.push(`${label} ${p.path}: axe ${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 5).join(" | ")}${v.nodes.length > 5 ? ` and ${v.nodes.length - 5} more` : ""}`);
      }
      const ids = await page.evaluate(() => [...document.querySelectorAll("[id]")].map((e) => e.id));
      const dup = ids.filter((id, i) => ids.indexOf(id) !== i);
      if (dup.length) problems.push(`${label} ${p.path}: ids used twice: ${[...new Set(dup)].join(", ")}`);
      const name = p.name || p.path.replace(/[^a-zA-Z0-9]+/g, "_").replace(/^_|_$/g, "") || "index";
      await page.screenshot({ path: `${out}/${label}-${name}.png`, fullPage: true });
      console.log(`ok ${label} ${p.path} (${status}, ${found} × ${p.expect}, ${m.charts.length} charts)`);
    }
    if (label === "desktop") await keyboardWalk(page);
    await context.close();
  }
  if (process.env.FORMS_JSON) await formsAsAPersonDoes(JSON.parse(process.env.FORMS_JSON));
} finally {
  await browser.close();
}
console.log(`measured: ${figures.loads} page loads, ${figures.charts} charts with ${figures.labels} labels, 0 overlaps and 0 labels past a chart's edge allowed, smallest chart text ${figures.minFontPx.toFixed(1)} px, ${figures.keyCells} key cells on the phone inside 390 px, widest page ${figures.maxPageWidth} px, axe-core ${figures.axeRules} WCAG 2.1 A/AA rules per page, ${figures.axeViolations} violating elements, ${figures.keyboardControls} leaderboard controls reached by Tab; leaderboard at 1,280 px: table ${figures.board?.table} px in a ${figures.board?.box} px box, ${figures.board?.first} of ${figures.board?.rows} rows in the first screen; widest table at 1,280 px: ${figures.fits.join(", ")}; ${figures.forms || 0} forms posted as a person does; the skip link first on ${figures.skipLinks || 0} pages`);
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
