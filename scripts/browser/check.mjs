// Loads every page of a running wattcounts in Debian's headless Chromium
// (never a downloaded browser) at a desktop (1366 px) and a phone (390 px)
// width, and fails on:
// - console errors, page errors, dialogs (an alert would mean an unescaped
//   <script>), a bad status or a missing key element;
// - expected text missing (in the whole page or in one element);
// - on the phone: horizontal overflow of the page, or a key column of a
//   folding table (GPU, model, J/token and its interval: the cells not
//   marked `.more`) reaching past the screen's edge;
// - in every chart: two text labels whose boxes overlap, or text rendered
//   under 11 px (font size × the chart's scale).
// It saves a full-page screenshot of each page and prints one summary line
// with what it measured.
//
// node scripts/browser/check.mjs BASE_URL OUT_DIR PAGES_JSON
// PAGES_JSON: [{"path": "/gpus", "expect": "table tbody tr",
//               "text": "optional", "within": "optional selector for text",
//               "name": "optional screenshot name"}]
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const [base, out, pagesJson] = process.argv.slice(2);
const pages = JSON.parse(pagesJson);
mkdirSync(out, { recursive: true });
const executablePath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const problems = [];
const figures = { loads: 0, charts: 0, labels: 0, minFontPx: Infinity, keyCells: 0, maxPageWidth: 0 };

// Runs in the page: what the layout and the charts look like.
function measure() {
  const result = { pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth, overflowing: [], keyCells: 0, charts: [] };
  for (const table of document.querySelectorAll("table.folding")) {
    for (const cell of table.querySelectorAll("tbody tr:first-child > td:not(.more)")) {
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
    result.charts.push({ id: svg.id, labels: boxes.length, minPx: Math.min(...boxes.map((b) => b.px)), overlaps, titled: !!svg.querySelector(":scope > title") && !!svg.querySelector(":scope > desc") });
  }
  return result;
}

try {
  for (const [width, label] of [[1366, "desktop"], [390, "phone"]]) {
    const context = await browser.newContext({ viewport: { width, height: 900 }, javaScriptEnabled: true });
    const page = await context.newPage();
    let current = "";
    page.on("console", (m) => { if (m.type() === "error") problems.push(`${label} ${current}: console error: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`${label} ${current}: page error: ${e.message}`));
    page.on("dialog", async (d) => { problems.push(`${label} ${current}: a dialog opened: ${d.message()}`); await d.dismiss(); });
    for (const p of pages) {
      current = p.path;
      const resp = await page.goto(base + p.path, { waitUntil: "load" });
      figures.loads++;
      const status = resp ? resp.status() : 0;
      if (status !== 200) problems.push(`${label} ${p.path}: status ${status}`);
      const found = await page.locator(p.expect).count();
      if (found === 0) problems.push(`${label} ${p.path}: no element matches ${p.expect}`);
      if (p.text) {
        const where = p.within || "body";
        const shown = (await page.locator(where).allInnerTexts()).join("\n");
        if (!shown.toLowerCase().includes(p.text.toLowerCase())) problems.push(`${label} ${p.path}: text not shown in ${where}: ${p.text}`);
      }
      const m = await page.evaluate(measure);
      figures.maxPageWidth = Math.max(figures.maxPageWidth, m.pageWidth);
      if (label === "phone") {
        if (m.pageWidth > m.viewport + 1) problems.push(`${label} ${p.path}: the page is ${m.pageWidth} px wide on a ${m.viewport} px screen`);
        for (const o of m.overflowing) problems.push(`${label} ${p.path}: key column off screen: ${o}`);
        figures.keyCells += m.keyCells;
      }
      for (const c of m.charts) {
        figures.charts++;
        figures.labels += c.labels;
        figures.minFontPx = Math.min(figures.minFontPx, c.minPx);
        if (c.overlaps.length) problems.push(`${label} ${p.path}: chart ${c.id}: overlapping labels ${c.overlaps.slice(0, 5).join(", ")}`);
        if (c.minPx < 11) problems.push(`${label} ${p.path}: chart ${c.id}: text at ${c.minPx.toFixed(1)} px`);
        if (!c.titled) problems.push(`${label} ${p.path}: chart ${c.id} has no title and desc`);
      }
      const ids = await page.evaluate(() => [...document.querySelectorAll("[id]")].map((e) => e.id));
      const dup = ids.filter((id, i) => ids.indexOf(id) !== i);
      if (dup.length) problems.push(`${label} ${p.path}: ids used twice: ${[...new Set(dup)].join(", ")}`);
      const name = p.name || p.path.replace(/[^a-zA-Z0-9]+/g, "_").replace(/^_|_$/g, "") || "index";
      await page.screenshot({ path: `${out}/${label}-${name}.png`, fullPage: true });
      console.log(`ok ${label} ${p.path} (${status}, ${found} × ${p.expect}, ${m.charts.length} charts)`);
    }
    await context.close();
  }
} finally {
  await browser.close();
}
console.log(`measured: ${figures.loads} page loads, ${figures.charts} charts with ${figures.labels} labels, 0 overlaps allowed, smallest chart text ${figures.minFontPx.toFixed(1)} px, ${figures.keyCells} key cells on the phone inside 390 px, widest page ${figures.maxPageWidth} px`);
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
