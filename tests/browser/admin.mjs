// Checks the admin pages in the system's headless Chromium: the overview (queues, workers,
// schedules), pausing and resuming a queue, jobs filtered and one job in full, and the live
// log stream, with no console errors.
//
//   BINDERY_TOKEN=bdy_… node admin.mjs <base url> <screenshot dir>    (an admin token)

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, CheckFailed, launch, run, step } from './harness.mjs';
import { audit } from './axe.mjs';

const [base, shotDir] = process.argv.slice(2);
const token = process.env.BINDERY_TOKEN;
if (!base || !shotDir || !token) {
  console.error('usage: BINDERY_TOKEN=… node admin.mjs <base url> <screenshot dir>');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;

const problems = [];

async function shoot(page, name) {
  const file = path.join(shotDir, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`  screenshot ${file}`);
  for (const v of await audit(page)) problems.push(`axe on ${name}: ${v}`);
}

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(20000);
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
    page.on('dialog', (d) => d.accept());

    step('sign in with an admin token; the Admin link appears');
    await page.goto(url('/signin'));
    await page.click('#token-signin summary');
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(/\/books$/), page.click('#token-signin button[type=submit]')]);
    await Promise.all([page.waitForURL(/\/admin$/), page.click('nav a[href="/admin"]')]);

    step('the overview lists queues, the worker and the schedules');
    const queues = await page.locator('#queues-title + .table-wrap tbody tr').allInnerTexts();
    check(queues.some((q) => q.startsWith('books')), `no books queue: ${queues}`);
    const workers = await page.locator('#workers-title + .table-wrap tbody tr').count();
    check(workers === 1, `expected 1 worker, saw ${workers}`);
    const schedules = await page.locator('#schedules-title + .table-wrap tbody tr').allInnerTexts();
    check(schedules.some((s) => s.includes('prune_jobs')), `no prune_jobs schedule: ${schedules}`);
    await shoot(page, 'admin-overview.png');

    step('the workers have a page of their own, marked in the admin navigation');
    await Promise.all([page.waitForURL(/\/admin\/workers$/), page.click('#workers-title a')]);
    check((await page.locator('.subnav a[aria-current=page]').innerText()) === 'Workers', 'the workers page is not marked');
    check((await page.locator('.table-wrap tbody tr').count()) === 1, 'the workers page does not list the worker');
    await shoot(page, 'admin-workers.png');
    await page.goto(url('/admin'));

    step('pause and resume the books queue');
    const books = page.locator('#queues-title + .table-wrap tbody tr', { hasText: /^books/ });
    await Promise.all([page.waitForLoadState('load'), books.locator('button', { hasText: 'Pause' }).click()]);
    await books.locator('.badge', { hasText: 'paused' }).waitFor();
    await Promise.all([page.waitForLoadState('load'), books.locator('button', { hasText: 'Resume' }).click()]);
    await books.locator('button', { hasText: 'Pause' }).waitFor();

    step('jobs filtered by state, and one job in full');
    await page.goto(url('/admin/jobs?state=completed&queue=books'));
    const rows = await page.locator('tbody tr').count();
    check(rows > 0, 'no completed books jobs listed');
    const states = await page.locator('tbody tr .badge').allInnerTexts();
    check(states.every((s) => s === 'completed'), `the filter let through ${states}`);
    // Each row names its book, and leads to all of that book's jobs.
    const bookLink = page.locator('tbody tr').first().locator('a[href^="/admin/jobs?workflow="]');
    check((await bookLink.innerText()) === 'Love Among the Chickens', `the job row does not name its book: ${await bookLink.innerText()}`);
    await shoot(page, 'admin-jobs.png');
    await Promise.all([page.waitForURL(/workflow=/), bookLink.click()]);
    const kinds = await page.locator('tbody tr td:nth-child(2)').allInnerTexts();
    check(kinds.length >= 8 && kinds.every((k) => k.startsWith('book.')), `the book's jobs: ${kinds}`);
    await page.goto(url('/admin/jobs?state=completed&queue=books'));
    await Promise.all([page.waitForURL(/\/admin\/jobs\/\d+$/), page.locator('tbody tr a').first().click()]);
    check((await page.locator('h2', { hasText: 'Payload' }).count()) === 1, 'the job page has no payload');
    await shoot(page, 'admin-job.png');
    await page.goto(url('/admin/jobs?state=dead'));
    check((await page.locator('h1').innerText()) === 'Dead jobs', 'the dead jobs view is not titled so');

    step('live logs: the backlog, then a line written after the page opened');
    await page.goto(url('/admin/logs'));
    await page.waitForFunction(() => document.querySelectorAll('#logs > div').length > 0);
    const roles = await page.locator('#logs > div').evaluateAll((lines) => [...new Set(lines.map((l) => l.className))]);
    check(roles.includes('web') && roles.includes('worker'), `the backlog has roles ${roles}`);
    const before = await page.locator('#logs > div').count();
    const marker = `/static/marker-${Date.now()}`;
    await fetch(url(marker));
    await page.waitForFunction((m) => [...document.querySelectorAll('#logs > div')].some((l) => l.textContent.includes(m)), marker, { timeout: 15000 })
      .catch(async () => {
        const after = await page.locator('#logs > div').count();
        throw new CheckFailed(`no new log line for ${marker} (lines ${before} → ${after})`);
      });
    check(await page.locator('#logs > div').first().evaluate((l) => Boolean(l.dataset.level)), 'log lines carry no level');
    await shoot(page, 'admin-logs.png');

    step('live logs filtered: only the lines that contain the marker');
    await page.fill('#logs-grep', marker);
    await page.click('#logs-filter button[type=submit]');
    await page.waitForFunction((m) => {
      const lines = [...document.querySelectorAll('#logs > div')];
      return lines.length > 0 && lines.every((l) => l.textContent.includes(m));
    }, marker, { timeout: 15000 });

    check(problems.length === 0, `problems:\n  ${problems.join('\n  ')}`);
    console.log('OK');
  } finally {
    await browser.close();
  }
}

run(main);
