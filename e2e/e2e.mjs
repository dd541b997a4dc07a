// End-to-end checks: the release site in Debian's headless Chromium, driven by
// playwright-core (never the `playwright` package, which downloads a browser).
// Usage: node e2e/e2e.mjs http://127.0.0.1:PORT/   (screenshots go to target/e2e/)
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const base = process.argv[2] || 'http://127.0.0.1:8080/';
const shots = 'target/e2e';
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // playwright gives each launch a fresh temporary --user-data-dir
    '--disable-dev-shm-usage'],
});
const origin = new URL(base).origin;
async function freshContext(opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', ...opts });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  return ctx;
}

let passed = 0, failed = 0;
async function test(name, fn) {
  const ctx = await freshContext();
  const page = await ctx.newPage();
  const consoleErrors = [];
  const watch = (p) => {
    p.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    p.on('pageerror', (e) => consoleErrors.push(String(e)));
    p.on('dialog', (d) => { consoleErrors.push('dialog opened: ' + d.message()); d.dismiss(); });
    p.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) consoleErrors.push('network request to ' + r.url()); });
  };
  watch(page);
  ctx.on('page', watch);
  try {
    await fn(page, ctx);
    if (consoleErrors.length) throw new Error('console errors: ' + consoleErrors.join(' | '));
    passed++; console.log(`ok   ${name}`);
  } catch (e) {
    failed++; console.log(`FAIL ${name}: ${e.message}`);
    await page.screenshot({ path: `${shots}/FAIL-${name.replace(/\W+/g, '_')}.png`, fullPage: true }).catch(() => {});
  } finally {
    await ctx.close();
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
const gibOf = (s) => parseFloat(s.split(' GiB')[0].replace(/,/g, ''));
const FIELDS = ['#model', '#seq', '#mb', '#ga', '#precision', '#ckpt', '#zero', '#instance', '#nodes', '#attn', '#loss', '#stack', '#tp', '#pp'];
const NUMBERS = ['#verdict', '#peak', '#params', '#tps-gpu', '#step', '#mfu', '#time', '#cost', '#max-mb', '#max-seq'];
async function snapshot(page) {
  const out = {};
  for (const s of FIELDS) out[s] = await page.inputValue(s);
  for (const s of NUMBERS) out[s] = (await page.textContent(s)).trim();
  return out;
}
function sameSnapshot(a, b, what) {
  for (const k of Object.keys(a)) assert(a[k] === b[k], `${what}: ${k} differs: "${a[k]}" vs "${b[k]}"`);
}
/** Wait until `sel` holds `want` (a reply from the page's worker). */
async function waitText(page, sel, want) {
  await page.waitForFunction(([s, w]) => (document.querySelector(s)?.textContent || '').includes(w), [sel, want]);
}
async function open(page, url) {
  await page.goto(url);
  await page.waitForSelector('#verdict');
}

await test('default plan loads with a verdict', async (page) => {
  await open(page, base + '?lang=en');
  assert((await page.textContent('#params')).trim() === '8.03 B', 'Llama-3.1-8B has 8.03 B parameters');
  assert(/Fits/.test(await page.textContent('#verdict')), 'default plan fits');
  assert(page.url().includes('model=llama-3.1-8b'), 'URL carries the plan: ' + page.url());
  await page.screenshot({ path: `${shots}/default-1280-light.png`, fullPage: true });
});

await test('changing the sequence length changes the result and the URL', async (page) => {
  await open(page, base + '?lang=en');
  const before = gibOf(await page.textContent('#peak'));
  await page.fill('#seq', '131072');
  await page.waitForFunction(() => location.search.includes('seq=131072'));
  const after = gibOf(await page.textContent('#peak'));
  assert(after > before * 4, `peak grows with the sequence: ${before} -> ${after}`);
  assert(/Does not fit/.test(await page.textContent('#verdict')), '8B at 128K without checkpointing does not fit');
});

// The release build redraws only what changed (rows and attributes bound one
// by one): after a series of edits, what is on screen must be exactly what a
// fresh page with the same link draws.
await test('after edits, charts, code, terms and warnings are drawn as a fresh page draws them', async (page, ctx) => {
  await open(page, base + '?lang=en');
  await page.fill('#seq', '32768');
  await page.selectOption('#model', 'llama-3.1-70b');
  await page.selectOption('#instance', 'ml.p5.48xlarge');
  await page.fill('#seq', '2048');
  await page.selectOption('#precision', 'fp8');
  await page.waitForFunction(() => location.search.includes('precision=fp8'));
  const fresh = await ctx.newPage();
  await open(fresh, page.url());
  // The code comes from the worker once its panel is near the view: both pages wait for theirs.
  for (const p of [page, fresh]) {
    await p.locator('#export-code').scrollIntoViewIfNeeded();
    await p.waitForFunction(() => document.querySelector('#export-code').getAttribute('aria-busy') === 'false');
  }
  for (const sel of ['#instance-chart', '#seq-chart', '#export-code', '#terms', '#messages', '#model', '#instance']) {
    const [a, b] = await Promise.all([page, fresh].map((p) => p.$eval(sel, (e) => e.outerHTML)));
    assert(a === b, `${sel} after edits differs from a fresh page's`);
  }
});

await test('70B at 128K on 4 x p6-b200: copy the link, reopen it, same plan and numbers', async (page, ctx) => {
  await open(page, base + '?lang=en');
  await page.selectOption('#model', 'llama-3.1-70b');
  await page.fill('#seq', '131072');
  await page.selectOption('#precision', 'fp8');
  await page.selectOption('#ckpt', 'full');
  await page.selectOption('#instance', 'ml.p6-b200.48xlarge');
  await page.fill('#nodes', '4');
  await page.selectOption('#zero', '3');
  await page.waitForFunction(() => location.search.includes('nodes=4') && location.search.includes('precision=fp8'));
  const before = await snapshot(page);
  await page.click('#copy-link');
  await page.waitForFunction(() => document.querySelector('#copy-link').textContent.includes('copied'));
  const link = await page.evaluate(() => navigator.clipboard.readText());
  assert(link === page.url(), `clipboard holds the page's link: ${link}`);
  for (const k of ['model=llama-3.1-70b', 'seq=131072', 'precision=fp8', 'ckpt=full', 'instance=ml.p6-b200.48xlarge', 'nodes=4', 'zero=3'])
    assert(link.includes(k), `link has ${k}`);
  const other = await (await freshContext()).newPage();
  await open(other, link);
  sameSnapshot(before, await snapshot(other), 'reopened link');
  await other.context().close();
});

await test('Blackwell on SageMaker: price basis, UltraServer domain, uneven pipeline', async (page) => {
  // The default plan (8B on ml.p6-b200.48xlarge) has a cost, marked as an estimate.
  await open(page, base + '?lang=en');
  const cost = await page.textContent('#cost');
  assert(/\$/.test(cost) && /estimated price/.test(cost), 'cost with its basis: ' + cost);
  // GB200: the UltraServer picker appears; x36 splits 64 GPUs over two NVLink domains.
  await open(page, base + '?lang=en&model=llama-3.1-70b&impl=megatron&precision=fp8&zero=3&instance=ml.p6e-gb200.36xlarge&nodes=16&mb=2&ga=2');
  assert((await page.inputValue('#ultraserver')) === '72', 'x72 by default');
  assert(/1 × 72 GPU/.test(await page.textContent('#nvlink')), await page.textContent('#nvlink'));
  await page.selectOption('#ultraserver', '36');
  await page.waitForFunction(() => location.search.includes('ultraserver=36'));
  const nv = await page.textContent('#nvlink');
  assert(/2 × 36 GPU/.test(nv) && /DP/.test(nv), 'two domains, DP crosses: ' + nv);
  // Llama 3.1 405B at PP 16 x VP 4: Megatron's split, no error.
  await open(page, base + '?lang=en&model=llama-3.1-405b&impl=megatron&precision=fp8&tp=4&pp=16&vp=4&instance=ml.p6-b200.48xlarge&nodes=32');
  const layers = await page.textContent('#pp-layers');
  assert(/7 \| 8 × 14 \| 7/.test(layers), 'layers per rank: ' + layers);
  assert((await page.textContent('#pp-error')).trim() === '', 'pp accepted');
  // An optional field can be emptied again.
  await page.fill('#pp_first', '7');
  await page.waitForFunction(() => location.search.includes('pp_first=7'));
  await page.fill('#pp_first', '');
  await page.dispatchEvent('#pp_first', 'change');
  await page.waitForFunction(() => !location.search.includes('pp_first'));
});

await test('copy as Markdown: a summary with verdict, cost, warnings and the link', async (page) => {
  await open(page, base + '?lang=en');
  await page.click('#copy-markdown');
  await page.waitForFunction(() => document.querySelector('#copy-markdown').textContent.includes('copied'));
  const md = await page.evaluate(() => navigator.clipboard.readText());
  assert(md.startsWith('**Llama-3.1-8B on ml.p6-b200.48xlarge (8 × B200) — fits'), 'headline: ' + md.split('\n')[0]);
  for (const part of ['- Memory per GPU: ', '- Speed: ', 'tokens/s per GPU', '- Time: ', '- Cost: $', 'estimated price', 'Warnings:'])
    assert(md.includes(part), `summary has "${part}":\n${md}`);
  assert(md.includes(`](${page.url()})`), 'summary links the plan');
  // In Russian, the same summary in Russian.
  await open(page, base + '?lang=ru');
  await page.click('#copy-markdown');
  await page.waitForFunction(() => document.querySelector('#copy-markdown').textContent.includes('скопирована'));
  const ru = await page.evaluate(() => navigator.clipboard.readText());
  assert(ru.includes('помещается') && ru.includes('Стоимость'), ru);
});

await test('Russian is fetched only when shown: RU loads it and the page switches', async (page) => {
  const fetched = [];
  page.on('request', (r) => { if (r.url().endsWith('/lang/ru.txt')) fetched.push(r.url()); });
  await open(page, base + '?lang=en');
  assert(fetched.length === 0, 'an English page does not fetch the Russian catalog');
  await page.click('#lang-ru');
  await page.waitForFunction(() => document.body.textContent.includes('Поместится ли обучение LLM'));
  assert(page.url().includes('lang=ru'), 'the link says ru: ' + page.url());
  assert(/помещается|не помещается/i.test(await page.textContent('#verdict')), 'the verdict is in Russian');
  await page.click('#lang-en');
  await page.click('#lang-ru');
  assert(fetched.length === 1, 'fetched once: ' + fetched.length);
  // A link that opens in Russian shows Russian from the first render.
  await open(page, base + '?lang=ru');
  assert((await page.textContent('body')).includes('Поместится ли обучение LLM'), 'Russian at once');
});

await test('a Russian page shows no English notice and no decimal point in its sentences (#24)', async (page) => {
  // Opened in English with a bad value, then switched: the notice follows the language.
  await open(page, base + '?lang=en&seq=abc&model=llama-3.1-70b&seq=32768&instance=ml.p5.48xlarge&mb=x');
  assert((await page.textContent('#notices')).includes('expected a whole number'), 'English notice first');
  await page.click('#lang-ru');
  await page.waitForFunction(() => document.body.textContent.includes('Поместится ли обучение LLM'));
  const notices = await page.textContent('#notices');
  assert(!/expected a whole number/.test(notices) && /[а-я]/.test(notices), 'notice in Russian: ' + notices);
  // Warnings and accuracy notes: a decimal comma, never a point between digits.
  for (const sel of ['#accuracy', '#throughput-accuracy', 'li[data-code=over_budget]']) {
    const text = await page.textContent(sel);
    assert(!/\d\.\d/.test(text), `${sel} has a decimal point: ${text.slice(0, 120)}`);
  }
  assert(/\d,\d/.test(await page.textContent('li[data-code=over_budget]')), 'the warning has a decimal comma');
});

await test('switching the language evaluates and searches nothing (#24)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-70b&vs=model%3Dllama-3.1-8b');
  await page.locator('.autoplan').scrollIntoViewIfNeeded();
  await page.waitForSelector('#autoplan-table, #autoplan-empty');
  const counts = () => page.evaluate(() => [document.body.dataset.evaluations, document.body.dataset.searches]);
  const before = await counts();
  assert(Number(before[0]) >= 2 && Number(before[1]) >= 1, 'the counters count: ' + before);
  await page.click('#lang-ru');
  await page.waitForFunction(() => document.body.textContent.includes('Поместится ли обучение LLM'));
  assert(page.url().includes('lang=ru'), 'the link keeps the language: ' + page.url());
  assert(/[а-я]/.test(await page.textContent('#autoplan-table, #autoplan-empty')), 'the ranked plans re-rendered in Russian');
  await page.click('#lang-en');
  await page.waitForFunction(() => document.body.textContent.includes('Will your LLM training job'));
  const after = await counts();
  assert(after[0] === before[0] && after[1] === before[1], `evaluations/searches ${before} -> ${after}`);
});

await test('twenty random plans survive the round trip', async (page, ctx) => {
  let seed = 12345;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const pick = (xs) => xs[rnd(xs.length)];
  for (let i = 0; i < 20; i++) {
    const q = new URLSearchParams({
      model: pick(['llama-3.2-1b', 'llama-3.1-8b', 'qwen2.5-14b', 'mixtral-8x7b', 'gemma-2-27b', 'llama-3.1-70b', 'qwen3-30b-a3b']),
      seq: String(pick([512, 2048, 4096, 8192, 32768, 131072])),
      mb: String(pick([1, 2, 4])), ga: String(pick([1, 4, 16])),
      precision: pick(['bf16', 'bf16-pure', 'fp8']),
      ckpt: pick(['none', 'selective', 'full', 'op', '0.5']),
      zero: String(pick([0, 1, 2, 3])),
      instance: pick(['ml.p6-b200.48xlarge', 'ml.p5.48xlarge', 'ml.p5en.48xlarge', 'ml.g6e.48xlarge', 'ml.p4de.24xlarge']),
      nodes: String(pick([1, 2, 4])), loss: pick(['plain', 'fused']), stack: pick(['hf', 'megatron', 'torchtitan']),
      lang: pick(['en', 'ru']), price: String(pick([30, 55.5, 98.32])),
    });
    await open(page, base + '?' + q.toString());
    const a = await snapshot(page);
    const url = page.url();
    const other = await ctx.newPage();
    await open(other, url);
    sameSnapshot(a, await snapshot(other), `plan ${i} (${q})`);
    await other.close();
  }
});

await test('ten malformed links each show the page with a notice', async (page) => {
  const bad = [
    '?seq=abc',
    '?model=gpt-17',
    '?model=llama-3.1-8b&seq=8192&mb=',
    '?seq=81',
    '?job=' + 'a'.repeat(5000),
    '?role=%3Cscript%3Ealert(1)%3C%2Fscript%3E%22%27&s3=%3Cimg%20src%3Dx%20onerror%3Dalert(2)%3E',
    '?model=llama-3.1-8b&seq=8192&precisi',
    '?seq=%E0%A4%A&nodes=%',
    '?nodes=-3&tp=abc',
    '?instance=ml.p99.48xlarge&zero=9&v=99',
  ];
  for (const q of bad) {
    await open(page, base + q);
    assert(await page.$('#notices'), `a notice for ${q.slice(0, 60)}`);
    assert(await page.$('#verdict'), `results still shown for ${q.slice(0, 60)}`);
    assert((await page.$$('img[src="x"]')).length === 0, 'no injected HTML');
  }
});

await test('clicking a warning applies its fix and the verdict changes', async (page) => {
  await open(page, base + '?seq=131072&ckpt=full&lang=en');
  assert(/Does not fit/.test(await page.textContent('#verdict')), 'starts over budget');
  await page.click('li[data-code=over_budget] button.fix');
  await page.waitForFunction(() => location.search.includes('loss=fused'));
  assert(/Fits/.test(await page.textContent('#verdict')), 'fits after the fix');
});

await test('auto-plan: apply the top plan, it fits and the URL changes', async (page) => {
  // Llama-3.1-70B on one p5 node does not fit; the auto-plan finds what does.
  await open(page, base + '?lang=en&model=llama-3.1-70b&instance=ml.p5.48xlarge&price=55&zero=0');
  assert(/Does not fit/.test(await page.textContent('#verdict')), 'starts over budget');
  await page.locator('.autoplan').scrollIntoViewIfNeeded();
  await page.waitForSelector('#autoplan-table', { timeout: 30000 });
  const before = page.url();
  const why = await page.textContent('#autoplan-table tbody tr:first-child td.why');
  await page.click('#apply-0');
  await page.waitForFunction((u) => location.href !== u, before);
  assert(/Fits/.test(await page.textContent('#verdict')), `the applied plan fits (${why})`);
  assert(page.url() !== before, 'the URL changed');
  await page.locator('.autoplan').screenshot({ path: `${shots}/autoplan.png` });
});

await test('LoRA targets: q and v only lower the peak and travel in the URL and the export', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-8b&train=lora&zero=0&seq=4096');
  const before = gibOf(await page.textContent('#peak'));
  // PEFT's target_modules as pasted from a training script: a Python list.
  // Text applies when the field is left.
  await page.fill('#lora_targets', "['q_proj', 'v_proj']");
  await page.press('#lora_targets', 'Tab');
  await page.waitForFunction(() => /lora_targets=q_proj(%2C|,)v_proj/.test(location.href));
  const after = gibOf(await page.textContent('#peak'));
  // Fewer adapted Linears keep fewer inputs: the oracle's q,v rows sit below all-linear ones.
  assert(after < before, `q,v peak ${after} GiB below all-linear ${before} GiB`);
  await page.click('#fmt-huggingface');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"lora_targets"'));
  assert((await page.textContent('#export-code')).includes('"lora_targets": "q_proj,v_proj"'), 'the export sets the targets planned');
  // PEFT's alpha: twice the rank unless entered, then the one entered.
  assert((await page.textContent('#export-code')).includes('"lora_alpha": 32'), 'alpha defaults to twice the rank 16');
  await page.fill('#lora_alpha', '8');
  await page.waitForFunction(() => location.href.includes('lora_alpha=8'));
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"lora_alpha": 8'));
});

await test('DPO: the stage travels in the URL, the reference model shows, pairs are counted and exported (#38)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-8b&instance=ml.p5.48xlarge&seq=2048&mb=2&ckpt=full');
  const before = gibOf(await page.textContent('#peak'));
  await page.selectOption('#stage', 'dpo');
  await page.waitForFunction(() => location.href.includes('stage=dpo'));
  const after = gibOf(await page.textContent('#peak'));
  // Two rows a pair and a frozen BF16 copy sharded over 8 GPUs: the model's 23.6 -> 32.9 GiB.
  assert(after > before + 5, `the DPO peak ${after} GiB is above the SFT one ${before} GiB`);
  assert((await page.textContent('.results')).includes('reference model'), 'the breakdown names the reference');
  assert((await page.textContent('#tps')).includes('pairs/s'), 'the speed counts pairs');
  assert((await page.textContent('#cost')).includes('per 1K pairs'), 'the cost is per thousand pairs');
  assert((await page.textContent('#step')).includes('reference forward'), 'the step shows its reference forward');
  // The page's label reads the oracle's DPO group (coverage.json, kept in the wasm by build.rs).
  const memoryLabel = await page.textContent('#accuracy');
  assert(/\(DPO,/.test(memoryLabel) && memoryLabel.includes('out of sample'), `memory label: ${memoryLabel}`);
  assert((await page.textContent('#throughput-accuracy')).includes('no published DPO run'), 'the speed label is derived');
  assert(/× 2 ×/.test(await page.textContent('#global-batch')), 'the global batch counts both rows of a pair');
  await page.click('#fmt-pytorch');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"stage"'));
  assert((await page.textContent('#export-code')).includes('"stage": "dpo"'), 'the export runs DPO');
});

await test('GRPO: rollout inputs travel, vLLM\'s share shows, the step splits and prompts are counted (#38)', async (page) => {
  await open(page, base + '?lang=en&model=qwen2.5-7b&instance=ml.p5.48xlarge&seq=1280&mb=4&ga=8&zero=3&ckpt=full');
  const before = gibOf(await page.textContent('#peak'));
  await page.selectOption('#stage', 'grpo');
  await page.waitForFunction(() => location.href.includes('stage=grpo'));
  await page.fill('#completion', '1024');
  await page.waitForFunction(() => location.href.includes('completion=1024'));
  // vLLM keeps 0.3 of each GPU (0.3 x 79.1 GiB = 23.7 GiB) beside the update step.
  const after = gibOf(await page.textContent('#peak'));
  assert(after > before + 15, `the GRPO peak ${after} GiB holds vLLM's share beside the SFT ${before} GiB`);
  assert((await page.textContent('#terms')).includes('vLLM engine'), 'the breakdown names the engine');
  const step = await page.textContent('#step');
  assert(step.includes('generation') && step.includes('scoring') && step.includes('update'), `step: ${step}`);
  assert((await page.textContent('#tps')).includes('prompts/s'), 'the speed counts prompts');
  assert((await page.textContent('#cost')).includes('per 1K prompts'), 'the cost is per thousand prompts');
  assert((await page.textContent('#rollout')).includes('vLLM over 2 GPU(s), 64 of 64 rows'), 'the engine spans two GPUs');
  assert(/32 prompts × 8 ×/.test(await page.textContent('#global-batch')), 'the batch counts prompts of 8 rows');
  assert((await page.textContent('#throughput-accuracy')).includes('no published TRL GRPO run'), 'the speed label is derived');
  // TRL needs whole groups: 4 x 1 x 8 = 32 rows make 4 groups of 8; generations=12 does not divide them.
  await page.fill('#generations', '12');
  await page.waitForFunction(() => document.body.textContent.includes('multiple of generations=12'));
  await page.fill('#generations', '8');
  await page.click('#fmt-pytorch');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"num_generations"'));
  const code = await page.textContent('#export-code');
  assert(code.includes('entry_point="grpo.py"') && code.includes('"vllm_tensor_parallel_size": 2'), 'the export runs grpo.py');
  // vLLM as a server on 4 of the 8 GPUs: its share leaves the training GPUs, grpo.py starts it.
  await page.fill('#gen_gpus', '4');
  await page.waitForFunction(() => location.href.includes('gen_gpus=4'));
  await page.waitForFunction(() => document.querySelector('#rollout').textContent.includes('vLLM server on 4 GPU(s)'));
  const served = gibOf(await page.textContent('#peak'));
  // Without the 23.7 GiB share, though ZeRO-3 now shards the states and the
  // accumulated gradients over 4 ranks instead of 8 (18 B x 7.6 B / 8 = 15.9 GiB more).
  assert(!(await page.textContent('#terms')).includes('vLLM engine'), 'the training GPUs hold no vLLM share');
  assert(served < after - 5, `the training GPUs' peak ${served} GiB is below the colocated ${after} GiB`);
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"vllm_server_gpus": 4'));
  assert((await page.textContent('#export-code')).includes('distribution=None'), 'grpo.py starts the server and torchrun');
  await page.fill('#gen_gpus', '8');
  await page.waitForFunction(() => document.body.textContent.includes('fewer than its 8 GPUs'));
});

await test('GRPO: vLLM asleep gives training its share back, and the launch code sleeps it (#56)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-8b&stage=grpo&instance=ml.p5.48xlarge&seq=2048&completion=1024&mb=4&ga=4&zero=3&ckpt=full');
  const awake = gibOf(await page.textContent('#peak'));
  await page.check('#sleep');
  await page.waitForFunction(() => location.href.includes('sleep=1'));
  // 4.0 + 8.0 GB of sharded FP32 weights and Adam moments, the 25.5 GB share
  // and the CUDA context while generating: 35.7 GiB, against 59.3 awake.
  const asleep = gibOf(await page.textContent('#peak'));
  assert(Math.abs(asleep - 35.7) < 0.05 && Math.abs(awake - 59.3) < 0.05, `asleep ${asleep} GiB, awake ${awake} GiB`);
  assert((await page.textContent('body')).includes('vLLM generating beside the model states'), 'the peak is the generating moment');
  await page.click('#fmt-pytorch');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"vllm_enable_sleep_mode": True'));
  await page.uncheck('#sleep');
  await page.waitForFunction(() => !location.href.includes('sleep=1'));
  assert(Math.abs(gibOf(await page.textContent('#peak')) - awake) < 0.05, 'awake again, the share is back on top');
  // Qwen2.5-14B's 27.5 GiB of weights backed up in an ml.g6e.xlarge's 32 GiB: refused beside the checkbox.
  await open(page, base + '?lang=en&model=qwen2.5-14b&stage=grpo&train=qlora&instance=ml.g6e.xlarge&gen_share=0.7&sleep=1&seq=1024&completion=512&mb=1&ga=8&zero=0&ckpt=full');
  const said = await page.textContent('#sleep-error');
  assert(said.includes('27.5 GiB a node') && said.includes('keep vLLM awake'), `beside the checkbox: ${said}`);
  assert((await page.getAttribute('#sleep', 'aria-invalid')) === 'true', 'the checkbox is marked invalid');
});

await test('one edit runs one evaluation: the export, both charts and a pinned plan included (#34)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-8b&seq=4096&vs=model%3Dllama-3.1-70b');
  await page.waitForSelector('#compare');
  await page.click('#fmt-huggingface');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"max_seq_length": 4096'));
  const evaluations = () => page.evaluate(() => Number(document.body.dataset.evaluations));
  const before = await evaluations();
  await page.fill('#seq', '8192');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('"max_seq_length": 8192'));
  // The page evaluated the new plan once (the export's worker writes its
  // code off the page's thread); the charts were drawn from that one
  // evaluation, and the pinned plan (unchanged) was not evaluated again.
  assert((await evaluations()) === before + 1, `evaluations ${before} -> ${await evaluations()}`);
  const chartsBefore = await page.evaluate(() => document.querySelector('#instance-chart').textContent);
  await page.fill('#nodes', '2');
  await page.waitForFunction((old) => document.querySelector('#instance-chart').textContent !== old, chartsBefore);
  assert((await evaluations()) === before + 2, `evaluations after a second edit: ${before} -> ${await evaluations()}`);
});

await test('the launch code and the auto-plan come from the worker, loaded when their panels come into view, not with the first verdict (#59)', async (page) => {
  // A short window: neither panel is within 600 px of the first screen.
  await page.setViewportSize({ width: 1280, height: 400 });
  await open(page, base + '?lang=en&model=llama-3.1-8b');
  const workerFetched = async () => page.workers().some((w) => w.url().includes('export/loader.js'));
  assert(!(await workerFetched()), 'the first verdict did not fetch the worker');
  await page.locator('.autoplan').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /Searched [\d,]+ candidates/.test(document.querySelector('#search-status').textContent));
  assert(await workerFetched(), 'the search came from the worker');
  await page.waitForSelector('#autoplan-table');
  await page.locator('#export-code').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('PyTorch('));
});

await test('a GB200 UltraServer plan asks for its training plan, and the code books it and places 18 + 14 instances (#58)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=32&ultraserver=72');
  await page.waitForFunction(() => document.body.textContent.includes('runs only on capacity bought as a SageMaker training plan'));
  await page.fill('#training_plan', 'arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-405b');
  await page.press('#training_plan', 'Tab');
  await page.locator('#export-code').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('training-plan/gb200-405b'));
  const code = await page.textContent('#export-code');
  assert(code.includes('training_plan=training_plan,') && code.includes('[{"InstanceCount": 18}, {"InstanceCount": 14}]'), 'plan and placement in the code');
  assert(page.url().includes('training_plan=arn'), 'the ARN travels in the link');
  assert(!(await page.textContent('body')).includes('runs only on capacity bought'), 'the warning goes once the ARN is given');
  await page.click('#fmt-hyperpod');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('hyperpodrun'));
  const yaml = await page.textContent('#export-code');
  assert(yaml.includes('preferred_topology: topology.k8s.aws/ultraserver-id') && !yaml.includes('efa:'), 'HyperPod: packed by UltraServer, no EFA request on GB200');
});

await test('spot interruptions and checkpointless recovery travel in the link and say what the bundle does not run (#58)', async (page) => {
  await open(page, base + '?lang=en&model=llama-3.1-70b&instance=ml.p5.48xlarge&nodes=16&spot=1&spot_rate=20');
  assert((await page.inputValue('#spot_rate')) === '20', 'the spot rate field');
  const before = await page.textContent('#failures');
  await page.selectOption('#recovery', 'memory');
  await page.waitForFunction((old) => document.querySelector('#failures').textContent !== old, before);
  assert(page.url().includes('recovery=memory') && page.url().includes('spot_rate=20'), 'both in the link: ' + page.url());
  assert((await page.textContent('#export-notes')).includes("checkpointless training"), 'the export says the bundle recovers from its saves');
});

await test('export: copy the ModelTrainer code and read it from the clipboard', async (page) => {
  await open(page, base + '?lang=en&instance=ml.p5.48xlarge&nodes=2&role=arn:aws:iam::123456789012:role/SM&s3=s3://my-bucket/runs');
  await page.click('#fmt-modeltrainer');
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('ModelTrainer('));
  await page.click('#copy-code');
  await page.waitForFunction(() => document.querySelector('#copy-code').textContent.includes('Copied'));
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  const shown = await page.textContent('#export-code');
  assert(clip === shown, 'the clipboard holds the code on screen');
  for (const s of ['instance_type="ml.p5.48xlarge"', 'instance_count=2', 'role = "arn:aws:iam::123456789012:role/SM"', 's3_prefix = "s3://my-bucket/runs"', 'Torchrun(process_count_per_node=8'])
    assert(clip.includes(s), `code has ${s}`);
  // Typing a hostile role is refused beside the field; the code keeps the last valid role.
  await page.fill('#role', 'x") ; import os #');
  await page.press('#role', 'Tab');
  assert((await page.textContent('#role-error')).includes('role'), 'refused role is reported');
  assert((await page.textContent('#export-code')).includes('role/SM"'), 'the code keeps the valid role');
  await page.locator('.export').screenshot({ path: `${shots}/export.png` });
});

/** The files of a stored (uncompressed) ZIP, by path, from its central directory. */
function unzipStored(buf) {
  const files = {};
  let end = buf.length - 22;
  while (end >= 0 && buf.readUInt32LE(end) !== 0x06054b50) end--;
  assert(end >= 0, 'the download is a ZIP');
  let at = buf.readUInt32LE(end + 16);
  for (let n = buf.readUInt16LE(end + 10); n > 0; n--) {
    assert(buf.readUInt32LE(at) === 0x02014b50, 'central directory entry');
    assert(buf.readUInt16LE(at + 10) === 0, 'stored, not compressed');
    const size = buf.readUInt32LE(at + 24), nameLen = buf.readUInt16LE(at + 28);
    const extra = buf.readUInt16LE(at + 30), comment = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const name = buf.toString('utf8', at + 46, at + 46 + nameLen);
    const dataAt = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    files[name] = buf.toString('utf8', dataAt, dataAt + size);
    at += 46 + nameLen + extra + comment;
  }
  return files;
}
const PLAN_BIN = process.env.PLAN_BIN || 'target/debug/plan';

await test("bundle: the page's .zip holds the files the CLI writes", async (page) => {
  const query = 'lang=en&model=llama-3.1-8b&train=lora&nodes=2&job=ft-01';
  await open(page, base + '?' + query);
  await page.click('#fmt-huggingface');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-bundle')]);
  assert(download.suggestedFilename() === 'ft-01-bundle.zip', 'named after the job: ' + download.suggestedFilename());
  const zipped = unzipStored(readFileSync(await download.path()));
  const dir = mkdtempSync(join(tmpdir(), 'bundle-'));
  const listed = execFileSync(PLAN_BIN, ['export', query, '--format', 'bundle', '--launcher', 'huggingface', '--out', dir])
    .toString().trim().split('\n').map((p) => p.slice(dir.length + 1));
  assert(JSON.stringify(Object.keys(zipped)) === JSON.stringify(listed), `same files: ${Object.keys(zipped)} vs ${listed}`);
  for (const f of listed) assert(zipped[f] === readFileSync(join(dir, f), 'utf8'), `${f} is the same as the CLI's`);
  assert(zipped['launch.py'].includes('HuggingFace(') && zipped['scripts/train.py'].includes('from train_plan import') && zipped['scripts/train_plan.py'].includes('TRAIN_PLANNER_MEASURED'), 'launcher and script');
});

await test("bundle: a Megatron plan's .zip carries the Megatron-Bridge launcher, as the CLI writes it", async (page) => {
  const query = 'lang=en&model=llama-3.1-70b&stack=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=8&tp=4&pp=4&cp=2&zero=1';
  await open(page, base + '?' + query);
  assert((await page.textContent('#export-engine')).includes('Megatron-Bridge'), 'the page says what runs the plan');
  assert((await page.inputValue('#entry')) === 'pretrain_megatron_bridge.py', 'the entry field names the launcher');
  await page.locator('#export-code').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#export-code').textContent.includes('image_uri=NEMO_IMAGE_URI'));
  await page.locator('.export').screenshot({ path: `${shots}/export-megatron.png` });
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-bundle')]);
  const zipped = unzipStored(readFileSync(await download.path()));
  const dir = mkdtempSync(join(tmpdir(), 'bundle-'));
  const listed = execFileSync(PLAN_BIN, ['export', query, '--format', 'bundle', '--out', dir])
    .toString().trim().split('\n').map((p) => p.slice(dir.length + 1));
  assert(JSON.stringify(Object.keys(zipped)) === JSON.stringify(listed), `same files: ${Object.keys(zipped)} vs ${listed}`);
  for (const f of listed) assert(zipped[f] === readFileSync(join(dir, f), 'utf8'), `${f} is the same as the CLI's`);
  const settings = JSON.parse(zipped['scripts/megatron_bridge_plan.json']);
  assert(settings.model.tensor_model_parallel_size === 4 && settings.model.context_parallel_size === 2, 'the planned layout');
  await open(page, base + '?lang=en&model=llama-3.1-8b');
  assert((await page.textContent('#export-engine')).includes("train.py"), 'the Hugging Face stack runs train.py');
});

await test("measured: a CI run's line re-bases time and cost; bad lines get a message", async (page) => {
  const file = 'target/bundle-test/plan0.measured';
  assert(existsSync(file), `${file} is written by the bundle tests, which run first`);
  const line = readFileSync(file, 'utf8').trim();
  const m = JSON.parse(line.split(' ').slice(1).join(' '));
  await open(page, base + '?lang=en&model=llama-3.1-8b');
  const url = page.url();
  const before = await snapshot(page);
  // The worker reads each line (#59: the page holds no JSON reader).
  await page.fill('#measured-line', 'loss 2.31 step 40');
  await waitText(page, '#measured-error', 'no TRAIN_PLANNER_MEASURED line found');
  await page.fill('#measured-line', 'TRAIN_PLANNER_MEASURED {"v": 1,');
  await waitText(page, '#measured-error', 'not valid JSON');
  await page.fill('#measured-line', line.replace('model=llama-3.1-8b', 'model=llama-3.1-70b'));
  await waitText(page, '#measured-error', 'another plan');
  await page.fill('#measured-line', 'job log...\n' + line);
  await page.waitForSelector('#measured-table');
  const cells = await page.$$eval('#measured-table tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent.trim())));
  const speed = parseFloat(cells[0][2].replace(/,/g, ''));
  assert(Math.abs(speed - Math.round(m.tokens_per_second_per_gpu)) <= 1, `measured speed shown: ${cells[0][2]} vs ${m.tokens_per_second_per_gpu}`);
  const cli = JSON.parse(execFileSync(PLAN_BIN, ['report', 'model=llama-3.1-8b', '--measured', line]).toString()).measured;
  assert(cells[3][2] !== cells[3][1] && cells[4][2] !== cells[4][1], 'time and cost re-based');
  assert((await page.textContent('#measured-rebased')).includes('re-based'), 'says so');
  assert((await page.textContent('#measured-table')).includes('—') === (cli.measured_peak_gib === null), 'no GPU memory on a CPU run');
  sameSnapshot(before, await snapshot(page), 'pasting a line changes no setting');
  assert(page.url() === url, 'and not the link');
  await page.locator('.measured').screenshot({ path: `${shots}/measured.png` });
});

await test('a pasted config.json sets the architecture; a broken one is reported beside the box and the plan stays (#59: read in the worker)', async (page) => {
  await open(page, base + '?lang=en');
  await page.click('.config-paste summary');
  // Qwen/Qwen2.5-7B config.json (shape fields): 7.62 B parameters.
  await page.fill('#config-json', '{"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_attention_heads":28,'
    + '"num_hidden_layers":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false}');
  await page.click('#config-apply');
  await waitText(page, '#params', '7.62 B');
  assert(page.url().includes('model=custom') && page.url().includes('hidden=3584'), 'the link carries the shape: ' + page.url());
  const before = await snapshot(page);
  await page.fill('#config-json', '{"model_type": "bert"}');
  await page.click('#config-apply');
  await waitText(page, '#config-json-error', 'model_type');
  sameSnapshot(before, await snapshot(page), 'a broken paste changes nothing');
  await open(page, base + '?lang=ru');
  await page.click('.config-paste summary');
  await page.fill('#config-json', '{not json');
  await page.click('#config-apply');
  await page.waitForFunction(() => (document.querySelector('#config-json-error')?.textContent || '').length > 0);
  const ru = await page.textContent('#config-json-error');
  assert(/[а-я]/.test(ru) && !ru.includes('not valid JSON'), 'the reason in the reader\'s language: ' + ru);
});

await test('live summary: verdict and cost stay in view while inputs change (390 and 1280 px)', async (page) => {
  const inView = (sel) => page.$eval(sel, (el) => {
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;
  });
  await page.setViewportSize({ width: 390, height: 844 });
  await open(page, base + '?lang=en');
  const before = await page.textContent('#live-verdict');
  await page.fill('#seq', '131072');
  await page.waitForFunction(() => location.search.includes('seq=131072'));
  assert(await inView('#live-verdict') && await inView('#live-cost'), 'verdict and cost in view at 390 px');
  await page.fill('#nodes', '2');
  await page.waitForFunction(() => location.search.includes('nodes=2'));
  assert(await page.evaluate(() => window.scrollY) > 0, 'the nodes field is below the fold on a phone');
  assert(await inView('#live-verdict') && await inView('#live-cost'), 'still in view after scrolling to a lower field');
  assert((await page.textContent('#live-verdict')) !== before, 'the summary follows the change');
  assert(/Does not fit/.test(await page.textContent('#live-verdict')), '128K without checkpointing does not fit');
  await page.screenshot({ path: `${shots}/live-390.png` });
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page, base + '?lang=en');
  for (const sel of FIELDS) {
    await page.locator(sel).scrollIntoViewIfNeeded();
    assert(await inView('#live-verdict') && await inView('#live-cost'), `verdict and cost in view beside ${sel}`);
  }
  await page.selectOption('#precision', 'fp8');
  await page.waitForFunction(() => location.search.includes('precision=fp8'));
  assert(await inView('#live-tps') && await inView('#live-time'), 'speed and time in view too');
  await page.screenshot({ path: `${shots}/live-1280.png` });
});

await test('pin and compare: pin, change precision, copy the link, reopen it; Compare on an auto-plan row', async (page, ctx) => {
  await open(page, base + '?lang=en&model=llama-3.1-70b&nodes=2');
  await page.click('#pin');
  await page.waitForFunction(() => location.search.includes('vs='));
  assert(await page.isVisible('#compare-same'), 'just pinned: no input differs');
  await page.selectOption('#precision', 'fp8');
  await page.waitForSelector('#diff-precision');
  const cells = async (p, sel) => p.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
  const diff = await cells(page, '#diff-precision td');
  assert(diff[0] === 'bf16' && diff[1] === 'fp8', 'precision differs, highlighted: ' + diff);
  assert((await page.$$('#compare-inputs tr.diff')).length === 1, 'only precision differs');
  const results = await cells(page, '#compare-results tbody tr');
  assert((await page.$$('#compare-results tr.diff')).length >= 2, 'speed and time differ: ' + results);
  await page.click('#copy-link');
  const link = await page.evaluate(() => navigator.clipboard.readText());
  assert(link.includes('vs='), 'the link carries the pinned plan: ' + link);
  const again = await ctx.newPage();
  await open(again, link);
  assert(JSON.stringify(await cells(again, '#diff-precision td')) === JSON.stringify(diff), 'same difference after reopening');
  assert(JSON.stringify(await cells(again, '#compare-results tbody tr')) === JSON.stringify(results), 'same results after reopening');
  await again.locator('#compare').screenshot({ path: `${shots}/compare.png` });
  await again.click('#compare-unpin');
  await again.waitForFunction(() => !location.search.includes('vs='));
  assert(!(await again.isVisible('#compare')), 'unpinned: the comparison is gone');
  await again.locator('.autoplan').scrollIntoViewIfNeeded();
  await again.waitForSelector('#autoplan-table', { timeout: 30000 });
  await again.click('#compare-0');
  await again.waitForSelector('#compare-inputs, #compare-same');
  assert(await again.isVisible('#compare'), 'Compare on an auto-plan row pins it');
});

await test('a WebAssembly trap (a panic in the release build) shows the crash notice', async (page) => {
  await open(page, base + '?lang=ru');
  const raise = (wasm) => page.evaluate((wasm) => dispatchEvent(new ErrorEvent('error', {
    error: wasm ? new WebAssembly.RuntimeError('unreachable') : new Error('not ours') })), wasm);
  await raise(false);
  assert(!(await page.$('#crash')), 'an error outside the wasm shows no notice');
  await raise(true);
  await raise(true);
  assert((await page.$$('#crash')).length === 1, 'one notice');
  assert((await page.getAttribute('#crash', 'role')) === 'alert', 'role=alert');
  const text = await page.textContent('#crash');
  assert(/Something went wrong/i.test(text) && /\//.test(text), 'both languages: ' + text);
});

await test('screenshots: light and dark at 1280 and 390 px', async (page) => {
  for (const scheme of ['light', 'dark']) {
    for (const width of [1280, 390]) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width, height: 900 });
      await open(page, base + '?lang=en&seq=32768&ckpt=full');
      await page.screenshot({ path: `${shots}/page-${width}-${scheme}.png`, fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(overflow <= 0, `no horizontal scrolling at ${width}px (${overflow}px)`);
    }
  }
});

await browser.close();
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
