#!/usr/bin/env node
'use strict';
// The `deskhand` command. Runs the compiled build in production when there is one
// (`npm run build`), and the TypeScript sources through tsx otherwise: from the checkout
// (`npx deskhand`) and from a global install of `npm pack`'s tarball alike (README.md).
const fs = require('node:fs');
const path = require('node:path');

const compiled = path.join(__dirname, '..', 'dist', 'bin', 'main.js');
if (process.env.DESKHAND_ENV === 'production' && fs.existsSync(compiled)) {
  require(compiled);
} else {
  // The project's own compiler options, wherever the command is run from (tsx reads the
  // tsconfig.json of the current folder otherwise: a stranger's, once installed elsewhere).
  process.env.TSX_TSCONFIG_PATH ||= path.join(__dirname, '..', 'tsconfig.json');
  require('tsx/cjs');
  require('./main.ts');
}
