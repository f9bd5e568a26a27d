// Checks the web reader of a book in another language in the system's headless Chromium,
// under the reader's Content-Security-Policy: the page runs the book's way (a right-to-left
// book's paragraphs end at the column's right edge, their first line indented there; a
// left-to-right one's at the left), the arrow keys turn pages the way the book runs, Chinese,
// Japanese and Korean lines break by the strict rules, the script's own words come in the
// book's language, and axe-core finds no violation on the contents or a chapter.
//
//   node reader-languages.mjs <url of the reader's index.html> <screenshot dir> <ltr|rtl> <expected JSON>
//
// The expected JSON names the book and holds the table's words the script must show:
// {"name": "ar", "continue": "…"}.
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise.

import path from 'node:path';
import process from 'node:process';
import { audit } from './axe.mjs';
import { check, launch, run, step } from './harness.mjs';

const [index, shotDir, dir, expectedJson] = process.argv.slice(2);
if (!index || !shotDir || !['ltr', 'rtl'].includes(dir) || !expectedJson) {
  console.error('usage: node reader-languages.mjs <reader index url> <screenshot dir> <ltr|rtl> <expected JSON>');
  process.exit(2);
}
const expected = JSON.parse(expectedJson);
const lang = expected.name;

run(async () => {
  const browser = await launch();
  try {
    // A phone's width, so that every paragraph runs over several lines.
    const page = await browser.newPage({ viewport: { width: 420, height: 800 } });
    const errors = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));

    step('the contents page passes axe');
    await page.goto(index);
    check((await page.getAttribute('html', 'dir')) === dir, `the contents page is not dir=${dir}`);
    let violations = await audit(page);
    check(violations.length === 0, `axe on the contents:\n${violations.join('\n')}`);
    await page.screenshot({ path: path.join(shotDir, `${lang}-index.png`), fullPage: true });

    step(`a chapter is laid out ${dir === 'rtl' ? 'right to left' : 'left to right'}`);
    await page.goto(new URL('chapter-001.html', index).href);
    const layout = await page.evaluate(() => {
      const main = document.querySelector('main.chapter');
      const style = getComputedStyle(main);
      const paragraphs = [...main.querySelectorAll('p')].map((p) => {
        const range = document.createRange();
        range.selectNodeContents(p);
        // One box per line: merge the rects of each line (by their vertical middle).
        const lines = [];
        for (const r of range.getClientRects()) {
          if (r.width === 0) continue;
          const mid = (r.top + r.bottom) / 2;
          const line = lines.find((l) => Math.abs(l.mid - mid) < r.height / 2);
          if (line) {
            line.left = Math.min(line.left, r.left);
            line.right = Math.max(line.right, r.right);
          } else {
            lines.push({ mid, left: r.left, right: r.right });
          }
        }
        lines.sort((a, b) => a.mid - b.mid);
        const box = p.getBoundingClientRect();
        const pad = getComputedStyle(p);
        return {
          left: box.left + parseFloat(pad.paddingLeft),
          right: box.right - parseFloat(pad.paddingRight),
          indent: parseFloat(pad.textIndent),
          lines,
        };
      });
      return { direction: style.direction, lineBreak: style.lineBreak, paragraphs };
    });
    check(layout.direction === dir, `the chapter's direction is ${layout.direction}, not ${dir}`);
    const long = layout.paragraphs.filter((p) => p.lines.length >= 2);
    check(long.length > 0, 'no paragraph of the chapter runs over two lines');
    for (const [i, p] of long.entries()) {
      const last = p.lines.at(-1);
      const first = p.lines[0];
      if (dir === 'rtl') {
        check(Math.abs(last.right - p.right) <= 2,
          `paragraph ${i + 1}'s last line ends at ${last.right.toFixed(1)}, not at the column's right edge ${p.right.toFixed(1)}`);
        check(last.left > p.left + 2 || p.lines.length > 2,
          `paragraph ${i + 1}'s last line is not set from the right`);
        if (p.indent > 0) {
          check(first.right <= p.right - p.indent + 2,
            `paragraph ${i + 1}'s first line is not indented on the right (${first.right.toFixed(1)} of ${p.right.toFixed(1)})`);
        }
      } else {
        check(Math.abs(last.left - p.left) <= 2,
          `paragraph ${i + 1}'s last line begins at ${last.left.toFixed(1)}, not at the column's left edge ${p.left.toFixed(1)}`);
      }
    }
    if (['ja', 'zh', 'ko'].includes(lang.split('-')[0])) {
      check(layout.lineBreak === 'strict', `line-break is ${layout.lineBreak}, not strict`);
    }
    await page.screenshot({ path: path.join(shotDir, `${lang}-chapter-001.png`), fullPage: true });
    violations = await audit(page);
    check(violations.length === 0, `axe on chapter-001.html:\n${violations.join('\n')}`);

    step('the arrow keys turn the page the way the book runs');
    await page.locator('main').click({ position: { x: 5, y: 5 } });
    await Promise.all([
      page.waitForURL(/chapter-002\.html$/, { timeout: 5000 }),
      page.keyboard.press(dir === 'rtl' ? 'ArrowLeft' : 'ArrowRight'),
    ]);
    await page.keyboard.press(dir === 'rtl' ? 'ArrowRight' : 'ArrowLeft');
    await page.waitForURL(/chapter-001\.html$/, { timeout: 5000 });

    step("the contents page offers to continue, in the book's words");
    await page.goto(new URL('chapter-002.html', index).href);
    await page.goto(index);
    const label = page.locator('#continue .continue-label');
    await page.waitForFunction(
      (want) => document.querySelector('#continue .continue-label')?.textContent === want,
      expected.continue,
      { timeout: 5000 },
    ).catch(() => {});
    check((await label.textContent()) === expected.continue,
      `the continue button says "${await label.textContent()}", not "${expected.continue}"`);
    check(errors.length === 0, `console errors:\n${errors.join('\n')}`);
    console.log(`${lang}: ${long.length} paragraphs laid out ${dir}; axe found no violation`);
  } finally {
    await browser.close();
  }
});
