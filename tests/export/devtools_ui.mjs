// devtools_ui.mjs — opens heapgraph's .heapsnapshot exports in the real
// DevTools of Debian's chromium (headless, driven by playwright-core), the
// way a person does: Memory panel, "Load profile" for each file, select the
// last, screenshot the Summary, switch the perspective to Comparison (base:
// the first file) and screenshot it. Prints the rows DevTools shows, as
// JSON: {"summary": ["Widget ×250 3 6.0 kB ...", ...], "comparison": [...]}.
//   node devtools_ui.mjs DEPS_DIR OUT_DIR BASE.heapsnapshot SNAP.heapsnapshot
// DevTools' frontend is the one chromium bundles, served on its own
// --remote-debugging-port (127.0.0.1, port chosen by chromium).
import fs from 'node:fs';
import {createRequire} from 'node:module';
import os from 'node:os';
import path from 'node:path';

const [deps, outDir, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(deps), 'package.json'));
const {chromium} = require('playwright-core');
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hg-devtools-'));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0'],
  viewport: {width: 1400, height: 800},
});
const rowsOf = ui => ui.locator('tr.data-grid-data-grid-node')
                         .evaluateAll(rs => rs.map(r => r.innerText.replace(/\s+/g, ' ').trim()));
try {
  let port;
  for (let i = 0; i < 100 && !port; i++) {
    try {
      port = fs.readFileSync(path.join(profile, 'DevToolsActivePort'), 'utf8').split('\n')[0];
    } catch {
      await new Promise(r => setTimeout(r, 100));
    }
  }
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const page = targets.find(t => t.type === 'page');
  const ui = await ctx.newPage();
  await ui.goto(`http://127.0.0.1:${port}/devtools/devtools_app.html?ws=127.0.0.1:${port}/devtools/page/${page.id}`);
  await ui.waitForTimeout(1500);
  await ui.keyboard.press('Control+Shift+P');  // command menu: "Show Memory"
  await ui.waitForTimeout(500);
  await ui.keyboard.type('Show Memory');
  await ui.waitForTimeout(500);
  await ui.keyboard.press('Enter');
  const load = ui.getByRole('button', {name: /Load profile/}).first();
  await load.waitFor();
  for (let i = 0; i < files.length; i++) {
    const [chooser] = await Promise.all([ui.waitForEvent('filechooser'), load.click()]);
    await chooser.setFiles(files[i]);
    // loaded when its sidebar entry shows the snapshot's size, "(1.6 MB)"
    const loaded = async () => (await ui.getByRole('treeitem').allInnerTexts())
                                   .filter(t => /\(\d[\d.,]*\s[kMG]?B\)$/.test(t)).length;
    for (let t = 0; t < 600 && await loaded() <= i; t++) await ui.waitForTimeout(100);
    if (await loaded() <= i) {
      await ui.screenshot({path: path.join(outDir, 'devtools_failed.png')});
      throw new Error('DevTools did not load ' + files[i]);
    }
  }
  await ui.getByText(path.basename(files.at(-1)).replace(/\.heapsnapshot$/, ''), {exact: true})
      .first().click();
  const perspective = ui.locator('select[aria-label=Perspective]');
  await perspective.waitFor();
  await ui.locator('tr.data-grid-data-grid-node').first().waitFor();
  await ui.waitForTimeout(500);
  const summary = await rowsOf(ui);
  await ui.screenshot({path: path.join(outDir, 'devtools_summary.png')});
  await perspective.selectOption('Comparison');
  await ui.getByText('# New').first().waitFor();
  await ui.waitForTimeout(1500);
  const comparison = await rowsOf(ui);
  await ui.screenshot({path: path.join(outDir, 'devtools_comparison.png')});
  process.stdout.write(JSON.stringify({summary, comparison}) + '\n');
} finally {
  await ctx.close();
  fs.rmSync(profile, {recursive: true, force: true});
}
