// Loads every page of a running wattcounts in Debian's headless Chromium
// (never a downloaded browser), fails on console errors, page errors,
// dialogs (an alert would mean an unescaped <script>), bad statuses or a
// missing key element, and saves a screenshot of each page.
//
// node scripts/browser/check.mjs BASE_URL OUT_DIR PAGES_JSON
// PAGES_JSON: [{"path": "/gpus", "expect": "table tbody tr", "text": "optional text"}]
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const [base, out, pagesJson] = process.argv.slice(2);
const pages = JSON.parse(pagesJson);
mkdirSync(out, { recursive: true });
const executablePath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const problems = [];
try {
  for (const [width, label] of [[1280, "desktop"], [390, "phone"]]) {
    const context = await browser.newContext({ viewport: { width, height: 900 }, javaScriptEnabled: true });
    const page = await context.newPage();
    let current = "";
    page.on("console", (m) => { if (m.type() === "error") problems.push(`${label} ${current}: console error: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`${label} ${current}: page error: ${e.message}`));
    page.on("dialog", async (d) => { problems.push(`${label} ${current}: a dialog opened: ${d.message()}`); await d.dismiss(); });
    for (const p of pages) {
      current = p.path;
      const resp = await page.goto(base + p.path, { waitUntil: "load" });
      const status = resp ? resp.status() : 0;
      if (status !== 200) problems.push(`${label} ${p.path}: status ${status}`);
      const found = await page.locator(p.expect).count();
      if (found === 0) problems.push(`${label} ${p.path}: no element matches ${p.expect}`);
      if (p.text) {
        const body = await page.locator("body").innerText();
        if (!body.includes(p.text)) problems.push(`${label} ${p.path}: text not shown: ${p.text}`);
      }
      const name = p.path.replace(/[^a-zA-Z0-9]+/g, "_").replace(/^_|_$/g, "") || "index";
      await page.screenshot({ path: `${out}/${label}-${name}.png`, fullPage: true });
      console.log(`ok ${label} ${p.path} (${status}, ${found} × ${p.expect})`);
    }
    await context.close();
  }
} finally {
  await browser.close();
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
