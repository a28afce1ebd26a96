// The HTML report in a real browser (ctest: html_report). Writes the pages of `stepcast
// predict`, `scale`, `compare` and `plan` on seed scenarios and of `stepcast validate` on
// the measured runs of FILE, opens each in Debian's headless Chromium driven by playwright-core, and checks that it renders, that every chart has its
// marks (each series with data has drawn elements), that the console shows no error and the
// page throws none, that no request leaves the page, and that the title, tables and
// assumptions are there. Takes a screenshot of each page into OUT.
//
//   node check_page.mjs --stepcast BIN --seeds DIR --runs FILE --out DIR
//
// Environment: CHROMIUM (default /usr/bin/chromium). Exits 0 when every check passed, 1 when
// one failed, 77 (ctest's skip) when the browser, playwright-core or the embedded charting
// library is missing -- except under CI (CI set), where a missing piece is a failure.
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const SKIP = 77;

function argument(name) {
  const i = process.argv.indexOf('--' + name);
  if (i < 0 || i + 1 >= process.argv.length) {
    console.error(`check_page: --${name} is required (--stepcast BIN --seeds DIR --runs FILE --out DIR)`);
    process.exit(1);
  }
  return process.argv[i + 1];
}

function skip(why) {
  if (process.env.CI) {
    console.error(`check_page: FAILED: ${why} (under CI the HTML report test must run)`);
    process.exit(1);
  }
  console.log(`check_page: skipped: ${why}`);
  process.exit(SKIP);
}

const stepcast = argument('stepcast');
const seeds = argument('seeds');
const out = argument('out');
const runs = argument('runs');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
fs.mkdirSync(out, {recursive: true});

let chromium;
try {
  ({chromium} = await import('playwright-core'));
} catch (e) {
  skip('playwright-core is not installed (run `bash .ci/setup`, or `npm ci` in report/web/)');
}
if (!fs.existsSync(chromiumPath)) skip(`no browser at ${chromiumPath} (apt-get install chromium, as .ci/setup does)`);

// ---- the pages ----

const seed = name => path.join(seeds, name);
// A seed with a price per GPU-hour, so the scaling page draws its cost-per-epoch curve. The
// price is a test input, not a figure of any provider.
const priced = path.join(out, 'priced-scenario.json');
const pricedScenario = JSON.parse(fs.readFileSync(seed('rule-of-thumb-10b-4x8a100-400g.json'), 'utf8'));
pricedScenario.price_per_gpu_hour_usd = 2.0;
fs.writeFileSync(priced, JSON.stringify(pricedScenario, null, 2));

const pages = [
  {name: 'predict', args: ['predict', seed('gpt2-xl-ddp-8xa100.json')],
   charts: ['timeline', 'breakdown', 'memory'], title: /^Predicted training step: /, tables: 1},
  {name: 'scale', args: ['scale', priced, '--gpus', '8,16,32'],
   charts: ['speedup', 'efficiency', 'cost', 'breakdown', 'memory'], title: /^Predicted scaling: /, tables: 1},
  {name: 'compare', args: ['compare', seed('lightning-ddp-8xa100.json'), seed('lightning-ddp-3xh100.json'),
                           seed('lightning-ddp-6xa100.json')],
   charts: ['throughput', 'breakdown', 'memory'], title: /^Predicted comparison: /, tables: 1},
  {name: 'plan', args: ['plan', seed('gpt2-xl-ddp-8xa100.json'), '--top', '4'],
   charts: ['timeline', 'breakdown', 'memory'], title: /^Planned layouts: /, tables: 1},
  {name: 'plan-range', args: ['plan', priced, '--gpus-range', '8:32', '--global-batch', '64', '--top', '1'],
   charts: ['speedup', 'efficiency', 'cost', 'breakdown', 'memory'], title: /^Predicted scaling: /, tables: 1},
  {name: 'validate', args: ['validate', runs],
   charts: ['scatter', 'errors'], title: /^Validation: /, tables: 3},
];

for (const p of pages) {
  p.file = path.join(out, p.name + '.html');
  try {
    execFileSync(stepcast, [...p.args, '--html', p.file], {stdio: ['ignore', 'ignore', 'pipe']});
  } catch (e) {
    const stderr = String(e.stderr || '');
    if (e.status === 2 && stderr.includes('charting library')) skip('this build of stepcast embeds no charting library');
    console.error(`check_page: FAILED: stepcast ${p.args.join(' ')} --html exited ${e.status}: ${stderr}`);
    process.exit(1);
  }
  p.bytes = fs.statSync(p.file).size;
}

// ---- the browser ----

/// In the page: each chart's series with how many data items each has and how many of them
/// were drawn (a graphic element per item; a line drawn without symbols counts its polyline).
function inspectCharts() {
  const result = [];
  for (const {id, chart} of window.stepcastCharts || []) {
    const model = chart.getModel();
    const series = [];
    model.eachSeries(s => {
      const data = s.getData();
      let drawn = 0;
      data.each(i => { if (data.getItemGraphicEl(i)) drawn++; });
      if (drawn === 0 && s.subType === 'line') {
        const view = chart.getViewOfSeriesModel(s);
        view.group.traverse(e => { if (e.type === 'ec-polyline' || e.type === 'polyline') drawn++; });
      }
      series.push({name: s.name, type: s.subType, items: data.count(), drawn: drawn});
    });
    result.push({id: id, series: series, width: chart.getWidth(), height: chart.getHeight()});
  }
  return {
    title: document.querySelector('h1') ? document.querySelector('h1').textContent : '',
    documentTitle: document.title,
    rendered: document.body.getAttribute('data-rendered'),
    tables: document.querySelectorAll('table').length,
    tableRows: [...document.querySelectorAll('table tbody')].map(b => b.rows.length),
    assumptions: document.querySelectorAll('ul.assumptions li').length,
    charts: result,
  };
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stepcast-chromium-'));
const failures = [];
const started = Date.now();
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: {width: 1280, height: 900},
  });
  for (const p of pages) {
    const fail = why => failures.push(`${p.name}: ${why}`);
    const page = await context.newPage();
    const url = pathToFileURL(p.file).href;
    const errors = [];
    const requests = [];
    page.on('console', m => { if (m.type() === 'error') errors.push('console error: ' + m.text()); });
    page.on('pageerror', e => errors.push('page error: ' + e.message));
    page.on('request', r => { if (r.url() !== url) requests.push(r.url()); });
    await page.goto(url, {waitUntil: 'load'});
    await page.waitForFunction(() => document.body.hasAttribute('data-rendered'), null, {timeout: 30000})
      .catch(() => fail('the page did not finish rendering (no data-rendered attribute)'));
    const seen = await page.evaluate(inspectCharts);
    await page.screenshot({path: path.join(out, p.name + '.png'), fullPage: true});
    await page.close();

    errors.forEach(fail);
    requests.forEach(r => fail('network request: ' + r));
    if (!p.title.test(seen.title)) fail(`title "${seen.title}" does not match ${p.title}`);
    if (seen.documentTitle !== seen.title) fail(`document title "${seen.documentTitle}" differs from the heading`);
    if (seen.tables < p.tables || seen.tableRows.some(n => n === 0)) fail(`tables: ${JSON.stringify(seen.tableRows)}`);
    if (seen.assumptions === 0) fail('no assumptions listed');
    const ids = seen.charts.map(c => c.id);
    for (const id of p.charts) if (!ids.includes(id)) fail(`chart "${id}" missing (charts: ${ids.join(', ')})`);
    for (const c of seen.charts) {
      if (c.width < 100 || c.height < 100) fail(`chart "${c.id}" is ${c.width} x ${c.height} px`);
      if (!c.series.length) fail(`chart "${c.id}" has no series`);
      for (const s of c.series)
        if (s.items === 0 || s.drawn === 0) fail(`chart "${c.id}" series "${s.name}" (${s.type}): ${s.drawn} of ${s.items} items drawn`);
    }
    const marks = seen.charts.map(c => `${c.id} ${c.series.reduce((n, s) => n + s.drawn, 0)}`).join(', ');
    console.log(`check_page: ${p.name}: ${p.bytes} bytes, ${seen.charts.length} charts (marks: ${marks}), ` +
                `${seen.assumptions} assumptions, ${errors.length} errors, ${requests.length} requests`);
  }
} finally {
  if (context) await context.close();
  fs.rmSync(profile, {recursive: true, force: true});
}

console.log(`check_page: browser checks took ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in ${out}`);
if (failures.length) {
  failures.forEach(f => console.error('check_page: FAILED: ' + f));
  process.exit(1);
}
console.log(`check_page: ${pages.length} pages passed`);
