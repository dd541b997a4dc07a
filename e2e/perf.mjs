// Prints how fast the page responds in headless Chromium: time from navigation
// to the first verdict, and from an input event to the updated result.
// Usage: node e2e/perf.mjs http://127.0.0.1:PORT/   (a measurement, not a test)
import { chromium } from 'playwright-core';

const base = process.argv[2] || 'http://127.0.0.1:8080/';
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const loads = [];
for (let i = 0; i < 5; i++) {
  await page.goto(base + '?lang=en', { waitUntil: 'commit' });
  await page.waitForSelector('#verdict');
  loads.push(await page.evaluate(() => performance.now()));
}
// Time from an input event to the changed result, measured inside the page.
const updates = await page.evaluate(async () => {
  const seq = document.querySelector('#seq');
  const peak = document.querySelector('#peak');
  const times = [];
  const values = [4096, 8192, 16384, 32768, 65536, 2048];
  for (let i = 0; i < 30; i++) {
    const before = peak.textContent;
    const t0 = performance.now();
    seq.value = String(values[i % values.length]);
    seq.dispatchEvent(new Event('input', { bubbles: true }));
    // Leptos updates the DOM synchronously or in a microtask; wait for the text change.
    while (peak.textContent === before) await Promise.resolve();
    times.push(performance.now() - t0);
    await new Promise((r) => requestAnimationFrame(() => r()));
  }
  return times;
});
// The auto-plan: the page reports its own search time (from the worker
// getting the question to the page holding the answer); read it for several
// plans, three times each (the median is printed), on a fresh worker (its
// wasm not yet tiered up) and searched again in it. DeepSeek-V3 on 256 B200
// is #26's check: within twice the dense 70B search on the same stack
// (Megatron: the Hugging Face stack's search is data parallel only, so far
// smaller).
const searches = [];
const plans = [
  '',
  'model=llama-3.1-70b&seq=32768',
  'model=llama-3.1-70b&seq=32768&impl=megatron',
  'model=mixtral-8x7b&precision=fp8',
  'model=llama-3.2-1b&seq=131072',
  'model=deepseek-v3&impl=megatron&instance=ml.p6-b200.48xlarge&nodes=32&lock=instance,nodes',
  'model=deepseek-v3&impl=megatron',
];
for (const q of plans) {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(base + '?lang=en&price=60&' + q);
    // The search runs in the page's worker, loaded when the panel nears the view.
    await page.locator('.autoplan').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => /Searched/.test(document.querySelector('#search-status')?.textContent || ''), null, { timeout: 60000 });
    const read = async () => (await page.textContent('#search-status')).match(/Searched ([\d,]+) candidates .* in ([\d,]+) ms/);
    const m = await read();
    // Again in the same worker, its wasm warm: the price changes no plan's place.
    await page.fill('#price', '61');
    await page.press('#price', 'Tab');
    await page.waitForFunction(() => /Searched/.test(document.querySelector('#search-status')?.textContent || '') && location.search.includes('price=61'), null, { timeout: 60000 });
    await page.waitForFunction(() => !/Searching/.test(document.querySelector('#search-status')?.textContent || ''), null, { timeout: 60000 });
    const w = await read();
    if (m && w) runs.push({ candidates: +m[1].replace(/,/g, ''), ms: +m[2].replace(/,/g, ''), warm: +w[2].replace(/,/g, '') });
  }
  if (runs.length) {
    const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
    const warm = runs.map((r) => r.warm).sort((a, b) => a - b);
    searches.push({ q: q || 'default', candidates: runs[0].candidates, ms: ms[Math.floor(ms.length / 2)], range: `${ms[0]}-${ms[ms.length - 1]}`, warm: warm[Math.floor(warm.length / 2)] });
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const max = (xs) => Math.max(...xs);
console.log(`load to first verdict: median ${median(loads).toFixed(0)} ms, max ${max(loads).toFixed(0)} ms (budget 500 ms)`);
console.log(`input to updated result: median ${median(updates).toFixed(1)} ms, max ${max(updates).toFixed(1)} ms (budget 16 ms)`);
for (const s of searches)
  console.log(`auto-plan (${s.q}): ${s.candidates} candidates in ${s.ms} ms (${s.range}) on a fresh worker, ${s.warm} ms searched again = ${(s.candidates / s.ms / 1000).toFixed(1)} M candidates/s in wasm (target: full search under 100 ms)`);
const dense70b = searches.find((s) => s.q === 'model=llama-3.1-70b&seq=32768&impl=megatron');
for (const s of searches.filter((x) => x.q.startsWith('model=deepseek-v3')))
  if (dense70b) console.log(`DeepSeek-V3 (${s.q}) / dense 70B Megatron search time: ${(s.ms / dense70b.ms).toFixed(2)} (#26: at most 2)`);
await browser.close();
