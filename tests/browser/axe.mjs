// axe-core in the page as the browser shows it: the WCAG 2 A and AA rules (2.0, 2.1, 2.2)
// and axe's best practices. Its source goes in through the DevTools protocol, which the
// page's Content-Security-Policy does not govern, so pages are checked under their real
// policy (a <script> tag would be refused, as it should be).
//
//   const violations = await audit(page);   // [] when the page passes

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const source = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');

/** The page's violations, one line each: rule, impact, and the first elements at fault. */
export async function audit(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(source);
  return page.evaluate(async () => {
    const results = await window.axe.run(document, {
      resultTypes: ['violations'],
      runOnly: {
        type: 'tag',
        values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'],
      },
    });
    return results.violations.map((v) => {
      const at = v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ');
      return `${v.id} (${v.impact}): ${v.help} at ${at}`;
    });
  });
}
